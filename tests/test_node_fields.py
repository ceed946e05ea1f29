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
from typing import Any

import pytest
from helpers import Clock, make_conductor, new_node

from ironic_fsm import Node, states
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import check_field, freeze, thaw

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
