"""Schema migrations: a database of the first release is upgraded in place, losing nothing.

The v1 dumps under ``tests/data`` are databases as the first release wrote
them (SQLite and PostgreSQL). Each test loads one into a real SQLite file or
a private schema of the real PostgreSQL server, then opens it with today's
``SQLStore``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from old_schema import (
    NODES_BEFORE_V6,
    assert_a_failed_step_keeps,
    cleaning_failure,
    create_before_v6,
    raw_pg,
    raw_rows,
    revision_module,
    schema_version,
)

from ironic_fsm.exceptions import InvalidParameterValue, NodeLocked
from ironic_fsm.history import HistoryEntry
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore, _upgrade, sql
from ironic_fsm.stores._upgrade import revision_of
from ironic_fsm.stores.base import ConductorRecord, Reserved
from ironic_fsm.stores.sql import SCHEMA_VERSION

UTC = timezone.utc
DATA = Path(__file__).parents[1] / "data"
OLD_RICH = "11111111-1111-4111-8111-111111111111"
OLD_RESERVED = "22222222-2222-4222-8222-222222222222"
BUSY = "33333333-3333-4333-8333-333333333333"
T0 = datetime(2025, 6, 1, 12, 0, 0, 250000, tzinfo=UTC)

#: Columns the upgrade adds, filled from each node's data.
NEW_COLUMNS = (
    "target_provision_state",
    "power_state",
    "protected",
    "resource_class",
    "fault",
    "provision_updated_at",
    "updated_at",
    "wait_until",
)


def busy_node() -> Node:
    """A node in the middle of cleaning, with every field the upgrade copies out set."""
    return Node(
        uuid=BUSY,
        name="old-busy",
        driver="redfish",
        driver_info={"redfish_password": "pw"},
        driver_internal_info={
            "clean_wait_until": (T0 + timedelta(minutes=3)).isoformat(),
        },
        resource_class="baremetal.gpu",
        provision_state="clean wait",
        target_provision_state="available",
        power_state="power on",
        fault="power failure",
        protected=True,
        protected_reason="keep",
        clean_step={"interface": "deploy", "step": "erase_devices"},
        provision_updated_at=T0,
        created_at=T0 - timedelta(days=1),
        updated_at=T0 + timedelta(seconds=1),
        version=5,
    )


def _v1_insert(q: str) -> str:
    return (
        "INSERT INTO nodes (uuid, name, driver, provision_state, maintenance, retired, "
        f"reservation, version, seq, created_at, data) VALUES ({', '.join([q] * 11)})"
    )


def _busy_row(created: Any) -> tuple[Any, ...]:
    node = busy_node()
    return (BUSY, node.name, node.driver, node.provision_state, False, False, None, 5, 3,
            created, node.to_json())  # fmt: skip


@pytest.fixture(params=["sqlite", "postgres"])
def v1_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of a database in the v1 layout: the first release's dump plus one busy node."""
    if request.param == "sqlite":
        path = tmp_path / "old.sqlite"
        with sqlite3.connect(path) as raw:
            raw.executescript((DATA / "store_v1_sqlite.sql").read_text())
            raw.execute(_v1_insert("?"), _busy_row("2025-05-31 12:00:00.250000"))
        yield f"sqlite:///{path}"
        return
    from conftest import fresh_postgres_url

    for url in fresh_postgres_url(request.getfixturevalue("postgres_server")):
        with raw_pg(url) as raw:
            raw.execute((DATA / "store_v1_postgres.sql").read_text())
            raw.execute(_v1_insert("%s"), _busy_row(T0 - timedelta(days=1)))
        yield url


def layout(url: str) -> Any:
    """Tables, columns, constraints and indexes, as the database describes them."""
    if url.startswith("sqlite"):
        return raw_rows(url, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name")
    with raw_pg(url) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, "
            "column_default FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, column_name"
        ).fetchall()
        indexes = conn.execute(
            "SELECT indexname, replace(indexdef, current_schema() || '.', '') FROM pg_indexes "
            "WHERE schemaname = current_schema() ORDER BY indexname"
        ).fetchall()
    return {"columns": columns, "indexes": indexes}


def expected_nodes(url: str) -> dict[str, Node]:
    """Every node as the v1 rows hold it (data, with the reservation and version columns)."""
    out = {}
    for uuid, data, reservation, version in raw_rows(
        url, "SELECT uuid, data, reservation, version FROM nodes"
    ):
        node = Node.from_json(data)
        node.reservation, node.version = reservation, version
        out[uuid] = node
    return out


def as_utc(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# -- the upgrade -------------------------------------------------------------------------------


def test_v1_database_is_upgraded_in_place_losing_nothing(v1_url: str) -> None:
    assert schema_version(v1_url) == 1
    before = expected_nodes(v1_url)
    data_before = sorted(raw_rows(v1_url, "SELECT uuid, data, seq FROM nodes"))
    holders_before = raw_rows(v1_url, "SELECT holder, heartbeat FROM holders")
    assert set(before) == {OLD_RICH, OLD_RESERVED, BUSY}

    with SQLStore(v1_url) as store:
        assert schema_version(v1_url) == SCHEMA_VERSION
        for uuid, node in before.items():  # every node round-trips equal
            got = store.get(uuid)
            assert got == node
            assert got.to_json() == node.to_json()
        # The records themselves were not rewritten; the heartbeats are untouched.
        assert sorted(raw_rows(v1_url, "SELECT uuid, data, seq FROM nodes")) == data_before
        assert raw_rows(v1_url, "SELECT holder, heartbeat FROM holders") == holders_before

        # The new columns hold each node's own values.
        rows = raw_rows(v1_url, f"SELECT uuid, {', '.join(NEW_COLUMNS)} FROM nodes")
        for uuid, *values in rows:
            node = before[uuid]
            assert values[:2] == [node.target_provision_state, node.power_state]
            assert bool(values[2]) is node.protected
            assert values[3:5] == [node.resource_class, node.fault]
            assert as_utc(values[5]) == node.provision_updated_at
            assert as_utc(values[6]) == node.updated_at
            wake = T0 + timedelta(minutes=3) if uuid == BUSY else None
            assert as_utc(values[7]) == wake
        busy = dict(zip(("uuid", *NEW_COLUMNS), next(r for r in rows if r[0] == BUSY), strict=True))
        assert busy["resource_class"] == "baremetal.gpu"
        assert busy["fault"] == "power failure"

        # Listing, filters and scans work on the upgraded rows.
        assert [n.uuid for n in store.list()] == [OLD_RICH, OLD_RESERVED, BUSY]
        assert [n.uuid for n in store.list(sort_key="name")] == [OLD_RESERVED, BUSY, OLD_RICH]
        assert [n.uuid for n in store.list(protected=True)] == [BUSY]
        assert [n.uuid for n in store.list(resource_class="baremetal.gpu")] == [BUSY]
        assert [n.uuid for n in store.list(retired=True)] == [OLD_RESERVED]
        assert [n.uuid for n in store.list(maintenance=True, driver="ipmi")] == [OLD_RICH]
        assert store.reserved() == [Reserved(OLD_RESERVED, "old-conductor:1:abc", None)]
        assert [n.uuid for n in store.in_states(["clean wait"], updated_before=T0)] == []
        late = T0 + timedelta(seconds=1)
        assert [n.uuid for n in store.in_states(["clean wait"], updated_before=late)] == [BUSY]
        assert store.waking(T0 + timedelta(minutes=2)) == []
        assert [n.uuid for n in store.waking(T0 + timedelta(minutes=3))] == [BUSY]

        # And it goes on working as a store: lock, save, create.
        with pytest.raises(NodeLocked, match="old-conductor:1:abc"):
            store.reserve(OLD_RESERVED, "new")
        taken = store.reserve("old-rich", "new")
        taken.provision_state, taken.reservation = "manageable", None
        store.save(taken)
        assert store.get(OLD_RICH).version == 3
        assert [n.uuid for n in store.list(provision_state="manageable")] == [OLD_RICH]
        new = Node(name="new-one")
        store.create(new)
        assert [n.uuid for n in store.list()] == [OLD_RICH, OLD_RESERVED, BUSY, new.uuid]

    with SQLStore(v1_url) as again:  # reopening an upgraded database changes nothing
        assert schema_version(v1_url) == SCHEMA_VERSION
        assert again.get(BUSY) == before[BUSY]


def test_a_new_database_has_the_layout_of_an_upgraded_one(
    v1_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    SQLStore(v1_url).close()
    upgraded = layout(v1_url)
    if v1_url.startswith("sqlite"):
        fresh_url = f"sqlite:///{tmp_path / 'new.sqlite'}"
        SQLStore(fresh_url).close()
        assert layout(fresh_url) == upgraded
        return
    from conftest import fresh_postgres_url

    for fresh_url in fresh_postgres_url(request.getfixturevalue("postgres_server")):
        SQLStore(fresh_url).close()
        assert layout(fresh_url) == upgraded


def test_a_newer_schema_is_refused_and_left_untouched(v1_url: str) -> None:
    newer = SCHEMA_VERSION + 1
    if v1_url.startswith("sqlite"):
        with sqlite3.connect(v1_url[len("sqlite:///") :]) as conn:
            conn.execute("UPDATE ironic_fsm_schema SET version = ?", (newer,))
    else:
        with raw_pg(v1_url) as conn:
            conn.execute("UPDATE ironic_fsm_schema SET version = %s", (newer,))
    before = layout(v1_url)
    with pytest.raises(InvalidParameterValue, match=f"schema version {newer}"):
        SQLStore(v1_url)
    assert layout(v1_url) == before
    assert schema_version(v1_url) == newer


def all_nodes(url: str) -> list[tuple[Any, ...]]:
    return sorted(raw_rows(url, "SELECT * FROM nodes"))


def test_a_failed_migration_step_changes_nothing(
    v1_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The added columns and indexes were rolled back, the rows kept:
    assert_a_failed_step_keeps(v1_url, monkeypatch, 1, layout, all_nodes)


def test_two_openers_at_once_migrate_once(v1_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fills: list[int] = []
    v2 = revision_module(2)
    fill = v2._fill

    def counted(store: Any, conn: Any) -> None:
        fills.append(1)
        fill(store, conn)

    monkeypatch.setattr(v2, "_fill", counted)
    start = threading.Barrier(3)
    errors: list[BaseException] = []

    def open_it() -> None:
        start.wait()
        try:
            SQLStore(v1_url).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert fills == [1]
    assert schema_version(v1_url) == SCHEMA_VERSION


def test_a_later_version_is_one_more_file(
    v1_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # What the next engineer does for a history table: one revision file, a few lines of DDL.
    later = revision_of(SCHEMA_VERSION + 1)
    (tmp_path / f"v{later}_probe_history.py").write_text(
        f"revision = {later!r}\n"
        f"down_revision = {revision_of(SCHEMA_VERSION)!r}\n"
        "from ironic_fsm.stores.migrations import run, step_context\n"
        "def upgrade():\n"
        "    run([f'CREATE TABLE probe_history (id INTEGER NOT NULL PRIMARY KEY, '\n"
        "         f'at {step_context().timestamp})',\n"
        "         'CREATE INDEX probe_history_at_idx ON probe_history (at)'])\n"
    )
    versions = [f"{_upgrade.LOCATION}/versions", str(tmp_path)]
    scripts = _upgrade.ScriptDirectory(_upgrade.LOCATION, version_locations=versions)
    monkeypatch.setattr(_upgrade, "_scripts", scripts)
    monkeypatch.setattr(sql, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    before = expected_nodes(v1_url)
    with SQLStore(v1_url) as store:
        assert schema_version(v1_url) == SCHEMA_VERSION + 1
        assert raw_rows(v1_url, "SELECT COUNT(*) FROM probe_history") == [(0,)]
        assert {uuid: store.get(uuid) for uuid in before} == before


def test_an_unreadable_v1_record_is_kept_as_it_is(v1_url: str) -> None:
    bad = "44444444-4444-4444-8444-444444444444"
    q = "?" if v1_url.startswith("sqlite") else "%s"
    row = (bad, None, "ipmi", "available", False, False, None, 1, 4, T0, "{not json")
    if v1_url.startswith("sqlite"):
        with sqlite3.connect(v1_url[len("sqlite:///") :]) as conn:
            conn.execute(_v1_insert(q), (*row[:9], "2025-01-01 00:00:00.000000", row[10]))
    else:
        with raw_pg(v1_url) as conn:
            conn.execute(_v1_insert(q), row)
    with SQLStore(v1_url) as store:
        assert schema_version(v1_url) == SCHEMA_VERSION
        assert raw_rows(v1_url, f"SELECT data FROM nodes WHERE uuid = '{bad}'") == [("{not json",)]
        assert store.get(OLD_RICH).name == "old-rich"


# -- version 3: the conductor registry ---------------------------------------------------------

CONDUCTOR = ConductorRecord(
    holder="host-a:42:7-abcd0123",
    hostname="host-a",
    conductor_group="rack-1",
    hardware_types=("ipmi", "redfish"),
    online=True,
    started_at=T0,
    updated_at=T0 + timedelta(seconds=10),
)


def open_as_v2(url: str) -> None:
    """Open ``url`` with the code of schema 2 (no v3 step), as the release before this one."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sql, "SCHEMA_VERSION", 2)
        with SQLStore(url) as store:
            # What a v2 store holds besides the v1 rows: a node created, reserved, a heartbeat.
            create_before_v6(store, Node(uuid=V2_NODE, name="made-by-v2", driver="redfish"))
            store.reserve(V2_NODE, "v2-conductor:9:1-ffff")
            store.heartbeat("v2-conductor:9:1-ffff", T0 + timedelta(minutes=5))
    assert schema_version(url) == 2


V2_NODE = "55555555-5555-4555-8555-555555555555"


@pytest.fixture
def v2_url(v1_url: str) -> str:
    """A URL of a database in the v2 layout, with nodes, a reservation and heartbeats."""
    open_as_v2(v1_url)
    return v1_url


def _everything(url: str) -> dict[str, list[tuple[Any, ...]]]:
    return {
        "nodes": sorted(raw_rows(url, NODES_BEFORE_V6)),  # the columns v6 kept
        "holders": sorted(raw_rows(url, "SELECT holder, heartbeat FROM holders")),
    }


def test_v2_database_is_upgraded_to_v3_losing_nothing(v2_url: str) -> None:
    before = _everything(v2_url)
    nodes = expected_nodes(v2_url)
    assert V2_NODE in nodes
    with SQLStore(v2_url) as store:
        assert schema_version(v2_url) == SCHEMA_VERSION
        assert _everything(v2_url) == before  # not a row or column of v2 changed
        assert {uuid: store.get(uuid) for uuid in nodes} == nodes
        assert store.get(V2_NODE).reservation == "v2-conductor:9:1-ffff"
        assert store.holders()["v2-conductor:9:1-ffff"] == T0 + timedelta(minutes=5)
        assert [n.uuid for n in store.list(reserved=True)] == [OLD_RESERVED, V2_NODE]
        # The registry is there, empty, and works.
        assert store.list_conductors() == []
        store.register_conductor(CONDUCTOR)
        assert store.list_conductors() == [CONDUCTOR]
    with SQLStore(v2_url) as again:  # and it stays
        assert again.list_conductors() == [CONDUCTOR]


def test_v1_database_gets_the_registry_too(v1_url: str) -> None:
    with SQLStore(v1_url) as store:
        assert store.list_conductors() == []
        store.register_conductor(CONDUCTOR)
        assert store.conductor_heartbeat(CONDUCTOR.holder, T0 + timedelta(seconds=20))
        assert store.list_conductors() == [
            CONDUCTOR._replace(updated_at=T0 + timedelta(seconds=20))
        ]


def test_a_failed_v3_step_leaves_the_v2_database_as_it_was(
    v2_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No conductors table left behind:
    assert_a_failed_step_keeps(v2_url, monkeypatch, 2, _everything, layout)


# -- version 4: node history -------------------------------------------------------------------

V3_NODE = "66666666-6666-4666-8666-666666666666"
V3_CONDUCTOR = CONDUCTOR._replace(holder="host-b:7:1-eeee", hostname="host-b")


def history_entry(node_uuid: str, minutes: int, event: str) -> HistoryEntry:
    """An entry of ``node_uuid``, ``minutes`` after this module's T0, written by host-b."""
    uuid = f"aaaaaaaa-aaaa-4aaa-8aaa-{minutes:012d}"
    return cleaning_failure(node_uuid, T0 + timedelta(minutes=minutes), event, uuid, "host-b")


@pytest.fixture
def v3_url(v1_url: str) -> str:
    """A URL of a database in the v3 layout (today's main before history): nodes of v1, v2 and
    v3, a reservation, heartbeats and a registered conductor."""
    open_as_v2(v1_url)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sql, "SCHEMA_VERSION", 3)
        with SQLStore(v1_url) as store:
            create_before_v6(store, Node(uuid=V3_NODE, name="made-by-v3", driver="ipmi"))
            store.register_conductor(V3_CONDUCTOR)
    assert schema_version(v1_url) == 3
    return v1_url


def _all_of_v3(url: str) -> dict[str, list[tuple[Any, ...]]]:
    return {**_everything(url), "conductors": sorted(raw_rows(url, "SELECT * FROM conductors"))}


def test_v3_database_is_upgraded_to_v4_losing_nothing(v3_url: str) -> None:
    before = _all_of_v3(v3_url)
    nodes = expected_nodes(v3_url)
    assert {V2_NODE, V3_NODE, OLD_RICH} <= set(nodes)
    with SQLStore(v3_url) as store:
        assert schema_version(v3_url) == SCHEMA_VERSION
        assert _all_of_v3(v3_url) == before  # not a row or column of v3 changed
        assert {uuid: store.get(uuid) for uuid in nodes} == nodes
        assert store.list_conductors() == [V3_CONDUCTOR]
        assert store.get(V2_NODE).reservation == "v2-conductor:9:1-ffff"
        # History is there, empty for every old node, and works on them.
        assert all(store.node_history(uuid) == [] for uuid in nodes)
        node = store.get(OLD_RICH)
        first, second = history_entry(OLD_RICH, 1, "first"), history_entry(OLD_RICH, 2, "second")
        store.save(node, history=[first, second])
        assert store.node_history(OLD_RICH) == [first, second]
    with SQLStore(v3_url) as again:  # and it stays
        assert again.node_history(OLD_RICH) == [first, second]
        assert again.get(OLD_RICH).version == nodes[OLD_RICH].version + 1


def test_v1_database_gets_history_too(v1_url: str) -> None:
    with SQLStore(v1_url) as store:
        entry = history_entry(BUSY, 5, "from the first release")
        store.add_history([entry])
        assert store.node_history(BUSY) == [entry]
        store.delete(BUSY)
        assert store.node_history(BUSY) == []
        assert raw_rows(v1_url, "SELECT COUNT(*) FROM node_history") == [(0,)]


def test_a_failed_v4_step_leaves_the_v3_database_as_it_was(
    v3_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No history tables left behind:
    assert_a_failed_step_keeps(v3_url, monkeypatch, 3, _all_of_v3, layout)
