"""Schema 10: the node's shard and parent node, columns on indexes.

Both are filtered (and listings leave out child nodes), so columns; existing
rows have neither, in ``data`` as in the columns (NULL), so no row is
rewritten.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from ironic_fsm.stores.migrations import run

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """``nodes.shard``, ``nodes.parent_node``."""
    run([
        "ALTER TABLE nodes ADD COLUMN shard VARCHAR(255)",
        "ALTER TABLE nodes ADD COLUMN parent_node VARCHAR(36)",
        "CREATE INDEX nodes_shard_idx ON nodes (shard)",
        "CREATE INDEX nodes_parent_node_idx ON nodes (parent_node)",
    ])  # fmt: skip
