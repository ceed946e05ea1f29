"""Schema 11: the history count's index holds only the nodes near a limit.

Every save with history moves its node's count, and an index on the count
with it: on SQLite a page more in the commit, on PostgreSQL an index entry
more with every save of the node (an update that cannot stay on its page
enters the row in every index). Most nodes stay far below Ironic's limit of
300 entries, and the trim looks only for nodes over it, so the index leaves
the others out (``_schema.HISTORY_INDEXED_OVER`` is this 100).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from ironic_fsm.stores.migrations import run

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """``node_history_counts_entries_idx``, partial."""
    run([
        "DROP INDEX node_history_counts_entries_idx",
        "CREATE INDEX node_history_counts_entries_idx ON nodes (history_entries) "
        "WHERE history_entries > 100",
    ])  # fmt: skip
