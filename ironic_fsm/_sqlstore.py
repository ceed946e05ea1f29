"""``SQLStore``: node records in SQLite or PostgreSQL, through SQLAlchemy Core.

Why Core and not the ORM: Ironic spends ~90 % of a lifecycle in the ORM and
the database behind ``Node.save()``. Here every store method is one short
transaction of usually one statement, built once and compiled once (SQLAlchemy
caches the compiled form), so a call costs its commit, the node's JSON
encoding, and SQLAlchemy's fixed overhead per statement (tens of µs).

Layout (schema version 1):

* ``nodes``: one row per node. ``data`` holds
  :meth:`Node.to_json() <ironic_fsm.node.Node.to_json>` (the same text
  :class:`~ironic_fsm.stores.MemoryStore` keeps) and is the source of truth for
  every field; ``name``, ``driver``, ``provision_state``,
  ``maintenance``, ``retired`` are copied into columns so that :meth:`SQLStore.list`
  filters in SQL. ``reservation`` and ``version`` are columns that
  :meth:`SQLStore.reserve` and :meth:`SQLStore.release` change alone, so the
  columns win over ``data`` when a node is read back. ``seq`` records
  insertion order, which is the order of :meth:`SQLStore.list` (as in
  :class:`~ironic_fsm.stores.MemoryStore`).
* ``holders``: the last heartbeat of each reservation holder (crash recovery).
* ``ironic_fsm_schema``: one row with the schema version, so that later
  versions can migrate, and so that this code refuses a database written by a
  newer ironic_fsm instead of corrupting it.

Durability on SQLite: files are opened in WAL mode. With the default
``sqlite_synchronous='NORMAL'`` a committed change survives the process being
killed (it is in the WAL, in the OS's cache) but the last commits may be lost
if the machine loses power; ``'FULL'`` survives power loss, at the cost of an
fsync per commit (about 10x slower). The database is never corrupted either
way.

Concurrency: every method is its own transaction and is safe to call from
several threads sharing one store, and from several processes sharing one
database. Writers on SQLite wait for each other (busy timeout, 30 s by
default) rather than fail; every write transaction starts with its write, so
no transaction ever has to upgrade a read snapshot to a write lock. Saves and
reservations are each a single conditional ``UPDATE``, atomic on both
databases; on PostgreSQL such single statements run in autocommit, which
spares the ``BEGIN`` and ``COMMIT`` round trips.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime, timezone
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Dialect, Engine, Row
from sqlalchemy.pool import StaticPool

from ironic_fsm.exceptions import ConcurrentUpdate, InvalidParameterValue, NodeNotFound
from ironic_fsm.node import Node
from ironic_fsm.stores import check_filters, locked_error, matches

if TYPE_CHECKING:
    from typing_extensions import Unpack

    #: A result row of any shape (SQLAlchemy 2.1 types rows by their columns).
    _AnyRow: TypeAlias = Row[Unpack[tuple[Any, ...]]]

__all__ = ["SCHEMA_VERSION", "SQLStore"]

#: The schema version this code writes and understands.
SCHEMA_VERSION: Final = 1

#: The default database: a file in the current directory.
DEFAULT_URL: Final = "sqlite:///ironic_fsm.sqlite"

#: Seconds a SQLite writer waits for another writer before giving up.
SQLITE_BUSY_TIMEOUT: Final = 30.0

_SYNCHRONOUS_MODES: Final = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})
_STRING_COLUMNS: Final = frozenset({"provision_state", "driver", "name", "reservation"})
_BOOL_COLUMNS: Final = frozenset({"retired", "maintenance"})
_UTC: Final = timezone.utc


class _UTCDateTime(sa.types.TypeDecorator[datetime]):
    """A timestamp that always comes back timezone-aware, in UTC.

    SQLite has no time zones, and PostgreSQL answers in the session's zone:
    storing UTC and tagging it on the way out round-trips the instant on both.
    Naive datetimes are taken to be UTC.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.replace(tzinfo=_UTC) if value.tzinfo is None else value.astimezone(_UTC)
        return value if dialect.name == "postgresql" else value.replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=_UTC) if value.tzinfo is None else value.astimezone(_UTC)


def _tables() -> tuple[sa.MetaData, sa.Table, sa.Table, sa.Table]:
    metadata = sa.MetaData()
    nodes = sa.Table(
        "nodes",
        metadata,
        sa.Column("uuid", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(255), nullable=True),
        sa.Column("driver", sa.String(255), nullable=False),
        sa.Column("provision_state", sa.String(64), nullable=False),
        sa.Column("maintenance", sa.Boolean, nullable=False),
        sa.Column("retired", sa.Boolean, nullable=False),
        sa.Column("reservation", sa.String(255), nullable=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("created_at", _UTCDateTime, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
        sa.UniqueConstraint("name", name="uniq_nodes0name"),
        sa.Index("nodes_provision_state_idx", "provision_state"),
        sa.Index("nodes_driver_idx", "driver"),
        sa.Index("nodes_reservation_idx", "reservation"),
        sa.Index("nodes_seq_idx", "seq"),
    )
    holders = sa.Table(
        "holders",
        metadata,
        sa.Column("holder", sa.String(255), primary_key=True),
        sa.Column("heartbeat", _UTCDateTime, nullable=False),
    )
    schema = sa.Table(
        "ironic_fsm_schema",
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("version", sa.Integer, nullable=False),
    )
    return metadata, nodes, holders, schema


def _is_sqlite_memory(url: sa.URL) -> bool:
    database = url.database or ""
    return (
        database in ("", ":memory:")
        or database.startswith("file::memory:")
        or url.query.get("mode") == "memory"
    )


def _pick(rows: Sequence[_AnyRow], ident: str) -> _AnyRow | None:
    """The row whose uuid is ``ident``, else the one whose name is (UUIDs win, as in memory)."""
    for row in rows:
        if row.uuid == ident:
            return row
    return rows[0] if rows else None


def _to_node(data: str, reservation: str | None, version: int) -> Node:
    node = Node.from_json(data)
    node.reservation = reservation  # the columns are authoritative over the JSON
    node.version = version
    return node


def _not_found(ident: str) -> NodeNotFound:
    return NodeNotFound(f"Node {ident} could not be found", node=ident)


def _duplicate_name(name: str | None) -> InvalidParameterValue:
    return InvalidParameterValue(f"A node named {name!r} already exists", node=name)


class _FastPath:
    """The three calls a lifecycle makes most (get, reserve, save) on raw DBAPI connections.

    SQLAlchemy's fixed cost per statement is several times what the database
    itself spends on a small commit; these statements are simple, so they go
    straight to one driver connection per thread, in autocommit (each
    statement is its own transaction). Everything else goes through
    SQLAlchemy Core. ``connect`` returns ``(connection, release)``.
    """

    def __init__(
        self,
        connect: Callable[[], tuple[Any, Callable[[], None]]],
        placeholder: str,
        integrity_error: type[Exception],
    ) -> None:
        q = placeholder
        self._get = (
            f"SELECT uuid, data, reservation, version FROM nodes WHERE uuid = {q} OR name = {q}"
        )
        self._reserve = (
            f"UPDATE nodes SET reservation = {q}, version = version + 1 "
            f"WHERE uuid = {q} AND reservation IS NULL RETURNING data, reservation, version"
        )
        self._save = (
            f"UPDATE nodes SET name = {q}, driver = {q}, provision_state = {q}, "
            f"maintenance = {q}, retired = {q}, reservation = {q}, version = {q}, data = {q} "
            f"WHERE uuid = {q} AND version = {q}"
        )
        self.integrity_error = integrity_error
        self._connect = connect
        # Idle connections, reused by whichever thread comes next: as many as
        # there were concurrent callers, however many threads come and go.
        self._idle: list[tuple[Any, Callable[[], None]]] = []
        self._guard = threading.Lock()

    def _run(self, sql: str, params: Sequence[Any], fetch: Callable[[Any], Any]) -> Any:
        with self._guard:
            entry = self._idle.pop() if self._idle else None
        if entry is None:
            entry = self._connect()
        try:
            cursor = entry[0].cursor()
            cursor.execute(sql, params)
            result = fetch(cursor)
        except self.integrity_error:
            self._idle_again(entry)
            raise
        except BaseException:
            with contextlib.suppress(Exception):
                entry[1]()  # the connection may be broken: do not reuse it
            raise
        self._idle_again(entry)
        return result

    def _idle_again(self, entry: tuple[Any, Callable[[], None]]) -> None:
        with self._guard:
            self._idle.append(entry)

    def get_row(self, ident: str) -> tuple[str, str, str | None, int] | None:
        rows = self._run(self._get, (ident, ident), lambda cursor: cursor.fetchall())
        for row in rows:
            if row[0] == ident:
                return (row[0], row[1], row[2], row[3])
        return (rows[0][0], rows[0][1], rows[0][2], rows[0][3]) if rows else None

    def reserve_row(self, uuid: str, holder: str) -> tuple[str, str | None, int] | None:
        row = self._run(self._reserve, (holder, uuid), lambda cursor: cursor.fetchone())
        return None if row is None else (row[0], row[1], row[2])

    def save_row(self, params: Mapping[str, Any]) -> int:
        written: int = self._run(
            self._save,
            (
                params["b_name"], params["b_driver"], params["b_provision_state"],
                params["b_maintenance"], params["b_retired"], params["b_reservation"],
                params["b_new_version"], params["b_data"], params["b_uuid"], params["b_version"],
            ),
            lambda cursor: int(cursor.rowcount),
        )  # fmt: skip
        return written

    def close(self) -> None:
        with self._guard:
            idle, self._idle = self._idle, []
        for _, release in idle:
            with contextlib.suppress(Exception):
                release()


def _sqlite_connector(path: str, synchronous: str) -> Callable[[], tuple[Any, Callable[[], None]]]:
    def connect() -> tuple[Any, Callable[[], None]]:
        conn = sqlite3.connect(
            path, timeout=SQLITE_BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
        )
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={synchronous}")
        return conn, conn.close

    return connect


def _pool_connector(engine: Engine) -> Callable[[], tuple[Any, Callable[[], None]]]:
    """A connection checked out of SQLAlchemy's pool for good, in autocommit."""

    def connect() -> tuple[Any, Callable[[], None]]:
        fairy = engine.raw_connection()
        conn = fairy.driver_connection
        assert conn is not None
        conn.autocommit = True
        return conn, fairy.close

    return connect


class SQLStore:
    """Node records in a SQL database: SQLite (embedded) or PostgreSQL (shared).

    Args:
        url: A SQLAlchemy URL: ``sqlite:///path/to/file.db``, ``sqlite://``
            (in memory, one connection shared under a lock), or
            ``postgresql+psycopg://user@host:port/dbname``.
        sqlite_synchronous: SQLite's ``PRAGMA synchronous`` for every
            connection: ``'NORMAL'`` (survives a killed process) or ``'FULL'``
            (survives power loss); ``'OFF'`` and ``'EXTRA'`` are accepted too.
        echo: Log every SQL statement (SQLAlchemy's ``echo``).
        **engine_kwargs: Passed to :func:`sqlalchemy.create_engine`
            (``pool_size``, ``connect_args``, ...).

    The schema is created when missing. Opening a database whose schema is
    newer than this code knows raises :class:`InvalidParameterValue`.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        sqlite_synchronous: str = "NORMAL",
        echo: bool = False,
        **engine_kwargs: Any,
    ) -> None:
        synchronous = str(sqlite_synchronous).upper()
        if synchronous not in _SYNCHRONOUS_MODES:
            raise InvalidParameterValue(
                f"sqlite_synchronous must be one of {', '.join(sorted(_SYNCHRONOUS_MODES))}, "
                f"not {sqlite_synchronous!r}"
            )
        parsed = sa.make_url(url)
        self._lock: AbstractContextManager[Any] = nullcontext()
        self._fast: _FastPath | None = None
        if parsed.get_backend_name() == "sqlite":
            memory = _is_sqlite_memory(parsed)
            connect_args = dict(engine_kwargs.pop("connect_args", {}))
            connect_args.setdefault("timeout", SQLITE_BUSY_TIMEOUT)
            if memory:
                # One connection holds the database: share it, one user at a time.
                connect_args.setdefault("check_same_thread", False)
                engine_kwargs.setdefault("poolclass", StaticPool)
                self._lock = threading.RLock()
            engine = sa.create_engine(parsed, echo=echo, connect_args=connect_args, **engine_kwargs)

            def on_connect(dbapi_connection: Any, _record: Any) -> None:
                cursor = dbapi_connection.cursor()
                try:
                    if not memory:
                        cursor.execute("PRAGMA journal_mode=WAL")
                    cursor.execute(f"PRAGMA synchronous={synchronous}")
                finally:
                    cursor.close()

            sa.event.listen(engine, "connect", on_connect)
            if not memory and sqlite3.sqlite_version_info >= (3, 35) and parsed.database:
                self._fast = _FastPath(
                    _sqlite_connector(parsed.database, synchronous), "?", sqlite3.IntegrityError
                )
        else:
            engine = sa.create_engine(parsed, echo=echo, **engine_kwargs)
        self._engine: Engine = engine
        self._autocommit: Engine | None = None
        if engine.dialect.name == "postgresql":
            self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
            if engine.dialect.driver == "psycopg":
                import psycopg

                self._fast = _FastPath(_pool_connector(engine), "%s", psycopg.IntegrityError)
        self.url: str = parsed.render_as_string(hide_password=True)
        self._build_statements()
        try:
            self._prepare_schema()
        except BaseException:
            engine.dispose()
            raise

    # -- setup ----------------------------------------------------------------------

    def _build_statements(self) -> None:
        """Build every statement once, so that each call reuses SQLAlchemy's compiled form."""
        self._metadata, n, h, self._schema = _tables()
        self._nodes = n
        bp = sa.bindparam
        columns = (n.c.data, n.c.reservation, n.c.version)
        self._sql_select = sa.select(*columns).order_by(n.c.seq, n.c.uuid)
        self._sql_find = sa.select(n.c.uuid, n.c.reservation).where(
            sa.or_(n.c.uuid == bp("ident"), n.c.name == bp("ident"))
        )
        self._sql_get = sa.select(n.c.uuid, *columns).where(
            sa.or_(n.c.uuid == bp("ident"), n.c.name == bp("ident"))
        )
        self._sql_get_by_uuid = sa.select(*columns).where(n.c.uuid == bp("b_uuid"))
        self._sql_version = sa.select(n.c.version).where(n.c.uuid == bp("b_uuid"))
        self._sql_uuid_exists = sa.select(n.c.uuid).where(n.c.uuid == bp("b_uuid"))
        self._sql_create = sa.insert(n).values(
            uuid=bp("b_uuid"),
            name=bp("b_name"),
            driver=bp("b_driver"),
            provision_state=bp("b_provision_state"),
            maintenance=bp("b_maintenance"),
            retired=bp("b_retired"),
            reservation=bp("b_reservation"),
            version=bp("b_new_version"),
            seq=sa.select(sa.func.coalesce(sa.func.max(n.c.seq), 0) + 1).scalar_subquery(),
            created_at=bp("b_created_at", type_=_UTCDateTime),
            data=bp("b_data"),
        )
        self._sql_save = (
            sa.update(n)
            .where(n.c.uuid == bp("b_uuid"), n.c.version == bp("b_version"))
            .values(
                name=bp("b_name"),
                driver=bp("b_driver"),
                provision_state=bp("b_provision_state"),
                maintenance=bp("b_maintenance"),
                retired=bp("b_retired"),
                reservation=bp("b_reservation"),
                version=bp("b_new_version"),
                created_at=sa.func.coalesce(bp("b_created_at", type_=_UTCDateTime), n.c.created_at),
                data=bp("b_data"),
            )
        )
        self._sql_delete = sa.delete(n).where(n.c.uuid == bp("b_uuid"))
        self._sql_delete_by_name = sa.delete(n).where(n.c.name == bp("b_name"))
        self._sql_reserve = (
            sa.update(n)
            .where(
                n.c.uuid == bp("b_uuid"),
                n.c.reservation.is_(None),
            )
            .values(reservation=bp("b_holder"), version=n.c.version + 1)
        )
        self._returning = bool(self._engine.dialect.update_returning)
        if self._returning:
            self._sql_reserve = self._sql_reserve.returning(*columns)
        self._sql_release = (
            sa.update(n)
            .where(n.c.uuid == bp("b_uuid"), n.c.reservation == bp("b_holder"))
            .values(reservation=None, version=n.c.version + 1)
        )
        self._sql_holders = sa.select(h.c.holder, h.c.heartbeat)
        self._sql_heartbeat_update = (
            sa.update(h).where(h.c.holder == bp("b_holder")).values(heartbeat=bp("b_now"))
        )
        values = {"holder": bp("b_holder"), "heartbeat": bp("b_now", type_=_UTCDateTime)}
        dialect = self._engine.dialect.name
        self._sql_heartbeat: sa.Executable | None = None
        if dialect in ("sqlite", "postgresql"):
            insert = sqlite.insert if dialect == "sqlite" else postgresql.insert
            upsert = insert(h).values(**values)
            self._sql_heartbeat = upsert.on_conflict_do_update(
                index_elements=[h.c.holder], set_={"heartbeat": upsert.excluded.heartbeat}
            )
        self._sql_heartbeat_insert = sa.insert(h).values(**values)

    def _prepare_schema(self) -> None:
        """Create what is missing, stamp version 1, refuse a newer schema."""
        schema = self._schema
        try:
            schema.create(self._engine, checkfirst=True)
        except sa.exc.DBAPIError:  # another process created it at the same moment
            schema.create(self._engine, checkfirst=True)
        with self._begin() as conn:
            version = conn.execute(
                sa.select(schema.c.version).where(schema.c.id == 1)
            ).scalar_one_or_none()
        if version is not None and version > SCHEMA_VERSION:
            raise InvalidParameterValue(
                f"The database at {self.url} has ironic_fsm schema version {version}, newer "
                f"than the versions this ironic_fsm knows (up to {SCHEMA_VERSION}); upgrade "
                "ironic_fsm to use it",
                url=self.url,
                schema_version=version,
            )
        try:
            self._metadata.create_all(self._engine, checkfirst=True)
        except sa.exc.DBAPIError:  # a concurrent creator won the race; check again
            self._metadata.create_all(self._engine, checkfirst=True)
        if version is None:
            try:
                with self._begin() as conn:
                    conn.execute(sa.insert(schema).values(id=1, version=SCHEMA_VERSION))
            except sa.exc.IntegrityError:
                pass  # stamped by a concurrent opener
        # Version 1 is the first schema: later versions migrate from here.

    @contextmanager
    def _begin(self) -> Iterator[Connection]:
        """One transaction: everything inside commits together or not at all."""
        with self._lock, self._engine.begin() as conn:
            yield conn

    @contextmanager
    def _statements(self) -> Iterator[Connection]:
        """For statements each atomic alone, which need no transaction around them.

        On PostgreSQL they run in autocommit, which saves the BEGIN and COMMIT
        round trips (two thirds of a save's); on SQLite a transaction is cheaper
        than switching the connection's mode, so it is one.
        """
        if self._autocommit is None:
            with self._begin() as conn:
                yield conn
        else:
            with self._lock, self._autocommit.connect() as conn:
                yield conn

    # -- conversions ------------------------------------------------------------------

    def _params(self, node: Node, new_version: int) -> dict[str, Any]:
        try:
            data = node.to_json()  # its reservation and version are not read back
        except (TypeError, ValueError) as exc:
            raise InvalidParameterValue(
                f"Node {node.uuid} cannot be stored: its fields must be JSON-serializable ({exc})",
                node=node.uuid,
            ) from exc
        return {
            "b_uuid": node.uuid,
            "b_name": node.name,
            "b_driver": node.driver,
            "b_provision_state": node.provision_state,
            "b_maintenance": bool(node.maintenance),
            "b_retired": bool(node.retired),
            "b_reservation": node.reservation,
            "b_version": node.version,
            "b_new_version": new_version,
            "b_created_at": node.created_at,
            "b_data": data,
        }

    @staticmethod
    def _data_error(node: Node, exc: sa.exc.DataError) -> InvalidParameterValue:
        return InvalidParameterValue(
            f"Node {node.uuid} cannot be stored: a value does not fit its column ({exc.orig})",
            node=node.uuid,
        )

    # -- the Store protocol --------------------------------------------------------------

    def create(self, node: Node) -> None:
        """Add a new record (uuid and name unused, name not another node's uuid); version 1."""
        params = self._params(node, 1)
        if params["b_created_at"] is None:
            params["b_created_at"] = datetime.now(_UTC)  # the column orders nothing; just set it
        check_name = node.name is not None and node.name != node.uuid
        try:
            with self._begin() as conn:
                conn.execute(self._sql_create, params)
                if (
                    check_name
                    and conn.execute(self._sql_uuid_exists, {"b_uuid": node.name}).first()
                ):
                    raise _duplicate_name(node.name)
        except sa.exc.IntegrityError as exc:
            with self._statements() as conn:
                taken = conn.execute(self._sql_uuid_exists, {"b_uuid": node.uuid}).first()
            if taken:
                raise InvalidParameterValue(
                    f"A node with UUID {node.uuid} already exists", node=node.uuid
                ) from exc
            raise _duplicate_name(node.name) from exc
        except sa.exc.DataError as exc:
            raise self._data_error(node, exc) from exc
        node.version = 1

    def get(self, ident: str) -> Node:
        """A fresh copy of the node with this UUID or name; :class:`NodeNotFound` if none."""
        if self._fast is not None:
            found = self._fast.get_row(ident)
            if found is None:
                raise _not_found(ident)
            return _to_node(found[1], found[2], found[3])
        with self._statements() as conn:
            row = _pick(conn.execute(self._sql_get, {"ident": ident}).all(), ident)
        if row is None:
            raise _not_found(ident)
        return _to_node(row.data, row.reservation, row.version)

    def list(self, **filters: Any) -> list[Node]:
        """Copies of the nodes whose fields equal every filter, in insertion order.

        Filters on indexed columns run in SQL; the others on the decoded nodes.
        """
        check_filters(filters)
        n = self._nodes
        stmt = self._sql_select
        rest: dict[str, Any] = {}
        for key, value in filters.items():
            if key in _STRING_COLUMNS and (value is None or isinstance(value, str)):
                column = n.c[key]
                stmt = stmt.where(column.is_(None) if value is None else column == value)
            elif key in _BOOL_COLUMNS and isinstance(value, bool):
                stmt = stmt.where(n.c[key] == value)
            else:
                rest[key] = value
        with self._statements() as conn:
            rows = conn.execute(stmt).all()
        nodes = [_to_node(r.data, r.reservation, r.version) for r in rows]
        return [node for node in nodes if matches(node, rest)] if rest else nodes

    def save(self, node: Node) -> None:
        """Write ``node`` if its version is current; bump ``node.version`` in place.

        Raises:
            ConcurrentUpdate: the stored version differs (nothing written).
            NodeNotFound: the record is gone.
            InvalidParameterValue: another node has this name.
        """
        params = self._params(node, node.version + 1)
        if self._fast is not None:
            try:
                written = self._fast.save_row(params)
            except self._fast.integrity_error as exc:
                raise _duplicate_name(node.name) from exc
            if written == 0:
                found = self._fast.get_row(node.uuid)
                if found is None or found[0] != node.uuid:
                    raise _not_found(node.uuid)
                raise ConcurrentUpdate(
                    f"Node {node.uuid} was changed by someone else (version "
                    f"{found[3]}, ours {node.version}); re-read it and retry",
                    node=node.uuid,
                )
            node.version = params["b_new_version"]
            return
        try:
            with self._statements() as conn:
                if conn.execute(self._sql_save, params).rowcount == 0:
                    current = conn.execute(self._sql_version, params).scalar_one_or_none()
                    if current is None:
                        raise _not_found(node.uuid)
                    raise ConcurrentUpdate(
                        f"Node {node.uuid} was changed by someone else (version "
                        f"{current}, ours {node.version}); re-read it and retry",
                        node=node.uuid,
                    )
        except sa.exc.IntegrityError as exc:
            raise _duplicate_name(node.name) from exc
        except sa.exc.DataError as exc:
            raise self._data_error(node, exc) from exc
        node.version = params["b_new_version"]

    def delete(self, ident: str) -> None:
        """Remove the node with this UUID (or else this name); :class:`NodeNotFound` if none."""
        with self._statements() as conn:
            if (
                conn.execute(self._sql_delete, {"b_uuid": ident}).rowcount == 0
                and conn.execute(self._sql_delete_by_name, {"b_name": ident}).rowcount == 0
            ):
                raise _not_found(ident)

    def reserve(self, ident: str, holder: str) -> Node:
        """Atomically set ``reservation = holder`` if the node is free; bump the version.

        Raises:
            NodeLocked: another holder has it (the message names the holder).
            NodeNotFound: no node has this UUID or name.
        """
        uuid = ident
        holding: str | None = None
        if self._fast is not None:
            for _ in range(3):
                reserved = self._fast.reserve_row(uuid, holder)
                if reserved is not None:
                    return _to_node(*reserved)
                found = self._fast.get_row(ident)
                if found is None:
                    raise _not_found(ident)
                uuid, holding = found[0], found[2]
                if holding is not None:
                    raise locked_error(uuid, holding)
            raise locked_error(uuid, holding)
        with self._statements() as conn:
            for _ in range(3):
                params = {"b_uuid": uuid, "b_holder": holder}
                result = conn.execute(self._sql_reserve, params)
                if self._returning:
                    row = result.first()
                    if row is not None:
                        return _to_node(row.data, row.reservation, row.version)
                elif result.rowcount:
                    row = conn.execute(self._sql_get_by_uuid, params).one()
                    return _to_node(row.data, row.reservation, row.version)
                # Why not: no such UUID (maybe a name), or someone else holds it.
                found = _pick(conn.execute(self._sql_find, {"ident": ident}).all(), ident)
                if found is None:
                    raise _not_found(ident)
                uuid, holding = found.uuid, found.reservation
                if holding is not None:
                    raise locked_error(uuid, holding)
                # A name, or released between our UPDATE and SELECT: try again.
            raise locked_error(uuid, holding)

    def release(self, ident: str, holder: str) -> None:
        """Clear the reservation if ``holder`` has it; :class:`NodeNotFound` if no such node."""
        with self._statements() as conn:
            params = {"b_uuid": ident, "b_holder": holder}
            if conn.execute(self._sql_release, params).rowcount:
                return
            found = _pick(conn.execute(self._sql_find, {"ident": ident}).all(), ident)
            if found is None:
                raise _not_found(ident)
            if found.uuid != ident:
                conn.execute(self._sql_release, {"b_uuid": found.uuid, "b_holder": holder})

    def heartbeat(self, holder: str, now: datetime) -> None:
        """Record that ``holder`` is alive at ``now`` (naive datetimes are taken as UTC)."""
        params = {"b_holder": holder, "b_now": now}
        if self._sql_heartbeat is not None:
            with self._statements() as conn:
                conn.execute(self._sql_heartbeat, params)
            return
        with self._begin() as conn:  # portable fallback for other databases
            if conn.execute(self._sql_heartbeat_update, params).rowcount == 0:
                conn.execute(self._sql_heartbeat_insert, params)

    def holders(self) -> dict[str, datetime]:
        """Every holder's last heartbeat, as aware UTC datetimes."""
        with self._statements() as conn:
            return {row.holder: row.heartbeat for row in conn.execute(self._sql_holders)}

    # -- lifetime ------------------------------------------------------------------------

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for inspection and maintenance, not for node writes)."""
        return self._engine

    def close(self) -> None:
        """Close every pooled connection; an in-memory database is gone afterwards."""
        if self._fast is not None:
            self._fast.close()
        self._engine.dispose()

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
