"""Listing conditions and the periodic scans in SQL: filters become ``WHERE`` terms.

The scans (:meth:`Scans.reserved`, :meth:`Scans.in_states`,
:meth:`Scans.waking`) read their candidates through one index each and
decode only the rows they return; on PostgreSQL a scan by state that names
no reservation reads two, the free nodes on the state's index and the held
ones on the reservation index (schema 18), in one statement.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any, Final

from ironic_fsm.node import Node
from ironic_fsm.stores._query import SET
from ironic_fsm.stores._schema import V7_WAIT_STATES, V7_WAITING
from ironic_fsm.stores._statements import Statements, to_node
from ironic_fsm.stores.base import Reserved

_WAITING: Final = frozenset(V7_WAIT_STATES)


def where_terms(filters: dict[str, Any], q: str) -> tuple[list[str], list[Any]]:
    """SQL conditions for filters normalised by :func:`~.base.normalize_filters`."""
    where: list[str] = []
    params: list[Any] = []
    for key, value in filters.items():
        if value is None:
            where.append(f"{key} IS NULL")
        elif value is SET:
            where.append(f"{key} IS NOT NULL")
        elif isinstance(value, frozenset):
            where.append(f"{key} IN ({', '.join(q for _ in value)})")
            params.extend(sorted(value))
        else:
            where.append(f"{key} = {q}")
            params.append(value)
    return where, params


class Scans:
    """The periodic scans of :class:`~.base.ScanningStore` in SQL, given checked filters."""

    def __init__(self, sql: Statements) -> None:
        self._sql = sql
        self._db = sql.db
        #: On PostgreSQL the state's index holds the free nodes only (schema 18,
        #: :data:`~._schema.FREE_ON_POSTGRES`).
        self._split = sql.dialect == "postgresql"

    def reserved(self) -> builtins.list[Reserved]:
        """Every reserved node's UUID, holder and ``updated_at``: one index range, no decoding."""
        sql = self._sql
        if sql.echo:
            sql.log(sql.reserved)
        with self._db.connection() as conn:
            rows = conn.execute(sql.reserved).fetchall()
        rows.sort(key=lambda r: (r[3], r[0]))
        return [
            Reserved(r[0], r[1], None if r[2] is None else self._db.read_time(r[2])) for r in rows
        ]

    def in_states(
        self, wanted: dict[str, Any], updated_before: datetime | None, limit: int | None
    ) -> builtins.list[Node]:
        """In the states asked (changed before ``updated_before``), oldest first; on indexes."""
        where, params = where_terms(wanted, self._sql.q)
        if updated_before is not None:
            where.append(f"provision_updated_at < {self._sql.q}")
            params.append(self._db.bind_time(updated_before))
        asked = wanted["provision_state"]
        if _WAITING.issuperset({asked} if isinstance(asked, str) else asked):
            where.append(V7_WAITING)  # the partial index's condition, word for word
            return self._scan(where, params, "provision_updated_at", limit, "nodes_state_age_idx")
        # Naming no reservation on PostgreSQL: the free nodes on the state's index, the held
        # ones on the reservation index.
        split = self._split and "reservation" not in wanted
        return self._scan(
            where, params, "provision_updated_at", limit, "nodes_provision_state_idx", split
        )

    def waking(
        self, wanted: dict[str, Any], before: datetime, limit: int | None
    ) -> builtins.list[Node]:
        """Nodes whose ``wait`` step is up at ``before``, earliest first; on an index."""
        where, params = where_terms(wanted, self._sql.q)
        where.append(f"wait_until <= {self._sql.q}")
        params.append(self._db.bind_time(before))
        return self._scan(where, params, "wait_until", limit, "nodes_wait_until_idx")

    def _scan(
        self,
        where: builtins.list[str],
        params: builtins.list[Any],
        by: str,
        limit: int | None,
        index: str,
        split: bool = False,
    ) -> builtins.list[Node]:
        """Candidates through ``index``, sorted here (unset ``by`` last), then decoded.

        No ``ORDER BY``: it could make the planner walk an index in order
        instead of searching the one that finds the few candidates.
        ``split``: in two legs, the free nodes and the held ones, one statement.
        """
        legs = self._sql.free_and_held(where, index) if split else [(where, index)]
        sql = " UNION ALL ".join(
            f"SELECT {by}, seq, uuid, data, reservation, version FROM nodes"
            f"{self._sql.index_hint(hint)} WHERE " + " AND ".join(terms)
            for terms, hint in legs
        )
        params = params * len(legs)
        if self._sql.echo:
            self._sql.log(sql)
        with self._db.connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        rows.sort(key=lambda r: (r[0] is None, r[0] if r[0] is not None else "", r[1], r[2]))
        return [to_node(r[3], r[4], r[5]) for r in rows[:limit]]
