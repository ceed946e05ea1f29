"""Schema 4: node history, and a per-node count that lets the trim skip the others.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from ironic_fsm.stores.migrations import history_table, run, step_context

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """``node_history`` on ``(node_uuid, created_at, seq)``; ``node_history_counts``."""
    run([
        history_table("node_history", step_context().timestamp),
        "CREATE INDEX node_history_node_idx ON node_history (node_uuid, created_at, seq)",
        "CREATE TABLE node_history_counts (\n"
        "\tnode_uuid VARCHAR(36) NOT NULL, \n"
        "\tentries INTEGER NOT NULL, \n"
        "\tlast_seq BIGINT NOT NULL, \n"
        "\tPRIMARY KEY (node_uuid)\n"
        ")",
        "CREATE INDEX node_history_counts_entries_idx ON node_history_counts (entries)",
    ])  # fmt: skip
