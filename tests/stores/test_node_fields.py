"""Node fields Ironic's API advertises and we store (issue 13).

``network_data`` (1.66), ``shard`` (1.82), ``parent_node`` (1.83) and the
inspection times (1.6): checked by the record, round-tripped by every
codec, set by the conductor where Ironic sets them, filtered by every
store, and kept by schema 10's upgrade of a v9 database.
"""

from __future__ import annotations

import json
import uuid as uuidlib
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any

import pytest
from helpers import Clock, make_conductor, new_node
from old_schema import (
    COLUMNS_BEFORE_V9,
    FREE,
    HELD,
    SYNCED,
    assert_failed_then_upgraded,
    assert_old_records_kept,
    assert_reopening_keeps,
    every_row,
    fill_since_v9,
    nodes_since_v9,
    raw_rows,
    release_fixture,
    schema_version,
)
from test_store_migration_v7 import indexes

from ironic_fsm import Node, states
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import check_field, freeze, thaw
from ironic_fsm.stores import SQLStore, Store, sql
from ironic_fsm.stores.base import list_fields

T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
PARENT = "5f1c4c3e-7d2a-4e6b-9c1a-0b2d3e4f5a6b"
NETWORK = {"links": [{"id": "eth0", "type": "phy"}], "networks": [], "services": []}


def full_node() -> Node:
    return Node(
        network_data=NETWORK,
        shard="rack-7",
        parent_node=PARENT,
        inspection_started_at=T,
        inspection_finished_at=T + timedelta(minutes=5),
    )


# -- the record ---------------------------------------------------------------------------


def test_new_fields_default_to_what_ironic_shows_for_a_node_without_them() -> None:
    node = Node()
    assert node.network_data == {}
    assert node.shard is None
    assert node.parent_node is None
    assert node.inspection_started_at is None
    assert node.inspection_finished_at is None


def test_new_fields_round_trip_through_every_codec() -> None:
    node = full_node()
    as_dict = node.to_dict()
    assert as_dict["inspection_started_at"] == T.isoformat()
    assert as_dict["network_data"] == NETWORK
    assert Node.from_dict(as_dict) == node
    assert Node.from_dict(json.loads(json.dumps(as_dict))) == node
    assert Node.from_json(node.to_json()) == node
    assert thaw(freeze(node)) == node
    copied = Node.from_dict(as_dict)
    copied.network_data["links"].append({"id": "eth1"})
    assert node.network_data == NETWORK  # the dict was copied, not shared


def test_a_record_written_before_these_fields_loads_with_their_defaults() -> None:
    record = json.loads(Node(name="old").to_json())
    for name in (
        "network_data",
        "shard",
        "parent_node",
        "inspection_started_at",
        "inspection_finished_at",
    ):
        del record[name]
    node = Node.from_json(json.dumps(record))
    assert node.name == "old"
    assert (node.network_data, node.shard, node.parent_node) == ({}, None, None)
    assert node.inspection_started_at is None
    assert node.inspection_finished_at is None


def test_parent_node_is_kept_in_canonical_form() -> None:
    assert Node(parent_node=PARENT.upper()).parent_node == PARENT
    assert Node(parent_node=uuidlib.UUID(PARENT)).parent_node == PARENT
    assert check_field("parent_node", PARENT.replace("-", "")) == PARENT
    assert check_field("parent_node", None) is None


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("shard", "x" * 256, "at most 255 characters"),
        ("shard", 7, "a string"),
        ("shard", "a\x00b", "without NUL"),
        ("parent_node", "not-a-uuid", "must be a UUID"),
        ("parent_node", 12, "a UUID string"),
        ("network_data", [], "a dictionary"),
        ("network_data", {"a": float("nan")}, "finite"),
        ("inspection_started_at", "2026-01-01", "timezone-aware datetime"),
        ("inspection_finished_at", datetime(2026, 1, 1), "timezone-aware datetime"),
    ],
)
def test_a_bad_value_is_refused_naming_the_field(field: str, value: Any, words: str) -> None:
    with pytest.raises(InvalidParameterValue, match=words) as caught:
        Node(**{field: value})
    assert field in str(caught.value)
    with pytest.raises(InvalidParameterValue, match=field):
        check_field(field, value)


def test_a_changed_node_with_a_bad_new_field_is_not_storable() -> None:
    node = Node()
    node.shard = 5  # type: ignore[assignment]
    with pytest.raises(InvalidParameterValue, match="'shard'"):
        node.check_types()
    node = Node()
    node.inspection_finished_at = datetime(2026, 1, 1)
    with pytest.raises(InvalidParameterValue, match="'inspection_finished_at'"):
        node.to_json()


def test_network_data_secrets_are_masked_in_repr() -> None:
    node = Node(network_data={"services": [{"type": "dns", "password": "hunter2"}]})
    assert "hunter2" not in repr(node)


# -- the conductor ------------------------------------------------------------------------

#: The conductor's tests run on the in-memory store and on SQLite.
ON_EVERY_STORE = pytest.mark.parametrize("conductor_store", ["memory", "sqlite"], indirect=True)


@ON_EVERY_STORE
def test_conductor_creates_and_updates_the_new_fields() -> None:
    conductor = make_conductor()
    parent = conductor.create_node(driver="fake-hardware", name="host")
    node = conductor.create_node(
        driver="fake-hardware", shard="s1", parent_node=parent.uuid, network_data=NETWORK
    )
    stored = conductor.get_node(node.uuid)
    assert (stored.shard, stored.parent_node, stored.network_data) == ("s1", parent.uuid, NETWORK)
    conductor.update_node(node.uuid, shard="s2", parent_node=None, network_data={})
    stored = conductor.get_node(node.uuid)
    assert (stored.shard, stored.parent_node, stored.network_data) == ("s2", None, {})


@ON_EVERY_STORE
def test_a_refused_update_leaves_the_record_as_it_was() -> None:
    conductor = make_conductor()
    node = conductor.create_node(driver="fake-hardware", shard="s1")
    before = conductor.get_node(node.uuid)
    with pytest.raises(InvalidParameterValue, match="parent_node"):
        conductor.update_node(node.uuid, shard="s2", parent_node="nope")
    after = conductor.get_node(node.uuid)
    assert after == before
    assert after.reservation is None


@ON_EVERY_STORE
def test_conductor_lists_by_shard_and_parent() -> None:
    conductor = make_conductor()
    host = conductor.create_node(driver="fake-hardware", name="host", shard="a")
    conductor.create_node(driver="fake-hardware", name="dpu", shard="b", parent_node=host.uuid)
    conductor.create_node(driver="fake-hardware", name="spare")

    def names(**filters: Any) -> list[str]:
        return sorted(n.name or "" for n in conductor.list_nodes(**filters))

    assert names(shard=["a", "b"]) == ["dpu", "host"]
    assert names(sharded=True) == ["dpu", "host"]
    assert names(sharded=False) == ["spare"]
    assert names(parent_node=host.uuid.upper()) == ["dpu"]
    assert names(parent_node=None) == ["host", "spare"]
    with pytest.raises(InvalidParameterValue, match="sharded"):
        conductor.list_nodes(sharded="yes")
    with pytest.raises(InvalidParameterValue, match="parent_node"):
        conductor.list_nodes(parent_node="host")


@ON_EVERY_STORE
@pytest.mark.parametrize("field", ["inspection_started_at", "inspection_finished_at"])
def test_the_inspection_times_are_the_lifecycles_to_set(field: str) -> None:
    conductor = make_conductor()
    node = conductor.create_node(driver="fake-hardware")
    with pytest.raises(InvalidParameterValue, match=field):
        conductor.update_node(node.uuid, **{field: T})
    assert conductor.get_node(node.uuid) == node


# -- the inspection times, as Ironic's database layer sets them ---------------------------


def _inspectable(conductor: Any, *fail_on: str) -> Node:
    return new_node(conductor, states.MANAGEABLE, driver_info={"fail_on": list(fail_on)})


@ON_EVERY_STORE
def test_a_finished_inspection_records_when_and_clears_the_start() -> None:
    clock = Clock()
    conductor = make_conductor(clock=clock)
    node = _inspectable(conductor)
    clock.advance(60)
    node = conductor.do_provisioning_action(node.uuid, "inspect")
    stored = conductor.get_node(node.uuid)
    assert stored.provision_state == states.MANAGEABLE
    assert stored.inspection_finished_at == clock.now
    assert stored.inspection_started_at is None


@ON_EVERY_STORE
def test_an_asynchronous_inspection_is_started_then_finished() -> None:
    clock = Clock()
    conductor = make_conductor(clock=clock)
    node = _inspectable(conductor, "inspect_async")
    started = clock.advance(10)
    conductor.do_provisioning_action(node.uuid, "inspect")
    waiting = conductor.get_node(node.uuid)
    assert waiting.provision_state == states.INSPECTWAIT
    assert waiting.inspection_started_at == started
    assert waiting.inspection_finished_at is None
    finished = clock.advance(30)
    conductor.continue_node_inspect(node.uuid, {"cpus": 8})
    done = conductor.get_node(node.uuid)
    assert done.inspection_finished_at == finished
    assert done.inspection_started_at is None


@ON_EVERY_STORE
def test_a_new_inspection_clears_the_last_finish() -> None:
    clock = Clock()
    conductor = make_conductor(clock=clock)
    node = _inspectable(conductor)
    conductor.do_provisioning_action(node.uuid, "inspect")
    assert conductor.get_node(node.uuid).inspection_finished_at is not None
    conductor.update_node(node.uuid, driver_info={"fail_on": ["inspect_async"]})
    again = clock.advance(5)
    conductor.do_provisioning_action(node.uuid, "inspect")
    node = conductor.get_node(node.uuid)
    assert (node.inspection_started_at, node.inspection_finished_at) == (again, None)


@ON_EVERY_STORE
@pytest.mark.parametrize("how", ["abort", "timeout", "failure"])
def test_a_failed_inspection_clears_the_start(how: str) -> None:
    """And the last finish, cleared when it began: as Ironic, neither time stays."""
    clock = Clock()
    conductor = make_conductor(clock=clock)
    node = _inspectable(conductor)
    conductor.do_provisioning_action(node.uuid, "inspect")
    assert conductor.get_node(node.uuid).inspection_finished_at is not None
    conductor.update_node(
        node.uuid, driver_info={"fail_on": ["inspect" if how == "failure" else "inspect_async"]}
    )
    clock.advance(5)
    conductor.do_provisioning_action(node.uuid, "inspect")
    if how == "abort":
        conductor.do_provisioning_action(node.uuid, "abort")
    elif how == "timeout":
        assert conductor.check_timeouts(now=clock.advance(10**5)) == [node.uuid]
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.INSPECTFAIL
    assert node.inspection_started_at is None
    assert node.inspection_finished_at is None
    assert node.reservation is None


# -- the stores: one filter path, on every backend ----------------------------------------


def _family(store: Store) -> dict[str, Node]:
    """A host with two children (shards a and b), a node in shard a, one without a shard."""
    host = Node(name="host", shard="a")
    nodes = {
        "host": host,
        "child-a": Node(name="child-a", shard="a", parent_node=host.uuid),
        "child-b": Node(name="child-b", shard="b", parent_node=host.uuid),
        "lone": Node(name="lone", shard="a"),
        "unsharded": Node(name="unsharded"),
    }
    for node in nodes.values():
        store.create(node)
    return nodes


def _names(found: list[Any]) -> list[str]:
    return sorted(n.name for n in found)


def test_stores_filter_on_shard_and_parent_node(store: Store) -> None:
    nodes = _family(store)
    host = nodes["host"].uuid
    assert _names(store.list(shard="a")) == ["child-a", "host", "lone"]
    assert _names(store.list(shard=["a", "b"])) == ["child-a", "child-b", "host", "lone"]
    assert _names(store.list(shard=None)) == ["unsharded"]
    assert _names(store.list(sharded=True)) == ["child-a", "child-b", "host", "lone"]
    assert _names(store.list(sharded=False)) == ["unsharded"]
    assert _names(store.list(parent_node=host)) == ["child-a", "child-b"]
    assert _names(store.list(parent_node=None)) == ["host", "lone", "unsharded"]
    assert _names(store.list(parent_node=host, shard="b")) == ["child-b"]
    assert store.list(sharded=True, shard=None) == []


def test_stores_keep_the_new_fields_beside_the_record(store: Store) -> None:
    nodes = _family(store)
    rows = list_fields(store, ("shard", "parent_node"))
    assert {row["uuid"]: (row["shard"], row["parent_node"]) for row in rows} == {
        n.uuid: (n.shard, n.parent_node) for n in nodes.values()
    }
    moved = store.get("child-a")
    moved.shard, moved.parent_node = "c", None
    store.save(moved)
    assert _names(store.list(shard="c")) == ["child-a"]
    assert _names(store.list(parent_node=nodes["host"].uuid)) == ["child-b"]
    assert store.get("child-a") == moved


# -- schema 10: a v9 database upgraded in place -------------------------------------------

#: Every column of a node row in schema 9.
NODES_OF_V9 = nodes_since_v9(COLUMNS_BEFORE_V9)
_v9_rows = partial(every_row, nodes=NODES_OF_V9)


#: A v9 database in a SQLite file, or in a private schema of the PostgreSQL server.
v9_url = release_fixture(9, fill_since_v9(COLUMNS_BEFORE_V9))


def test_v9_database_is_upgraded_to_v10_losing_nothing(v9_url: str) -> None:
    before = _v9_rows(v9_url)
    with SQLStore(v9_url) as store:
        assert schema_version(v9_url) == sql.SCHEMA_VERSION >= 10
        assert _v9_rows(v9_url) == before
        assert raw_rows(v9_url, "SELECT shard, parent_node FROM nodes") == [(None, None)] * 3
        defined = indexes(v9_url)
        assert "shard" in defined["nodes_shard_idx"]
        assert "parent_node" in defined["nodes_parent_node_idx"]
        assert_old_records_kept(store)
        child = store.get(FREE)
        child.shard, child.parent_node = "s1", SYNCED
        store.save(child)
        assert [n.uuid for n in store.list(shard="s1")] == [FREE]
        assert [n.uuid for n in store.list(parent_node=SYNCED)] == [FREE]
        assert sorted(n.uuid for n in store.list(parent_node=None)) == [HELD, SYNCED]
    assert_reopening_keeps(v9_url, indexes, defined)


def test_a_failed_v10_step_leaves_the_v9_database_as_it_was(
    v9_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_failed_then_upgraded(v9_url, monkeypatch, 9, _v9_rows, indexes)
