"""KeyValueStore: the store protocol's rules kept by the library over four key-value methods.

Driven through the example's own twenty-line store (``examples/kv_store.py``):
a conductor's whole lifecycle, and each rule a store must keep, including
under writers racing in threads.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import pytest

import ironic_fsm
from ironic_fsm import Node, states
from ironic_fsm.exceptions import (
    ConcurrentUpdate,
    InvalidParameterValue,
    NodeLocked,
    NodeNotFound,
)
from ironic_fsm.stores import KeyValueStore, Store

_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kv_store.py"
_spec = importlib.util.spec_from_file_location("kv_store_example", _EXAMPLE)
assert _spec is not None
assert _spec.loader is not None
example = importlib.util.module_from_spec(_spec)
sys.modules["kv_store_example"] = example
_spec.loader.exec_module(example)


def _store() -> KeyValueStore:
    store: KeyValueStore = example.DictStore()
    return store


def test_the_example_is_twenty_lines_of_store_and_satisfies_the_protocol() -> None:
    source = _EXAMPLE.read_text().split("class DictStore")[1].split("\ndef main")[0]
    code = [line for line in source.splitlines() if line.strip() and '"""' not in line]
    assert len(code) <= 30
    assert isinstance(_store(), Store)


def test_a_whole_lifecycle_through_the_conductor() -> None:
    conductor = ironic_fsm.Conductor(store=_store())
    node = conductor.create_node(name="n1", driver="fake-hardware")
    for verb, state in (("manage", states.MANAGEABLE), ("provide", states.AVAILABLE),
                        ("deploy", states.ACTIVE), ("undeploy", states.AVAILABLE)):  # fmt: skip
        node = conductor.do_provisioning_action("n1", verb)
        assert (node.provision_state, node.reservation) == (state, None)
    assert [n.name for n in conductor.list_nodes(provision_state="available")] == ["n1"]
    conductor.heartbeat()
    conductor.do_provisioning_action("n1", "manage")
    conductor.delete_node("n1")
    with pytest.raises(NodeNotFound):
        conductor.get_node("n1")


def test_saves_are_versioned_and_a_stale_one_changes_nothing() -> None:
    store = _store()
    store.create(Node(name="a", driver="fake-hardware"))
    first, second = store.get("a"), store.get("a")
    first.extra["owner"] = "alice"
    store.save(first)
    assert first.version == 2
    second.extra["owner"] = "bob"
    with pytest.raises(ConcurrentUpdate):
        store.save(second)
    assert second.version == 1
    assert store.get("a").extra == {"owner": "alice"}


def test_names_are_unique_and_follow_renames() -> None:
    store = _store()
    a, b = Node(name="a"), Node(name="b")
    store.create(a)
    store.create(b)
    with pytest.raises(InvalidParameterValue, match="'a' already exists"):
        store.create(Node(name="a"))
    with pytest.raises(InvalidParameterValue, match="already exists"):
        store.create(Node(uuid=a.uuid))
    renamed = store.get("b")
    renamed.name = "a"
    with pytest.raises(InvalidParameterValue, match="'a' already exists"):
        store.save(renamed)
    assert store.get("b").version == 1  # the refused save changed nothing
    renamed = store.get("b")
    renamed.name = "c"
    store.save(renamed)
    assert store.get("c").uuid == b.uuid
    with pytest.raises(NodeNotFound):
        store.get("b")
    store.create(Node(name="b"))  # the old name is free again
    store.delete("c")
    store.create(Node(name="c"))  # and a deleted node's too


def test_a_reservation_is_exclusive_and_changes_only_the_reservation() -> None:
    store = _store()
    store.create(Node(name="r"))
    taken = store.reserve("r", "me")
    assert (taken.reservation, taken.version) == ("me", 1)
    with pytest.raises(NodeLocked) as locked:
        store.reserve("r", "you")
    assert locked.value.retryable
    store.release("r", "you")  # not the holder: nothing happens
    assert store.get("r").reservation == "me"
    store.release("r", "me")
    node = store.get("r")
    assert (node.reservation, node.version) == (None, 1)


def test_racing_writers_never_both_win() -> None:
    store = _store()
    store.create(Node(name="race"))
    holders = [f"conductor-{i}" for i in range(16)]
    barrier = threading.Barrier(len(holders))

    def take(holder: str) -> str | None:
        barrier.wait(timeout=60)
        try:
            return store.reserve("race", holder).reservation
        except NodeLocked:
            return None

    with ThreadPoolExecutor(len(holders)) as pool:
        winners = [w for w in pool.map(take, holders) if w is not None]
    assert len(winners) == 1
    assert store.get("race").reservation == winners[0]

    names = [f"n{i % 4}" for i in range(32)]

    def create(name: str) -> bool:
        try:
            store.create(Node(name=name))
            return True
        except InvalidParameterValue:
            return False

    with ThreadPoolExecutor(16) as pool:
        created = sum(pool.map(create, names))
    assert created == 4
    assert sorted(n.name for n in store.list() if n.name != "race") == ["n0", "n1", "n2", "n3"]


def test_heartbeats_are_kept_per_holder() -> None:
    store = _store()
    first = datetime(2026, 1, 1, tzinfo=timezone.utc)
    later = datetime(2026, 1, 2, tzinfo=timezone.utc)
    store.heartbeat("a", first)
    store.heartbeat("b", first)
    store.heartbeat("a", later)
    assert store.holders() == {"a": later, "b": first}


def test_list_filters_as_the_other_stores_do() -> None:
    store = _store()
    store.create(Node(name="m", provision_state="manageable", driver="fake-hardware"))
    store.create(Node(name="e", driver="ipmi"))
    assert [n.name for n in store.list(provision_state="manageable")] == ["m"]
    assert [n.name for n in store.list(driver=["ipmi", "redfish"])] == ["e"]
    with pytest.raises(InvalidParameterValue, match="unknown field"):
        store.list(colour="blue")
