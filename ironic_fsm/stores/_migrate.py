"""Bringing a database to the schema this code writes: create it, migrate it, or refuse it.

Run by :class:`~ironic_fsm.stores.sql.SQLStore` when it opens. The common
case, a database already at :data:`~._schema.SCHEMA_VERSION`, costs one
``SELECT`` with the store's own driver: SQLAlchemy and Alembic are not
imported. Otherwise the revision files of :mod:`.migrations` run through
Alembic (:mod:`._upgrade`), all the missing ones in one transaction that
also stamps the version: on SQLite under ``BEGIN IMMEDIATE``, on PostgreSQL
holding an advisory lock, so that two processes opening an old database at
once migrate it once (the second reads the version again under the lock
and finds the work done). A revision that fails rolls the whole upgrade
back: the database stays as the release that wrote it left it, still
usable by that release. (Before Alembic each step committed on its own; one
run is Alembic's way, and a fifth of the cost per step.) A database of a
newer version is refused, untouched.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from ironic_fsm.exceptions import InvalidParameterValue, MissingDependency
from ironic_fsm.stores._statements import Statements

if TYPE_CHECKING:
    from ironic_fsm.stores.migrations import StepContext

__all__ = ["Migrator"]

# The store's logger: an upgrade is the store's news.
_LOG: Final = logging.getLogger("ironic_fsm.stores.sql")


class Migrator:
    """Reads the version, runs the missing revisions in order, refuses a newer schema."""

    def __init__(self, sql: Statements, context: StepContext, url: str) -> None:
        self._db = sql.db
        #: What a revision gets besides Alembic's ``op``.
        self._context = context
        #: The database as messages show it (any password masked).
        self._url = url

    def prepare(self, target: int) -> None:
        """Bring the database to schema version ``target``."""
        db = self._db
        with db.setup() as conn:
            version = self._version(conn)
            if version == target:
                return  # the common case: no write lock taken, no migration tool imported
            self._refuse_newer(version, target)
            try:
                from ironic_fsm.stores._upgrade import Upgrader
            except ImportError as exc:  # a dependency of ironic_fsm, removed by hand
                raise MissingDependency(
                    f"Creating or upgrading the database at {self._url} needs Alembic and "
                    f"SQLAlchemy ({exc}): pip install 'alembic>=1.13' 'SQLAlchemy>=2.0'",
                    url=self._url,
                ) from exc

            upgrader = Upgrader(conn, db.name, self._context)
            try:
                with db.schema_transaction(conn):
                    # Read again under the lock: another process may have migrated meanwhile.
                    version = self._version(conn)
                    self._refuse_newer(version, target)
                    if version is not None and version >= target:
                        return
                    if version is not None:
                        _LOG.info(
                            "%s: upgrading the schema from version %d to %d",
                            self._url, version, target,
                        )  # fmt: skip
                    upgrader.upgrade(version, target)
            finally:
                upgrader.close()

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
