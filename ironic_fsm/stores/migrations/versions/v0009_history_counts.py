"""Schema 9: a node's history count and last ``seq`` live in its own row.

A save with history writes the node row anyway; counting there spares the
commit the counts table and its two indexes (three pages on SQLite, half
the cost of an entry). The index on the count keeps the name it had on the
counts table: it serves the trim as before.

On SQLite, ``node_history`` loses its key on ``uuid``: nothing reads an
entry by its UUID alone (a node's entries are read whole, on ``(node_uuid,
created_at, seq)``), and every entry written costs each index a page of the
commit. Entries are copied as they are, ``seq`` too, so their order is
kept. PostgreSQL keeps its key: a B-tree page there is not a commit's page.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from ironic_fsm.stores.migrations import history_table, run, step_context

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """The counts move into ``nodes``; SQLite's history loses its key."""
    run([
        "ALTER TABLE nodes ADD COLUMN history_entries INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE nodes ADD COLUMN history_last_seq BIGINT NOT NULL DEFAULT 0",
        "UPDATE nodes SET "
        "history_entries = (SELECT c.entries FROM node_history_counts c "
        "WHERE c.node_uuid = nodes.uuid), "
        "history_last_seq = (SELECT c.last_seq FROM node_history_counts c "
        "WHERE c.node_uuid = nodes.uuid) "
        "WHERE uuid IN (SELECT node_uuid FROM node_history_counts)",
        "DROP TABLE node_history_counts",
        "CREATE INDEX node_history_counts_entries_idx ON nodes (history_entries)",
    ])  # fmt: skip
    context = step_context()
    if context.dialect != "sqlite":
        return
    run([
        history_table("node_history_v9", context.timestamp, key=""),
        "INSERT INTO node_history_v9 SELECT uuid, node_uuid, created_at, seq, severity, "
        "event_type, event, conductor, username FROM node_history",
        "DROP TABLE node_history",
        "ALTER TABLE node_history_v9 RENAME TO node_history",
        "CREATE INDEX node_history_node_idx ON node_history (node_uuid, created_at, seq)",
    ])  # fmt: skip
