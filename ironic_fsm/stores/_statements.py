"""The statements of :class:`~ironic_fsm.stores.sql.SQLStore`, written once per store.

Every statement is built when the store opens, with its dialect's
placeholder and features (``RETURNING``, row locks, SQLite index hints), so
that a call only binds parameters. The store's scans, history and registry parts
(:mod:`._scans`, :mod:`._history`, :mod:`._registry`) read them from here too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from ironic_fsm.node import Node
from ironic_fsm.stores._connect import _Database
from ironic_fsm.stores._schema import _COLUMNS, _CREATED, HISTORY_INDEXED_OVER

_HISTORY_FIELDS: Final = (
    "uuid, node_uuid, created_at, severity, event_type, event, conductor, username"
)

# The store's logger: statements are logged under the store's name.
_LOG: Final = logging.getLogger("ironic_fsm.stores.sql")


def _to_node(data: str, reservation: str | None, version: int) -> Node:
    node = Node.from_json(data)
    node.reservation = reservation  # the columns are authoritative over the JSON
    node.version = version
    return node


class _SQLStatements:
    """The prepared statement texts, and the few helpers every part of the store runs them with."""

    _db: _Database
    _echo: bool
    dialect: str
    #: Instants the store bound lately (see ``SQLStore._time``), as the database takes them.
    _bound: dict[datetime, Any]

    def _build_statements(self, q: str) -> None:
        """Every statement, written once with this dialect's placeholder."""
        self._q_get = (
            f"SELECT uuid, data, reservation, version FROM nodes WHERE uuid = {q} OR name = {q}"
        )
        self._q_reserve = (
            f"UPDATE nodes SET reservation = {q} WHERE uuid = {q} AND reservation IS NULL"
        )
        if self._db.returning:
            self._q_reserve += " RETURNING data, reservation, version"
        self._q_by_uuid = f"SELECT data, reservation, version FROM nodes WHERE uuid = {q}"
        self._q_release = (
            f"UPDATE nodes SET reservation = NULL WHERE uuid = {q} AND reservation = {q}"
        )
        self._q_version = f"SELECT version FROM nodes WHERE uuid = {q}"
        names = ", ".join(_COLUMNS)
        marks = ", ".join(q for _ in _COLUMNS)
        self._q_create = (
            f"INSERT INTO nodes (uuid, {names}, version, seq, created_at, data) VALUES "
            f"({q}, {marks}, 1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM nodes), {q}, {q})"
        )
        self._q_create_seq = (
            f"INSERT INTO nodes (uuid, {names}, version, seq, created_at, data) VALUES "
            f"({q}, {marks}, 1, {q}, {q}, {q})"
        )
        self._q_uuid_exists = f"SELECT 1 FROM nodes WHERE uuid = {q}"
        self._q_delete = f"DELETE FROM nodes WHERE uuid = {q}"
        self._q_select = "SELECT data, reservation, version FROM nodes"
        self._q_heartbeat = (
            f"INSERT INTO holders (holder, heartbeat) VALUES ({q}, {q}) "
            "ON CONFLICT (holder) DO UPDATE SET heartbeat = excluded.heartbeat"
        )
        self._q_holders = "SELECT holder, heartbeat FROM holders"
        self._q_conductor_upsert = (
            "INSERT INTO conductors (holder, hostname, conductor_group, hardware_types, online, "
            f"started_at, updated_at) VALUES ({q}, {q}, {q}, {q}, {q}, {q}, {q}) "
            "ON CONFLICT (holder) DO UPDATE SET hostname = excluded.hostname, "
            "conductor_group = excluded.conductor_group, "
            "hardware_types = excluded.hardware_types, online = excluded.online, "
            "started_at = excluded.started_at, updated_at = excluded.updated_at"
        )
        self._q_conductor_prune = (
            f"DELETE FROM conductors WHERE hostname = {q} AND holder <> {q} "
            f"AND (online = {q} OR updated_at < {q})"
        )
        self._q_conductor_touch = (
            f"UPDATE conductors SET online = {q}, updated_at = {q} WHERE holder = {q}"
        )
        self._q_conductors = (
            "SELECT holder, hostname, conductor_group, hardware_types, online, started_at, "
            "updated_at FROM conductors"
        )
        # ">= ''" is "IS NOT NULL" for text, but SQLite searches its index only for a range.
        # No ORDER BY (sorted after): the reservation index finds the few, in any order.
        self._q_reserved = (
            f"SELECT uuid, reservation, updated_at, seq FROM nodes"
            f"{self._index_hint('nodes_reservation_idx')} WHERE reservation >= ''"
        )
        # A node's history count and last seq, in its row: set by the save that writes entries,
        # or alone (then no version bump: they are bookkeeping, not the node).
        self._history_sets = [
            f"history_entries = history_entries + {q}",
            f"history_last_seq = history_last_seq + {q}",
        ]
        self._q_history_count = f"UPDATE nodes SET {', '.join(self._history_sets)} WHERE uuid = {q}"
        if self._db.returning:
            self._q_history_count += " RETURNING history_last_seq"
        self._q_history_last = f"SELECT history_last_seq FROM nodes WHERE uuid = {q}"
        self._q_history_insert = (
            "INSERT INTO node_history (uuid, node_uuid, created_at, seq, severity, event_type, "
            f"event, conductor, username) VALUES ({q}, {q}, {q}, {q}, {q}, {q}, {q}, {q}, {q})"
        )
        # PostgreSQL: a save's entries go in its own statement, after the node's UPDATE as a
        # CTE (``WITH saved AS (UPDATE ... RETURNING uuid, history_last_seq)``): inserted only
        # if the row is, numbered from the count the UPDATE returns, one round trip, autocommit.
        # The entries travel as one JSON array of rows: binding seven arrays cost the save more
        # than the INSERT itself (psycopg dumps arrays in Python), and the text, unlike a
        # VALUES list, is the same for any number of entries (one prepared statement).
        self._history_cte = self._db.name == "postgresql"
        self._q_history_after_save = (
            "INSERT INTO node_history (uuid, node_uuid, created_at, seq, severity, event_type, "
            "event, conductor, username) SELECT x.e->>0, saved.uuid, (x.e->>1)::timestamptz, "
            f"saved.history_last_seq - {q} + x.n, x.e->>2, x.e->>3, x.e->>4, x.e->>5, x.e->>6 "
            f"FROM saved, jsonb_array_elements({q}::jsonb) WITH ORDINALITY AS x(e, n)"
        )
        self._q_history_add = (
            f"WITH saved AS (UPDATE nodes SET {', '.join(self._history_sets)} WHERE uuid = {q} "
            "RETURNING uuid, history_last_seq) " + self._q_history_after_save
        )
        self._q_history = (
            f"SELECT {_HISTORY_FIELDS} FROM node_history WHERE node_uuid = {q} "
            "ORDER BY created_at, seq"
        )
        # The index holds the nodes over HISTORY_INDEXED_OVER: a query may use it only if it
        # says so in the index's own words; a lower limit reads every node's count.
        self._q_history_over = (
            "SELECT uuid, history_entries FROM nodes"
            f"{self._index_hint('node_history_counts_entries_idx')} WHERE history_entries > {q}"
            f" AND history_entries > {HISTORY_INDEXED_OVER}"
        )
        self._q_history_over_any = (
            f"SELECT uuid, history_entries FROM nodes WHERE history_entries > {q}"
        )
        # SQLite (v9): an entry's key is its rowid, its UUID is not indexed.
        key = "rowid" if self._db.name == "sqlite" else "uuid"
        self._q_history_trim = (
            f"DELETE FROM node_history WHERE {key} IN (SELECT {key} FROM node_history "
            f"WHERE node_uuid = {q} AND created_at < {q} ORDER BY created_at, seq LIMIT {q})"
        )
        self._q_history_uncount = (
            f"UPDATE nodes SET history_entries = history_entries - {q} WHERE uuid = {q}"
        )
        self._q_history_drop = f"DELETE FROM node_history WHERE node_uuid = {q}"
        self._q_uuid_of_name = f"SELECT uuid FROM nodes WHERE name = {q}"
        self._q = q

    def _save_text(self, changed: Sequence[int], held: bool, counted: bool) -> str:
        """The text of a save's ``UPDATE`` setting the columns ``changed`` (indexes in
        :data:`_COLUMNS`); ``held``: only if the row holds the node's reservation;
        ``counted``: with history (on PostgreSQL, the ``UPDATE`` becomes the CTE of its
        ``INSERT``)."""
        q = self._q
        sets = [
            f"created_at = COALESCE({q}, created_at)" if i == _CREATED else f"{_COLUMNS[i]} = {q}"
            for i in changed
        ]
        if counted:
            sets += self._history_sets
        sql = (
            f"UPDATE nodes SET {', '.join([*sets, f'version = {q}', f'data = {q}'])} "
            f"WHERE uuid = {q} AND version = {q}" + (f" AND reservation = {q}" if held else "")
        )
        if counted and self._history_cte:
            return f"WITH saved AS ({sql} RETURNING uuid, history_last_seq) " + (
                self._q_history_after_save
            )
        if counted and self._db.returning:
            sql += " RETURNING history_last_seq"
        return sql

    def _index_hint(self, index: str) -> str:
        """SQLite: use ``index``. Without statistics its planner takes ``reservation IS NULL``
        for a selective term and walks every free node; PostgreSQL's planner has statistics."""
        return f" INDEXED BY {index}" if self._db.name == "sqlite" else ""

    def _execute_many(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for many rows: a batch on both drivers."""
        if self._db.name == "sqlite":
            conn.executemany(sql, rows)
        else:
            with conn.cursor() as cursor:
                cursor.executemany(sql, rows)

    def _log(self, sql: str) -> None:
        _LOG.debug("%s: %s", self.dialect, sql)
