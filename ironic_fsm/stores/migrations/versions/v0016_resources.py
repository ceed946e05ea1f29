"""Schema 16: the node's ``instance_name`` as a column, and three more tables of records.

``instance_name`` is filtered on (API 1.104), so a column on a partial index
(few nodes set it), filled from ``data``. Inspection rules are found by
phase and run by priority; a node's firmware components and BIOS settings
are keyed, as Ironic keys them, by node and name (unique), each with a UUID
derived from both. Deleting a node deletes its components and settings (a
trigger of its own beside revision 0014's, which stays as it ran).

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import logging
from typing import Any, Final

from ironic_fsm.exceptions import IronicFSMError
from ironic_fsm.node import Node
from ironic_fsm.stores._schema import SETTINGS_BY_NODE
from ironic_fsm.stores.migrations import (
    StepContext,
    drop_with_node,
    raw_connection,
    record_table,
    run,
    step_context,
)

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# The store's logger: what a migration reports is the store's business.
_LOG: Final = logging.getLogger("ironic_fsm.stores.sql")


def upgrade() -> None:
    """``nodes.instance_name``; ``inspection_rules``, ``firmware_components``,
    ``bios_settings``; the trigger that deletes a node's components and settings."""
    context = step_context()
    timestamp = context.timestamp
    run([
        "ALTER TABLE nodes ADD COLUMN instance_name VARCHAR(255)",
        "CREATE INDEX nodes_instance_name_idx ON nodes (instance_name) "
        "WHERE instance_name IS NOT NULL",
        record_table(
            "inspection_rules", timestamp,
            "\tphase VARCHAR(16) NOT NULL, \n\tpriority INTEGER NOT NULL, \n",
        ),
        "CREATE INDEX inspection_rules_seq_idx ON inspection_rules (seq, uuid)",
        record_table(
            "firmware_components", timestamp,
            "\tnode_uuid VARCHAR(36) NOT NULL, \n\tcomponent VARCHAR(255) NOT NULL, \n",
            ", \n\tCONSTRAINT uniq_firmwarecomponents0node_uuid0component "
            "UNIQUE (node_uuid, component)",
        ),
        "CREATE INDEX firmware_components_seq_idx ON firmware_components (seq, uuid)",
        record_table(
            "bios_settings", timestamp,
            "\tnode_uuid VARCHAR(36) NOT NULL, \n\tname VARCHAR(255) NOT NULL, \n",
            ", \n\tCONSTRAINT uniq_biossettings0node_uuid0name UNIQUE (node_uuid, name)",
        ),
        "CREATE INDEX bios_settings_seq_idx ON bios_settings (seq, uuid)",
    ])  # fmt: skip
    _fill(context, raw_connection())
    run(drop_with_node("nodes_settings_drop", SETTINGS_BY_NODE, context.dialect))


def _fill(context: StepContext, conn: Any) -> None:
    """``instance_name`` copied from ``data`` for the nodes that set it."""
    q = context.q
    rows = conn.execute(
        'SELECT uuid, data FROM nodes WHERE data LIKE \'%"instance_name":"%\''
    ).fetchall()
    updates = []
    for uuid, data in rows:
        try:
            node = Node.from_json(data)
        except IronicFSMError as exc:  # as revision 0002's fill: left as it is
            _LOG.warning("Node %s: its record cannot be read (%s); column left empty", uuid, exc)
            continue
        updates.append((node.instance_name, uuid))
    if updates:
        context.execute_many(
            conn, f"UPDATE nodes SET instance_name = {q} WHERE uuid = {q}", updates
        )
