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
gives a working durable store with three dependencies. PostgreSQL uses
psycopg 3 with ``psycopg_pool`` (``pip install 'ironic_fsm[postgres]'``): the
maintained pool made for psycopg, and the level at which the features a
fleet needs next live anyway (``FOR UPDATE SKIP LOCKED``, advisory locks,
``LISTEN/NOTIFY``). The dialect modules (``_sqlite``, ``_postgres``) hold
connections, timestamps and the one mapping of driver errors per database;
this module holds the statements and the Store semantics.

Layout (schema version 1, unchanged from the first release, so databases it
created open as they are):

* ``nodes``: one row per node. ``data`` holds
  :meth:`Node.to_json() <ironic_fsm.node.Node.to_json>` (the same text
  :class:`~ironic_fsm.stores.MemoryStore` keeps) and is the source of truth
  for every field but two; ``name``, ``driver``, ``provision_state``,
  ``maintenance``, ``retired`` are copied into columns so that
  :meth:`SQLStore.list` filters in SQL. ``reservation`` and ``version`` are
  columns that win over ``data`` when a node is read back (reserving and
  releasing change the ``reservation`` column alone). ``seq`` records
  insertion order, the order of :meth:`SQLStore.list`.
* ``holders``: the last heartbeat of each reservation holder (crash recovery).
* ``ironic_fsm_schema``: one row with the schema version, so that later
  versions can migrate, and so that this code refuses a database written by
  a newer ironic_fsm instead of corrupting it.

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

import logging
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timezone
from types import TracebackType
from typing import Any, Final, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ironic_fsm.exceptions import (
    ConcurrentUpdate,
    InvalidParameterValue,
    IronicFSMError,
    MissingDependency,
)
from ironic_fsm.node import Node
from ironic_fsm.stores.base import (
    check_filters,
    duplicate_name,
    encode,
    locked_error,
    matches,
    not_found,
)

__all__ = ["DEFAULT_URL", "SCHEMA_VERSION", "SQLITE_BUSY_TIMEOUT", "SQLStore"]

#: The schema version this code writes and understands.
SCHEMA_VERSION: Final = 1

#: The default database: a file in the current directory.
DEFAULT_URL: Final = "sqlite:///ironic_fsm.sqlite"

#: Seconds a SQLite writer waits for another writer before giving up.
SQLITE_BUSY_TIMEOUT: Final = 30.0

#: Most PostgreSQL connections one store opens (its threads share them).
POOL_SIZE: Final = 10

#: Seconds a caller waits for a free PostgreSQL connection before giving up.
POOL_TIMEOUT: Final = 30.0

_SYNCHRONOUS_MODES: Final = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})
_STRING_COLUMNS: Final = frozenset({"provision_state", "driver", "name", "reservation"})
_BOOL_COLUMNS: Final = frozenset({"retired", "maintenance"})
#: Column widths of the v1 layout; checked for both databases (SQLite does not).
_WIDTHS: Final = {"uuid": 36, "name": 255, "driver": 255, "provision_state": 64, "reservation": 255}
_NULLABLE: Final = frozenset({"name", "reservation"})
_UTC: Final = timezone.utc
_LOG: Final = logging.getLogger(__name__)


def _schema_ddl(timestamp: str) -> list[str]:
    """The v1 schema, as the first release created it (names, types, constraints)."""
    return [
        "CREATE TABLE IF NOT EXISTS ironic_fsm_schema (\n"
        "\tid INTEGER NOT NULL, \n"
        "\tversion INTEGER NOT NULL, \n"
        "\tPRIMARY KEY (id)\n"
        ")",
        "CREATE TABLE IF NOT EXISTS nodes (\n"
        "\tuuid VARCHAR(36) NOT NULL, \n"
        "\tname VARCHAR(255), \n"
        "\tdriver VARCHAR(255) NOT NULL, \n"
        "\tprovision_state VARCHAR(64) NOT NULL, \n"
        "\tmaintenance BOOLEAN NOT NULL, \n"
        "\tretired BOOLEAN NOT NULL, \n"
        "\treservation VARCHAR(255), \n"
        "\tversion INTEGER NOT NULL, \n"
        "\tseq BIGINT NOT NULL, \n"
        f"\tcreated_at {timestamp} NOT NULL, \n"
        "\tdata TEXT NOT NULL, \n"
        "\tPRIMARY KEY (uuid), \n"
        "\tCONSTRAINT uniq_nodes0name UNIQUE (name)\n"
        ")",
        "CREATE INDEX IF NOT EXISTS nodes_provision_state_idx ON nodes (provision_state)",
        "CREATE INDEX IF NOT EXISTS nodes_reservation_idx ON nodes (reservation)",
        "CREATE INDEX IF NOT EXISTS nodes_driver_idx ON nodes (driver)",
        "CREATE INDEX IF NOT EXISTS nodes_seq_idx ON nodes (seq)",
        "CREATE TABLE IF NOT EXISTS holders (\n"
        "\tholder VARCHAR(255) NOT NULL, \n"
        f"\theartbeat {timestamp} NOT NULL, \n"
        "\tPRIMARY KEY (holder)\n"
        ")",
    ]


class _Cursor(Protocol):
    rowcount: int

    def fetchall(self) -> list[Any]: ...


class _Connection(Protocol):
    def execute(self, sql: Any, params: Sequence[Any] = ..., /) -> Any: ...


class _Database(Protocol):
    """What :class:`SQLStore` needs from a dialect module's database class."""

    @property
    def name(self) -> str: ...
    @property
    def placeholder(self) -> str: ...
    @property
    def returning(self) -> bool: ...
    @property
    def table_exists_sql(self) -> str: ...

    def connection(self, node: Node | None = None) -> AbstractContextManager[Any]: ...
    def transaction(self, node: Node | None = None) -> AbstractContextManager[Any]: ...
    def setup(self) -> AbstractContextManager[Any]: ...
    def schema_transaction(self, conn: Any) -> AbstractContextManager[None]: ...
    def translate(self, exc: BaseException, node: Node | None) -> IronicFSMError: ...
    def bind_time(self, value: datetime) -> Any: ...
    def read_time(self, value: Any) -> datetime: ...
    def timestamp_type(self) -> str: ...
    def open(self) -> None: ...
    def close(self) -> None: ...


def _check_columns(node: Node) -> None:
    """Refuse, naming the field, a column value the database would reject or truncate."""
    for field, width in _WIDTHS.items():
        value = getattr(node, field)
        if value is None and field in _NULLABLE:
            continue
        problem = None
        if not isinstance(value, str):
            problem = f"must be a string, not {type(value).__name__}"
        elif len(value) > width:
            problem = f"is {len(value)} characters long; at most {width} fit"
        elif "\x00" in value:
            problem = "contains a NUL character"
        if problem is not None:
            raise InvalidParameterValue(
                f"Node {node.uuid} cannot be stored: {field} {problem}",
                node=node.uuid,
                field=field,
            )


def _check_holder(holder: str) -> None:
    if not isinstance(holder, str) or len(holder) > 255 or "\x00" in holder:
        raise InvalidParameterValue(
            f"A reservation holder must be a string of at most 255 characters without NUL, "
            f"not {holder!r}",
            field="reservation",
        )


def _pushable(key: str, value: Any) -> bool:
    """Whether ``list`` can filter ``key == value`` in SQL (else on the decoded nodes)."""
    if key in _BOOL_COLUMNS:
        return isinstance(value, bool)
    return key in _STRING_COLUMNS and isinstance(value, str) and "\x00" not in value


def _to_node(data: str, reservation: str | None, version: int) -> Node:
    node = Node.from_json(data)
    node.reservation = reservation  # the columns are authoritative over the JSON
    node.version = version
    return node


def _pick(rows: Sequence[Any], ident: str) -> Any:
    """The row whose uuid is ``ident``, else the one whose name is (UUIDs win, as in memory)."""
    for row in rows:
        if row[0] == ident:
            return row
    return rows[0] if rows else None


def _hide_password(url: str) -> str:
    """``url`` fit for messages: a password in the user part or the query is masked.

    libpq takes ``?password=...`` as well as ``user:password@``; both are secrets.
    """
    parts = urlsplit(url)
    if parts.password is not None:
        netloc = parts.netloc.rsplit("@", 1)
        user = netloc[0].split(":", 1)[0]
        parts = parts._replace(netloc=f"{user}:***@{netloc[1]}")
    if "password" in parts.query.lower():
        query = [
            (key, "***" if "password" in key.lower() else value)
            for key, value in parse_qsl(parts.query, keep_blank_values=True)
        ]
        parts = parts._replace(query=urlencode(query, safe="*"))
    return urlunsplit(parts)


def _open_sqlite(
    url: str, synchronous: str, busy_timeout: float, connect_args: dict[str, Any]
) -> _Database:
    from ironic_fsm.stores._sqlite import SQLiteDB

    rest = url[len("sqlite://") :]
    path, _, query = rest.partition("?")
    if path == "/":
        # "sqlite:///" names no file; taking it for memory would drop every write silently.
        raise InvalidParameterValue(
            "The SQLite URL sqlite:/// names no file: use sqlite:///PATH for a file, "
            "or sqlite:// for a private in-memory database",
            url=url,
        )
    database = path[1:] if path.startswith("/") else path
    options = dict(parse_qsl(query))
    uri = options.pop("uri", "").lower() == "true"
    memory = (
        database in ("", ":memory:")
        or database.startswith("file::memory:")
        or options.get("mode") == "memory"
    )
    if uri:  # SQLite's own URI form, e.g. sqlite:///file:nodes.db?mode=ro&uri=true
        target = f"{database}?{urlencode(options)}" if options else database
    else:
        target = ":memory:" if memory else database
    return SQLiteDB(
        target,
        memory=memory,
        uri=uri,
        synchronous=synchronous,
        busy_timeout=busy_timeout,
        connect_args=connect_args,
    )


def _open_postgres(
    url: str, pool_size: int, pool_timeout: float, connect_args: dict[str, Any]
) -> _Database:
    try:
        from ironic_fsm.stores._postgres import PostgresDB
    except ImportError as exc:
        raise MissingDependency(
            "A PostgreSQL store needs psycopg and psycopg_pool: pip install 'ironic_fsm[postgres]'",
            extra="postgres",
        ) from exc
    conninfo = "postgresql" + url[url.index("://") :]
    return PostgresDB(
        conninfo,
        _hide_password(url),
        pool_size=pool_size,
        pool_timeout=pool_timeout,
        connect_args=connect_args,
    )


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
        synchronous = str(sqlite_synchronous).upper()
        if synchronous not in _SYNCHRONOUS_MODES:
            raise InvalidParameterValue(
                f"sqlite_synchronous must be one of {', '.join(sorted(_SYNCHRONOUS_MODES))}, "
                f"not {sqlite_synchronous!r}"
            )
        if pool_size + max_overflow < 1:
            raise InvalidParameterValue(f"pool_size must be at least 1, not {pool_size}")
        scheme = url.partition("://")[0].lower() if "://" in url else ""
        args = dict(connect_args or {})
        db: _Database
        if scheme == "sqlite":
            db = _open_sqlite(url, synchronous, float(sqlite_busy_timeout), args)
        elif scheme in ("postgresql", "postgresql+psycopg", "postgres"):
            db = _open_postgres(url, pool_size + max_overflow, float(pool_timeout), args)
        else:
            raise InvalidParameterValue(
                f"Unsupported database URL {_hide_password(url)!r}: use sqlite:///PATH, "
                "sqlite:// or postgresql://USER@HOST:PORT/DBNAME",
                url=_hide_password(url),
            )
        self._db = db
        self._echo = echo
        self.url: str = _hide_password(url)
        self.dialect: str = db.name
        self._build_statements(db.placeholder)
        try:
            self._prepare_schema()
            db.open()
        except BaseException:
            db.close()
            raise

    # -- setup ----------------------------------------------------------------------

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
        self._q_save = (
            f"UPDATE nodes SET name = {q}, driver = {q}, provision_state = {q}, "
            f"maintenance = {q}, retired = {q}, reservation = {q}, version = {q}, "
            f"created_at = COALESCE({q}, created_at), data = {q} "
            f"WHERE uuid = {q} AND version = {q}"
        )
        self._q_version = f"SELECT version FROM nodes WHERE uuid = {q}"
        self._q_create = (
            "INSERT INTO nodes (uuid, name, driver, provision_state, maintenance, retired, "
            "reservation, version, seq, created_at, data) VALUES "
            f"({q}, {q}, {q}, {q}, {q}, {q}, {q}, 1, "
            f"(SELECT COALESCE(MAX(seq), 0) + 1 FROM nodes), {q}, {q})"
        )
        self._q_uuid_exists = f"SELECT 1 FROM nodes WHERE uuid = {q}"
        self._q_delete = f"DELETE FROM nodes WHERE uuid = {q}"
        self._q_delete_by_name = f"DELETE FROM nodes WHERE name = {q}"
        self._q_select = "SELECT data, reservation, version FROM nodes"
        self._q_order = " ORDER BY seq, uuid"
        self._q_heartbeat = (
            f"INSERT INTO holders (holder, heartbeat) VALUES ({q}, {q}) "
            "ON CONFLICT (holder) DO UPDATE SET heartbeat = excluded.heartbeat"
        )
        self._q_holders = "SELECT holder, heartbeat FROM holders"
        self._q = q

    def _prepare_schema(self) -> None:
        """Create what is missing, stamp version 1, refuse a newer schema."""
        db = self._db
        with db.setup() as conn:
            version = self._schema_version(conn)
            if version == SCHEMA_VERSION:
                return  # the common case: nothing to create, no write lock taken
            self._refuse_newer(version)
            with db.schema_transaction(conn):
                for statement in _schema_ddl(db.timestamp_type()):
                    conn.execute(statement)
                version = self._schema_version(conn)
                self._refuse_newer(version)
                if version is None:
                    conn.execute(
                        f"INSERT INTO ironic_fsm_schema (id, version) VALUES (1, {self._q})",
                        (SCHEMA_VERSION,),
                    )
        # Version 1 is the first schema: later versions migrate from here.

    def _schema_version(self, conn: _Connection) -> int | None:
        (exists,) = conn.execute(self._db.table_exists_sql).fetchall()[0]
        if not exists:
            return None
        rows = conn.execute("SELECT version FROM ironic_fsm_schema WHERE id = 1").fetchall()
        return int(rows[0][0]) if rows else None

    def _refuse_newer(self, version: int | None) -> None:
        if version is not None and version > SCHEMA_VERSION:
            raise InvalidParameterValue(
                f"The database at {self.url} has ironic_fsm schema version {version}, newer "
                f"than the versions this ironic_fsm knows (up to {SCHEMA_VERSION}); upgrade "
                "ironic_fsm to use it",
                url=self.url,
                schema_version=version,
            )

    def _log(self, sql: str) -> None:
        _LOG.debug("%s: %s", self.dialect, sql)

    # -- conversions ------------------------------------------------------------------

    def _row(self, node: Node) -> tuple[str, tuple[Any, ...]]:
        """The node's JSON and column values, checked before anything is written."""
        data = encode(node)
        _check_columns(node)
        created = None if node.created_at is None else self._db.bind_time(node.created_at)
        columns = (
            node.name,
            node.driver,
            node.provision_state,
            bool(node.maintenance),
            bool(node.retired),
            node.reservation,
        )
        return data, (*columns, created)

    # -- the Store protocol --------------------------------------------------------------

    def create(self, node: Node) -> None:
        """Add a new record (uuid and name unused, name not another node's uuid); version 1."""
        data, (*columns, created) = self._row(node)
        if created is None:
            created = self._db.bind_time(datetime.now(_UTC))  # orders nothing; just set it
        check_name = node.name is not None and node.name != node.uuid
        if self._echo:
            self._log(self._q_create)
        with self._db.transaction(node) as conn:
            conn.execute(self._q_create, (node.uuid, *columns, created, data))
            if check_name and conn.execute(self._q_uuid_exists, (node.name,)).fetchall():
                raise duplicate_name(node.name)
        node.version = 1

    def get(self, ident: str) -> Node:
        """A fresh copy of the node with this UUID or name; :class:`NodeNotFound` if none."""
        if "\x00" in ident:
            raise not_found(ident)
        if self._echo:
            self._log(self._q_get)
        with self._db.connection() as conn:
            rows = conn.execute(self._q_get, (ident, ident)).fetchall()
        row = _pick(rows, ident)
        if row is None:
            raise not_found(ident)
        return _to_node(row[1], row[2], row[3])

    def list(self, **filters: Any) -> list[Node]:
        """Copies of the nodes whose fields equal every filter, in insertion order.

        Filters on indexed columns run in SQL; the others on the decoded nodes.
        """
        check_filters(filters)
        where: list[str] = []
        params: list[Any] = []
        rest: dict[str, Any] = {}
        for key, value in filters.items():
            if key in _STRING_COLUMNS and value is None:
                where.append(f"{key} IS NULL")
            elif _pushable(key, value):
                where.append(f"{key} = {self._q}")
                params.append(value)
            else:
                rest[key] = value
        sql = self._q_select
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += self._q_order
        if self._echo:
            self._log(sql)
        with self._db.connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        nodes = [_to_node(r[0], r[1], r[2]) for r in rows]
        return [node for node in nodes if matches(node, rest)] if rest else nodes

    def save(self, node: Node) -> None:
        """Write ``node`` if its version is current; bump ``node.version`` in place.

        All or nothing: every value is checked before the one ``UPDATE``.

        Raises:
            ConcurrentUpdate: the stored version differs (nothing written).
            NodeNotFound: the record is gone.
            InvalidParameterValue: another node has this name, or a value
                cannot be stored (the message names the field).
        """
        data, (*columns, created) = self._row(node)
        new_version = node.version + 1
        params = (*columns, new_version, created, data, node.uuid, node.version)
        if self._echo:
            self._log(self._q_save)
        rows: list[Any] = []
        with self._db.connection(node) as conn:
            written = conn.execute(self._q_save, params).rowcount
            if written == 0:
                rows = conn.execute(self._q_version, (node.uuid,)).fetchall()
        if written == 0:
            if not rows:
                raise not_found(node.uuid)
            raise ConcurrentUpdate(
                f"Node {node.uuid} was changed by someone else (version "
                f"{rows[0][0]}, ours {node.version}); re-read it and retry",
                node=node.uuid,
            )
        node.version = new_version

    def delete(self, ident: str) -> None:
        """Remove the node with this UUID (or else this name); :class:`NodeNotFound` if none."""
        if "\x00" in ident:
            raise not_found(ident)
        with self._db.connection() as conn:
            if (
                conn.execute(self._q_delete, (ident,)).rowcount == 0
                and conn.execute(self._q_delete_by_name, (ident,)).rowcount == 0
            ):
                raise not_found(ident)

    def reserve(self, ident: str, holder: str) -> Node:
        """Atomically set ``reservation = holder`` if the node is free; nothing else changes.

        One ``UPDATE ... RETURNING`` when ``ident`` is a UUID.

        Raises:
            NodeLocked: another holder has it (the message names the holder).
            NodeNotFound: no node has this UUID or name.
        """
        _check_holder(holder)
        if "\x00" in ident:
            raise not_found(ident)
        uuid = ident
        holding: str | None = None
        if self._echo:
            self._log(self._q_reserve)
        with self._db.connection() as conn:
            for _ in range(3):
                row = self._reserve_row(conn, uuid, holder)
                if row is not None:
                    return _to_node(row[0], row[1], row[2])
                # Why not: no such UUID (maybe a name), or someone else holds it.
                found = _pick(conn.execute(self._q_get, (ident, ident)).fetchall(), ident)
                if found is None:
                    raise not_found(ident)
                uuid, holding = found[0], found[2]
                if holding is not None:
                    raise locked_error(uuid, holding)
                # A name, or released between our UPDATE and SELECT: try again.
        raise locked_error(uuid, holding)

    def _reserve_row(self, conn: _Connection, uuid: str, holder: str) -> Any:
        if self._db.returning:
            rows = conn.execute(self._q_reserve, (holder, uuid)).fetchall()
            return rows[0] if rows else None
        if conn.execute(self._q_reserve, (holder, uuid)).rowcount == 0:
            return None
        rows = conn.execute(self._q_by_uuid, (uuid,)).fetchall()
        return rows[0] if rows and rows[0][1] == holder else None

    def release(self, ident: str, holder: str) -> None:
        """Clear the reservation if ``holder`` has it; :class:`NodeNotFound` if no such node."""
        if "\x00" in ident:
            raise not_found(ident)
        with self._db.connection() as conn:
            if conn.execute(self._q_release, (ident, holder)).rowcount:
                return
            found = _pick(conn.execute(self._q_get, (ident, ident)).fetchall(), ident)
            if found is None:
                raise not_found(ident)
            if found[0] != ident:
                conn.execute(self._q_release, (found[0], holder))

    def heartbeat(self, holder: str, now: datetime) -> None:
        """Record that ``holder`` is alive at ``now`` (naive datetimes are taken as UTC)."""
        _check_holder(holder)
        with self._db.connection() as conn:
            conn.execute(self._q_heartbeat, (holder, self._db.bind_time(now)))

    def holders(self) -> dict[str, datetime]:
        """Every holder's last heartbeat, as aware UTC datetimes."""
        with self._db.connection() as conn:
            rows = conn.execute(self._q_holders).fetchall()
        return {row[0]: self._db.read_time(row[1]) for row in rows}

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
