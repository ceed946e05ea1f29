"""Opening a database for :class:`~ironic_fsm.stores.sql.SQLStore`: the URL, the dialect.

What the store asks of a dialect module (:class:`_Database`), and the one
place a URL is read: which dialect, which file or server, and how it is
shown in messages (with any password masked).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol
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


def _hide_password(url: str) -> str:
    """``url`` fit for messages: a password in the user part or the query is masked.

    libpq takes ``?password=...`` as well as ``user:password@``; both are secrets.
    """
    parts = urlsplit(url)
    if parts.password is None and "password" not in parts.query.lower():
        return url  # as given: rebuilding drops the empty host of sqlite:////abs/path
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
