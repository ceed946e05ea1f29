"""Schema 2: the columns and indexes listings and periodic scans need.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import logging
from typing import Any, Final

from ironic_fsm.exceptions import IronicFSMError
from ironic_fsm.node import Node
from ironic_fsm.stores.migrations import StepContext, raw_connection, run, step_context

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# The store's logger: what a migration reports is the store's business.
_LOG: Final = logging.getLogger("ironic_fsm.stores.sql")

#: The columns this step adds, in the order a save computes them (from the 7th on).
_ADDED: Final = (
    "target_provision_state", "power_state", "protected", "resource_class", "fault",
    "provision_updated_at", "updated_at", "wait_until",
)  # fmt: skip


def upgrade() -> None:
    """New columns on indexes, filled from each node's ``data``."""
    context = step_context()
    timestamp = context.timestamp
    run([
        "ALTER TABLE nodes ADD COLUMN target_provision_state TEXT",
        "ALTER TABLE nodes ADD COLUMN power_state TEXT",
        "ALTER TABLE nodes ADD COLUMN protected BOOLEAN NOT NULL DEFAULT FALSE",
        "ALTER TABLE nodes ADD COLUMN resource_class TEXT",
        "ALTER TABLE nodes ADD COLUMN fault TEXT",
        f"ALTER TABLE nodes ADD COLUMN provision_updated_at {timestamp}",
        f"ALTER TABLE nodes ADD COLUMN updated_at {timestamp}",
        f"ALTER TABLE nodes ADD COLUMN wait_until {timestamp}",
        # v1's single-column indexes become (key, seq, uuid): sort and page on them.
        "DROP INDEX nodes_provision_state_idx",
        "DROP INDEX nodes_driver_idx",
        "CREATE INDEX nodes_created_at_idx ON nodes (created_at, seq, uuid)",
        "CREATE INDEX nodes_updated_at_idx ON nodes (updated_at, seq, uuid)",
        "CREATE INDEX nodes_name_idx ON nodes (name, seq, uuid)",
        "CREATE INDEX nodes_provision_state_idx ON nodes (provision_state, seq, uuid)",
        "CREATE INDEX nodes_provision_updated_at_idx ON nodes (provision_updated_at, seq, uuid)",
        "CREATE INDEX nodes_driver_idx ON nodes (driver, seq, uuid)",
        "CREATE INDEX nodes_state_age_idx ON nodes (provision_state, provision_updated_at)",
        "CREATE INDEX nodes_wait_until_idx ON nodes (wait_until)",
        "CREATE INDEX nodes_resource_class_idx ON nodes (resource_class)",
    ])  # fmt: skip
    _fill(context, raw_connection())


def _fill(context: StepContext, conn: Any) -> None:
    """Fill the new columns from each node's ``data`` (and nothing else)."""
    q = context.q
    updates = []
    for uuid, data in conn.execute("SELECT uuid, data FROM nodes").fetchall():
        try:
            node = Node.from_json(data)
        except IronicFSMError as exc:  # kept as it is: readable by nobody, lost by nobody
            _LOG.warning("Node %s: its record cannot be read (%s); columns left empty", uuid, exc)
            continue
        updates.append((*context.columns(node)[6 : 6 + len(_ADDED)], uuid))
    if updates:
        names = ", ".join(f"{column} = {q}" for column in _ADDED)
        context.execute_many(conn, f"UPDATE nodes SET {names} WHERE uuid = {q}", updates)
