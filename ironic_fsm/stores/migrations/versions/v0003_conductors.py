"""Schema 3: the conductor registry, one row per conductor (a holder token).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from ironic_fsm.stores.migrations import run, step_context

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """The ``conductors`` table."""
    timestamp = step_context().timestamp
    run([
        "CREATE TABLE conductors (\n"
        "\tholder VARCHAR(255) NOT NULL, \n"
        "\thostname VARCHAR(255) NOT NULL, \n"
        "\tconductor_group VARCHAR(255) NOT NULL, \n"
        "\thardware_types TEXT NOT NULL, \n"
        "\tonline BOOLEAN NOT NULL, \n"
        f"\tstarted_at {timestamp} NOT NULL, \n"
        f"\tupdated_at {timestamp} NOT NULL, \n"
        "\tPRIMARY KEY (holder)\n"
        ")",
        "CREATE INDEX conductors_hostname_idx ON conductors (hostname)",
    ])  # fmt: skip
