"""Schema 17: the inventory the ramdisk agent reports at inspection, one row per node.

``agent`` inspection stores what the agent posted (its inventory and plugin
data) for ``GET /v1/nodes/{node}/inventory``; each inspection replaces the
node's row. The table has the records' shape, ``node_uuid`` unique, and its
own trigger deletes a node's inventory with the node (revision 0016's
trigger stays as it ran).

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

from ironic_fsm.stores._schema import INVENTORY_BY_NODE
from ironic_fsm.stores.migrations import drop_with_node, record_table, run, step_context

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """``node_inventory`` and the trigger that deletes a node's inventory with it."""
    run([
        record_table(
            "node_inventory", step_context().timestamp,
            "\tnode_uuid VARCHAR(36) NOT NULL, \n",
            ", \n\tCONSTRAINT uniq_nodeinventory0node_uuid UNIQUE (node_uuid)",
        ),
        "CREATE INDEX node_inventory_seq_idx ON node_inventory (seq, uuid)",
    ])  # fmt: skip
    run(drop_with_node("nodes_inventory_drop", INVENTORY_BY_NODE, step_context().dialect))
