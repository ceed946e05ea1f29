"""Allocations through the library: Ironic's allocation process, and two conductors
allocating from one pool at once (a SQLite file, PostgreSQL) never giving a node twice."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ironic_fsm import Conductor, states
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    InvalidState,
    NodeNotFound,
    ResourceExists,
    ResourceNotFound,
)
from ironic_fsm.node import Node
from ironic_fsm.records import Allocation
from ironic_fsm.stores import MemoryStore, SQLStore


def _available(conductor: Conductor, name: str, **fields: object) -> Node:
    """A node as a fleet import gives it: available, powered off."""
    return conductor.create_node(
        name=name, provision_state=states.AVAILABLE, power_state=states.POWER_OFF, **fields
    )


@pytest.fixture(params=["memory", "sqlite"])
def conductor(request: pytest.FixtureRequest, tmp_path: Path) -> Conductor:
    if request.param == "memory":
        return Conductor(MemoryStore())
    return Conductor(SQLStore(f"sqlite:///{tmp_path / 'allocations.sqlite'}"))


def test_a_matching_node_is_given_and_freed(conductor: Conductor) -> None:
    _available(conductor, "plain", resource_class="gold")
    gpu = _available(conductor, "gpu", resource_class="gold", traits=["CUSTOM_GPU"])
    _available(conductor, "silver", resource_class="silver", traits=["CUSTOM_GPU"])
    allocation = conductor.create_allocation(
        resource_class="gold", traits=["CUSTOM_GPU"], name="mine", extra={"by": "me"}
    )
    assert (allocation.state, allocation.node_uuid, allocation.last_error) == (
        "active", gpu.uuid, None,
    )  # fmt: skip
    node = conductor.get_node("gpu")
    assert node.instance_uuid == node.allocation_uuid == allocation.uuid
    assert node.instance_info["traits"] == ["CUSTOM_GPU"]
    assert conductor.get_node_allocation("gpu").uuid == allocation.uuid
    assert conductor.get_allocation("mine").uuid == allocation.uuid
    assert [a.uuid for a in conductor.list_allocations(node="gpu")] == [allocation.uuid]
    conductor.delete_allocation("mine")
    freed = conductor.get_node("gpu")
    assert (freed.instance_uuid, freed.allocation_uuid) == (None, None)
    with pytest.raises(ResourceNotFound):
        conductor.get_allocation(allocation.uuid)


def test_a_request_no_node_meets_ends_in_error(conductor: Conductor) -> None:
    _available(conductor, "n1", resource_class="gold")
    maintained = _available(conductor, "n2", resource_class="gold")
    conductor.update_node(maintained.uuid, maintenance=True)
    none = conductor.create_allocation(resource_class="platinum")
    assert none.state == "error"
    assert none.node_uuid is None
    assert none.last_error == (
        f"Failed to process allocation {none.uuid}: no available nodes match the resource "
        "class platinum."
    )
    traits = conductor.create_allocation(resource_class="gold", traits=["CUSTOM_X"])
    assert traits.last_error is not None
    assert "no suitable nodes have the requested traits CUSTOM_X" in traits.last_error
    picked = conductor.create_allocation(resource_class="gold", candidate_nodes=["n2"])
    assert picked.last_error is not None
    assert "none of the requested nodes are available" in picked.last_error
    assert conductor.get_allocation(none.uuid).state == "error"
    assert conductor.get_node("n1").instance_uuid is None
    assert conductor.get_node("n2").instance_uuid is None


def test_candidates_and_owner_narrow_the_choice(conductor: Conductor) -> None:
    for i in range(4):
        _available(conductor, f"n{i}", resource_class="gold", owner="p1" if i == 3 else None)
    chosen = conductor.create_allocation(resource_class="gold", candidate_nodes=["n2", "n1"])
    assert chosen.node_uuid in {conductor.get_node(n).uuid for n in ("n1", "n2")}
    assert chosen.candidate_nodes == [conductor.get_node("n2").uuid, conductor.get_node("n1").uuid]
    owned = conductor.create_allocation(resource_class="gold", owner="p1")
    assert owned.node_uuid == conductor.get_node("n3").uuid
    with pytest.raises(NodeNotFound):
        conductor.create_allocation(resource_class="gold", candidate_nodes=["ghost"])


def test_bad_requests_are_refused(conductor: Conductor) -> None:
    with pytest.raises(InvalidParameterValue, match="resource_class field is mandatory"):
        conductor.create_allocation()
    with pytest.raises(InvalidParameterValue, match="invalid name"):
        conductor.create_allocation(resource_class="gold", name="white space")
    with pytest.raises(InvalidParameterValue, match="are not trait names"):
        conductor.create_allocation(resource_class="gold", traits=["lowercase"])
    conductor.create_allocation(resource_class="gold", name="taken")
    with pytest.raises(ResourceExists):
        conductor.create_allocation(resource_class="gold", name="taken")
    assert len(conductor.list_allocations()) == 1


def test_an_active_node_keeps_its_allocation(conductor: Conductor) -> None:
    _available(conductor, "n1", resource_class="gold")
    allocation = conductor.create_allocation(resource_class="gold")
    conductor.do_provisioning_action("n1", "deploy")
    assert conductor.get_node("n1").provision_state == states.ACTIVE
    with pytest.raises(InvalidState, match="because the node is active"):
        conductor.delete_allocation(allocation.uuid)
    conductor.update_node("n1", maintenance=True)
    conductor.delete_allocation(allocation.uuid)
    assert conductor.get_node("n1").instance_uuid is None


def test_backfill_records_an_allocation_for_a_deployed_node(conductor: Conductor) -> None:
    instance = "9f1c4c5e-5d3b-4a2e-9b6f-2d1c0a9e8b70"
    conductor.create_node(
        name="deployed", provision_state=states.ACTIVE, power_state=states.POWER_ON,
        resource_class="gold", instance_uuid=instance,
    )  # fmt: skip
    backfilled = conductor.create_allocation(node="deployed")
    assert (backfilled.uuid, backfilled.state, backfilled.resource_class) == (
        instance, "active", "gold",
    )  # fmt: skip
    assert conductor.get_node("deployed").allocation_uuid == instance
    _available(conductor, "idle", resource_class="gold")
    with pytest.raises(InvalidParameterValue, match='Node must be in the "active" state'):
        conductor.create_allocation(node="idle")
    failed = [a for a in conductor.list_allocations(state="error")]
    assert len(failed) == 1
    assert conductor.get_node("idle").allocation_uuid is None


def test_renaming_keeps_the_node(conductor: Conductor) -> None:
    _available(conductor, "n1", resource_class="gold")
    allocation = conductor.create_allocation(resource_class="gold", name="a")
    renamed = conductor.update_allocation("a", name="b", extra={"k": 1})
    assert (renamed.name, renamed.extra, renamed.node_uuid) == ("b", {"k": 1}, allocation.node_uuid)
    with pytest.raises(InvalidParameterValue, match="cannot be changed"):
        conductor.update_allocation("b", resource_class="silver")


# -- two conductors, one pool ------------------------------------------------------------

NODES = 12
REQUESTS = 30


def _race(url: str) -> tuple[list[Allocation], list[Node]]:
    """Two conductors (one store each, as two processes have) allocate from one pool, from
    eight threads at once, released together."""
    stores = [SQLStore(url), SQLStore(url)]
    try:
        conductors = [Conductor(store) for store in stores]
        for i in range(NODES):
            _available(conductors[0], f"pool-{i}", resource_class="race")
        start = threading.Barrier(8)

        def allocate(number: int) -> Allocation:
            if number < 8:
                start.wait()
            return conductors[number % 2].create_allocation(resource_class="race")

        with ThreadPoolExecutor(8) as pool:
            made = list(pool.map(allocate, range(REQUESTS)))
        return made, conductors[0].list_nodes()
    finally:
        for store in stores:
            store.close()


def test_two_conductors_never_give_a_node_twice(sql_url: str) -> None:
    made, nodes = _race(sql_url)
    active = [a for a in made if a.state == "active"]
    assert len(active) == NODES  # every node given, once each
    given = Counter(a.node_uuid for a in active)
    assert max(given.values()) == 1
    assert {a.node_uuid for a in active} == {n.uuid for n in nodes}
    by_node = {n.uuid: n for n in nodes}
    for allocation in active:
        node = by_node[allocation.node_uuid]  # type: ignore[index]
        assert node.instance_uuid == node.allocation_uuid == allocation.uuid
        assert node.reservation is None
    failed = [a for a in made if a.state == "error"]
    assert len(failed) == REQUESTS - NODES
    assert all(a.node_uuid is None and a.last_error for a in failed)
