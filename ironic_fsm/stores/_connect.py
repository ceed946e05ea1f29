"""Opening a database for :class:`~ironic_fsm.stores.sql.SQLStore`: the URL, the dialect.

What the store asks of a dialect module (:class:`_Database`), and the one
place a URL is read: which dialect, which file or server, and how it is
shown in messages (with any password masked). The URL is split by the
standard library's :func:`~urllib.parse.urlsplit`; a SQLite ``file:`` URI
goes to :mod:`sqlite3` as it is (``uri=True``), and a PostgreSQL URL is
read by libpq itself (:func:`psycopg.conninfo.conninfo_to_dict`, in
:mod:`._postgres`). SQLAlchemy's ``make_url`` was measured and not taken:
it imports SQLAlchemy (0.3 s) into every open of a store that otherwise
opens in 2 ms, and masks no password in the query (libpq's
``?password=``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Final, Protocol
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError, MissingDependency
from ironic_fsm.node import Node


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


_SYNCHRONOUS_MODES: Final = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})
_POSTGRES_SCHEMES: Final = frozenset({"postgresql", "postgresql+psycopg", "postgres"})


def open_database(
    url: str,
    *,
    sqlite_synchronous: str,
    sqlite_busy_timeout: float,
    pool_size: int,
    max_overflow: int,
    pool_timeout: float,
    connect_args: dict[str, Any] | None,
) -> _Database:
    """The database ``url`` names (see :class:`~ironic_fsm.stores.sql.SQLStore`), not yet open.

    Raises:
        InvalidParameterValue: an option out of range, or a URL no dialect
            takes (shown with its password masked).
    """
    synchronous = str(sqlite_synchronous).upper()
    if synchronous not in _SYNCHRONOUS_MODES:
        raise InvalidParameterValue(
            f"sqlite_synchronous must be one of {', '.join(sorted(_SYNCHRONOUS_MODES))}, "
            f"not {sqlite_synchronous!r}"
        )
    if pool_size + max_overflow < 1:
        raise InvalidParameterValue(f"pool_size must be at least 1, not {pool_size}")
    scheme = urlsplit(url).scheme if "://" in url else ""
    args = dict(connect_args or {})
    if scheme == "sqlite":
        return _open_sqlite(url, synchronous, float(sqlite_busy_timeout), args)
    if scheme in _POSTGRES_SCHEMES:
        return _open_postgres(url, scheme, pool_size + max_overflow, float(pool_timeout), args)
    raise InvalidParameterValue(
        f"Unsupported database URL {_hide_password(url)!r}: use sqlite:///PATH, "
        "sqlite:// or postgresql://USER@HOST:PORT/DBNAME",
        url=_hide_password(url),
    )


def _hide_password(url: str) -> str:
    """``url`` fit for messages: a password in the user part or the query is masked.

    libpq takes ``?password=...`` as well as ``user:password@``; both are secrets.
    """
    parts = urlsplit(url)
    if parts.password is None and "password" not in parts.query.lower():
        return url  # as given: rebuilding drops the empty host of sqlite:////abs/path
    if parts.password is not None:
        host = parts.netloc.rpartition("@")[2]
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{host}")
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

    parts = urlsplit(url, allow_fragments=False)  # a "#" is part of a file's name
    path = parts.netloc + parts.path  # sqlite://name.db: a relative file, as ever
    if path == "/":
        # "sqlite:///" names no file; taking it for memory would drop every write silently.
        raise InvalidParameterValue(
            "The SQLite URL sqlite:/// names no file: use sqlite:///PATH for a file, "
            "or sqlite:// for a private in-memory database",
            url=url,
        )
    database = path[1:] if path.startswith("/") else path
    options = dict(parse_qsl(parts.query))
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
    url: str, scheme: str, pool_size: int, pool_timeout: float, connect_args: dict[str, Any]
) -> _Database:
    try:
        from ironic_fsm.stores._postgres import PostgresDB, conninfo
    except ImportError as exc:
        raise MissingDependency(
            "A PostgreSQL store needs psycopg and psycopg_pool: pip install 'ironic_fsm[postgres]'",
            extra="postgres",
        ) from exc
    shown = _hide_password(url)
    # libpq reads postgresql:// and postgres:// URLs; the driver's name is SQLAlchemy's habit.
    return PostgresDB(
        conninfo(f"postgresql{url[len(scheme) :]}", shown),
        shown,
        pool_size=pool_size,
        pool_timeout=pool_timeout,
        connect_args=connect_args,
    )
