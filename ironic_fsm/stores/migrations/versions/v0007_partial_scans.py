"""Schema 7: two indexes hold only the rows their scans look for.

Every entry a save moves costs its commit a page or two (the rest of a
lifecycle's commits is one page each): the state-age index now holds the
nodes in wait states only, the reservation index the reserved nodes only,
so that most saves and every reservation of a free node leave them alone.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from ironic_fsm.stores._schema import V7_WAITING
from ironic_fsm.stores.migrations import run

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """The state-age and reservation indexes, partial."""
    run([
        "DROP INDEX nodes_state_age_idx",
        "CREATE INDEX nodes_state_age_idx ON nodes (provision_state, provision_updated_at) "
        f"WHERE {V7_WAITING}",
        "DROP INDEX nodes_reservation_idx",
        "CREATE INDEX nodes_reservation_idx ON nodes (reservation) WHERE reservation IS NOT NULL",
    ])  # fmt: skip
