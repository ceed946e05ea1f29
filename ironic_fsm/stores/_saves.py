"""The save path of ``SQLStore``: one conditional ``UPDATE`` per save, and what it wrote.

A save sets only the columns that differ from what this store last wrote
of the node at its version (every column set costs its indexes an entry,
even to the same value), so the part remembers, per node, the columns and
the record it wrote last: the columns for the next save's statement, the
record for :meth:`Saves.last_written` (a verb's decision without a read).
Handed the dialect, the statement texts, the row builder and the history
part; it knows no store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ironic_fsm.history import HistoryEntry
from ironic_fsm.node import Node
from ironic_fsm.stores._connect import _Connection, _Database
from ironic_fsm.stores._history import History
from ironic_fsm.stores._rows import Rows
from ironic_fsm.stores._schema import _CREATED, _RESERVATION
from ironic_fsm.stores._statements import Statements, save_refusal, to_node
from ironic_fsm.stores.base import check_history

#: Most nodes whose last written columns a store remembers (see ``Saves._statement``).
_WRITTEN_CAP: Final = 50_000
#: Most nodes whose last written record a store remembers (see ``last_written``): a
#: record is a kilobyte or two, so a few megabytes, for the nodes at work now.
_RECENT_CAP: Final = 4_096


class Saves:
    """Writes a node if its version is current (and its reservation as asked); remembers it.

    Thread-safe as the store is: each cache is one ``dict`` written a key
    at a time and, when full, emptied in one call (only a cost: the next
    saves set every column, the next verb reads the node first).
    """

    def __init__(self, db: _Database, sql: Statements, rows: Rows, history: History) -> None:
        self._db = db
        self._sql = sql
        self._row = rows.row
        self._history = history
        #: Per node: the version written and the column values set at it.
        self._written: dict[str, tuple[int, tuple[Any, ...]]] = {}
        #: The last record this store wrote of each node (version, JSON, reservation).
        self._recent: dict[str, tuple[int, str, str | None]] = {}
        #: Statement texts by (held, keep, counted, free, *columns set).
        self._texts: dict[tuple[Any, ...], str] = {}

    def save(
        self,
        node: Node,
        history: Sequence[HistoryEntry],
        free: bool,
        holder: str | None = None,
    ) -> None:
        """``SQLStore.save``; ``free``: only if the row is unreserved (``save_reserving``);
        ``holder``: only if the row is reserved by it (``save_held``)."""
        data, values = self._row(node)
        if history:
            check_history(history, node)
        new_version = node.version + 1
        rows: list[Any] = []
        # The reservation the row must hold (the WHERE), if any.
        expect = holder if holder is not None else None if free else node.reservation
        # One autocommit statement, but for history on SQLite: a transaction.
        apart = bool(history) and not self._sql.history_cte
        opened = self._db.transaction(node) if apart else self._db.connection(node)
        with opened as conn:
            written = self._update(conn, node, values, data, expect, history, free)
            if written == 0 and expect is not None and holder is None:
                # A plain save of a node the row is not held as: set the reservation too.
                written = self._update(conn, node, values, data, None, history)
            if written == 0:
                checked = free or holder is not None
                why = self._sql.version_holder if checked else self._sql.version
                rows = conn.execute(why, (node.uuid,)).fetchall()
            elif apart:
                self._history.insert(conn, history, last=written)
        if written == 0:
            raise save_refusal(node, rows, free, holder)
        self.remember(node.uuid, new_version, values, data)
        node.version = new_version

    def remember(self, uuid: str, version: int, values: tuple[Any, ...], data: str) -> None:
        """What this store wrote last: the columns (see ``_statement``) and the record
        (:meth:`last_written`). Each cache, when full, is emptied at once (one call: safe
        from any thread)."""
        if len(self._written) >= _WRITTEN_CAP:
            self._written.clear()  # only a cost: the next saves set every column
        self._written[uuid] = (version, values)
        if len(self._recent) >= _RECENT_CAP:
            self._recent.clear()  # only a cost: the next verb on each node reads it first
        self._recent[uuid] = (version, data, values[_RESERVATION])

    def forget(self, uuid: str) -> None:
        """The node is gone: nothing written of it is remembered."""
        self._written.pop(uuid, None)
        self._recent.pop(uuid, None)

    def last_written(self, uuid: str) -> Node | None:
        """A copy of the node as this store last wrote it, if it remembers; maybe stale."""
        found = self._recent.get(uuid)
        return None if found is None else to_node(found[1], found[2], found[0])

    def _update(
        self,
        conn: _Connection,
        node: Node,
        values: tuple[Any, ...],
        data: str,
        expect: str | None,
        history: Sequence[HistoryEntry],
        free: bool = False,
    ) -> int:
        """Run the save's ``UPDATE``; 0 if refused (nothing written).

        ``expect``: the reservation the row must hold, if any (``AND reservation = ?``).

        Else how many rows it wrote: 1, or on PostgreSQL with ``history``
        the entries it inserted too. SQLite, counting ``history`` in the
        row: the last ``seq`` of the node's history, for the entries' insert.
        """
        n = len(history)
        held = expect is not None
        # A reservation the row already holds and keeps is left out of the SET.
        keep = held and node.reservation == expect
        sql, params = self._statement(node, values, held, keep, n > 0, free)
        if n:
            params.extend((n, n))
        params.extend((node.version + 1, data, node.uuid, node.version))
        if held:
            params.append(expect)
        if n and self._sql.history_cte:
            params.extend(self._history.arrays(history))
        if self._sql.echo:
            self._sql.log(sql)
        cursor = conn.execute(sql, params)
        if n and self._sql.history_cte:
            return int(cursor.rowcount)
        if not n or not self._db.returning:
            written = int(cursor.rowcount)
            return self._history.last(conn, node.uuid) if n and written else written
        rows = cursor.fetchall()
        return int(rows[0][0]) if rows else 0

    def _statement(
        self,
        node: Node,
        values: tuple[Any, ...],
        held: bool,
        keep: bool,
        counted: bool,
        free: bool,
    ) -> tuple[str, list[Any]]:
        """The ``UPDATE`` for this save: only the columns that differ from what we last wrote.

        Every column set costs its indexes an update, even to the same
        value (on SQLite a page more in the commit), and most saves change
        two or three of fifteen. What this store last wrote at
        ``node.version`` is what the row holds, since any other change of
        these columns bumps the version (and then the ``WHERE version``
        refuses the save). Reserving changes ``reservation`` without a new
        version, so it is set unless ``keep``: the statement then requires
        the row to hold the node's reservation already (``held``: the usual
        save of a reserved node). ``held`` alone: the row must hold the
        caller's reservation, which the save changes (a release in the
        final save, ``save_held``).
        ``counted``: the save writes history, counted in the same row (and on
        PostgreSQL inserted by the same statement). ``free``: only if the row is
        unreserved (the reservation is set, as unless ``keep``).
        """
        known = self._written.get(node.uuid)
        skip = _RESERVATION if keep else -1
        if known is None or known[0] != node.version:
            changed = tuple(i for i in range(len(values)) if i != skip)
        else:
            old = known[1]
            changed = tuple(
                i
                for i, value in enumerate(values)
                if i != skip
                and (
                    i == _RESERVATION or (value != old[i] and (i != _CREATED or value is not None))
                )
            )
        key = (held, keep, counted, free, *changed)
        sql = self._texts.get(key)
        if sql is None:
            sql = self._texts[key] = self._sql.save_text(changed, held, counted, free)
        return sql, [values[i] for i in changed]
