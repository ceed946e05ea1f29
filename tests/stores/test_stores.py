"""The Store contract, on MemoryStore, SQLite (a real file) and PostgreSQL (a real server).

The SQL-only tests (schema version, WAL, races, reopening) run on both SQL
backends through the ``sql_url`` fixture.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import ironic_fsm
from ironic_fsm.exceptions import (
    ConcurrentUpdate,
    InvalidParameterValue,
    IronicFSMError,
    NodeLocked,
    NodeNotFound,
    TransitionRejected,
)
from ironic_fsm.node import Node
from ironic_fsm.stores import MemoryStore, SQLStore, Store
from ironic_fsm.stores.sql import SCHEMA_VERSION

UTC = timezone.utc


def table_names(conn: Any) -> set[str]:
    """The tables a driver connection (sqlite3 or psycopg) sees."""
    if isinstance(conn, sqlite3.Connection):
        sql = "SELECT name FROM sqlite_master WHERE type = 'table'"
    else:
        sql = (
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
    return {row[0] for row in conn.execute(sql).fetchall()}


def force(node: Node, **fields: Any) -> Node:
    """Set fields past the Node's own validation: a store must defend itself too."""
    for key, value in fields.items():
        object.__setattr__(node, key, value)
    return node


def make(store: Store, **fields: Any) -> Node:
    node = Node(**fields)
    store.create(node)
    return node


def rich_node() -> Node:
    """A node using every kind of value a record holds."""
    created = datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC)
    return Node(
        name="rich-1",
        driver="ipmi",
        driver_info={
            "ipmi_address": "10.0.0.7",
            "ipmi_password": "s3cr3t",
            "nested": {"list": [1, 2.5, None, True, "x"], "deeper": {"k": "v"}},
        },
        driver_internal_info={"clean_steps": [{"step": "erase", "priority": 10}]},
        properties={"cpus": 64, "memory_mb": 262144, "capabilities": "boot_mode:uefi"},
        instance_info={"image_source": "http://img", "configdrive": "ünïcødé ✓"},
        extra={"rack": "B12"},
        traits=["CUSTOM_GPU", "HW_CPU_X86_AVX2"],
        resource_class="baremetal.gpu",
        provision_state="manageable",
        power_state="power off",
        maintenance=True,
        maintenance_reason="fan",
        clean_step={"interface": "deploy", "step": "erase_devices", "args": {"a": [1]}},
        provision_updated_at=created + timedelta(minutes=5),
        created_at=created,
        updated_at=datetime(2024, 3, 1, 1, 2, 3, 4, tzinfo=timezone(timedelta(hours=2))),
        target_raid_config={"logical_disks": [{"size_gb": 100, "raid_level": "1"}]},
        deploy_interface="direct",
    )


# -- create, get, list ---------------------------------------------------------------


def test_create_sets_version_1_and_get_by_uuid_and_name(store: Store) -> None:
    node = make(store, name="alpha")
    assert node.version == 1
    assert store.get(node.uuid) == node
    assert store.get("alpha") == node
    assert store.get(node.uuid) is not store.get(node.uuid)


def test_create_duplicates_are_refused(store: Store) -> None:
    node = make(store, name="alpha")
    with pytest.raises(InvalidParameterValue, match=node.uuid):
        store.create(Node(uuid=node.uuid, name="beta"))
    with pytest.raises(InvalidParameterValue, match="'alpha'"):
        store.create(Node(name="alpha"))
    with pytest.raises(InvalidParameterValue, match="already exists"):
        store.create(force(Node(), name=node.uuid))  # a name that is another node's UUID
    assert [n.uuid for n in store.list()] == [node.uuid]


def test_get_unknown_raises_not_found(store: Store) -> None:
    with pytest.raises(NodeNotFound, match="nope"):
        store.get("nope")


def test_list_filters(store: Store) -> None:
    a = make(store, name="a", driver="ipmi", resource_class="gpu")
    b = make(store, name="b", driver="redfish", maintenance=True)
    c = make(store, name="c", retired=True, provision_state="manageable")
    d = make(store, driver="ipmi", provision_state="manageable", resource_class="gpu")

    def uuids(**filters: Any) -> list[str]:
        return [n.uuid for n in store.list(**filters)]

    assert uuids() == [a.uuid, b.uuid, c.uuid, d.uuid]
    assert uuids(retired=True) == [c.uuid]
    assert uuids(retired=False) == [a.uuid, b.uuid, d.uuid]
    assert uuids(maintenance=True) == [b.uuid]
    assert uuids(provision_state="manageable") == [c.uuid, d.uuid]
    assert uuids(driver="ipmi") == [a.uuid, d.uuid]
    assert uuids(name="b") == [b.uuid]
    assert uuids(name=None) == [d.uuid]
    assert uuids(resource_class="gpu") == [a.uuid, d.uuid]
    assert uuids(resource_class="gpu", provision_state="manageable") == [d.uuid]
    assert uuids(driver="ipmi", maintenance=True) == []
    assert uuids(reservation=None) == [a.uuid, b.uuid, c.uuid, d.uuid]
    assert uuids(provision_state=5) == []  # wrong type: no match, no database error
    store.reserve(b.uuid, "h1")
    assert uuids(reservation="h1") == [b.uuid]
    assert uuids(version=1) == [a.uuid, b.uuid, c.uuid, d.uuid]  # reserving is not a save
    b.extra["saved"] = True
    store.save(b)
    assert uuids(version=2) == [b.uuid]
    with pytest.raises(InvalidParameterValue, match="bogus, colour"):
        store.list(colour="red", bogus=1)


def test_list_is_in_created_at_order_then_creation_order(store: Store) -> None:
    # The default sort_key (docs/embedding.rst, list_nodes); an imported record keeps its age.
    now = datetime.now(UTC)
    older = [make(store, created_at=now - timedelta(days=i)) for i in range(1, 5)]
    same = [make(store, created_at=now - timedelta(days=9)) for _ in range(3)]  # ties
    newer = [make(store) for _ in range(3)]  # no created_at: stored "now", in order
    expected = [*same, *reversed(older), *newer]
    assert [n.uuid for n in store.list()] == [n.uuid for n in expected]
    assert [n.uuid for n in store.list(sort_dir="desc")] == [n.uuid for n in reversed(expected)]


def test_round_trip_is_lossless(store: Store) -> None:
    node = rich_node()
    original = node.to_dict()
    store.create(node)
    got = store.get(node.uuid)
    assert got == node
    assert got.to_dict() == {**original, "version": 1}
    assert got.updated_at is not None
    assert got.updated_at.utcoffset() == timedelta(hours=2)
    assert got.driver_info["ipmi_password"] == "s3cr3t"
    assert store.list(name="rich-1") == [node]
    # Changing the copy never changes the store.
    got.driver_info["nested"]["deeper"]["k"] = "changed"
    got.traits.append("X")
    assert store.get(node.uuid) == node


# -- save ------------------------------------------------------------------------------


def test_save_bumps_version_in_place(store: Store) -> None:
    node = make(store)
    node.provision_state = "manageable"
    node.extra["k"] = "v"
    store.save(node)
    assert node.version == 2
    store.save(node)
    assert node.version == 3
    assert store.get(node.uuid) == node


def test_stale_save_raises_concurrent_update_and_changes_nothing(store: Store) -> None:
    node = make(store, name="n")
    stale = store.get(node.uuid)
    node.provision_state = "manageable"
    store.save(node)
    stale.provision_state = "verifying"
    stale.name = "renamed"
    with pytest.raises(ConcurrentUpdate, match="changed by someone else") as info:
        store.save(stale)
    assert info.value.retryable is True
    assert info.value.node == node.uuid
    assert stale.version == 1
    assert store.get(node.uuid) == node
    assert store.list(name="renamed") == []
    assert store.get("n") == node


def test_save_of_a_deleted_node_raises_not_found(store: Store) -> None:
    node = make(store)
    store.delete(node.uuid)
    with pytest.raises(NodeNotFound):
        store.save(node)
    assert node.version == 1


def test_save_with_a_taken_name_is_refused(store: Store) -> None:
    make(store, name="taken")
    node = make(store, name="mine")
    node.name = "taken"
    with pytest.raises(InvalidParameterValue, match="'taken'"):
        store.save(node)
    assert node.version == 1
    assert store.get("mine").uuid == node.uuid
    node.name = "free"
    store.save(node)
    assert store.get("free").uuid == node.uuid
    with pytest.raises(NodeNotFound):
        store.get("mine")


# -- delete --------------------------------------------------------------------------


def test_delete(store: Store) -> None:
    first = make(store, name="first")
    second = make(store, name="second")
    store.delete(first.uuid)
    with pytest.raises(NodeNotFound):
        store.get(first.uuid)
    with pytest.raises(NodeNotFound):
        store.get("first")
    store.delete("second")
    with pytest.raises(NodeNotFound):
        store.get(second.uuid)
    with pytest.raises(NodeNotFound):
        store.delete(second.uuid)
    assert store.list() == []
    make(store, name="first")  # the name is free again


# -- reservations ---------------------------------------------------------------------


def test_reserve_sets_holder_and_keeps_the_version(store: Store) -> None:
    node = make(store, name="n")
    reserved = store.reserve("n", "h1")
    assert reserved.reservation == "h1"
    assert reserved.version == 1  # a reservation is a lock, not a change of the record
    assert store.get(node.uuid) == reserved
    # Exclusive even for the same holder: a conductor's background work
    # holding a node keeps that conductor's next request out too.
    with pytest.raises(NodeLocked, match="locked by h1"):
        store.reserve(node.uuid, "h1")
    assert store.get(node.uuid).version == 1


def test_reserve_by_another_holder_raises_node_locked(store: Store) -> None:
    node = make(store, name="n")
    store.reserve(node.uuid, "conductor-1:42:abc")
    for ident in (node.uuid, "n"):
        with pytest.raises(NodeLocked, match="locked by conductor-1:42:abc") as info:
            store.reserve(ident, "conductor-2")
        assert info.value.retryable is True
        assert info.value.holder == "conductor-1:42:abc"
        assert info.value.node == node.uuid
    assert store.get(node.uuid).reservation == "conductor-1:42:abc"
    assert store.get(node.uuid).version == 1


def test_reserve_unknown_raises_not_found(store: Store) -> None:
    with pytest.raises(NodeNotFound):
        store.reserve("ghost", "h1")


def test_release(store: Store) -> None:
    node = make(store, name="n")
    store.reserve(node.uuid, "h1")
    store.release(node.uuid, "h2")  # not the holder: nothing happens
    after = store.get(node.uuid)
    assert (after.reservation, after.version) == ("h1", 1)
    store.release("n", "h1")
    after = store.get(node.uuid)
    assert (after.reservation, after.version) == (None, 1)
    assert after == node  # byte for byte what was created
    store.release(node.uuid, "h1")  # already free: nothing happens
    assert store.get(node.uuid).version == 1
    assert store.reserve(node.uuid, "h2").reservation == "h2"
    with pytest.raises(NodeNotFound):
        store.release("ghost", "h1")


def test_conductor_pattern_reserve_change_save_release(store: Store) -> None:
    node = make(store)
    task_node = store.reserve(node.uuid, "me")
    task_node.provision_state = "verifying"
    store.save(task_node)
    with pytest.raises(NodeLocked):
        store.reserve(node.uuid, "other")
    task_node.provision_state = "manageable"
    task_node.reservation = None  # released in the same write as the final state
    store.save(task_node)
    stored = store.get(node.uuid)
    assert stored == task_node
    assert (stored.reservation, stored.version, stored.provision_state) == (
        None,
        3,
        "manageable",
    )
    assert store.reserve(node.uuid, "other").reservation == "other"


def test_heartbeat_and_holders(store: Store) -> None:
    assert store.holders() == {}
    first = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    store.heartbeat("h1", first)
    store.heartbeat("h2", first + timedelta(seconds=1))
    store.heartbeat("h1", first + timedelta(seconds=10))
    holders = store.holders()
    assert holders == {"h1": first + timedelta(seconds=10), "h2": first + timedelta(seconds=1)}
    assert all(when.utcoffset() == timedelta(0) for when in holders.values())


# -- SQL only: concurrency ---------------------------------------------------------------


def _race(workers: int, work: Any) -> list[Any]:
    """Run ``work(i)`` in ``workers`` threads released at once; return results/errors."""
    barrier = threading.Barrier(workers)

    def run(i: int) -> Any:
        barrier.wait()
        try:
            return work(i)
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(run, range(workers), timeout=60))


def test_racing_reservations_have_exactly_one_winner(sql_url: str) -> None:
    shared = SQLStore(sql_url)
    other = SQLStore(sql_url)  # a second "process" on the same database
    stores = [shared, other]
    try:
        for _ in range(10):
            node = make(shared)
            results = _race(6, lambda i, n=node: stores[i % 2].reserve(n.uuid, f"h{i}"))
            winners = [r for r in results if isinstance(r, Node)]
            losers = [r for r in results if isinstance(r, NodeLocked)]
            assert len(winners) == 1, results
            assert len(losers) == 5, results
            holder = winners[0].reservation
            assert all(holder in str(exc) for exc in losers)
            assert shared.get(node.uuid).reservation == holder
            assert shared.get(node.uuid).version == 1
    finally:
        shared.close()
        other.close()


def test_racing_saves_have_exactly_one_winner(sql_url: str) -> None:
    with SQLStore(sql_url) as shared:
        node = make(shared)
        copies = [shared.get(node.uuid) for _ in range(6)]

        def save(i: int) -> int:
            copies[i].extra["writer"] = i
            shared.save(copies[i])
            return i

        results = _race(6, save)
        winners = [r for r in results if isinstance(r, int)]
        assert len(winners) == 1, results
        assert all(isinstance(r, ConcurrentUpdate) for r in results if r not in winners)
        stored = shared.get(node.uuid)
        assert stored.version == 2
        assert stored.extra == {"writer": winners[0]}


def test_in_memory_sqlite_is_shared_by_threads() -> None:
    with SQLStore("sqlite://") as memory:
        nodes = [make(memory) for _ in range(4)]
        results = _race(8, lambda i: memory.reserve(nodes[i % 4].uuid, f"h{i}"))
        assert sum(isinstance(r, Node) for r in results) == 4
        assert sum(isinstance(r, NodeLocked) for r in results) == 4
        assert len(memory.list()) == 4


# -- SQL only: schema, durability, persistence ---------------------------------------------


def test_schema_version_is_stamped_and_newer_is_refused(sql_url: str) -> None:
    with SQLStore(sql_url) as first:
        make(first)
        with first.connection() as conn:
            rows = conn.execute("SELECT id, version FROM ironic_fsm_schema").fetchall()
            assert [tuple(row) for row in rows] == [(1, SCHEMA_VERSION)]
            assert {"nodes", "holders", "ironic_fsm_schema"} <= table_names(conn)
            conn.execute("UPDATE ironic_fsm_schema SET version = 999")
    with pytest.raises(InvalidParameterValue, match="schema version 999") as info:
        SQLStore(sql_url)
    assert isinstance(info.value, IronicFSMError)


def test_reopening_keeps_the_data(sql_url: str) -> None:
    with SQLStore(sql_url) as first:
        node = rich_node()
        first.create(node)
        first.reserve(node.uuid, "h1")
        first.heartbeat("h1", datetime(2025, 5, 5, tzinfo=UTC))
        expected = first.get(node.uuid)
    with SQLStore(sql_url) as again:
        assert again.get(node.uuid) == expected
        assert again.list() == [expected]
        assert again.holders() == {"h1": datetime(2025, 5, 5, tzinfo=UTC)}


def test_sqlite_file_is_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "nodes.db"
    with SQLStore(f"sqlite:///{path}", sqlite_synchronous="FULL") as full:
        make(full)
        with full.connection() as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert conn.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
            assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 10_000
    with SQLStore(f"sqlite:///{path}") as normal, normal.connection() as conn:
        assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
    with sqlite3.connect(path) as raw:  # WAL is a property of the file, seen by anyone
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_bad_synchronous_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterValue, match="sqlite_synchronous"):
        SQLStore(f"sqlite:///{tmp_path / 'x.db'}", sqlite_synchronous="sometimes")


def test_values_that_are_not_json_are_refused(sql_url: str) -> None:
    with SQLStore(sql_url) as sql:
        with pytest.raises(InvalidParameterValue, match="JSON"):
            sql.create(force(Node(), extra={"when": datetime.now(UTC)}))
        assert sql.list() == []


def test_import_does_not_load_sqlalchemy() -> None:
    code = "import sys, ironic_fsm; assert 'sqlalchemy' not in sys.modules, 'loaded'"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the whole lifecycle on a SQL store --------------------------------------------------


def test_lifecycle_through_the_conductor(sql_url: str) -> None:
    with SQLStore(sql_url) as sql:
        conductor = ironic_fsm.Conductor(store=sql)
        node = conductor.create_node(name="lifecycle-1", driver="fake-hardware")
        for verb, state in [
            ("manage", "manageable"),
            ("provide", "available"),
            ("deploy", "active"),
            ("undeploy", "available"),
        ]:
            node = conductor.do_provisioning_action(node.uuid, verb)
            assert node.provision_state == state, node.last_error
            assert node.reservation is None
    with SQLStore(sql_url) as fresh:
        assert fresh.get(node.uuid) == node
        assert fresh.get("lifecycle-1").provision_state == "available"
        assert fresh.get(node.uuid).reservation is None


def test_conductor_threads_share_one_store(sql_url: str) -> None:
    with SQLStore(sql_url) as sql:

        def lifecycles(i: int) -> list[str]:
            conductor = ironic_fsm.Conductor(store=sql)
            states = []
            for _ in range(3):
                node = conductor.create_node()
                for verb in ("manage", "provide", "deploy", "undeploy"):
                    node = conductor.do_provisioning_action(node.uuid, verb)
                states.append(node.provision_state)
            return states

        results = _race(4, lifecycles)
        assert results == [["available"] * 3] * 4, results
        nodes = sql.list(provision_state="available", reservation=None)
        assert len(nodes) == 12


def test_memory_store_is_the_default_and_matches_protocol() -> None:
    assert isinstance(MemoryStore(), Store)
    with SQLStore("sqlite://") as sql:
        assert isinstance(sql, Store)


# -- a refused request loses nothing; a failed save changes nothing ---------------------


def _snapshot(store: Store) -> dict[str, tuple[str, str | None, int]]:
    """Every record as the store holds it (JSON text, reservation, version)."""
    return {n.uuid: (n.to_json(), n.reservation, n.version) for n in store.list()}


def test_reserve_and_release_change_nothing_but_the_reservation(store: Store) -> None:
    node = make(store, name="n", extra={"k": "v"})
    node.provision_state = "manageable"
    store.save(node)
    before = _snapshot(store)
    reserved = store.reserve("n", "h1")
    assert (reserved.reservation, reserved.version) == ("h1", 2)
    assert reserved.to_json() == store.get(node.uuid).to_json()
    store.release(node.uuid, "h1")
    assert _snapshot(store) == before
    # A save based on the copy read before the reservation still goes through:
    # the reservation did not make it stale.
    node.extra["k"] = "w"
    store.save(node)
    assert node.version == 3


def test_a_request_refused_after_reserving_leaves_the_record_identical(store: Store) -> None:
    conductor = ironic_fsm.Conductor(store=store)
    node = conductor.create_node(name="guarded", driver="fake-hardware")
    node = conductor.do_provisioning_action(node.uuid, "manage")
    conductor.add_guard(lambda node, verb, event, target: "not today")
    before = _snapshot(store)
    with pytest.raises(TransitionRejected, match="not today"):
        conductor.do_provisioning_action(node.uuid, "provide")
    assert _snapshot(store) == before
    assert store.get(node.uuid).reservation is None


def test_a_save_that_cannot_be_serialised_changes_nothing(store: Store) -> None:
    node = make(store, name="before")
    before = _snapshot(store)
    node.name = "after"
    node.extra["when"] = datetime.now(UTC)  # not JSON
    with pytest.raises(InvalidParameterValue, match="JSON") as info:
        store.save(node)
    assert not isinstance(info.value.__cause__, IronicFSMError)
    assert node.version == 1
    assert _snapshot(store) == before
    assert store.get("before").uuid == node.uuid
    with pytest.raises(NodeNotFound):
        store.get("after")
    node.extra = {}
    store.save(node)  # the name index did not keep "after" half-taken
    assert (store.get("after").uuid, node.version) == (node.uuid, 2)
    make(store, name="before")  # and "before" is free again


def test_a_create_that_cannot_be_serialised_changes_nothing(store: Store) -> None:
    node = force(Node(name="x"), extra={"when": datetime.now(UTC)})
    with pytest.raises(InvalidParameterValue, match="JSON"):
        store.create(node)
    assert node.version == 0
    assert store.list() == []
    make(store, name="x")


def test_too_deep_data_is_refused_naming_the_node(store: Store) -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(100_000):
        inner["d"] = {}
        inner = inner["d"]
    node = force(make(store), extra=deep)
    with pytest.raises(InvalidParameterValue, match=f"{node.uuid}.*nested too deeply"):
        store.save(node)
    assert node.version == 1
    assert store.get(node.uuid).extra == {}


def test_a_duplicate_name_on_save_changes_nothing(store: Store) -> None:
    make(store, name="taken")
    node = make(store, name="mine")
    before = _snapshot(store)
    node.name = "taken"
    node.extra["x"] = 1
    with pytest.raises(InvalidParameterValue, match="'taken'") as info:
        store.save(node)
    assert getattr(info.value, "field", None) == "name"
    assert node.version == 1
    assert _snapshot(store) == before


# -- what a store keeps is its own: no shared objects, nothing it could not read back ------


def test_callers_never_share_objects_with_the_store(store: Store) -> None:
    node = Node(name="own", driver_info={"a": {"b": [1]}}, traits=["CUSTOM_A"])
    store.create(node)
    node.driver_info["a"]["b"].append("after create")
    got = store.get("own")
    got.driver_info["a"]["b"].append("after get")
    got.traits.append("CUSTOM_GOT")
    got.extra["k"] = "v"
    assert store.get("own").driver_info == {"a": {"b": [1]}}
    node = store.get("own")
    node.extra = {"saved": ["x"]}
    store.save(node)
    node.extra["saved"].append("after save")
    node.traits.append("CUSTOM_AFTER_SAVE")
    reserved = store.reserve("own", "h")
    reserved.extra["saved"].append("after reserve")
    store.release("own", "h")
    for listed in store.list():
        listed.extra["saved"].append("after list")
    final = store.get("own")
    assert (final.driver_info, final.extra, final.traits) == (
        {"a": {"b": [1]}},
        {"saved": ["x"]},
        ["CUSTOM_A"],
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"last_error": 5},
        {"maintenance_reason": ["x"]},
        {"automated_clean": "yes"},
        {"version": "1"},
    ],
    ids=["last_error", "maintenance_reason", "automated_clean", "version"],
)
def test_a_save_of_a_field_of_the_wrong_type_is_refused_and_changes_nothing(
    store: Store, fields: dict[str, Any]
) -> None:
    node = make(store, name="typed")
    before = _snapshot(store)
    field = next(iter(fields))
    with pytest.raises(InvalidParameterValue, match=field):
        store.save(force(store.get("typed"), **fields))
    assert _snapshot(store) == before
    assert store.get("typed") == node


@pytest.mark.parametrize(
    "value", [float("nan"), float("-inf"), (1, 2), {1: "a"}], ids=["nan", "inf", "tuple", "int-key"]
)
def test_a_save_that_json_would_change_is_refused_and_changes_nothing(
    store: Store, value: object
) -> None:
    make(store, name="exact", extra={"k": "v"})
    before = _snapshot(store)
    node = store.get("exact")
    node.extra["k"] = value
    with pytest.raises(InvalidParameterValue, match="JSON"):
        store.save(node)
    assert node.version == 1
    assert _snapshot(store) == before


def test_built_in_stores_declare_what_they_offer(store: Store) -> None:
    """A listing of a few fields reads columns, not records: the store must say it pages.

    The conductor asks the store's declaration (``lists_pages``), never its
    signature; a store that forgot it would silently decode every record.
    """
    from ironic_fsm.stores.base import pages
    from ironic_fsm.stores.capabilities import StoreCapabilities

    assert pages(store)
    offered = StoreCapabilities(store)
    assert offered.history is store
    assert offered.catalog is store
    assert offered.scans is store
    assert offered.records is not None  # ports, chassis, allocations...
    assert offered.records is getattr(store, "records", None)
