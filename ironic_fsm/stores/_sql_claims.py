"""Claiming the work queue in SQL: :class:`~._claim.QueueStore` for ``SQLStore``.

The state index for the scan, ``RETURNING`` for the claim. On PostgreSQL
the reservation is ``UPDATE ... WHERE uuid IN (SELECT ... FOR UPDATE SKIP
LOCKED) RETURNING``: two conductors reserving at once never wait for each
other's row locks, and each node goes to one of them.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Sequence
from typing import Any

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node
from ironic_fsm.stores._claim import QueuedNode
from ironic_fsm.stores._statements import Statements, to_node

#: Most UUIDs bound to one SQLite statement (its limit on variables is far above).
_CHUNK = 500


def check_claimer(holder: str) -> None:
    """Refuse a holder no reservation column keeps, before anything is read."""
    if not isinstance(holder, str) or "\x00" in holder or len(holder) > 255:
        raise InvalidParameterValue(f"Not a reservation holder: {holder!r}", field="holder")


class Claims:
    """The work queue read from indexed columns, and reserved from in batches."""

    def __init__(self, sql: Statements) -> None:
        self._sql = sql
        self._db = sql.db

    def queued(self, states: Collection[str], limit: int | None) -> builtins.list[QueuedNode]:
        """One range of the ``provision_state`` index per state.

        Without ``limit``, sorted here, not by ``ORDER BY``, for the reason
        ``in_states`` gives: the planner must search the index that finds the
        few queued nodes. With it, the server sorts what that index found
        and sends only the first rows: a claim pass wants a few nodes, and
        decoding (and ring-checking) a queue of thousands on every wake was
        the claim thread's cost. On PostgreSQL ``OFFSET 0`` keeps the scan
        apart from the sort (the planner would otherwise walk the
        ``provision_updated_at`` index of the whole fleet for the few queued).
        """
        wanted = sorted(states)
        if not wanted or (limit is not None and limit < 1):
            return []
        q = self._sql.q
        marks = ", ".join(q for _ in wanted)
        # SQLite, without statistics, would walk the free nodes (see ``index_hint``).
        hint = " INDEXED BY nodes_provision_state_idx" if self._db.name == "sqlite" else ""
        sql = (
            f"SELECT provision_updated_at, seq, uuid, driver, conductor_group FROM nodes{hint} "
            f"WHERE provision_state IN ({marks}) AND reservation IS NULL"
        )
        params: builtins.list[Any] = list(wanted)
        if limit is not None:
            if self._db.name == "postgresql":
                sql = f"SELECT * FROM ({sql} OFFSET 0) AS queue"
            sql += (
                f" ORDER BY provision_updated_at IS NULL, provision_updated_at, seq, uuid LIMIT {q}"
            )
            params.append(limit)
        if self._sql.echo:
            self._sql.log(sql)
        with self._db.connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        rows.sort(key=lambda r: (r[0] is None, r[0] if r[0] is not None else "", r[1], r[2]))
        return [QueuedNode(r[2], r[3], r[4]) for r in rows]

    def reserve(
        self, uuids: Sequence[str], holder: str, states: Collection[str]
    ) -> builtins.list[Node]:
        """One ``UPDATE ... RETURNING`` (per 500 UUIDs on SQLite); the records decoded after.

        The database must have ``RETURNING`` (SQLite 3.35 or later); the
        store reserves one node at a time where it has not.
        """
        wanted = sorted(states)
        if not uuids or not wanted:
            return []
        rows: builtins.list[Any] = []
        with self._db.connection() as conn:
            if self._db.name == "postgresql":
                sql = (
                    "UPDATE nodes SET reservation = %s WHERE uuid IN (SELECT uuid FROM nodes "
                    "WHERE uuid = ANY(%s) AND reservation IS NULL AND provision_state = ANY(%s) "
                    "FOR UPDATE SKIP LOCKED) RETURNING data, reservation, version"
                )
                rows = self._claim_rows(conn, sql, [holder, list(uuids), wanted])
            else:
                for start in range(0, len(uuids), _CHUNK):
                    chunk = list(uuids[start : start + _CHUNK])
                    sql = (
                        "UPDATE nodes SET reservation = ? WHERE uuid IN "
                        f"({', '.join('?' for _ in chunk)}) AND reservation IS NULL AND "
                        f"provision_state IN ({', '.join('?' for _ in wanted)}) "
                        "RETURNING data, reservation, version"
                    )
                    rows += self._claim_rows(conn, sql, [holder, *chunk, *wanted])
        return [to_node(*row) for row in rows]

    def _claim_rows(self, conn: Any, sql: str, params: Sequence[Any]) -> builtins.list[Any]:
        if self._sql.echo:
            self._sql.log(sql)
        return list(conn.execute(sql, params).fetchall())
