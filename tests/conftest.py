"""Shared fixtures: stores on every backend, and a private PostgreSQL server.

* ``postgres_url`` (session): a throwaway PostgreSQL 15 server
  (:mod:`pgserver`), started on first use only, so tests that never touch
  PostgreSQL never pay for it. It never skips: missing binaries fail.
* ``sql_url``: a fresh, empty database URL, parametrized over ``sqlite`` (a
  file under ``tmp_path``) and ``postgres`` (a new schema per test, selected
  through ``search_path``, dropped afterwards).
* ``store``: a fresh store per test, parametrized over ``memory``,
  ``sqlite`` and ``postgres``.
* ``run``: ``ironic-fsm`` in-process on ``db``, a SQLite file of the test's own,
  kept off the developer's database, settings and home (``cli_env``); a
  CLI module that needs another database or options defines its own.
* ``conductor_store``: runs every test of the ``test_conductor_*`` modules
  twice, with ``helpers.make_conductor`` on MemoryStore and on a SQLite file.

The tests, by area: ``core`` (states, lifecycle, steps, planner, the node
record, config, errors, the public namespace), ``drivers`` (interfaces,
hardware types, plugins, IPMI and Redfish against real peers), ``conductor``,
``stores`` (the store contract, SQL, migrations, scans, history), ``fleet``
(several conductors on one database: registry, rings, hand-off, ``serve``),
``api``, ``cli``, ``examples`` and ``agent`` (the ramdisk agent's endpoints and client,
and the real IPA in its sandbox: ``agent/ipa_sandbox.py``). The helpers every area shares, the
workers that tests start as processes, and ``data/`` stay here.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

# tests/ holds the shared helpers (`import pgserver`, `from helpers import ...`),
# and each area folder its test modules, which pytest imports by their bare
# names (no __init__.py: basenames are unique across folders). Every folder
# goes on the path so that a test module may borrow another area's fixture.
sys.path.insert(0, str(Path(__file__).parent))
sys.path.extend(str(d) for d in Path(__file__).parent.glob("*") if any(d.glob("test_*.py")))

from pgserver import PostgresServer

if TYPE_CHECKING:
    from cli_harness import Run

from ironic_fsm.stores import MemoryStore, Store

# The agent area's fixtures (IPA's venv, loop devices, sandboxes), as a plugin rather
# than a conftest.py of its own: a second module named ``conftest`` would shadow this
# one for the test modules that import helpers from it (``from conftest import ...``).
pytest_plugins = ("agent_fixtures",)

SQL_BACKENDS = ["sqlite", "postgres"]
STORE_BACKENDS = ["memory", *SQL_BACKENDS]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server (its ``url``, ``dsn``, ``startup_seconds``)."""
    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    """URL of the shared test database (``postgresql+psycopg://...``)."""
    return postgres_server.url


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never let the CLI read the developer's database or settings, nor write to their home."""
    from cli_harness import isolate_cli_env

    isolate_cli_env(tmp_path, monkeypatch)


@pytest.fixture
def db(tmp_path: Path) -> str:
    """The CLI tests' database: a SQLite file of the test's own."""
    return str(tmp_path / "nodes.sqlite")


@pytest.fixture
def run(cli_env: None, db: str, capsys: pytest.CaptureFixture[str]) -> Run:
    """``run("node", "list")`` runs ``ironic-fsm --db DB node list`` in-process."""
    from cli_harness import runner

    return runner(db, capsys)


def fresh_postgres_url(server: PostgresServer) -> Iterator[str]:
    """A URL of a new, empty schema (selected through ``search_path``), dropped afterwards."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield f"{server.url}?options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _fresh_url(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'ironic_fsm.sqlite'}"
        return
    yield from fresh_postgres_url(request.getfixturevalue("postgres_server"))


@pytest.fixture(params=SQL_BACKENDS)
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty database of each SQL kind, private to the test."""
    yield from _fresh_url(request.param, request, tmp_path)


@pytest.fixture(params=STORE_BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """An empty store of each kind, private to the test."""
    if request.param == "memory":
        yield MemoryStore()
        return
    from ironic_fsm.stores import SQLStore

    for url in _fresh_url(request.param, request, tmp_path):
        sql_store = SQLStore(url)
        try:
            yield sql_store
        finally:
            sql_store.close()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.module.__name__.startswith("test_conductor_"):
        metafunc.parametrize("conductor_store", ["memory", "sqlite"], indirect=True)


@pytest.fixture(autouse=True)
def conductor_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The store kind behind ``helpers.make_conductor`` for this test."""
    kind: str = getattr(request, "param", "memory")
    if kind == "memory":
        yield kind
        return
    import helpers

    from ironic_fsm.stores import SQLStore

    directory = tmp_path_factory.mktemp("conductor-store")
    opened: list[SQLStore] = []

    def factory() -> SQLStore:
        store = SQLStore(f"sqlite:///{directory / f'nodes-{len(opened)}.sqlite'}")
        opened.append(store)
        return store

    helpers.STORE_FACTORY = factory
    try:
        yield kind
    finally:
        helpers.STORE_FACTORY = MemoryStore
        for store in opened:
            store.close()


# -- the API over each SQL database, for the tests of its resources ------------------------


@pytest.fixture(scope="module", params=SQL_BACKENDS)
def served_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """``python -m ironic_fsm.api`` on a SQLite file, then on PostgreSQL: its base URL."""
    from api_helpers import DATABASES, api_process

    where = tmp_path_factory.mktemp("served")
    if request.param == "sqlite":
        with api_process(where / "served.sqlite") as base:
            DATABASES[base] = f"sqlite:///{where / 'served.sqlite'}"
            yield base
        return
    for db_url in fresh_postgres_url(request.getfixturevalue("postgres_server")):
        with api_process(where / "pg", url=db_url) as base:
            DATABASES[base] = db_url
            yield base


@pytest.fixture(scope="module")
def served_sdk(served_url: str) -> Iterator[Any]:
    """An openstacksdk connection to :func:`served_url`."""
    from api_helpers import sdk

    with sdk(served_url) as connection:
        yield connection


@pytest.fixture(scope="module")
def served_http(served_url: str) -> Iterator[Any]:
    """An HTTP client of :func:`served_url` asking for the latest microversion."""
    import httpx
    from api_helpers import LATEST

    with httpx.Client(base_url=served_url, headers=LATEST, timeout=60) as client:
        yield client
