"""Schema 14: the records beside nodes, a table each (see :mod:`ironic_fsm.stores._records`).

Each keeps the fields it is found, filtered, sorted or kept unique by as
columns, and the rest in ``data`` (JSON). A port's address is unique (the
agent's lookup finds a node by it), and so is an allocation's node: the
database itself refuses to give one node to two allocations. Deleting a
node deletes its ports, groups, allocation and volume records in the same
statement (a trigger, as the power-sync rows are kept).

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from ironic_fsm.stores._schema import RECORDS_BY_NODE
from ironic_fsm.stores.migrations import drop_with_node, record_table, run, step_context

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Six tables and the trigger that deletes a node's records with it."""
    context = step_context()
    run([
        record_table(
            "ports", context.timestamp,
            "\taddress VARCHAR(255) NOT NULL, \n\tname VARCHAR(255), \n"
            "\tnode_uuid VARCHAR(36) NOT NULL, \n\tportgroup_uuid VARCHAR(36), \n",
            ", \n\tCONSTRAINT uniq_ports0address UNIQUE (address), \n"
            "\tCONSTRAINT uniq_ports0name UNIQUE (name)",
        ),
        "CREATE INDEX ports_node_uuid_idx ON ports (node_uuid)",
        "CREATE INDEX ports_portgroup_uuid_idx ON ports (portgroup_uuid) "
        "WHERE portgroup_uuid IS NOT NULL",
        "CREATE INDEX ports_seq_idx ON ports (seq, uuid)",
        record_table(
            "portgroups", context.timestamp,
            "\taddress VARCHAR(255), \n\tname VARCHAR(255), \n"
            "\tnode_uuid VARCHAR(36) NOT NULL, \n",
            ", \n\tCONSTRAINT uniq_portgroups0address UNIQUE (address), \n"
            "\tCONSTRAINT uniq_portgroups0name UNIQUE (name)",
        ),
        "CREATE INDEX portgroups_node_uuid_idx ON portgroups (node_uuid)",
        "CREATE INDEX portgroups_seq_idx ON portgroups (seq, uuid)",
        record_table("chassis", context.timestamp, ""),
        "CREATE INDEX chassis_seq_idx ON chassis (seq, uuid)",
        record_table(
            "allocations", context.timestamp,
            "\tname VARCHAR(255), \n\tnode_uuid VARCHAR(36), \n"
            "\tstate VARCHAR(15) NOT NULL, \n\tresource_class VARCHAR(80), \n"
            "\towner VARCHAR(255), \n",
            ", \n\tCONSTRAINT uniq_allocations0name UNIQUE (name), \n"
            "\tCONSTRAINT uniq_allocations0node_uuid UNIQUE (node_uuid)",
        ),
        "CREATE INDEX allocations_state_idx ON allocations (state)",
        "CREATE INDEX allocations_seq_idx ON allocations (seq, uuid)",
        record_table(
            "volume_connectors", context.timestamp,
            "\tnode_uuid VARCHAR(36) NOT NULL, \n\ttype VARCHAR(32) NOT NULL, \n"
            "\tconnector_id VARCHAR(255) NOT NULL, \n",
            ", \n\tCONSTRAINT uniq_volumeconnectors0type0connectorid "
            "UNIQUE (type, connector_id)",
        ),
        "CREATE INDEX volume_connectors_node_uuid_idx ON volume_connectors (node_uuid)",
        "CREATE INDEX volume_connectors_seq_idx ON volume_connectors (seq, uuid)",
        record_table(
            "volume_targets", context.timestamp,
            "\tnode_uuid VARCHAR(36) NOT NULL, \n\tvolume_id VARCHAR(36) NOT NULL, \n"
            "\tboot_index INTEGER NOT NULL, \n",
            ", \n\tCONSTRAINT uniq_volumetargets0node_uuid0boot_index "
            "UNIQUE (node_uuid, boot_index)",
        ),
        "CREATE INDEX volume_targets_seq_idx ON volume_targets (seq, uuid)",
    ])  # fmt: skip
    run(drop_with_node("nodes_records_drop", RECORDS_BY_NODE, context.dialect))
