"""Node history in SQL: the ``node_history`` rows, counted in their node's row.

Entries are written in the transaction of the save that caused them
(:meth:`~ironic_fsm.stores.sql.SQLStore.save`) or on their own
(:meth:`add`); the counts let the periodic trim find the nodes over
the limit without reading the others.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, Final

import orjson

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.history import HistoryEntry
from ironic_fsm.stores._schema import HISTORY_INDEXED_OVER
from ironic_fsm.stores._statements import Statements
from ironic_fsm.stores.base import check_history, check_time

#: Later than any time a conductor records (a trim without a minimum age).
_END: Final = datetime(9999, 12, 31, tzinfo=timezone.utc)


class History:
    """:class:`~ironic_fsm.stores.base.HistoryStore` on the store's statements.

    ``bound``: the instants the store bound lately, as the database takes
    them (the store's save fills it; a save's entries share its time).
    """

    def __init__(self, sql: Statements, bound: dict[datetime, Any]) -> None:
        self._sql = sql
        self._db = sql.db
        self._bound = bound

    def last(self, conn: Any, node_uuid: str) -> int:
        """The node's last history ``seq`` (SQLite before ``RETURNING``: the row is locked)."""
        return int(conn.execute(self._sql.history_last, (node_uuid,)).fetchall()[0][0])

    def _count(self, conn: Any, node_uuid: str, n: int) -> int | None:
        """Count ``n`` more entries in the node's row; its last ``seq`` (``None``: no such node)."""
        params = (n, n, node_uuid)
        if self._db.returning:
            rows = conn.execute(self._sql.history_count, params).fetchall()
            return int(rows[0][0]) if rows else None
        if conn.execute(self._sql.history_count, params).rowcount:
            return self.last(conn, node_uuid)
        return None

    def insert(self, conn: Any, entries: Sequence[HistoryEntry], *, last: int) -> None:
        """Insert one node's ``entries``, counted already: the last one gets ``seq`` ``last``."""
        first = last - len(entries) + 1
        rows = [
            (
                e.uuid,
                e.node_uuid,
                self._bind(e.created_at),
                first + i,
                e.severity,
                e.event_type,
                e.event,
                e.conductor,
                e.user,
            )
            for i, e in enumerate(entries)
        ]
        if len(rows) == 1:
            conn.execute(self._sql.history_insert, rows[0])
        else:
            self._sql.execute_many(conn, self._sql.history_insert, rows)

    def _bind(self, created: datetime) -> Any:
        """``created`` as the database takes it; a save's entries are made at the node's
        ``updated_at``, which the save bound a moment ago (the store keeps it)."""
        bound = self._bound.get(created)
        return self._db.bind_time(created) if bound is None else bound

    def arrays(self, entries: Sequence[HistoryEntry]) -> builtins.list[Any]:
        """The parameters of ``_q_history_after_save``: the count, then the entries as JSON.

        Entries of one save share their time as a rule: it is bound once.

        Raises:
            InvalidParameterValue: a text is not valid Unicode (a lone surrogate).
        """
        bind = self._bind
        rows: builtins.list[tuple[Any, ...]] = []
        last: Any = None
        bound: Any = None
        for e in entries:
            if e.created_at is not last:
                last, bound = e.created_at, bind(e.created_at)
            rows.append((e.uuid, bound, e.severity, e.event_type, e.event, e.conductor, e.user))
        try:
            document = orjson.dumps(rows)
        except orjson.JSONEncodeError as exc:
            raise InvalidParameterValue(
                f"History of node {entries[0].node_uuid} cannot be stored: {exc}",
                node=entries[0].node_uuid,
            ) from exc
        return [len(rows), document.decode()]

    def _write(self, conn: Any, groups: dict[str, builtins.list[HistoryEntry]]) -> None:
        """Count and insert the entries of each node, in the caller's transaction.

        Entries of a node that is not stored (deleted meanwhile) are dropped:
        counting in the node's row finds none, and the row lock it takes
        makes a concurrent delete wait for the entries, then take them along.
        On PostgreSQL a node's count and entries are one statement.
        """
        for node_uuid, group in groups.items():
            if self._sql.history_cte:
                params = [len(group), len(group), node_uuid, *self.arrays(group)]
                conn.execute(self._sql.history_add, params)
                continue
            last = self._count(conn, node_uuid, len(group))
            if last is not None:
                self.insert(conn, group, last=last)

    def add(self, entries: Sequence[HistoryEntry]) -> None:
        """Write entries that go with no node change, all or none; unknown nodes: none.

        The node's version stays: its count is bookkeeping, not the node.
        Entries of one node on PostgreSQL: one statement in autocommit.
        """
        check_history(entries)
        if not entries:
            return
        groups: dict[str, builtins.list[HistoryEntry]] = {}
        for entry in entries:
            groups.setdefault(entry.node_uuid, []).append(entry)
        alone = self._sql.history_cte and len(groups) == 1
        opened = self._db.connection() if alone else self._db.transaction()
        with opened as conn:
            self._write(conn, groups)

    def of_node(self, node_uuid: str) -> builtins.list[HistoryEntry]:
        """The node's entries, oldest first: one range of the ``(node_uuid, created_at)`` index."""
        if not isinstance(node_uuid, str) or "\x00" in node_uuid:
            return []
        with self._db.connection() as conn:
            rows = conn.execute(self._sql.history, (node_uuid,)).fetchall()
        read = self._db.read_time
        return [
            HistoryEntry(
                uuid=uuid,
                node_uuid=node,
                created_at=read(created),
                severity=severity,
                event_type=event_type,
                event=event,
                conductor=conductor,
                user=user,
            )
            for uuid, node, created, severity, event_type, event, conductor, user in rows
        ]

    def trim(self, max_entries: int, *, before: datetime | None, limit: int) -> int:
        """Delete at most ``limit`` of the oldest entries beyond ``max_entries`` per node.

        One transaction. Reads only the nodes over the limit (a range of the
        index on the nodes' history count) and, per node, the entries it deletes (a range of
        ``(node_uuid, created_at, seq)``): the fleet's size does not count. A limit under
        :data:`~._schema.HISTORY_INDEXED_OVER` reads every node's count instead.
        """
        if before is not None:
            check_time(before, "before")
        cutoff = self._db.bind_time(before or _END)
        deleted = 0
        with self._db.transaction() as conn:
            indexed = max_entries >= HISTORY_INDEXED_OVER
            query = self._sql.history_over if indexed else self._sql.history_over_any
            over = conn.execute(query, (max_entries,)).fetchall()
            for node_uuid, entries in over:
                if deleted >= limit:
                    break
                wanted = min(int(entries) - max_entries, limit - deleted)
                gone = conn.execute(self._sql.history_trim, (node_uuid, cutoff, wanted)).rowcount
                if gone:
                    conn.execute(self._sql.history_uncount, (gone, node_uuid))
                    deleted += gone
        return deleted
