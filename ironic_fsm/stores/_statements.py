"""The statements of :class:`~ironic_fsm.stores.sql.SQLStore`, written once per store.

Every statement is built when the store opens, with its dialect's
placeholder and features (``RETURNING``, row locks, SQLite index hints), so
that a call only binds parameters. One :class:`Statements` per store, handed
to each of its parts (:mod:`._scans`, :mod:`._history`, :mod:`._registry`,
...), which read their texts from it and log through it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Final

from ironic_fsm.exceptions import ConcurrentUpdate
from ironic_fsm.node import Node
from ironic_fsm.stores._connect import _Database
from ironic_fsm.stores._schema import _COLUMNS, _CREATED, HISTORY_INDEXED_OVER
from ironic_fsm.stores.base import locked_error, not_found

_HISTORY_FIELDS: Final = (
    "uuid, node_uuid, created_at, severity, event_type, event, conductor, username"
)

# The store's logger: statements are logged under the store's name.
_LOG: Final = logging.getLogger("ironic_fsm.stores.sql")

#: One leg of a read split into free and held nodes: its conditions, and the index SQLite
#: is told to read it on (``""``: its planner's choice; PostgreSQL's planner always chooses).
Leg = tuple[list[str], str]
#: The free nodes, in the words of the partial indexes that hold only them (schema 18).
FREE: Final = "reservation IS NULL"
#: The held nodes. ``>= ''`` is ``IS NOT NULL`` for text, but it is a range, which SQLite
#: searches its reservation index for. PostgreSQL needs neither spelling: ``EXPLAIN`` on the
#: test fixture reads the held leg of every split count, scan and page on the reservation
#: index either way (``>= ''`` only adds it as the index condition), so one text serves both.
HELD: Final = "reservation >= ''"


def to_node(data: str, reservation: str | None, version: int) -> Node:
    node = Node.from_json(data)
    node.reservation = reservation  # the columns are authoritative over the JSON
    node.version = version
    return node


def pick(rows: Sequence[Any], ident: str) -> Any:
    """The row whose uuid is ``ident``, else the one whose name is (UUIDs win, as in memory)."""
    for row in rows:
        if row[0] == ident:
            return row
    return rows[0] if rows else None


def save_refusal(node: Node, rows: list[Any], free: bool, holder: str | None) -> Exception:
    """Why a save wrote nothing, from the row's version (and reservation) read after it."""
    if not rows:
        return not_found(node.uuid)
    version = rows[0][0]
    if free and rows[0][1] is not None:
        return locked_error(node.uuid, rows[0][1])
    if holder is not None and version == node.version:
        if rows[0][1] is not None:
            return locked_error(node.uuid, rows[0][1])
        return ConcurrentUpdate(
            f"Node {node.uuid} is no longer reserved by {holder}; re-read it and retry",
            node=node.uuid,
        )
    return ConcurrentUpdate(
        f"Node {node.uuid} was changed by someone else (version "
        f"{version}, ours {node.version}); re-read it and retry",
        node=node.uuid,
    )


class Statements:
    """The statement texts of one store, and the few helpers every part runs them with.

    Plain attributes, read by the store's parts at call time: a part never
    builds SQL that a store could have built once.
    """

    def __init__(self, db: _Database, echo: bool) -> None:
        self.db = db
        self.dialect: str = db.name
        #: Whether statements are logged (at DEBUG, never their parameters).
        self.echo = echo
        #: Where an echoed statement goes (tests replace it to see the statements).
        self.log: Callable[[str], None] = partial(_LOG.debug, "%s: %s", db.name)
        q = self.q = db.placeholder
        self.get = (
            f"SELECT uuid, data, reservation, version FROM nodes WHERE uuid = {q} OR name = {q}"
        )
        self.reserve = (
            f"UPDATE nodes SET reservation = {q} WHERE uuid = {q} AND reservation IS NULL"
        )
        if self.db.returning:
            self.reserve += " RETURNING data, reservation, version"
        self.by_uuid = f"SELECT data, reservation, version FROM nodes WHERE uuid = {q}"
        self.release = f"UPDATE nodes SET reservation = NULL WHERE uuid = {q} AND reservation = {q}"
        self.version = f"SELECT version FROM nodes WHERE uuid = {q}"
        #: Why a save that takes the reservation found no row: gone, held, or changed.
        self.version_holder = f"SELECT version, reservation FROM nodes WHERE uuid = {q}"
        names = ", ".join(_COLUMNS)
        marks = ", ".join(q for _ in _COLUMNS)
        #: The last ``seq`` given. On PostgreSQL its index holds the free nodes only (schema
        #: 18): the larger of theirs (the top of that index) and the held ones' (a few, on
        #: theirs).
        self.last_seq = "SELECT COALESCE(MAX(seq), 0) FROM nodes"
        if self.dialect == "postgresql":
            legs = " UNION ALL ".join(
                f"SELECT MAX(seq) AS seq FROM nodes WHERE {terms[0]}"
                for terms, _ in self.free_and_held([])
            )
            self.last_seq = f"SELECT COALESCE(MAX(seq), 0) FROM ({legs}) AS last"
        self.create = (
            f"INSERT INTO nodes (uuid, {names}, version, seq, created_at, data) VALUES "
            f"({q}, {marks}, 1, ({self.last_seq}) + 1, {q}, {q})"
        )
        self.create_seq = (
            f"INSERT INTO nodes (uuid, {names}, version, seq, created_at, data) VALUES "
            f"({q}, {marks}, 1, {q}, {q}, {q})"
        )
        self.uuid_exists = f"SELECT 1 FROM nodes WHERE uuid = {q}"
        self.delete = f"DELETE FROM nodes WHERE uuid = {q}"
        self.select = "SELECT data, reservation, version FROM nodes"
        self.heartbeat = (
            f"INSERT INTO holders (holder, heartbeat) VALUES ({q}, {q}) "
            "ON CONFLICT (holder) DO UPDATE SET heartbeat = excluded.heartbeat"
        )
        self.holders = "SELECT holder, heartbeat FROM holders"
        self.conductor_upsert = (
            "INSERT INTO conductors (holder, hostname, conductor_group, hardware_types, online, "
            f"started_at, updated_at) VALUES ({q}, {q}, {q}, {q}, {q}, {q}, {q}) "
            "ON CONFLICT (holder) DO UPDATE SET hostname = excluded.hostname, "
            "conductor_group = excluded.conductor_group, "
            "hardware_types = excluded.hardware_types, online = excluded.online, "
            "started_at = excluded.started_at, updated_at = excluded.updated_at"
        )
        self.conductor_prune = (
            f"DELETE FROM conductors WHERE hostname = {q} AND holder <> {q} "
            f"AND (online = {q} OR updated_at < {q})"
        )
        self.conductor_touch = (
            f"UPDATE conductors SET online = {q}, updated_at = {q} WHERE holder = {q}"
        )
        self.conductors = (
            "SELECT holder, hostname, conductor_group, hardware_types, online, started_at, "
            "updated_at FROM conductors"
        )
        # No ORDER BY (sorted after): the reservation index finds the few, in any order.
        self.reserved = (
            f"SELECT uuid, reservation, updated_at, seq FROM nodes"
            f"{self.index_hint('nodes_reservation_idx')} WHERE {HELD}"
        )
        # A node's history count and last seq, in its row: set by the save that writes entries,
        # or alone (then no version bump: they are bookkeeping, not the node).
        self.history_sets = [
            f"history_entries = history_entries + {q}",
            f"history_last_seq = history_last_seq + {q}",
        ]
        self.history_count = f"UPDATE nodes SET {', '.join(self.history_sets)} WHERE uuid = {q}"
        if self.db.returning:
            self.history_count += " RETURNING history_last_seq"
        self.history_last = f"SELECT history_last_seq FROM nodes WHERE uuid = {q}"
        self.history_insert = (
            "INSERT INTO node_history (uuid, node_uuid, created_at, seq, severity, event_type, "
            f"event, conductor, username) VALUES ({q}, {q}, {q}, {q}, {q}, {q}, {q}, {q}, {q})"
        )
        # PostgreSQL: a save's entries go in its own statement, after the node's UPDATE as a
        # CTE (``WITH saved AS (UPDATE ... RETURNING uuid, history_last_seq)``): inserted only
        # if the row is, numbered from the count the UPDATE returns, one round trip, autocommit.
        # The entries travel as one JSON array of rows: binding seven arrays cost the save more
        # than the INSERT itself (psycopg dumps arrays in Python), and the text, unlike a
        # VALUES list, is the same for any number of entries (one prepared statement).
        self.history_cte = self.db.name == "postgresql"
        self.history_after_save = (
            "INSERT INTO node_history (uuid, node_uuid, created_at, seq, severity, event_type, "
            "event, conductor, username) SELECT x.e->>0, saved.uuid, (x.e->>1)::timestamptz, "
            f"saved.history_last_seq - {q} + x.n, x.e->>2, x.e->>3, x.e->>4, x.e->>5, x.e->>6 "
            f"FROM saved, jsonb_array_elements({q}::jsonb) WITH ORDINALITY AS x(e, n)"
        )
        self.history_add = (
            f"WITH saved AS (UPDATE nodes SET {', '.join(self.history_sets)} WHERE uuid = {q} "
            "RETURNING uuid, history_last_seq) " + self.history_after_save
        )
        self.history = (
            f"SELECT {_HISTORY_FIELDS} FROM node_history WHERE node_uuid = {q} "
            "ORDER BY created_at, seq"
        )
        # The index holds the nodes over HISTORY_INDEXED_OVER: a query may use it only if it
        # says so in the index's own words; a lower limit reads every node's count.
        self.history_over = (
            "SELECT uuid, history_entries FROM nodes"
            f"{self.index_hint('node_history_counts_entries_idx')} WHERE history_entries > {q}"
            f" AND history_entries > {HISTORY_INDEXED_OVER}"
        )
        self.history_over_any = (
            f"SELECT uuid, history_entries FROM nodes WHERE history_entries > {q}"
        )
        # SQLite (v9): an entry's key is its rowid, its UUID is not indexed.
        key = "rowid" if self.db.name == "sqlite" else "uuid"
        self.history_trim = (
            f"DELETE FROM node_history WHERE {key} IN (SELECT {key} FROM node_history "
            f"WHERE node_uuid = {q} AND created_at < {q} ORDER BY created_at, seq LIMIT {q})"
        )
        self.history_uncount = (
            f"UPDATE nodes SET history_entries = history_entries - {q} WHERE uuid = {q}"
        )
        self.history_drop = f"DELETE FROM node_history WHERE node_uuid = {q}"
        self.uuid_of_name = f"SELECT uuid FROM nodes WHERE name = {q}"

    def save_text(
        self, changed: Sequence[int], held: bool, counted: bool, free: bool = False
    ) -> str:
        """The text of a save's ``UPDATE`` setting the columns ``changed`` (indexes in
        :data:`_COLUMNS`); ``held``: only if the row holds the node's reservation;
        ``free``: only if nobody holds it (the save that takes the reservation);
        ``counted``: with history (on PostgreSQL, the ``UPDATE`` becomes the CTE of its
        ``INSERT``)."""
        q = self.q
        sets = [
            f"created_at = COALESCE({q}, created_at)" if i == _CREATED else f"{_COLUMNS[i]} = {q}"
            for i in changed
        ]
        if counted:
            sets += self.history_sets
        sql = (
            f"UPDATE nodes SET {', '.join([*sets, f'version = {q}', f'data = {q}'])} "
            f"WHERE uuid = {q} AND version = {q}"
            + (f" AND reservation = {q}" if held else " AND reservation IS NULL" if free else "")
        )
        if counted and self.history_cte:
            return f"WITH saved AS ({sql} RETURNING uuid, history_last_seq) " + (
                self.history_after_save
            )
        if counted and self.db.returning:
            sql += " RETURNING history_last_seq"
        return sql

    def free_and_held(self, terms: Sequence[str], index: str = "") -> tuple[Leg, Leg]:
        """The same query over the free nodes and over the held ones, as two legs to read in
        one statement: on PostgreSQL the indexes of :data:`~._schema.FREE_ON_POSTGRES` (and on
        both dialects those of :data:`~._schema.FREE_SORTED`) hold only the free nodes, so a
        read on one adds the few held nodes, found on the reservation index. ``index``: the
        index the free leg reads (a hint on SQLite only)."""
        return ([*terms, FREE], index), ([*terms, HELD], "nodes_reservation_idx")

    def index_hint(self, index: str) -> str:
        """SQLite: use ``index``. Without statistics its planner takes ``reservation IS NULL``
        for a selective term and walks every free node; PostgreSQL's planner has statistics.
        No ``index`` (``""``), no hint."""
        return f" INDEXED BY {index}" if index and self.db.name == "sqlite" else ""

    def execute_many(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for many rows: a batch on both drivers."""
        if self.db.name == "sqlite":
            conn.executemany(sql, rows)
        else:
            with conn.cursor() as cursor:
                cursor.executemany(sql, rows)
