"""Conductor: creating, finding, listing, updating and deleting nodes, and who holds them.

The conductor's node calls as the user guide's "The conductor" section
(docs/userguide.rst) lists them; a node reserved by another holder raises
``NodeLocked``, retryable, as the errors page (docs/errors.rst) says.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import (
    FAKE_HW,
    make_conductor,
    new_node,
    step,
    unchanged,
)

from ironic_fsm import Conductor, Config, Node, states
from ironic_fsm.exceptions import (
    ConcurrentUpdate,
    DriverNotFound,
    InvalidParameterValue,
    InvalidStateRequested,
    NodeLocked,
    NodeNotFound,
)
from ironic_fsm.stores import MemoryStore

OTHER_HOLDER = "other-host:1:x"


def test_list_nodes_by_retired() -> None:
    conductor = make_conductor()
    retired = new_node(conductor, states.MANAGEABLE, name="old")
    new_node(conductor, states.MANAGEABLE, name="new")
    new_node(conductor, states.AVAILABLE, name="avail")
    conductor.update_node(retired.uuid, retired=True)
    assert [n.uuid for n in conductor.list_nodes(retired=True)] == [retired.uuid]
    assert sorted(n.name for n in conductor.list_nodes(retired=False)) == ["avail", "new"]


def test_list_nodes_filters() -> None:
    conductor = make_conductor()
    a = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    b = new_node(conductor, states.AVAILABLE, maintenance=True)
    assert [n.uuid for n in conductor.list_nodes(provision_state=states.MANAGEABLE)] == [a.uuid]
    assert [n.uuid for n in conductor.list_nodes(maintenance=True)] == [b.uuid]
    assert [n.uuid for n in conductor.list_nodes(driver=FAKE_HW)] == [a.uuid]
    assert len(conductor.list_nodes()) == 2


def test_conductor_defaults_to_a_memory_store() -> None:
    conductor = Conductor()
    assert isinstance(conductor.store, MemoryStore)
    node = conductor.create_node(name="n0")
    assert node.provision_state == states.ENROLL
    assert node.driver == FAKE_HW
    assert node.created_at is not None
    assert node.created_at.tzinfo is not None


def test_create_node_unknown_field() -> None:
    conductor = make_conductor()
    with pytest.raises(InvalidParameterValue) as info:
        conductor.create_node(driver=FAKE_HW, colour="blue")
    assert "colour" in str(info.value)
    assert conductor.list_nodes() == []


def test_create_node_unknown_driver() -> None:
    conductor = make_conductor()
    with pytest.raises(DriverNotFound) as info:
        conductor.create_node(driver="no-such-driver")
    assert "no-such-driver" in str(info.value)
    assert conductor.list_nodes() == []


def test_create_node_unknown_state() -> None:
    conductor = make_conductor()
    with pytest.raises(InvalidParameterValue):
        conductor.create_node(provision_state="sleeping")
    assert conductor.list_nodes() == []


def test_get_node_by_uuid_and_name() -> None:
    conductor = make_conductor()
    node = conductor.create_node(name="rack1-node7", driver=FAKE_HW, properties={"cpus": 8})
    by_name = conductor.get_node("rack1-node7")
    by_uuid = conductor.get_node(node.uuid)
    assert by_name.uuid == by_uuid.uuid == node.uuid
    assert by_name.properties == {"cpus": 8}
    with pytest.raises(NodeNotFound):
        conductor.get_node("nope")


def test_verbs_work_by_name() -> None:
    conductor = make_conductor()
    conductor.create_node(name="rack1-node7", driver=FAKE_HW)
    conductor.do_provisioning_action("rack1-node7", "manage")
    assert conductor.get_node("rack1-node7").provision_state == states.MANAGEABLE


def test_duplicate_name_refused() -> None:
    conductor = make_conductor()
    conductor.create_node(name="twin", driver=FAKE_HW)
    with pytest.raises(InvalidParameterValue):
        conductor.create_node(name="twin", driver=FAKE_HW)
    assert len(conductor.list_nodes()) == 1


@pytest.mark.parametrize(
    "state", [states.MANAGEABLE, states.ENROLL, states.AVAILABLE, states.ADOPTFAIL]
)
def test_delete_node_allowed(state: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state, name="gone")
    conductor.delete_node(node.uuid)
    with pytest.raises(NodeNotFound):
        conductor.get_node(node.uuid)
    with pytest.raises(NodeNotFound):
        conductor.get_node("gone")
    assert conductor.list_nodes() == []


@pytest.mark.parametrize(
    "state", [states.ACTIVE, states.CLEANING, states.DEPLOYFAIL, states.CLEANFAIL]
)
def test_delete_node_refused(state: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidStateRequested) as info:
        conductor.delete_node(node.uuid)
    assert node.uuid in str(info.value)
    assert state in str(info.value)
    after = conductor.get_node(node.uuid)
    assert after.reservation is None


def test_delete_available_refused_when_configured() -> None:
    conductor = make_conductor(config=Config(allow_deleting_available_nodes=False))
    node = new_node(conductor, states.AVAILABLE)
    with pytest.raises(InvalidStateRequested):
        conductor.delete_node(node.uuid)
    assert conductor.get_node(node.uuid).provision_state == states.AVAILABLE


def _locked(conductor: Conductor, state: str = states.MANAGEABLE) -> Node:
    node = new_node(conductor, state, driver=FAKE_HW)
    conductor.store.reserve(node.uuid, OTHER_HOLDER)
    return conductor.get_node(node.uuid)


@pytest.mark.parametrize(
    ("state", "call"),
    [
        (states.VERIFYING, lambda c, u: c.do_provisioning_action(u, "manage")),
        (states.DEPLOYING, lambda c, u: c.update_node(u, protected=True)),
        (states.CLEANING, lambda c, u: c.set_power_state(u, states.POWER_OFF)),
        (states.VERIFYING, lambda c, u: c.delete_node(u)),
        (states.CLEANING, lambda c, u: c.continue_node_clean(u)),
        (states.DEPLOYING, lambda c, u: c.continue_node_deploy(u)),
        (states.SERVICING, lambda c, u: c.continue_node_service(u)),
        (states.INSPECTING, lambda c, u: c.continue_node_inspect(u)),
        (states.RESCUING, lambda c, u: c.continue_node_rescue(u)),
    ],
    ids=["manage", "update", "power", "delete", "continue-clean", "continue-deploy",
         "continue-service", "continue-inspect", "continue-rescue"],
)  # fmt: skip
def test_a_request_on_a_node_busy_in_a_passing_state_is_locked_not_refused(
    state: str, call: Any
) -> None:
    # Another conductor holds the node mid-flow and has saved a passing state
    # (verifying, say): the state refuses the request now, but the holder is
    # moving the node on. The request is not wrong, it is early: the caller
    # hears "busy, retry" (fleets retry NodeLocked) and the checks decide once
    # the node is free.
    conductor = make_conductor()
    node = _locked(conductor, state)
    with unchanged(conductor, node.uuid), pytest.raises(NodeLocked) as info:
        call(conductor, node.uuid)
    assert OTHER_HOLDER in str(info.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda c, u: c.do_provisioning_action(u, "provide"),
        lambda c, u: c.update_node(u, extra={"rack": 1}),
        lambda c, u: c.set_power_state(u, states.POWER_ON),
        lambda c, u: c.delete_node(u),
        lambda c, u: c.do_provisioning_action(
            u, "clean", clean_steps=[step("vendor", "log_passthrough")]
        ),
    ],
    ids=["provide", "update", "power", "delete", "clean"],
)
def test_reserved_node_raises_node_locked(call: Any) -> None:
    conductor = make_conductor()
    node = _locked(conductor)
    with unchanged(conductor, node.uuid), pytest.raises(NodeLocked) as info:
        call(conductor, node.uuid)
    assert info.value.retryable is True
    assert OTHER_HOLDER in str(info.value)
    assert node.uuid in str(info.value)
    assert conductor.get_node(node.uuid).reservation == OTHER_HOLDER


def test_node_locked_is_retryable_after_release() -> None:
    conductor = make_conductor()
    node = _locked(conductor)
    with pytest.raises(NodeLocked):
        conductor.do_provisioning_action(node.uuid, "provide")
    conductor.store.release(node.uuid, OTHER_HOLDER)
    conductor.do_provisioning_action(node.uuid, "provide")
    assert conductor.get_node(node.uuid).provision_state == states.AVAILABLE


def test_update_node_refuses_lifecycle_fields() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    with unchanged(conductor, node.uuid):
        for field, value in [
            ("provision_state", states.ACTIVE),
            ("target_provision_state", states.ACTIVE),
            ("reservation", "me"),
            ("version", 99),
        ]:
            with pytest.raises(InvalidParameterValue):
                conductor.update_node(node.uuid, **{field: value})
        with pytest.raises(InvalidParameterValue):
            conductor.update_node(node.uuid, colour="blue")


def test_update_node_changes_user_fields() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, name="a")
    conductor.update_node(node.uuid, name="b", extra={"rack": 3}, traits=["CUSTOM_X"])
    node = conductor.get_node("b")
    assert node.extra == {"rack": 3}
    assert node.traits == ["CUSTOM_X"]
    assert node.reservation is None


def test_operations_release_the_reservation() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    conductor.do_provisioning_action(node.uuid, "provide")
    conductor.update_node(node.uuid, extra={"a": 1})
    conductor.set_power_state(node.uuid, states.POWER_ON)
    with pytest.raises(InvalidStateRequested):  # provide on an available node
        conductor.do_provisioning_action(node.uuid, "provide")
    assert conductor.get_node(node.uuid).reservation is None


def test_transitions_stamp_provision_updated_at_from_the_clock() -> None:
    from helpers import Clock

    clock = Clock()
    conductor = make_conductor(clock=clock)
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    assert node.created_at == clock.at(0)
    clock.advance(90)
    conductor.do_provisioning_action(node.uuid, "provide")
    node = conductor.get_node(node.uuid)
    assert node.provision_updated_at == clock.at(90)
    assert node.provision_updated_at.tzinfo is not None
    assert node.updated_at == clock.at(90)


def test_update_with_an_expected_version_is_a_compare_and_set() -> None:
    conductor = make_conductor()
    node = conductor.create_node(name="cas", driver="fake-hardware", extra={"a": 1})
    read = conductor.get_node(node.uuid)
    conductor.update_node(node.uuid, extra={"a": 1, "b": 2})  # another writer, meanwhile
    with unchanged(conductor, node.uuid), pytest.raises(ConcurrentUpdate, match="changed since"):
        conductor.update_node(node.uuid, expected_version=read.version, extra={"a": 1, "c": 3})
    fresh = conductor.get_node(node.uuid)
    done = conductor.update_node(node.uuid, expected_version=fresh.version, extra={"c": 3})
    assert done.extra == {"c": 3}
    assert done.reservation is None
