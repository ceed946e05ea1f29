"""Schema 6: the node's conductor group, a column on an index; ``''`` for existing rows.

The default fills them, and their ``data`` has no group, which reads back
as ``''`` too: the two agree without rewriting a row.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from ironic_fsm.stores.migrations import run

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """``nodes.conductor_group``."""
    run([
        "ALTER TABLE nodes ADD COLUMN conductor_group VARCHAR(255) NOT NULL DEFAULT ''",
        "CREATE INDEX nodes_conductor_group_idx ON nodes (conductor_group)",
    ])  # fmt: skip
