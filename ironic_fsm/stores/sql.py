"""``SQLStore``: node records in SQLite (standard library) or PostgreSQL (psycopg).

.. warning::

   The database holds BMC credentials (``driver_info`` passwords, tokens) in
   clear. A SQLite file the store creates is made readable by its owner only
   (``0600``, and so are SQLite's ``-wal`` and ``-shm`` files, which take the
   database's mode; parent directories it creates are ``0700``). An existing
   file keeps the mode it has. On PostgreSQL, restrict who may connect.

Why no SQLAlchemy: every call is one short statement on a raw driver
connection (the hot path always was), so an abstraction layer only served
the cold paths and schema creation, at the price of two code paths per
statement. SQLite needs only :mod:`sqlite3`, so ``pip install ironic_fsm``
gives a working durable store with no database dependency. PostgreSQL uses
psycopg 3 with ``psycopg_pool`` (``pip install 'ironic_fsm[postgres]'``): the
maintained pool made for psycopg, and the level at which the features a
fleet needs next live anyway (``FOR UPDATE SKIP LOCKED``, advisory locks,
``LISTEN/NOTIFY``).

The SQL store's parts: :class:`SQLStore` builds them when it opens and
hands each the objects it uses; none knows the store. The dialect
(``_sqlite``, ``_postgres``, chosen by ``_connect`` from the URL) holds
connections, timestamps and the mapping of driver errors;
``_statements.Statements`` writes every statement once for it; ``_rows``
turns a node into the row a write sets. Pages (``_paging``), scans
(``_scans``), history (``_history``), heartbeats and conductors
(``_registry``), power sync (``_sql_power``), work-queue claims
(``_sql_claims``) and the catalog (``_sql_catalog``) each answer a group of
methods that delegate to them in a line; ``_migrate`` brings a database to
the layout of ``_tables`` by the revision files of ``migrations`` (Alembic,
imported only then). The hot statements (``get``, ``reserve``,
``release``) stay here and the saves are ``_saves``'s, by hand on the driver
connection: they are most of a lifecycle's store cost.

Durability on SQLite: files are opened in WAL mode. With the default
``sqlite_synchronous='NORMAL'`` a committed change survives the process being
killed but the last commits may be lost if the machine loses power;
``'FULL'`` survives power loss, at the cost of an fsync per commit. The
database is never corrupted either way.

Concurrency: every method is one transaction, safe from many threads sharing
one store and from many processes sharing one database. Saves and
reservations are each one conditional ``UPDATE`` (a reservation returns the
row with ``RETURNING``), atomic on both databases. SQLite writers wait for
each other up to ``sqlite_busy_timeout`` (30 s), then
:class:`~ironic_fsm.exceptions.StoreBusy`. On PostgreSQL each call borrows a
connection from a pool of at most ``pool_size`` and always gives it back;
callers beyond that wait up to ``pool_timeout`` for one. No driver exception
leaves the store: bad values become
:class:`~ironic_fsm.exceptions.InvalidParameterValue` naming the field, lock
contention :class:`~ironic_fsm.exceptions.StoreBusy`, anything else
:class:`~ironic_fsm.exceptions.StoreError`, with the original chained.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from types import TracebackType
from typing import Any, ClassVar, Final, overload

from ironic_fsm.history import HistoryEntry
from ironic_fsm.node import Node
from ironic_fsm.stores._catalog import CatalogEntry, CatalogKind
from ironic_fsm.stores._claim import QueuedNode, reserve_each
from ironic_fsm.stores._connect import _Connection, _hide_password, open_database
from ironic_fsm.stores._history import History
from ironic_fsm.stores._kinds import KINDS
from ironic_fsm.stores._migrate import Migrator
from ironic_fsm.stores._paging import Paging
from ironic_fsm.stores._power import PowerSyncRow
from ironic_fsm.stores._query import NodeFields, _scan_filters, page_query
from ironic_fsm.stores._registry import Registry, check_holder
from ironic_fsm.stores._rows import Rows
from ironic_fsm.stores._saves import Saves
from ironic_fsm.stores._scans import Scans
from ironic_fsm.stores._schema import (
    _COLUMNS,  # noqa: F401  (read here by tests and tools: the columns a save sets)
    SCHEMA_VERSION,
)
from ironic_fsm.stores._sql_catalog import Catalog
from ironic_fsm.stores._sql_claims import Claims, check_claimer
from ironic_fsm.stores._sql_counts import NodeCounts
from ironic_fsm.stores._sql_power import PowerSync
from ironic_fsm.stores._sql_records import SQLRecords
from ironic_fsm.stores._statements import Statements, pick, to_node
from ironic_fsm.stores.base import (
    ConductorRecord,
    Reserved,
    duplicate_name,
    locked_error,
    not_found,
)
from ironic_fsm.stores.migrations import StepContext

__all__ = ["DEFAULT_URL", "SCHEMA_VERSION", "SQLITE_BUSY_TIMEOUT", "SQLStore"]

#: The default database: a file in the current directory.
DEFAULT_URL: Final = "sqlite:///ironic_fsm.sqlite"

#: Seconds a SQLite writer waits for another writer before giving up.
SQLITE_BUSY_TIMEOUT: Final = 30.0

#: Most PostgreSQL connections one store opens (its threads share them).
POOL_SIZE: Final = 10

#: Seconds a caller waits for a free PostgreSQL connection before giving up.
POOL_TIMEOUT: Final = 30.0

_UTC: Final = timezone.utc


class SQLStore:
    """Node records in a SQL database: SQLite (embedded) or PostgreSQL (shared).

    Args:
        url: ``sqlite:///relative/file.db``, ``sqlite:////absolute/file.db``,
            ``sqlite://`` (in memory, one connection shared under a lock), or
            ``postgresql://user@host:port/dbname`` (``postgresql+psycopg://``
            is accepted too; libpq parameters go in the query string, e.g.
            ``?options=-csearch_path%3Dmine``).
        sqlite_synchronous: SQLite's ``PRAGMA synchronous`` for every
            connection: ``'NORMAL'`` (survives a killed process) or ``'FULL'``
            (survives power loss); ``'OFF'`` and ``'EXTRA'`` are accepted too.
        sqlite_busy_timeout: Seconds a SQLite write waits for another
            writer's lock before :class:`~ironic_fsm.exceptions.StoreBusy`.
        pool_size: PostgreSQL: the most connections this store opens; its
            threads share them (a thread holds one for a single call only).
            ``max_overflow`` is added to it, for older callers.
        pool_timeout: PostgreSQL: seconds a call waits for a free connection
            before :class:`~ironic_fsm.exceptions.StoreBusy`.
        connect_args: Extra keyword arguments for :func:`sqlite3.connect` or
            :func:`psycopg.connect`.
        echo: Log every statement (not its parameters, which hold secrets) at
            DEBUG on the ``ironic_fsm.stores.sql`` logger.

    The schema is created when missing. Opening a database whose schema is
    newer than this code knows raises :class:`InvalidParameterValue`.
    """

    #: ``list`` pages, sorts and reads only the ``fields`` asked for, from columns
    #: where it can (see :func:`~ironic_fsm.stores.base.pages`).
    lists_pages: ClassVar[bool] = True

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        sqlite_synchronous: str = "NORMAL",
        sqlite_busy_timeout: float = SQLITE_BUSY_TIMEOUT,
        pool_size: int = POOL_SIZE,
        max_overflow: int = 0,
        pool_timeout: float = POOL_TIMEOUT,
        connect_args: dict[str, Any] | None = None,
        echo: bool = False,
    ) -> None:
        db = open_database(
            url,
            sqlite_synchronous=sqlite_synchronous,
            sqlite_busy_timeout=sqlite_busy_timeout,
            pool_size=pool_size,
            max_overflow=max_overflow,
            pool_timeout=pool_timeout,
            connect_args=connect_args,
        )
        self._db = db
        self._echo = echo
        self.url: str = _hide_password(url)
        self.dialect: str = db.name
        # The parts: each holds what it uses, none knows the store.
        sql = self._sql = Statements(db, echo)
        self._q = sql.q
        self._rows = rows = Rows(db)
        self._row = rows.row
        self._columns = rows.columns  # a node's column values (tests build old layouts with it)
        self._paging = Paging(sql)
        self._scans = Scans(sql)
        self._history = History(sql, rows.bound)
        self._saves = Saves(db, sql, rows, self._history)
        self._registry = Registry(sql)
        self._power = PowerSync(sql)
        self._counts = NodeCounts(sql)
        self._claims = Claims(sql)
        self._catalog = Catalog(db)
        #: Ports, chassis, allocations... (:class:`~._records.RecordStore`, the records step).
        self.records = SQLRecords(db, KINDS)
        log = sql.log if echo else None
        context = StepContext(
            db.name, sql.q, db.timestamp_type(), rows.columns, sql.execute_many, log
        )
        try:
            Migrator(sql, context, self.url).prepare(SCHEMA_VERSION)
            db.open()
        except BaseException:
            db.close()
            raise

    # -- the Store protocol --------------------------------------------------------------

    def create(self, node: Node) -> None:
        """Add a new record (uuid and name unused, name not another node's uuid); version 1."""
        data, (*columns, created) = self._row(node)
        if created is None:
            created = self._db.bind_time(datetime.now(_UTC))  # as an import, ordered by it
        check_name = node.name is not None and node.name != node.uuid
        if self._echo:
            self._sql.log(self._sql.create)
        with self._db.transaction(node) as conn:
            conn.execute(self._sql.create, (node.uuid, *columns, created, data))
            if check_name and conn.execute(self._sql.uuid_exists, (node.name,)).fetchall():
                raise duplicate_name(node.name)
        self._saves.remember(node.uuid, 1, (*columns, created), data)
        node.version = 1

    def create_many(self, nodes: builtins.list[Node]) -> None:
        """Create every node in one transaction and one batched ``INSERT``: all or none.

        For importing a fleet: the checks are those of :meth:`create`, but a
        refusal names no node when the database is the one that refuses (a
        duplicate UUID or name among thousands).
        """
        if not nodes:
            return
        now = self._db.bind_time(datetime.now(_UTC))
        rows = []
        for node in nodes:
            data, (*columns, created) = self._row(node)
            rows.append((node.uuid, *columns, created or now, data))
        names = [n.name for n in nodes if n.name is not None]
        with self._db.transaction() as conn:
            (last,) = conn.execute(self._sql.last_seq).fetchall()[0]
            rows = [(*row[:-2], last + i, *row[-2:]) for i, row in enumerate(rows, 1)]
            self._sql.execute_many(conn, self._sql.create_seq, rows)
            for start in range(0, len(names), 500):
                chunk = names[start : start + 500]
                marks = ", ".join(self._q for _ in chunk)
                taken = conn.execute(
                    f"SELECT uuid FROM nodes WHERE uuid IN ({marks})", chunk
                ).fetchall()
                if taken:
                    raise duplicate_name(taken[0][0])
        for node in nodes:
            node.version = 1

    def get(self, ident: str) -> Node:
        """A fresh copy of the node with this UUID or name; :class:`NodeNotFound` if none."""
        if "\x00" in ident:
            raise not_found(ident)
        if self._echo:
            self._sql.log(self._sql.get)
        with self._db.connection() as conn:
            rows = conn.execute(self._sql.get, (ident, ident)).fetchall()
        row = pick(rows, ident)
        if row is None:
            raise not_found(ident)
        return to_node(row[1], row[2], row[3])

    def save(self, node: Node, *, history: Sequence[HistoryEntry] = ()) -> None:
        """Write ``node`` if its version is current; bump ``node.version`` in place.

        All or nothing: every value is checked before the one ``UPDATE``.
        ``history`` is written with it, only if the node is: on PostgreSQL
        in the same statement (the ``UPDATE`` is its CTE), on SQLite in the
        same transaction.

        Raises:
            ConcurrentUpdate: the stored version differs (nothing written).
            NodeNotFound: the record is gone.
            InvalidParameterValue: another node has this name, or a value
                cannot be stored (the message names the field).
        """
        self._saves.save(node, history, free=False)

    def save_reserving(self, node: Node, *, history: Sequence[HistoryEntry] = ()) -> None:
        """:meth:`save`, only if nobody holds the node: a reservation and a save in one write.

        One ``UPDATE ... WHERE uuid = ? AND version = ? AND reservation IS
        NULL`` that sets ``reservation`` to ``node.reservation`` (the holder
        taking it, or ``None``: saved and left free). See
        :class:`~.capabilities.ReservingStore`.

        Raises:
            NodeLocked: someone holds the node (the message names the holder).
            ConcurrentUpdate: the stored version differs, the node is free.
            NodeNotFound: the record is gone.
            InvalidParameterValue: as :meth:`save`.
        """
        self._saves.save(node, history, free=True)

    def save_held(self, node: Node, holder: str, *, history: Sequence[HistoryEntry] = ()) -> None:
        """:meth:`save`, only while ``holder`` holds the node: a compare-and-set on both.

        One ``UPDATE ... WHERE uuid = ? AND version = ? AND reservation = ?``
        (the holder); it sets ``reservation`` to ``node.reservation`` (kept,
        or ``None``: released in the same write). Never takes the node back
        from whoever took it over. See :class:`~.capabilities.ReservingStore`.

        Raises:
            ConcurrentUpdate: the stored version differs, or the node is no
                longer reserved by ``holder`` (nothing written).
            NodeLocked: someone else holds the node now (the message names them).
            NodeNotFound: the record is gone.
            InvalidParameterValue: as :meth:`save`.
        """
        self._saves.save(node, history, free=False, holder=holder)

    def last_written(self, uuid: str) -> Node | None:
        """A copy of the node as this store last wrote it, if it remembers; maybe stale.

        Another writer may have changed the node since: only a
        :meth:`save_reserving` at its version (which checks) may act on it.
        """
        return self._saves.last_written(uuid)

    def delete(self, ident: str) -> None:
        """Remove the node with this UUID (or else this name) and its history, at once.

        Raises :class:`NodeNotFound` if none.
        """
        if "\x00" in ident:
            raise not_found(ident)
        self._saves.forget(ident)
        with self._db.transaction() as conn:
            uuid = ident
            if conn.execute(self._sql.delete, (ident,)).rowcount == 0:
                found = conn.execute(self._sql.uuid_of_name, (ident,)).fetchall()
                if not found:
                    raise not_found(ident)
                uuid = found[0][0]
                conn.execute(self._sql.delete, (uuid,))
                self._saves.forget(uuid)
            conn.execute(self._sql.history_drop, (uuid,))

    # -- reservations ------------------------------------------------------------------------

    def reserve(self, ident: str, holder: str) -> Node:
        """Atomically set ``reservation = holder`` if the node is free; nothing else changes.

        One ``UPDATE ... RETURNING`` when ``ident`` is a UUID.

        Raises:
            NodeLocked: another holder has it (the message names the holder).
            NodeNotFound: no node has this UUID or name.
        """
        check_holder(holder)
        if "\x00" in ident:
            raise not_found(ident)
        uuid = ident
        holding: str | None = None
        if self._echo:
            self._sql.log(self._sql.reserve)
        with self._db.connection() as conn:
            for _ in range(3):
                row = self._reserve_row(conn, uuid, holder)
                if row is not None:
                    return to_node(row[0], row[1], row[2])
                # Why not: no such UUID (maybe a name), or someone else holds it.
                found = pick(conn.execute(self._sql.get, (ident, ident)).fetchall(), ident)
                if found is None:
                    raise not_found(ident)
                uuid, holding = found[0], found[2]
                if holding is not None:
                    raise locked_error(uuid, holding)
                # A name, or released between our UPDATE and SELECT: try again.
        raise locked_error(uuid, holding)

    def _reserve_row(self, conn: _Connection, uuid: str, holder: str) -> Any:
        if self._db.returning:
            rows = conn.execute(self._sql.reserve, (holder, uuid)).fetchall()
            return rows[0] if rows else None
        if conn.execute(self._sql.reserve, (holder, uuid)).rowcount == 0:
            return None
        rows = conn.execute(self._sql.by_uuid, (uuid,)).fetchall()
        return rows[0] if rows and rows[0][1] == holder else None

    def release(self, ident: str, holder: str) -> None:
        """Clear the reservation if ``holder`` has it; :class:`NodeNotFound` if no such node."""
        if "\x00" in ident:
            raise not_found(ident)
        with self._db.connection() as conn:
            if conn.execute(self._sql.release, (ident, holder)).rowcount:
                return
            found = pick(conn.execute(self._sql.get, (ident, ident)).fetchall(), ident)
            if found is None:
                raise not_found(ident)
            if found[0] != ident:
                conn.execute(self._sql.release, (found[0], holder))

    # -- the parts' methods: each one line to the part that has it ----------------------------

    @overload
    def list(self, *, fields: None = None, **query: Any) -> builtins.list[Node]: ...
    @overload
    def list(self, *, fields: Iterable[str], **query: Any) -> builtins.list[NodeFields]: ...

    def list(
        self, *, limit: int | None = None, marker: str | None = None,
        sort_key: str = "created_at", sort_dir: str = "asc",
        fields: Iterable[str] | None = None, **filters: Any,
    ) -> builtins.list[Node] | builtins.list[NodeFields]:  # fmt: skip
        """One page of the matching nodes, by keyset on indexes (see :mod:`._paging`)."""
        query = page_query(limit, marker, sort_key, sort_dir, filters, fields)
        return self._paging.page(query)

    def reserved(self) -> builtins.list[Reserved]:
        """Every reserved node's UUID, holder and ``updated_at``: one index range, no decoding."""
        return self._scans.reserved()

    def in_states(
        self, states: Collection[str], *, updated_before: datetime | None = None,
        limit: int | None = None, **filters: Any,
    ) -> builtins.list[Node]:  # fmt: skip
        """Nodes in ``states`` (changed before ``updated_before``), oldest first; on indexes."""
        wanted = _scan_filters(states, limit, filters, updated_before)
        return [] if wanted is None else self._scans.in_states(wanted, updated_before, limit)

    def waking(
        self, before: datetime, *, limit: int | None = None, **filters: Any
    ) -> builtins.list[Node]:
        """Nodes whose ``wait`` step is up at ``before``, earliest first; on an index."""
        wanted = _scan_filters(None, limit, filters, before)
        return [] if wanted is None else self._scans.waking(wanted, before, limit)

    def add_history(self, entries: Sequence[HistoryEntry]) -> None:
        """Write entries that go with no node change, all or none; unknown nodes: none."""
        self._history.add(entries)

    def node_history(self, node_uuid: str) -> builtins.list[HistoryEntry]:
        """The node's entries, oldest first."""
        return self._history.of_node(node_uuid)

    def trim_history(self, max_entries: int, *, before: datetime | None, limit: int) -> int:
        """Delete at most ``limit`` of the oldest entries beyond ``max_entries`` per node."""
        return self._history.trim(max_entries, before=before, limit=limit)

    def heartbeat(self, holder: str, now: datetime) -> None:
        """Record that ``holder`` is alive at ``now`` (naive datetimes are taken as UTC)."""
        self._registry.heartbeat(holder, now)

    def holders(self) -> dict[str, datetime]:
        """Every holder's last heartbeat, as aware UTC datetimes."""
        return self._registry.holders()

    def register_conductor(
        self, record: ConductorRecord, *, replace_before: datetime | None = None
    ) -> None:
        """Add or replace ``record``'s row, drop its host's stopped or dead ones, at once."""
        self._registry.register_conductor(record, replace_before=replace_before)

    def conductor_heartbeat(self, holder: str, now: datetime) -> bool:
        """Mark ``holder`` online at ``now``; False when it has no row (register it again)."""
        return self._registry.conductor_heartbeat(holder, now)

    def unregister_conductor(self, holder: str, now: datetime) -> None:
        """Mark ``holder`` offline at ``now`` (a stopped conductor is not alive, at once)."""
        self._registry.unregister_conductor(holder, now)

    def list_conductors(self) -> builtins.list[ConductorRecord]:
        """Every registered conductor (one small table, read whole)."""
        return self._registry.list_conductors()

    def power_sync_due(self, before: datetime) -> builtins.list[PowerSyncRow]:
        """Nodes never synced or synced at or before ``before``: two ranges of one index."""
        return self._power.due(before)

    def mark_power_synced(self, uuids: Sequence[str], when: datetime) -> None:
        """Record that these nodes were synced at ``when`` (unknown UUIDs are ignored)."""
        self._power.mark(uuids, when)

    def count_nodes(
        self, field: str, *, maintenance: bool | None = None, reserved: bool | None = None
    ) -> dict[Any, int]:
        """How many nodes per value of ``field``: one ``GROUP BY`` on an index, no record read."""
        return self._counts.count(field, maintenance, reserved)

    def queued_work(
        self, states: Collection[str], limit: int | None = None
    ) -> builtins.list[QueuedNode]:
        """The unreserved nodes in ``states``, the longest in their state first."""
        return self._claims.queued(states, limit)

    def reserve_queued(
        self, uuids: Sequence[str], holder: str, states: Collection[str]
    ) -> builtins.list[Node]:
        """Reserve for ``holder`` those of ``uuids`` still unreserved and in ``states``."""
        check_claimer(holder)
        if not self._db.returning:  # SQLite before 3.35: one reservation per node
            return reserve_each(self, uuids, holder, states) if uuids and states else []
        return self._claims.reserve(uuids, holder, states)

    def announce_work(self, uuid: str) -> None:
        """``NOTIFY`` on PostgreSQL, after the release committed; nothing on SQLite."""
        announce = getattr(self._db, "announce_work", None)  # only PostgresDB has one
        if announce is not None:
            announce(uuid)

    def add_entry(self, kind: CatalogKind, entry: CatalogEntry) -> CatalogEntry:
        return self._catalog.add_entry(kind, entry)

    def get_entry(self, kind: CatalogKind, ident: str) -> CatalogEntry:
        return self._catalog.get_entry(kind, ident)

    def list_entries(self, kind: CatalogKind) -> builtins.list[CatalogEntry]:
        return self._catalog.list_entries(kind)

    def replace_entry(self, kind: CatalogKind, entry: CatalogEntry) -> CatalogEntry:
        return self._catalog.replace_entry(kind, entry)

    def delete_entry(self, kind: CatalogKind, ident: str) -> None:
        self._catalog.delete_entry(kind, ident)

    # -- lifetime ------------------------------------------------------------------------

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A driver connection (``sqlite3`` or psycopg) in autocommit, for inspection.

        Maintenance and tests only: node writes belong to the methods above,
        which keep ``data`` and the columns in step.
        """
        with self._db.connection() as conn:
            yield conn

    def close(self) -> None:
        """Close every connection; an in-memory database is gone afterwards."""
        self._db.close()

    dispose = close

    def __enter__(self) -> SQLStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLStore({self.url!r})"
