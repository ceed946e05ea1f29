"""Running the revision files of :mod:`.migrations` with Alembic, on the store's connection.

Imported only when a database must be created or migrated: SQLAlchemy and
Alembic take about 0.7 s to import on the development box
(docs/architecture.rst), which an up-to-date database never pays
(:mod:`._migrate` reads its version with the store's own driver first).

The store's DBAPI connection is lent to SQLAlchemy through :class:`_Lent`,
whose ``commit`` and ``rollback`` do nothing: the transaction, and the lock
that serialises two processes migrating at once, stay the store's
(:meth:`~._connect._Database.schema_transaction`). Alembic sees a
connection already in a transaction and leaves it alone.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Final

import sqlalchemy
from alembic.config import Config
from alembic.operations import Operations
from alembic.runtime.environment import EnvironmentContext
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.pool import StaticPool

from ironic_fsm.stores import migrations
from ironic_fsm.stores.migrations import CONTEXT_KEY, RAW_KEY, StepContext

__all__ = ["Upgrader", "revision_of", "scripts"]

#: The migrations' folder (``env.py``, ``versions/``).
LOCATION: Final = str(Path(migrations.__file__).parent)
#: SQLAlchemy's URL of each dialect, for an engine that only wraps a lent connection.
#: (No native hstore: SQLAlchemy would look its type up on the lent connection, which
#: psycopg takes only as its own class; no revision uses hstore.)
_ENGINE_URLS: Final = {"sqlite": "sqlite://", "postgresql": "postgresql+psycopg://"}

_lock = threading.Lock()
_scripts: ScriptDirectory | None = None
#: Held by the upgrade running in this process: Alembic's ``context`` and ``op`` are module
#: globals, so two threads migrating two databases at once would see each other's. (No
#: deadlock with the databases' locks: a thread takes this one only once it holds its
#: database's, which no other thread then holds.)
_running = threading.Lock()


def revision_of(version: int) -> str:
    """The revision that makes schema ``version`` (``ironic_fsm_schema``): ``0007`` for 7."""
    return f"{version:04d}"


def scripts() -> ScriptDirectory:
    """The revision files, read once per process (tests reach their modules through it)."""
    global _scripts
    with _lock:
        if _scripts is None:
            _scripts = ScriptDirectory(LOCATION)
        return _scripts


class _Lent:
    """The store's DBAPI connection as SQLAlchemy sees it: the transaction stays the store's."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def commit(self) -> None:
        """The store commits (its ``schema_transaction``), never SQLAlchemy."""

    def rollback(self) -> None:
        """The store rolls back, never SQLAlchemy (nor its pool, when the engine lets go)."""

    def close(self) -> None:
        """The connection is the store's: it outlives the engine."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class Upgrader:
    """Makes or upgrades one database, all its missing revisions in the caller's transaction.

    It drives Alembic as ``alembic.command.upgrade`` and ``stamp`` do (the same
    revision walks, ``_upgrade_revs`` and ``_stamp_revs``), on one
    :class:`ScriptDirectory` read once per process instead of once per call.
    """

    def __init__(self, conn: Any, dialect: str, context: StepContext) -> None:
        self._conn = conn
        self._context = context
        lent = _Lent(conn)
        options = {"use_native_hstore": False} if dialect == "postgresql" else {}
        self._engine = sqlalchemy.create_engine(
            _ENGINE_URLS[dialect], creator=lambda: lent, poolclass=StaticPool, **options
        )
        self._sa = self._engine.connect()
        self._config = Config()
        self._config.set_main_option("script_location", LOCATION)
        self._config.attributes.update(
            {"connection": self._sa, CONTEXT_KEY: context, RAW_KEY: conn}
        )

    def upgrade(self, version: int | None, target: int) -> None:
        """From schema ``version`` (None: an empty database) to ``target``, in the open
        transaction; ``alembic_version`` is first set to ``version``'s revision if it says
        otherwise (a database of a release before Alembic has none)."""
        with _running:
            self._upgrade(version, target)

    def _upgrade(self, version: int | None, target: int) -> None:
        self._sa.begin()  # a no-op on both drivers: marks the transaction as external
        try:
            if version is None:
                self._create(target)
                return
            self._stamp(version)
            self._run(
                lambda rev, ctx: scripts()._upgrade_revs(revision_of(target), rev),
                revision_of(target),
            )
        finally:
            self._sa.rollback()  # SQLAlchemy's bookkeeping only: _Lent.rollback does nothing

    def _create(self, target: int) -> None:
        """A new database: the same revision files in the same order, then one stamp.

        Alembic's own run updates ``alembic_version`` after each revision,
        and on SQLite every such ``UPDATE`` after DDL re-reads the schema: it
        tripled the cost of a new database (41 -> 124 ms; docs/architecture.rst).
        Made in one transaction, a new database has no state in between
        worth recording.
        """
        script = scripts()
        chain = list(script.iterate_revisions(revision_of(target), "base"))
        with EnvironmentContext(self._config, script):  # the revisions' helpers read it
            context = MigrationContext.configure(self._sa)
            with Operations.context(context):
                for revision in reversed(chain):
                    revision.module.upgrade()
            context.stamp(script, revision_of(target))
        self._conn.execute(
            f"UPDATE ironic_fsm_schema SET version = {self._context.q} WHERE id = 1", (target,)
        )

    def _stamp(self, version: int) -> None:
        wanted = (revision_of(version),)
        if MigrationContext.configure(self._sa).get_current_heads() == wanted:
            return
        destination = revision_of(version)
        self._run(lambda rev, ctx: scripts()._stamp_revs(destination, rev), destination, purge=True)

    def _run(self, fn: Any, destination: str, **options: Any) -> None:
        script = scripts()
        with EnvironmentContext(
            self._config, script, fn=fn, destination_rev=destination, **options
        ):
            script.run_env()

    def close(self) -> None:
        """Let go of SQLAlchemy (the store's connection stays open)."""
        self._sa.close()
        self._engine.dispose()
