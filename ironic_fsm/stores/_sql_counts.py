"""Node counts in SQL: :class:`~._counts.NodeCounter` for ``SQLStore``.

One ``GROUP BY`` on an index that holds the column: the listings' covering
indexes for the state, the hardware type and the conductor group, schema
13's partial index for the nodes in maintenance (by fault), the partial
index of reservations for the nodes held. No record is decoded, and the
answer has a row per value, not per node. On PostgreSQL the driver's and
the group's indexes hold only the free nodes (schema 18): a count of all
nodes by either adds the held ones, counted on the reservation index.
"""

from __future__ import annotations

from typing import Any, Final

from ironic_fsm.stores._counts import check_count
from ironic_fsm.stores._schema import FREE_ON_POSTGRES
from ironic_fsm.stores._statements import Statements

#: The conditions, written out: a partial index serves a query only when the query's
#: own condition is the index's (a bound parameter proves nothing to SQLite's planner).
_MAINTENANCE: Final = {True: "maintenance", False: "NOT maintenance"}
_RESERVED: Final = {True: "reservation IS NOT NULL", False: "reservation IS NULL"}
#: The fields whose index holds only the free nodes on PostgreSQL.
_FREE_ON_POSTGRES: Final = frozenset(key for _, key, _ in FREE_ON_POSTGRES)


class NodeCounts:
    """:meth:`count`: how many nodes per value of one column."""

    def __init__(self, sql: Statements) -> None:
        self._sql = sql
        self._db = sql.db
        #: Counted in two legs, free and held (see the module's note).
        self._split = _FREE_ON_POSTGRES if sql.dialect == "postgresql" else frozenset()

    def count(
        self, field: str, maintenance: bool | None = None, reserved: bool | None = None
    ) -> dict[Any, int]:
        """``SELECT field, COUNT(*) ... GROUP BY field``; the column name is a checked one."""
        check_count(field, maintenance, reserved)
        where = []
        hint = ""  # the index SQLite is told to read
        if maintenance is not None:
            where.append(_MAINTENANCE[maintenance])
        if reserved is not None:
            where.append(_RESERVED[reserved])
            if reserved:  # the few held nodes, through their index; never a walk of the rest
                hint = "nodes_reservation_idx"
        split = reserved is None and field in self._split
        legs = self._sql.free_and_held(where) if split else [(where, hint)]
        statement = " UNION ALL ".join(
            f"SELECT {field}, COUNT(*) FROM nodes{self._sql.index_hint(index)}"
            + (f" WHERE {' AND '.join(terms)}" if terms else "")
            + f" GROUP BY {field}"
            for terms, index in legs
        )
        sql = self._sql
        if sql.echo:
            sql.log(statement)
        with self._db.connection() as conn:
            rows = conn.execute(statement).fetchall()
        counts: dict[Any, int] = {}
        for value, count in rows:
            counts[value] = counts.get(value, 0) + int(count)
        return counts
