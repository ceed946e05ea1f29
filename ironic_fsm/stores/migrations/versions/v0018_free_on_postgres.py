"""Schema 18: on PostgreSQL the indexes of ``provision_state``, ``driver``,
``conductor_group`` and ``seq`` hold only the free nodes.

A flow holds its node for every save of a verb but the last, and on
PostgreSQL every such save is a new row version (each moves the state or a
timestamp, both indexed, so none is HOT) entered in every index the row is
in. These four indexes now leave held nodes out, as the timestamps' sort
indexes do since schema 15: a held save enters three indexes, not seven
(the primary key, the unique name, the reservation's). A page sorted on the
state or the driver, or filtered on either or the group, reads the few
held nodes through the reservation index and merges (``_paging``); a scan
by state that names no reservation adds them the same way (``_scans``); a
count by any of the three adds the held ones (``_sql_counts``); a new
node's ``seq`` follows the larger of the free nodes' last (this index) and
the held ones' (``_statements``). What looks only for free nodes (the
claims' queue, the periodic scans, which name ``reservation IS NULL``)
reads these indexes as before. SQLite keeps all four whole: an ``UPDATE``
there enters only the indexes whose columns it sets, and a condition on
``reservation`` would add them to every save that reserves or releases.

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
    """On PostgreSQL, each index of :data:`FREE_ON_POSTGRES` made again ``WHERE reservation
    IS NULL``; on SQLite nothing but the version."""
    if step_context().dialect != "postgresql":
        return
    statements = []
    for index, _, columns in FREE_ON_POSTGRES:
        statements += [
            f"DROP INDEX {index}",
            f"CREATE INDEX {index} ON nodes ({columns}) WHERE reservation IS NULL",
        ]
    run(statements)
