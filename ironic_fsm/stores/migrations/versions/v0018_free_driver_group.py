"""Schema 18: on PostgreSQL the driver's sort index and ``conductor_group``'s hold only the
free nodes.

A flow holds its node for every save of a verb but the last, and on
PostgreSQL every such save is a new row version (each moves the state or a
timestamp, both indexed, so none is HOT) entered in every index the row is
in, though a held node's driver and group never change in a flow. Both
indexes now leave held nodes out, as the timestamps' sort indexes do since
schema 15: a held save enters five indexes, not seven. A page sorted on the
driver, or filtered on either column, reads the few held nodes through the
reservation index and merges (``_paging``); a count by either adds the held
ones (``_sql_counts``). SQLite keeps both whole: an ``UPDATE`` there enters
only the indexes whose columns it sets, and a condition on ``reservation``
would add the two to every save that reserves or releases.

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

from ironic_fsm.stores._schema import FREE_ON_POSTGRES
from ironic_fsm.stores.migrations import run, step_context

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """On PostgreSQL, ``nodes_driver_idx`` and ``nodes_conductor_group_idx`` made again
    ``WHERE reservation IS NULL``; on SQLite nothing but the version."""
    if step_context().dialect != "postgresql":
        return
    statements = []
    for index, _, columns in FREE_ON_POSTGRES:
        statements += [
            f"DROP INDEX {index}",
            f"CREATE INDEX {index} ON nodes ({columns}) WHERE reservation IS NULL",
        ]
    run(statements)
