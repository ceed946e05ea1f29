"""PostgreSQL for :class:`~ironic_fsm.stores.sql.SQLStore`: psycopg 3 and ``psycopg_pool``.

Imported only for a PostgreSQL URL; needs the ``postgres`` extra. Pooled
connections run in autocommit, so that each single statement is its own
transaction without ``BEGIN``/``COMMIT`` round trips, and every connection
goes back to the pool when the call ends, whatever happened (the pool
replaces a broken one).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timezone
from typing import Any, Final

import psycopg
import psycopg_pool
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ironic_fsm.exceptions import (
    InvalidParameterValue,
    IronicFSMError,
    StoreBusy,
    StoreError,
    StoreUnavailable,
)
from ironic_fsm.node import Node
from ironic_fsm.stores._announce import Coalescing
from ironic_fsm.stores.base import WORK_CHANNEL, duplicate_name, duplicate_uuid

__all__ = ["PostgresDB", "conninfo"]

_UTC: Final = timezone.utc
#: Errors that mean another transaction was in the way: worth retrying.
_CONTENTION: Final = (
    pg_errors.LockNotAvailable,
    pg_errors.SerializationFailure,
    pg_errors.DeadlockDetected,
)
#: Operational errors that are about the request, not the database's being there.
_NOT_OUTAGES: Final = (*_CONTENTION, pg_errors.QueryCanceled)
#: What libpq says when the server answered a connection and refused it for its settings:
#: a wrong URL, user or password is no outage, and retrying it would only hide it.
_REFUSALS: Final = ("does not exist", "authentication failed", "no pg_hba.conf entry")
#: Key of the advisory lock that serialises schema creation between processes.
_SCHEMA_LOCK_KEY: Final = 0x1F5A_0001


def conninfo(url: str, shown: str) -> str:
    """``url`` as libpq reads it, written out as ``key=value`` pairs; refused if libpq refuses.

    The message names ``shown`` (the URL with its password masked) and not
    libpq's reason, which may quote the part it could not read: the password.
    """
    try:
        return make_conninfo("", **conninfo_to_dict(url))
    except psycopg.Error:
        raise InvalidParameterValue(
            f"The PostgreSQL URL {shown!r} cannot be read: libpq refused it", url=shown
        ) from None


#: Seconds one reconnection attempt of the pool goes on before it is dropped (see open()).
RECONNECT_TIMEOUT: Final = 5.0


class PostgresDB:
    """A ``psycopg_pool.ConnectionPool`` of autocommit connections to one database."""

    name: Final = "postgresql"
    placeholder: Final = "%s"
    returning: Final = True
    driver_error: Final = (psycopg.Error, psycopg_pool.PoolTimeout, UnicodeError)

    def __init__(
        self,
        conninfo: str,
        shown: str,
        *,
        pool_size: int,
        pool_timeout: float,
        connect_args: dict[str, Any],
    ) -> None:
        self.target = shown
        self.pool_size = pool_size
        self.pool_timeout = pool_timeout
        self._conninfo = conninfo
        self._kwargs: dict[str, Any] = {**connect_args, "autocommit": True}
        self._pool: psycopg_pool.ConnectionPool[psycopg.Connection[Any]] | None = None
        self._announcer = Coalescing(self._notify)
        #: One entry per connection lent out now (``append``/``pop`` are atomic: no lock).
        self._lent: list[None] = []

    def open(self) -> None:
        """Open the pool (after the schema was prepared on a direct connection).

        The pool re-opens a broken connection with waits that double from 1 s
        (psycopg_pool's backoff, which has no ceiling) for ``reconnect_timeout``:
        at its default of 5 minutes, a database back after a 90 s outage was
        found only at the next try, 12 s later (``bench_db_restart``).
        :data:`RECONNECT_TIMEOUT` drops an attempt after 5 s instead (its
        longest wait is then a few seconds), and the next caller that needs a
        connection starts a new one at once: the database is found again
        within seconds of its return, however long it was away.
        """
        self._pool = psycopg_pool.ConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=self.pool_size,
            timeout=self.pool_timeout,
            reconnect_timeout=RECONNECT_TIMEOUT,
            kwargs=self._kwargs,
            name="ironic_fsm",
            open=True,
        )

    @contextmanager
    def direct(self) -> Iterator[psycopg.Connection[Any]]:
        """One unpooled connection, so that a wrong URL fails at once with the server's reason."""
        try:
            conn = psycopg.connect(self._conninfo, **self._kwargs)
        except self.driver_error as exc:
            raise self.translate(exc, None) from exc
        try:
            with conn:
                yield conn
        except self.driver_error as exc:
            raise self.translate(exc, None) from exc

    @contextmanager
    def connection(self, node: Node | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in autocommit; driver errors leave as ironic_fsm errors."""
        assert self._pool is not None, "the store is closed"
        lent = self._lent
        try:
            with self._pool.connection() as conn:
                lent.append(None)
                try:
                    yield conn
                finally:
                    lent.pop()
        except self.driver_error as exc:
            raise self.translate(exc, node) from exc

    @contextmanager
    def transaction(self, node: Node | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection inside a transaction: committed on success, else rolled back."""
        with self.connection(node) as conn, conn.transaction():
            yield conn

    def translate(self, exc: BaseException, node: Node | None) -> IronicFSMError:
        """The ironic_fsm error for a psycopg error: the one place PostgreSQL errors are mapped."""
        uuid = node.uuid if node is not None else None
        if isinstance(exc, psycopg_pool.PoolTimeout):
            return self._pool_timeout(uuid)
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, pg_errors.UniqueViolation) and node is not None:
            constraint = exc.diag.constraint_name
            if constraint == "uniq_nodes0name":
                return duplicate_name(node.name)
            if constraint == "nodes_pkey":
                return duplicate_uuid(node.uuid)
        if isinstance(exc, (psycopg.IntegrityError, psycopg.DataError, UnicodeError)):
            what = "A node" if uuid is None else f"Node {uuid}"
            return InvalidParameterValue(f"{what} cannot be stored: {text}", node=uuid)
        if isinstance(
            exc,
            (
                pg_errors.LockNotAvailable,
                pg_errors.SerializationFailure,
                pg_errors.DeadlockDetected,
            ),
        ):
            return StoreBusy(
                f"The PostgreSQL database {self.target} refused the request because another "
                f"transaction held a lock ({text}); nothing was written, retry later",
                node=uuid,
            )
        if _is_outage(exc):
            # Connection refused or cut, the server shutting down or starting up, out of
            # disk or memory: the request was fine, the database was not there for it.
            return StoreUnavailable(
                f"The PostgreSQL database {self.target} is unavailable "
                f"({type(exc).__name__}: {text}); nothing was written, retry once it is back",
                node=uuid,
                target=self.target,
            )
        return StoreError(
            f"The PostgreSQL database {self.target} failed the request "
            f"({type(exc).__name__}: {text}); nothing was written",
            node=uuid,
        )

    def _pool_timeout(self, uuid: str | None) -> StoreError:
        """No pooled connection in time: all busy (StoreBusy), or none could be opened.

        With fewer than ``pool_size`` lent out, the pool had room to open one
        and could not: the server is down or unreachable (StoreUnavailable).
        """
        if len(self._lent) >= self.pool_size:
            return StoreBusy(
                f"No connection to the PostgreSQL database {self.target} came free within "
                f"{self.pool_timeout:g} s (all {self.pool_size} of the pool were busy); "
                "nothing was written, retry later or raise pool_size",
                node=uuid,
            )
        return StoreUnavailable(
            f"No connection to the PostgreSQL database {self.target} could be opened within "
            f"{self.pool_timeout:g} s (the server is down or unreachable); nothing was "
            "written, retry once it is back",
            node=uuid,
            target=self.target,
        )

    def announce_work(self, uuid: str) -> None:
        """``NOTIFY ironic_fsm_work, '<uuid>'`` soon, from its own thread (:class:`Coalescing`).

        Called after the release that queued the node has committed (pooled
        connections are in autocommit), so a woken listener finds it free.
        """
        self._announcer.add(uuid)

    def _notify(self, uuids: list[str]) -> None:
        """Every pending announcement in one statement: one commit, one wake-up per listener."""
        with self.connection() as conn:
            conn.execute(
                "SELECT pg_notify(%s, u) FROM unnest(%s::text[]) AS u", (WORK_CHANNEL, uuids)
            )

    @staticmethod
    def bind_time(value: datetime) -> datetime:
        """An aware UTC timestamp (naive input is UTC)."""
        if value.tzinfo is None:
            return value.replace(tzinfo=_UTC)
        return value.astimezone(_UTC)

    @staticmethod
    def read_time(value: Any) -> datetime:
        """A stored timestamp as an aware UTC datetime (the server answers in its own zone)."""
        assert isinstance(value, datetime)
        return value.astimezone(_UTC)

    def timestamp_type(self) -> str:
        return "TIMESTAMP WITH TIME ZONE"

    #: Whether the schema-version table exists (in the first schema of the search path).
    table_exists_sql: Final = "SELECT to_regclass('ironic_fsm_schema') IS NOT NULL"

    def setup(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        """The connection the schema is checked on: a direct one, so errors are the server's."""
        return self.direct()

    @contextmanager
    def schema_transaction(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        """A transaction holding an advisory lock, so concurrent openers create it once."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_KEY,))
            yield

    def close(self) -> None:
        self._announcer.close()  # what is pending goes out on the pool, before it closes
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def _is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the server is down, cut off or out of resources (not our request).

    Connection failures carry no SQLSTATE; those whose server-side reason
    is the settings (:data:`_REFUSALS`) are not outages.
    """
    if not isinstance(exc, psycopg.OperationalError) or isinstance(exc, _NOT_OUTAGES):
        return False
    return exc.sqlstate is not None or not any(word in str(exc) for word in _REFUSALS)
