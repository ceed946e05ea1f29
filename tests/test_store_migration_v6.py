"""Schema 6 (the node's conductor group): a v5 database is upgraded in place, losing nothing.

The v5 database is made as the release before this one made it: the
migrations up to 5 only, nodes written with the v5 columns, plus everything
v5 keeps beside them (a reservation, a heartbeat, a registered conductor,
history entries and their counts, power-sync times). It lives in a real
SQLite file or in a private schema of the real PostgreSQL server.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
from old_schema import (
    NODES_BEFORE_V6,
    add_history_before_v9,
    create_before_v6,
    fail_at_the_end_of,
    history_counts_sql,
)

from ironic_fsm.history import HistoryEntry
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore, sql
from ironic_fsm.stores.base import ConductorRecord, PowerSyncRow
from ironic_fsm.stores.sql import MIGRATIONS, SCHEMA_VERSION

UTC = timezone.utc
T0 = datetime(2026, 3, 1, 8, 0, 0, 125000, tzinfo=UTC)
FREE = "aaaaaaaa-0000-4000-8000-000000000001"
HELD = "aaaaaaaa-0000-4000-8000-000000000002"
SYNCED = "aaaaaaaa-0000-4000-8000-000000000003"
HOLDER = "old-host:42:1-abcd"
#: Every table of schema 5 but ``nodes``, which v6 widens.
V5_TABLES = ("holders", "conductors", "node_history", "node_power_sync")
CONDUCTOR = ConductorRecord(
    holder=HOLDER,
    hostname="old-host",
    conductor_group="rack-1",
    hardware_types=("ipmi",),
    online=True,
    started_at=T0,
    updated_at=T0 + timedelta(seconds=5),
)


def v5_nodes() -> list[Node]:
    common: dict[str, Any] = {"created_at": T0, "updated_at": T0, "provision_updated_at": T0}
    return [
        Node(uuid=FREE, name="free", driver="ipmi", provision_state="available", **common),
        Node(
            uuid=HELD,
            name="held",
            driver="redfish",
            provision_state="clean wait",
            driver_info={"redfish_password": "pw"},
            **common,
        ),
        Node(
            uuid=SYNCED, driver="ipmi", provision_state="active", power_state="power on", **common
        ),
    ]


def entry(minutes: int) -> HistoryEntry:
    return HistoryEntry(
        uuid=f"bbbbbbbb-0000-4000-8000-{minutes:012d}",
        node_uuid=HELD,
        created_at=T0 + timedelta(minutes=minutes),
        severity="ERROR",
        event_type="cleaning",
        event=f"failure {minutes}",
        conductor="old-host",
        user=None,
    )


@pytest.fixture(params=["sqlite", "postgres"])
def v5_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of a database in the v5 layout holding something in every table."""
    if request.param == "sqlite":
        urls: Iterator[str] = iter([f"sqlite:///{tmp_path / 'v5.sqlite'}"])
    else:
        from conftest import fresh_postgres_url

        urls = fresh_postgres_url(request.getfixturevalue("postgres_server"))
    for url in urls:
        with pytest.MonkeyPatch.context() as patch:
            patch.delitem(MIGRATIONS, 5)
            patch.setattr(sql, "SCHEMA_VERSION", 5)
            with SQLStore(url) as store:
                create_before_v6(store, *v5_nodes())
                store.reserve(HELD, HOLDER)
                store.heartbeat(HOLDER, T0 + timedelta(seconds=5))
                store.register_conductor(CONDUCTOR)
                add_history_before_v9(store, [entry(1), entry(2)])
                store.mark_power_synced([SYNCED], T0 + timedelta(minutes=1))
        assert schema_version(url) == 5
        yield url


def raw_rows(url: str, text: str) -> list[tuple[Any, ...]]:
    """Rows read past the store, with the database's own driver."""
    if url.startswith("sqlite"):
        with sqlite3.connect(url[len("sqlite:///") :]) as conn:
            return [tuple(r) for r in conn.execute(text).fetchall()]
    with psycopg.connect("postgresql" + url[url.index("://") :], autocommit=True) as conn:
        return [tuple(r) for r in conn.execute(text).fetchall()]


def schema_version(url: str) -> int:
    return int(raw_rows(url, "SELECT version FROM ironic_fsm_schema")[0][0])


def everything_of_v5(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every v5 table, and every v5 column of ``nodes``."""
    out = {table: sorted(raw_rows(url, f"SELECT * FROM {table}")) for table in V5_TABLES}
    out["nodes"] = sorted(raw_rows(url, NODES_BEFORE_V6))
    out["counts"] = sorted(raw_rows(url, history_counts_sql(schema_version(url))))
    return out


def index_names(url: str) -> set[str]:
    if url.startswith("sqlite"):
        return {r[0] for r in raw_rows(url, "SELECT name FROM sqlite_master WHERE type='index'")}
    rows = raw_rows(url, "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
    return {r[0] for r in rows}


def test_v5_database_is_upgraded_losing_nothing(v5_url: str) -> None:
    before = everything_of_v5(v5_url)
    SQLStore(v5_url).close()
    assert schema_version(v5_url) == SCHEMA_VERSION
    assert everything_of_v5(v5_url) == before  # not a row or column of v5 changed
    assert raw_rows(v5_url, "SELECT DISTINCT conductor_group FROM nodes") == [("",)]
    assert "nodes_conductor_group_idx" in index_names(v5_url)
    with SQLStore(v5_url) as store:
        expected = {n.uuid: n for n in v5_nodes()}
        expected[HELD].reservation = HOLDER
        for uuid, node in expected.items():
            node.version = 1
            assert store.get(uuid) == node
            assert store.get(uuid).conductor_group == ""
        assert store.list_conductors() == [CONDUCTOR]
        assert store.node_history(HELD) == [entry(1), entry(2)]
        assert store.holders() == {HOLDER: T0 + timedelta(seconds=5)}
        due = store.power_sync_due(T0 + timedelta(minutes=1))
        assert {row.uuid: row.conductor_group for row in due} == dict.fromkeys(expected, "")
        assert [r.synced_at for r in due if r.uuid == SYNCED] == [T0 + timedelta(minutes=1)]
        # The old rows take a group, and the filter finds them by it.
        node = store.get(FREE)
        node.conductor_group = "rack-2"
        store.save(node)
        assert [n.uuid for n in store.list(conductor_group="rack-2")] == [FREE]
        assert [n.uuid for n in store.list(conductor_group="")] == [HELD, SYNCED]
    with SQLStore(v5_url) as again:  # reopening changes nothing
        assert schema_version(v5_url) == SCHEMA_VERSION
        assert again.get(FREE).conductor_group == "rack-2"
        assert again.power_sync_due(T0)[0] == PowerSyncRow(
            FREE, "ipmi", "available", False, None, None, None, "rack-2"
        )


def test_a_failed_v6_step_leaves_the_v5_database_as_it_was(
    v5_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, indexes = everything_of_v5(v5_url), index_names(v5_url)
    fail_at_the_end_of(monkeypatch, 5)
    with pytest.raises(RuntimeError, match="disk on fire"):
        SQLStore(v5_url)
    assert index_names(v5_url) == indexes  # no group index left behind
    assert everything_of_v5(v5_url) == before
    assert schema_version(v5_url) == 5
    with pytest.raises(Exception, match="conductor_group"):
        raw_rows(v5_url, "SELECT conductor_group FROM nodes")  # nor the column
