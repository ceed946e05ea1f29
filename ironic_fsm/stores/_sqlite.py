"""SQLite for :class:`~ironic_fsm.stores.sql.SQLStore`: the standard library's ``sqlite3`` alone.

Connections run in autocommit (``isolation_level=None``): a single statement
is its own transaction, and :meth:`SQLiteDB.transaction` opens ``BEGIN
IMMEDIATE`` so that a multi-statement write takes the write lock first and
never has to upgrade a read snapshot (which SQLite may refuse at once).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, unquote

from ironic_fsm.exceptions import (
    InvalidParameterValue,
    IronicFSMError,
    StoreBusy,
    StoreError,
    StoreUnavailable,
)
from ironic_fsm.node import Node
from ironic_fsm.stores.base import duplicate_name, duplicate_uuid

__all__ = ["SQLiteDB"]

_UTC: Final = timezone.utc
_SQLITE_BUSY: Final = 5
_SQLITE_LOCKED: Final = 6
#: Primary result codes of a database that cannot write at all for now: out of memory,
#: an I/O error (the disk failing, or full in the middle of a write), the disk full.
_SQLITE_OUTAGES: Final = {7: "SQLITE_NOMEM", 10: "SQLITE_IOERR", 13: "SQLITE_FULL"}
#: Their messages, for a Python without ``sqlite_errorcode`` (3.10).
_OUTAGE_TEXTS: Final = ("database or disk is full", "disk I/O error", "out of memory")


def create_private(path: Path) -> None:
    """Create ``path`` (and missing parents) readable by its owner only; leave existing ones.

    The database holds BMC credentials. SQLite gives its ``-wal`` and
    ``-shm`` files the mode of the database file, so creating the file
    ``0600`` before SQLite first opens it covers all three.
    """
    missing: list[Path] = []
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            continue  # created meanwhile by someone else: theirs, leave its mode
        os.chmod(directory, 0o700)  # exact, whatever the umask
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def uri_file(target: str) -> Path | None:
    """The file a SQLite URI (``file:nodes.db?mode=rwc``) may create; ``None`` if it creates none.

    SQLite creates the file in mode ``rwc``, its default; ``ro`` and ``rw``
    open an existing one only. A name without ``file:`` is a plain file name.
    """
    name, _, query = target.partition("?")
    if parse_qs(query).get("mode", ["rwc"])[-1] != "rwc":
        return None
    if not name.startswith("file:"):
        return Path(name)
    name = name[len("file:") :]
    if name.startswith("//"):  # file://[localhost]/absolute/path
        name = "/" + name[2:].partition("/")[2]
    return Path(unquote(name))


class SQLiteDB:
    """Connections to one SQLite database, reused across threads.

    A file database keeps one idle connection per concurrent caller seen so
    far (SQLite connections are cheap, but opening one costs its PRAGMAs).
    An in-memory database lives in one connection, shared under a lock.
    """

    name: Final = "sqlite"
    placeholder: Final = "?"
    returning: Final = sqlite3.sqlite_version_info >= (3, 35)
    driver_error: Final = (sqlite3.Error, UnicodeError)

    def __init__(
        self,
        target: str,
        *,
        memory: bool,
        uri: bool,
        synchronous: str,
        busy_timeout: float,
        connect_args: dict[str, Any],
    ) -> None:
        self.target = target
        self.memory = memory
        self.busy_timeout = busy_timeout
        self._uri = uri
        self._synchronous = synchronous
        self._connect_args = connect_args
        self._idle: list[sqlite3.Connection] = []
        self._guard = threading.Lock()
        self._shared: sqlite3.Connection | None = None
        self._lock: AbstractContextManager[Any] = nullcontext()
        if memory:
            self._lock = threading.RLock()
            self._shared = self._connect()
        else:
            path = uri_file(target) if uri else Path(target)
            if path is not None:
                create_private(path)

    def _connect(self) -> sqlite3.Connection:
        try:
            conn: sqlite3.Connection = sqlite3.connect(
                self.target,
                timeout=self.busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                uri=self._uri,
                **self._connect_args,
            )
        except sqlite3.Error as exc:
            raise self.translate(exc, None) from exc
        try:
            if not self.memory:
                self._enable_wal(conn)
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
        except sqlite3.Error as exc:
            conn.close()
            raise self.translate(exc, None) from exc
        return conn

    def _enable_wal(self, conn: sqlite3.Connection) -> None:
        """Switch the file to WAL, waiting out other openers up to the busy timeout.

        Switching needs the file to itself for a moment, and SQLite answers
        "database is locked" at once, without its busy handler, while another
        connection is opening the same file: several processes starting
        together on a new (or pre-WAL) database would fail for nothing.
        """
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.005)

    @contextmanager
    def connection(self, node: Node | None = None) -> Iterator[sqlite3.Connection]:
        """A connection in autocommit; driver errors leave as ironic_fsm errors."""
        with self._lock:
            conn = self._checkout()
            try:
                yield conn
            except self.driver_error as exc:
                raise self.translate(exc, node) from exc
            finally:
                self._checkin(conn)

    @contextmanager
    def transaction(self, node: Node | None = None) -> Iterator[sqlite3.Connection]:
        """A connection inside ``BEGIN IMMEDIATE``: committed on success, else rolled back."""
        with self.connection(node) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _checkout(self) -> sqlite3.Connection:
        if self._shared is not None:
            return self._shared
        with self._guard:
            if self._idle:
                return self._idle.pop()
        return self._connect()

    def _checkin(self, conn: sqlite3.Connection) -> None:
        if conn is self._shared:
            return
        if conn.in_transaction:  # only after a failure that skipped ROLLBACK
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                conn.close()
                return
        with self._guard:
            self._idle.append(conn)

    def translate(self, exc: BaseException, node: Node | None) -> IronicFSMError:
        """The ironic_fsm error for a ``sqlite3`` error: the one place SQLite errors are mapped."""
        uuid = node.uuid if node is not None else None
        text = str(exc)
        if isinstance(exc, sqlite3.IntegrityError) and node is not None:
            if "nodes.name" in text:
                return duplicate_name(node.name)
            if "nodes.uuid" in text:
                return duplicate_uuid(node.uuid)
        if isinstance(exc, (sqlite3.IntegrityError, sqlite3.DataError, UnicodeError)):
            what = "A node" if uuid is None else f"Node {uuid}"
            return InvalidParameterValue(f"{what} cannot be stored: {text}", node=uuid)
        if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
            return StoreBusy(
                f"Another writer held the lock on the SQLite database {self.target} for "
                f"longer than the busy timeout ({self.busy_timeout:g} s); nothing was "
                "written, retry later",
                node=uuid,
                busy_timeout=self.busy_timeout,
            )
        if _is_outage(exc):
            return StoreUnavailable(
                f"The SQLite database {self.target} cannot write now ({text}); nothing was "
                "written and the file is as it was: free space on its disk, then retry",
                node=uuid,
                target=self.target,
            )
        return StoreError(
            f"The SQLite database {self.target} failed the request "
            f"({type(exc).__name__}: {text}); nothing was written",
            node=uuid,
        )

    @staticmethod
    def bind_time(value: datetime) -> str:
        """A timestamp as the v1 layout stores it: naive UTC text (naive input is UTC)."""
        if value.tzinfo is _UTC:  # the usual: its text without the offset, no new datetime
            return value.isoformat(" ", "microseconds")[:26]
        if value.tzinfo is not None:
            value = value.astimezone(_UTC).replace(tzinfo=None)
        # The v1 text, "%Y-%m-%d %H:%M:%S.%f", but several times faster than strftime.
        return value.isoformat(" ", "microseconds")

    @staticmethod
    def read_time(value: Any) -> datetime:
        """A stored timestamp as an aware UTC datetime."""
        parsed = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=_UTC)
        return parsed.astimezone(_UTC)

    def timestamp_type(self) -> str:
        return "DATETIME"

    #: Whether the schema-version table exists.
    table_exists_sql: Final = (
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' "
        "AND name = 'ironic_fsm_schema')"
    )

    def setup(self) -> AbstractContextManager[sqlite3.Connection]:
        """The connection the schema is checked on."""
        return self.connection()

    @contextmanager
    def schema_transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        """``BEGIN IMMEDIATE``: the write lock serialises concurrent creators."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def open(self) -> None:
        """Nothing to do: connections are opened on first use."""

    def close(self) -> None:
        with self._guard:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        if self._shared is not None:
            self._shared.close()
            self._shared = None


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    text = str(exc)
    return "database is locked" in text or "database table is locked" in text


def _is_outage(exc: BaseException) -> bool:
    """A full or failing disk, or no memory: the request was fine, the file could not take it."""
    if not isinstance(exc, sqlite3.Error):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _SQLITE_OUTAGES
    return any(words in str(exc) for words in _OUTAGE_TEXTS)
