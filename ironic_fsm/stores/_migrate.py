"""Bringing a database to the schema this code writes: create it, migrate it, or refuse it.

Run by :class:`~ironic_fsm.stores.sql.SQLStore` when it opens, on the
layout and the steps of :mod:`._schema`. Each step from version N to N + 1
runs in one transaction that also stamps N + 1: on SQLite under ``BEGIN
IMMEDIATE``, on PostgreSQL holding an advisory lock, so that two processes
opening an old database at once migrate it once.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.stores._schema import MIGRATIONS, StepContext, _schema_ddl
from ironic_fsm.stores._statements import Statements

# The store's logger: an upgrade is the store's news.
_LOG: Final = logging.getLogger("ironic_fsm.stores.sql")


class Migrator:
    """Creates what is missing, runs the missing steps in order, refuses a newer schema."""

    def __init__(self, sql: Statements, context: StepContext, url: str) -> None:
        self._sql = sql
        self._db = sql.db
        #: What a step function gets besides the connection.
        self._context = context
        #: The database as messages show it (any password masked).
        self._url = url

    def prepare(self, target: int) -> None:
        """Bring the database to schema version ``target``."""
        db, q = self._db, self._sql.q
        with db.setup() as conn:
            version = self._version(conn)
            if version == target:
                return  # the common case: nothing to create, no write lock taken
            self._refuse_newer(version, target)
            if version is None:
                with db.schema_transaction(conn):
                    for statement in _schema_ddl(db.timestamp_type()):
                        conn.execute(statement)
                    if self._version(conn) is None:
                        conn.execute(
                            f"INSERT INTO ironic_fsm_schema (id, version) VALUES (1, {q})", (1,)
                        )
            while True:
                with db.schema_transaction(conn):
                    # Read again under the lock: another process may have migrated meanwhile.
                    version = self._version(conn)
                    self._refuse_newer(version, target)
                    if version is None or version >= target:
                        return
                    self._step(conn, version)

    def _step(self, conn: Any, version: int) -> None:
        """Run the step from ``version`` to the next and stamp it, in the caller's transaction."""
        _LOG.info("%s: upgrading the schema from version %d to %d", self._url, version, version + 1)
        sql = self._sql
        for step in MIGRATIONS[version](self._context.timestamp):
            if isinstance(step, str):
                if sql.echo:
                    sql.log(step)
                conn.execute(step)
            else:
                step(self._context, conn)
        conn.execute(f"UPDATE ironic_fsm_schema SET version = {sql.q} WHERE id = 1", (version + 1,))

    def _version(self, conn: Any) -> int | None:
        (exists,) = conn.execute(self._db.table_exists_sql).fetchall()[0]
        if not exists:
            return None
        rows = conn.execute("SELECT version FROM ironic_fsm_schema WHERE id = 1").fetchall()
        return int(rows[0][0]) if rows else None

    def _refuse_newer(self, version: int | None, target: int) -> None:
        if version is not None and version > target:
            raise InvalidParameterValue(
                f"The database at {self._url} has ironic_fsm schema version {version}, newer "
                f"than the versions this ironic_fsm knows (up to {target}); upgrade "
                "ironic_fsm to use it",
                url=self._url,
                schema_version=version,
            )
