"""Schema 13: the nodes in maintenance, by fault, on an index of their own.

A metrics scrape counts them every few seconds; without an index that is a
walk of every row. Partial, so that a save of a node out of maintenance
(nearly every save) writes nothing more.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from ironic_fsm.stores.migrations import run

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """``nodes_maintenance_idx``."""
    run(["CREATE INDEX nodes_maintenance_idx ON nodes (fault) WHERE maintenance"])
