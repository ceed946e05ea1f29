"""The power-sync scan of the stores: which nodes are due, on an index, on every store.

``power_sync_due(before)`` / ``mark_power_synced(uuids, when)`` on MemoryStore,
SQLite and PostgreSQL (the ``store`` fixture), the ``list()`` fallback for a
store without them, and schema 5: a database made by the code of schema 4
(today's ``main`` before this change) is upgraded in place, losing nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from old_schema import (
    NODES_BEFORE_V6,
    add_history_before_v9,
    assert_a_failed_step_keeps,
    create_before_v6,
    history_counts_sql,
    raw_rows,
    schema_version,
)

from ironic_fsm import Conductor, Config, states
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.history import HistoryEntry
from ironic_fsm.node import Node
from ironic_fsm.stores import MemoryStore, SQLStore, Store, sql
from ironic_fsm.stores.base import (
    ConductorRecord,
    PowerSyncRow,
    PowerSyncStore,
    mark_power_synced,
    power_sync_due,
)
from ironic_fsm.stores.sql import SCHEMA_VERSION

T0 = datetime(2026, 2, 1, 8, 0, tzinfo=timezone.utc)


def due(store: Store, before: datetime) -> list[str]:
    return sorted(row.uuid for row in power_sync_due(store, before))


def make(store: Store, **fields: Any) -> Node:
    node = Node(**fields)
    store.create(node)
    return node


# -- on every store -------------------------------------------------------------------------


def test_both_built_in_stores_have_the_scan(store: Store) -> None:
    assert isinstance(store, PowerSyncStore)


def test_a_new_node_is_due_at_once_and_a_synced_one_after_the_cutoff(store: Store) -> None:
    a, b = make(store), make(store)
    assert due(store, T0) == sorted([a.uuid, b.uuid])
    mark_power_synced(store, [a.uuid], T0)
    assert due(store, T0 - timedelta(microseconds=1)) == [b.uuid]
    assert due(store, T0) == sorted([a.uuid, b.uuid])  # at the cutoff: due
    mark_power_synced(store, [a.uuid, b.uuid], T0 + timedelta(seconds=60))
    assert due(store, T0 + timedelta(seconds=59)) == []
    assert due(store, T0 + timedelta(seconds=60)) == sorted([a.uuid, b.uuid])


def test_a_row_carries_what_the_pass_decides_on(store: Store) -> None:
    node = make(
        store,
        driver="redfish",
        provision_state=states.CLEANFAIL,
        maintenance=True,
        fault="power failure",
    )
    store.reserve(node.uuid, "host:1:1-aaaa")
    mark_power_synced(store, [node.uuid], T0)
    [row] = power_sync_due(store, T0)
    assert row == PowerSyncRow(
        node.uuid, "redfish", states.CLEANFAIL, True, "power failure", "host:1:1-aaaa", T0
    )


def test_saving_a_node_keeps_its_sync_time_and_deleting_forgets_it(store: Store) -> None:
    node = make(store)
    mark_power_synced(store, [node.uuid], T0)
    current = store.get(node.uuid)
    current.power_state = states.POWER_ON
    store.save(current)
    assert due(store, T0 - timedelta(seconds=1)) == []
    store.delete(node.uuid)
    assert due(store, T0 + timedelta(days=1)) == []
    again = make(store, uuid=node.uuid)  # the same UUID again: a new node, due at once
    assert due(store, T0 - timedelta(seconds=1)) == [again.uuid]
    mark_power_synced(store, [again.uuid], T0)  # the same time as its predecessor's
    assert due(store, T0) == [again.uuid]  # once


def test_marking_unknown_nodes_is_ignored(store: Store) -> None:
    node = make(store)
    mark_power_synced(store, ["00000000-0000-4000-8000-000000000000", node.uuid], T0)
    assert due(store, T0 - timedelta(seconds=1)) == []


@pytest.mark.parametrize(
    ("uuids", "when"),
    [
        (["ok"], datetime(2026, 1, 1)),
        (["ok"], "2026-01-01"),
        ([42], T0),
        (["with\x00nul"], T0),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(store: Store, uuids: Any, when: Any) -> None:
    node = make(store)
    assert isinstance(store, PowerSyncStore)
    with pytest.raises(InvalidParameterValue):
        store.mark_power_synced([node.uuid, *uuids], when)
    assert due(store, T0) == [node.uuid]  # not marked, not even in part
    with pytest.raises(InvalidParameterValue, match="timezone-aware"):
        store.power_sync_due(datetime(2026, 1, 1))


def test_many_marks_then_few_due(store: Store) -> None:
    nodes = [Node() for _ in range(300)]
    create_many = getattr(store, "create_many")  # noqa: B009 - both built-in stores have it
    create_many(nodes)
    uuids = [n.uuid for n in nodes]
    mark_power_synced(store, uuids[:100], T0)
    mark_power_synced(store, uuids[100:], T0 + timedelta(minutes=1))
    mark_power_synced(store, uuids[:10], T0 + timedelta(minutes=2))  # re-marked: later
    assert due(store, T0) == sorted(uuids[10:100])
    assert len(due(store, T0 + timedelta(minutes=1))) == 290
    assert len(due(store, T0 + timedelta(minutes=2))) == 300


# -- a store without the scan ---------------------------------------------------------------


class FirstReleaseStore:
    """A store with only the first release's nine methods (an application's own)."""

    def __init__(self) -> None:
        self._inner = MemoryStore()

    def __getattr__(self, name: str) -> Any:
        if name in ("create", "get", "list", "save", "delete", "reserve", "release",
                    "heartbeat", "holders"):  # fmt: skip
            return getattr(self._inner, name)
        raise AttributeError(name)


def test_a_store_without_the_scan_has_every_node_due_at_every_pass() -> None:
    store: Any = FirstReleaseStore()
    assert not isinstance(store, PowerSyncStore)
    conductor = Conductor(store=store, config=Config(host="own"))
    node = conductor.create_node(
        provision_state=states.ACTIVE, power_state=states.POWER_ON, driver="fake-hardware"
    )
    assert due(store, T0) == [node.uuid]
    mark_power_synced(store, [node.uuid], T0)  # nowhere to keep it: a no-op
    assert due(store, T0 - timedelta(days=1)) == [node.uuid]
    assert conductor.sync_power_states(T0).checked == (node.uuid,)
    assert conductor.sync_power_states(T0 + timedelta(seconds=1)).checked == (node.uuid,)


# -- on SQL: the index, and the upgrade from schema 4 ---------------------------------------


def test_sqlite_reads_the_due_nodes_through_the_index(tmp_path: Path) -> None:
    with SQLStore(f"sqlite:///{tmp_path / 'plan.sqlite'}") as store:
        store.create_many([Node() for _ in range(50)])
        with store.connection() as conn:
            for where in ("p.synced_at IS NULL", "p.synced_at <= '2026-01-01'"):
                plan = conn.execute(
                    "EXPLAIN QUERY PLAN SELECT n.uuid, n.driver FROM node_power_sync p "
                    "INDEXED BY node_power_sync_due_idx JOIN nodes n ON n.uuid = p.node_uuid "
                    f"WHERE {where}"
                ).fetchall()
                text = " | ".join(str(row[-1]) for row in plan)
                assert "USING INDEX node_power_sync_due_idx" in text, text
                assert "SCAN" not in text, text


@pytest.fixture
def v4_url(sql_url: str) -> str:
    """A database made by the code of schema 4, holding nodes, a reservation, history, a
    conductor and a heartbeat."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sql, "SCHEMA_VERSION", 4)
        with SQLStore(sql_url) as store:
            plain, held = Node(name="plain"), Node(name="held", provision_state=states.ACTIVE)
            create_before_v6(store, plain, held)
            store.reserve(held.uuid, "old:1:1-aaaa")
            store.heartbeat("old:1:1-aaaa", T0)
            entry = HistoryEntry(
                uuid="bbbbbbbb-bbbb-4bbb-8bbb-000000000001", node_uuid=plain.uuid,
                created_at=T0, severity="INFO", event_type="power", event="before v5",
            )  # fmt: skip
            add_history_before_v9(store, [entry])
            store.register_conductor(
                ConductorRecord("old:1:1-aaaa", "old", "", ("ipmi",), True, T0, T0)
            )
    assert schema_version(sql_url) == 4
    return sql_url


_TABLES = ("nodes", "holders", "conductors", "node_history")


def everything(url: str) -> dict[str, list[tuple[Any, ...]]]:
    out = {
        table: sorted(
            raw_rows(url, NODES_BEFORE_V6 if table == "nodes" else f"SELECT * FROM {table}"),
            key=repr,
        )
        for table in _TABLES
    }
    out["counts"] = sorted(raw_rows(url, history_counts_sql(schema_version(url))), key=repr)
    return out


def test_a_v4_database_is_upgraded_in_place_losing_nothing(v4_url: str) -> None:
    before = everything(v4_url)
    uuids = sorted(row[0] for row in raw_rows(v4_url, "SELECT uuid FROM nodes"))
    with SQLStore(v4_url) as store:
        assert schema_version(v4_url) == SCHEMA_VERSION
        assert everything(v4_url) == before  # not a row or column of v4 changed
        # Every old node has its row, never synced: due at the first pass.
        assert sorted(raw_rows(v4_url, "SELECT node_uuid, synced_at FROM node_power_sync")) == [
            (uuid, None) for uuid in uuids
        ]
        assert due(store, T0) == uuids
        mark_power_synced(store, uuids, T0)
        assert due(store, T0 - timedelta(seconds=1)) == []
        # The triggers work on the upgraded database: a new node is due, a deleted one gone.
        new = make(store)
        assert due(store, T0 - timedelta(seconds=1)) == [new.uuid]
        store.delete(new.uuid)
        assert len(raw_rows(v4_url, "SELECT * FROM node_power_sync")) == len(uuids)
    with SQLStore(v4_url) as again:  # reopening changes nothing
        assert due(again, T0 - timedelta(seconds=1)) == []


def test_a_failed_v5_step_leaves_the_v4_database_as_it_was(
    v4_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_a_failed_step_keeps(v4_url, monkeypatch, 4, everything)
    with pytest.raises(Exception, match="node_power_sync"):
        raw_rows(v4_url, "SELECT * FROM node_power_sync")
