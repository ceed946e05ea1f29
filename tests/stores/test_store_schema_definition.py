"""The layout is defined once (``stores._tables``), and the revision files end at it.

A database made by the store (the revision files of ``stores/migrations``,
run by Alembic) is compared with one made from the SQLAlchemy tables
(``METADATA.create_all``), on a real SQLite file and on the real PostgreSQL
server: every table's columns (name, type, nullability, default, order),
keys and unique constraints, every index with its condition, every trigger
and trigger function, PostgreSQL's storage options. Anything a revision
adds that the definition lacks, or the other way round, fails here.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
from old_schema import raw_pg, raw_rows

from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore, _upgrade
from ironic_fsm.stores._schema import _COLUMNS, CATALOG_COLUMNS, SCHEMA_VERSION
from ironic_fsm.stores._tables import METADATA

#: Alembic's own table: in a migrated database only (a definition has no revision).
_ALEMBIC = "alembic_version"


def _sqlite_layout(path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with sqlite3.connect(path) as conn:
        objects = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name != ? ORDER BY name",
            (_ALEMBIC,),
        ).fetchall()
        for kind, name, table, sql in objects:
            if kind == "table":
                out[f"table {name}"] = conn.execute(f"PRAGMA table_xinfo({name})").fetchall()
                out[f"indexes of {name}"] = sorted(  # (name, unique, origin, partial, columns)
                    (*index[1:], conn.execute(f"PRAGMA index_xinfo({index[1]})").fetchall())
                    for index in conn.execute(f"PRAGMA index_list({name})").fetchall()
                )
            elif sql is not None:  # an index's text (its condition) or a trigger's
                out[f"{kind} {name} on {table}"] = re.sub(
                    r"\s+", " ", sql.replace(" IF NOT EXISTS", "")
                )
    return out


def _postgres_layout(url: str) -> dict[str, Any]:
    queries = {
        "columns": "SELECT table_name, ordinal_position, column_name, data_type, "
        "character_maximum_length, is_nullable, column_default FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name != 'alembic_version' "
        "ORDER BY 1, 2",
        "constraints": "SELECT c.conrelid::regclass::text, c.conname, c.contype, "
        "pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN pg_namespace n "
        "ON n.oid = c.connamespace WHERE n.nspname = current_schema() "
        "AND c.conrelid::regclass::text != 'alembic_version' ORDER BY 1, 2",
        "indexes": "SELECT indexname, replace(indexdef, current_schema() || '.', '') "
        "FROM pg_indexes WHERE schemaname = current_schema() "
        "AND tablename != 'alembic_version' ORDER BY 1",
        "triggers": "SELECT t.tgname, "
        "replace(pg_get_triggerdef(t.oid), current_schema() || '.', '') "
        "FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND NOT t.tgisinternal ORDER BY 1",
        "functions": "SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n "
        "ON n.oid = p.pronamespace WHERE n.nspname = current_schema() ORDER BY 1",
        "storage": "SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r' "
        "AND c.relname != 'alembic_version' ORDER BY 1",
    }
    with raw_pg(url) as conn:
        return {name: conn.execute(query).fetchall() for name, query in queries.items()}


def _layout(url: str) -> dict[str, Any]:
    if url.startswith("sqlite"):
        return _sqlite_layout(url[len("sqlite:///") :])
    return _postgres_layout(url)


@pytest.fixture
def defined_url(sql_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    """Another empty database of ``sql_url``'s kind, made from the SQLAlchemy tables alone."""
    if sql_url.startswith("sqlite"):
        urls: Iterator[str] = iter([f"sqlite:///{tmp_path / 'defined.sqlite'}"])
    else:
        from conftest import fresh_postgres_url

        urls = fresh_postgres_url(request.getfixturevalue("postgres_server"))
    for url in urls:
        engine = sqlalchemy.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
        with engine.begin() as conn:
            METADATA.create_all(conn)
        engine.dispose()
        yield url


def test_the_revisions_make_what_the_tables_define(sql_url: str, defined_url: str) -> None:
    SQLStore(sql_url).close()
    migrated, defined = _layout(sql_url), _layout(defined_url)
    assert migrated.keys() == defined.keys()
    for part, description in defined.items():
        assert migrated[part] == description, part
    # ... and the migrated one is stamped at the last revision, in both version tables.
    last = _upgrade.revision_of(SCHEMA_VERSION)
    assert raw_rows(sql_url, "SELECT version_num FROM alembic_version") == [(last,)]
    assert raw_rows(sql_url, "SELECT id, version FROM ironic_fsm_schema") == [(1, SCHEMA_VERSION)]


def test_an_old_database_migrates_to_what_the_tables_define(
    sql_url: str, defined_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:  # as the first release left it
        patch.setattr("ironic_fsm.stores.sql.SCHEMA_VERSION", 1)
        SQLStore(sql_url).close()
    SQLStore(sql_url).close()
    assert _layout(sql_url) == _layout(defined_url)


def test_the_revisions_are_one_numbered_chain_ending_at_the_schema_version() -> None:
    scripts = _upgrade.scripts()
    chain = [script.revision for script in scripts.walk_revisions("base", "heads")]
    assert chain == [_upgrade.revision_of(n) for n in range(SCHEMA_VERSION, 0, -1)]
    for script in scripts.walk_revisions():
        assert Path(script.path).name.startswith(f"v{script.revision}_"), script.path


def test_the_hand_written_statements_name_the_defined_columns() -> None:
    nodes = [column.name for column in METADATA.tables["nodes"].columns]
    bookkeeping = {"uuid", "version", "seq", "created_at", "data"}
    history = {"history_entries", "history_last_seq"}  # written by history's own statements
    assert tuple(c for c in nodes if c not in bookkeeping | history) == _COLUMNS
    for catalog in ("deploy_templates", "runbooks"):
        names = tuple(column.name for column in METADATA.tables[catalog].columns)
        assert names == CATALOG_COLUMNS


_IMPORTED = (
    "import sys; from ironic_fsm.stores import SQLStore; SQLStore({url!r}).close(); "
    "print(sorted(m for m in ('sqlalchemy', 'alembic') if m in sys.modules))"
)


def _tools_imported_by_opening(url: str) -> str:
    code = _IMPORTED.format(url=url)
    return subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=300
    ).stdout.strip()


def test_only_a_migration_imports_the_migration_tools(sql_url: str) -> None:
    # Creating the database runs the revisions through Alembic (and SQLAlchemy) ...
    assert _tools_imported_by_opening(sql_url) == "['alembic', 'sqlalchemy']"
    # ... opening it once it is up to date is one SELECT on the store's own driver.
    assert _tools_imported_by_opening(sql_url) == "[]"


def test_threads_making_different_databases_at_once_each_get_theirs(tmp_path: Path) -> None:
    # Alembic's ``context`` and ``op`` are module globals: the upgrades take turns.
    urls = [f"sqlite:///{tmp_path / f'db{n}.sqlite'}" for n in range(4)] + ["sqlite://"] * 2
    start = threading.Barrier(len(urls))
    errors: list[BaseException] = []

    def make(url: str) -> None:
        start.wait()
        try:
            with SQLStore(url) as store:
                store.create(Node(name="made"))
                assert store.get("made").version == 1
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=make, args=(url,), daemon=True) for url in urls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    for url in urls[:4]:
        assert raw_rows(url, "SELECT version FROM ironic_fsm_schema") == [(SCHEMA_VERSION,)]
        assert _sqlite_layout(url[len("sqlite:///") :]) == _sqlite_layout(urls[0][10:])
