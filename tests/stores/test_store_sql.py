"""SQLStore without SQLAlchemy: URLs, driver errors, busy locks, file modes.

Old databases and their upgrade: ``test_store_migrations.py``.

Everything runs on a real SQLite file and on the real PostgreSQL server of
``conftest.py``.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ironic_fsm.exceptions import (
    InvalidParameterValue,
    IronicFSMError,
    MissingDependency,
    StoreBusy,
    StoreError,
)
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore

UTC = timezone.utc


def force(node: Node, **fields: Any) -> Node:
    """Set fields past the Node's own validation: the store must defend itself too."""
    for key, value in fields.items():
        object.__setattr__(node, key, value)
    return node


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def pg_url(postgres_server: Any) -> Iterator[str]:
    """A private, empty PostgreSQL schema (``postgresql+psycopg://`` URL)."""
    from conftest import fresh_postgres_url

    yield from fresh_postgres_url(postgres_server)


# -- URLs and options ---------------------------------------------------------------------


def test_sqlite_urls_of_every_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for url, path in [
        ("sqlite:///relative.db", tmp_path / "relative.db"),
        (f"sqlite:///{tmp_path}/absolute.db", tmp_path / "absolute.db"),
        (f"sqlite:////{str(tmp_path).lstrip('/')}/four.db", tmp_path / "four.db"),
    ]:
        with SQLStore(url, sqlite_synchronous="full", sqlite_busy_timeout=2) as store:
            node = Node(name="n")
            store.create(node)
        assert path.is_file(), url
        with sqlite3.connect(path) as raw:
            assert raw.execute("SELECT uuid FROM nodes").fetchall() == [(node.uuid,)]
    # SQLite's own URI form passes through (here read-write on an existing file).
    with SQLStore(f"sqlite:///file:{tmp_path / 'relative.db'}?mode=rw&uri=true") as uri:
        assert [n.name for n in uri.list()] == ["n"]
    for url in ("sqlite://", "sqlite:///:memory:"):
        with SQLStore(url) as memory:
            memory.create(Node(name="m"))
            assert [n.name for n in memory.list()] == ["m"]
        assert not (tmp_path / ":memory:").exists()


def test_a_sqlite_url_is_shown_as_given(tmp_path: Path) -> None:
    # An absolute path has four slashes; the shown URL must name the same file.
    url = f"sqlite:///{tmp_path / 'shown.sqlite'}"
    assert url.startswith("sqlite:////")
    with SQLStore(url) as store:
        assert store.url == url
        assert repr(store) == f"SQLStore({url!r})"


def test_postgres_urls_with_and_without_the_driver_name(pg_url: str) -> None:
    assert pg_url.startswith("postgresql+psycopg://")
    plain = "postgresql://" + pg_url.split("://", 1)[1]
    with SQLStore(pg_url, pool_size=2, pool_timeout=5) as first:
        node = Node(name="pg")
        first.create(node)
    with SQLStore(plain, connect_args={"application_name": "ironic_fsm-test"}) as second:
        assert second.get("pg") == node
        with second.connection() as conn:
            assert conn.execute("SHOW application_name").fetchone() == ("ironic_fsm-test",)


def test_unsupported_url_is_refused_without_its_password() -> None:
    with pytest.raises(InvalidParameterValue, match="Unsupported database URL") as info:
        SQLStore("mysql://admin:hunter2@db/ironic")
    assert "hunter2" not in str(info.value)


def test_password_is_hidden_in_url_and_repr(pg_url: str) -> None:
    with_password = pg_url.replace("postgres@", "postgres:hunter2@")  # trust auth ignores it
    with SQLStore(with_password) as store:
        assert "hunter2" not in repr(store)
        assert "hunter2" not in store.url
        assert "***" in store.url


def test_password_in_the_query_string_is_hidden_everywhere(pg_url: str) -> None:
    # libpq also takes the password as a query parameter; it is as secret there.
    sep = "&" if "?" in pg_url else "?"
    with SQLStore(f"{pg_url}{sep}password=hunter2") as store:
        assert "hunter2" not in repr(store)
        assert "hunter2" not in store.url
        assert "password=***" in store.url
    with pytest.raises(StoreError) as info:
        SQLStore("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2&password=hunter2")
    assert "hunter2" not in str(info.value)


def test_sqlite_url_with_no_path_is_refused_not_taken_for_memory() -> None:
    with pytest.raises(InvalidParameterValue, match="names no file"):
        SQLStore("sqlite:///")


def test_unreachable_postgres_fails_at_once_with_store_error() -> None:
    with pytest.raises(StoreError, match="PostgreSQL") as info:
        SQLStore("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert isinstance(info.value.__cause__, psycopg.OperationalError)


_BLOCKER = """
import sys

class Blocked:
    # A meta-path finder that makes these packages look uninstalled.
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None

sys.meta_path.insert(0, Blocked())
"""


def _run_blocked(blocked: set[str], body: str) -> subprocess.CompletedProcess[str]:
    code = _BLOCKER.format(blocked=sorted(blocked)) + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_sqlite_store_needs_only_the_standard_library(tmp_path: Path) -> None:
    # Once the database is made (by Alembic's revision files): see below for making one.
    SQLStore(f"sqlite:///{tmp_path / 'stdlib.db'}").close()
    done = _run_blocked(
        {"sqlalchemy", "alembic", "psycopg", "psycopg_pool", "psycopg_binary"},
        f"""
        import ironic_fsm
        from ironic_fsm.node import Node
        from ironic_fsm.stores import SQLStore

        store = SQLStore("sqlite:///{tmp_path / "stdlib.db"}")
        node = Node(name="plain")
        store.create(node)
        node.provision_state = "manageable"
        store.save(node)
        assert store.reserve("plain", "me").reservation == "me"
        assert [n.uuid for n in store.list(provision_state="manageable")] == [node.uuid]
        assert store.get(node.uuid).version == 2
        store.close()
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in
                        ("sqlalchemy", "psycopg", "psycopg_pool"))
        print("ok", loaded)
        """,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok []"


def test_making_a_database_without_the_migration_tools_names_them(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    done = _run_blocked(
        {"sqlalchemy", "alembic"},
        f"""
        from ironic_fsm.exceptions import MissingDependency
        from ironic_fsm.stores import SQLStore
        try:
            SQLStore("sqlite:///{path}")
        except MissingDependency as exc:
            print(exc)
        """,
    )
    assert done.returncode == 0, done.stderr
    assert "needs Alembic and SQLAlchemy" in done.stdout
    assert "pip install 'alembic>=1.13' 'SQLAlchemy>=2.0'" in done.stdout
    assert (
        not path.exists()
        or sqlite3.connect(path).execute("SELECT name FROM sqlite_master").fetchall() == []
    )


def test_postgres_without_psycopg_names_the_extra() -> None:
    done = _run_blocked(
        {"psycopg", "psycopg_pool"},
        """
        from ironic_fsm.exceptions import MissingDependency
        from ironic_fsm.stores import SQLStore
        try:
            SQLStore("postgresql://u@127.0.0.1:1/db")
        except MissingDependency as exc:
            print(type(exc).__name__, "|", exc)
        """,
    )
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert "\n" not in line
    assert line.startswith("MissingDependency |")
    assert "ironic_fsm[postgres]" in line
    assert issubclass(MissingDependency, ImportError)


def test_import_loads_no_database_driver() -> None:
    code = (
        "import sys, ironic_fsm, ironic_fsm.stores; "
        "bad = [m for m in ('sqlalchemy', 'psycopg', 'psycopg_pool', 'sqlite3') "
        "if m in sys.modules]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- no raw driver exception leaves the store --------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("name", "n" * 256, "is 256 characters long; at most 255"),
        ("driver", "d" * 300, "is 300 characters long; at most 255"),
        ("provision_state", "p" * 65, "is 65 characters long; at most 64"),
        ("name", "nul\x00name", "contains a NUL character"),
        ("driver", "nul\x00driver", "contains a NUL character"),
        ("provision_state", 42, "must be a string, not int"),
    ],
)
def test_values_the_columns_cannot_hold_are_refused_naming_the_field(
    sql_url: str, field: str, value: Any, reason: str
) -> None:
    with SQLStore(sql_url) as store:
        node = Node(name="ok")
        store.create(node)
        before = store.get(node.uuid).to_json()
        force(node, **{field: value})
        with pytest.raises(InvalidParameterValue, match=f"{field} {reason}") as info:
            store.save(node)
        assert info.value.field == field
        assert node.version == 1
        assert store.get(node.uuid).to_json() == before
        fresh = force(Node(), **{field: value})
        with pytest.raises(InvalidParameterValue, match=field):
            store.create(fresh)
        assert [n.uuid for n in store.list()] == [node.uuid]


def test_nul_in_identifiers_and_filters_is_no_database_error(sql_url: str) -> None:
    with SQLStore(sql_url) as store:
        node = force(Node(name="ok"), extra={"text": "a\x00b"})  # JSON escapes NUL
        store.create(node)
        assert store.get(node.uuid).extra == {"text": "a\x00b"}
        assert store.list(name="o\x00k") == []
        for call in (store.get, store.delete):
            with pytest.raises(IronicFSMError, match="could not be found"):
                call("o\x00k")
        with pytest.raises(InvalidParameterValue, match="holder"):
            store.reserve(node.uuid, "h\x00")


def test_duplicates_map_to_invalid_parameter_naming_the_field(sql_url: str) -> None:
    with SQLStore(sql_url) as store:
        first = Node(name="one")
        store.create(first)
        with pytest.raises(InvalidParameterValue, match="UUID") as info:
            store.create(Node(uuid=first.uuid, name="two"))
        assert info.value.field == "uuid"
        assert not isinstance(info.value.__cause__, IronicFSMError)
        assert info.value.__cause__ is not None
        with pytest.raises(InvalidParameterValue, match="'one'") as info:
            store.create(Node(name="one"))
        assert info.value.field == "name"


def test_other_database_errors_become_store_error(sql_url: str) -> None:
    with SQLStore(sql_url) as store:
        node = Node()
        store.create(node)
        with store.connection() as conn:
            conn.execute("DROP TABLE holders")
        with pytest.raises(StoreError, match="failed the request") as info:
            store.holders()
        assert not isinstance(info.value, StoreBusy)
        assert isinstance(info.value.__cause__, (sqlite3.Error, psycopg.Error))
        assert store.get(node.uuid) == node  # the store still works


# -- SQLite: a writer that holds the lock ------------------------------------------------------


def test_sqlite_busy_database_raises_store_busy_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "busy.sqlite"
    with SQLStore(f"sqlite:///{path}", sqlite_busy_timeout=0.2) as store:
        node = Node(name="n")
        store.create(node)
        blocker = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sqlite3, sys\n"
                f"conn = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
                "conn.execute('BEGIN IMMEDIATE')\n"
                "print('locked', flush=True)\n"
                "sys.stdin.readline()\n"
                "conn.execute('ROLLBACK')\n",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert blocker.stdout is not None
            assert blocker.stdin is not None
            assert blocker.stdout.readline().strip() == "locked"
            node.provision_state = "manageable"
            with pytest.raises(StoreBusy, match="Another writer held the lock") as info:
                store.save(node)
            assert "0.2 s" in str(info.value)
            assert info.value.retryable is True
            assert isinstance(info.value.__cause__, sqlite3.OperationalError)
            assert node.version == 1
            with pytest.raises(StoreBusy):
                store.reserve("n", "me")
            with pytest.raises(StoreBusy):
                store.create(Node(name="other"))
            assert store.get("n").provision_state == "enroll"  # reads go on under WAL
        finally:
            if blocker.stdin is not None:
                blocker.stdin.write("\n")
                blocker.stdin.flush()
            blocker.wait(timeout=30)
        store.save(node)
        assert store.reserve("n", "me").version == 2
        assert [n.name for n in store.list()] == ["n"]


# -- secrets at rest ----------------------------------------------------------------------------


def test_sqlite_files_are_created_owner_only(tmp_path: Path) -> None:
    old_umask = os.umask(0)  # even with a permissive umask
    try:
        path = tmp_path / "new" / "deeper" / "nodes.sqlite"
        with SQLStore(f"sqlite:///{path}") as store:
            store.create(Node(driver_info={"ipmi_password": "s3cr3t"}))
            wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
            assert wal.exists()
            assert shm.exists()
            assert (mode(path), mode(wal), mode(shm)) == (0o600, 0o600, 0o600)
        assert mode(tmp_path / "new") == 0o700
        assert mode(tmp_path / "new" / "deeper") == 0o700
    finally:
        os.umask(old_umask)


@pytest.mark.parametrize(
    "form",
    [
        "sqlite:///file:{path}?mode=rwc&uri=true",
        "sqlite:///file:{path}?uri=true",  # rwc is SQLite's default
        "sqlite:///file://{path}?mode=rwc&uri=true",
        "sqlite:///{path}?uri=true",  # a plain name, with SQLite's URI handling on
    ],
)
def test_a_sqlite_uri_creates_its_file_owner_only(tmp_path: Path, form: str) -> None:
    """A database named by SQLite's own URI form is as private as one named by its path."""
    old_umask = os.umask(0)
    try:
        # A file: URI's name is percent-decoded by SQLite; a plain name is taken as it is.
        name = "uri nodes.sqlite" if "file:" in form else "uri-nodes.sqlite"
        path = tmp_path / name
        url = form.format(path=str(path).replace(" ", "%20"))
        with SQLStore(url) as store:
            store.create(Node(driver_info={"ipmi_password": "s3cr3t"}))
            wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
            assert (mode(path), mode(wal), mode(shm)) == (0o600, 0o600, 0o600)
    finally:
        os.umask(old_umask)


def test_a_read_only_sqlite_uri_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "absent.sqlite"
    with pytest.raises(IronicFSMError):
        SQLStore(f"sqlite:///file:{path}?mode=ro&uri=true")
    assert not path.exists()


def test_an_existing_sqlite_file_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    path.touch()
    os.chmod(path, 0o640)
    os.chmod(tmp_path, 0o750)
    with SQLStore(f"sqlite:///{path}") as store:
        store.create(Node())
    assert mode(path) == 0o640
    assert mode(tmp_path) == 0o750
