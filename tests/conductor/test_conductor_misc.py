"""Conductor: retirement, power, maintenance, protection, events and guards, node CRUD, quickstart.

DESIGN §3 (secrets), §6 (Conductor contract), §8 (events), §9 (errors);
reference §11 (retirement), §1.6 (maintenance).
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

import attrs
import pytest
from helpers import (
    FAKE_HW,
    SECRET,
    TEST_HW,
    ManualExecutor,
    Recorder,
    calls,
    dstep,
    make_conductor,
    new_node,
    step,
    unchanged,
    watched,
)

from ironic_fsm import LIFECYCLE, Conductor, Config, Node, states
from ironic_fsm.events import (
    PROVISION_END,
    PROVISION_ERROR,
    PROVISION_START,
    STEP_END,
    STEP_FAIL,
    STEP_START,
    Event,
)
from ironic_fsm.exceptions import (
    DriverNotFound,
    InvalidParameterValue,
    InvalidState,
    InvalidStateRequested,
    NodeInMaintenance,
    NodeIsRetired,
    NodeLocked,
    NodeNotFound,
    TransitionRejected,
)
from ironic_fsm.stores import MemoryStore

OTHER_HOLDER = "other-host:1:x"

# -- retirement ------------------------------------------------------------------------------------


def test_retired_refused_in_available() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidState) as info:
        conductor.update_node(node.uuid, retired=True, retired_reason="end of life")
    assert node.uuid in str(info.value)
    assert "available" in str(info.value)


@pytest.mark.parametrize("state", sorted(set(LIFECYCLE.states) - {states.AVAILABLE}))
def test_retired_accepted_in_other_states(state: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state)
    updated = conductor.update_node(node.uuid, retired=True, retired_reason="end of life")
    node = conductor.get_node(node.uuid)
    assert updated.retired is node.retired is True
    assert node.retired_reason == "end of life"
    assert node.provision_state == state


def test_retired_reason_without_retired_is_refused() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue) as info:
        conductor.update_node(node.uuid, retired_reason="end of life")
    assert "retired" in str(info.value)


def test_retired_node_cannot_provide() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    conductor.update_node(node.uuid, retired=True)
    with unchanged(conductor, node.uuid), pytest.raises(NodeIsRetired) as info:
        conductor.do_provisioning_action(node.uuid, "provide")
    assert node.uuid in str(info.value)
    after = conductor.get_node(node.uuid)
    assert "fake_log_passthrough" not in after.driver_internal_info


def test_retired_node_undeploy_cleans_into_manageable() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.ACTIVE, driver=FAKE_HW)
    conductor.update_node(node.uuid, retired=True, retired_reason="decommission")
    conductor.do_provisioning_action(node.uuid, "undeploy")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.target_provision_state is None
    assert node.driver_internal_info["fake_log_passthrough"] == 1
    assert node.retired is True


def test_retired_node_manual_clean_ends_in_manageable() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, retired=True)
    conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "step_a")])
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert calls(node) == ["step_a"]


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


# -- power -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("state", [states.CLEANING, states.CLEANWAIT, states.DEPLOYING])
def test_power_refused_while_busy(state: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state, power_state=states.POWER_OFF)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidStateRequested) as info:
        conductor.set_power_state(node.uuid, states.POWER_ON)
    assert node.uuid in str(info.value)
    assert state in str(info.value)


@pytest.mark.parametrize(
    "state",
    [
        states.CLEANFAIL,
        states.ENROLL,
        states.MANAGEABLE,
        states.AVAILABLE,
        states.ACTIVE,
        states.ERROR,
    ],
)
def test_power_allowed_in_stable_and_clean_failed(state: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state, power_state=states.POWER_OFF)
    conductor.set_power_state(node.uuid, states.POWER_ON)
    node = conductor.get_node(node.uuid)
    assert node.power_state == states.POWER_ON
    assert node.target_power_state is None
    assert node.provision_state == state
    conductor.set_power_state(node.uuid, states.POWER_OFF)
    assert conductor.get_node(node.uuid).power_state == states.POWER_OFF
    conductor.set_power_state(node.uuid, states.REBOOT)
    assert conductor.get_node(node.uuid).power_state == states.POWER_ON


@pytest.mark.parametrize("bad", ["power sideways", "on", "", "POWER ON"])
def test_unknown_power_state_is_rejected(bad: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, power_state=states.POWER_OFF)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue):
        conductor.set_power_state(node.uuid, bad)


# -- maintenance -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "verb", "kwargs"),
    [
        (states.AVAILABLE, "deploy", {}),
        (states.AVAILABLE, "active", {}),
        (states.ACTIVE, "rebuild", {}),
        (states.MANAGEABLE, "clean", {"clean_steps": [step("vendor", "step_a")]}),
        (states.ACTIVE, "service", {"service_steps": [step("vendor", "step_a")]}),
        (states.ACTIVE, "rescue", {"rescue_password": "pw"}),
    ],
    ids=["deploy", "active", "rebuild", "clean", "service", "rescue"],
)
def test_maintenance_refuses_provisioning(state: str, verb: str, kwargs: dict[str, Any]) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state, maintenance=True, maintenance_reason="broken fan")
    with unchanged(conductor, node.uuid), pytest.raises(NodeInMaintenance) as info:
        conductor.do_provisioning_action(node.uuid, verb, **kwargs)
    assert node.uuid in str(info.value)
    after = conductor.get_node(node.uuid)
    assert calls(after) == []


def test_provide_allowed_in_maintenance_by_default() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW, maintenance=True)
    conductor.do_provisioning_action(node.uuid, "provide")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    assert node.maintenance is True


def test_provide_refused_in_maintenance_when_configured() -> None:
    conductor = make_conductor(config=Config(allow_provisioning_in_maintenance=False))
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW, maintenance=True)
    with unchanged(conductor, node.uuid), pytest.raises(NodeInMaintenance):
        conductor.do_provisioning_action(node.uuid, "provide")


def test_unsetting_maintenance_clears_reason_and_fault() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "boom")])
    conductor.update_node(node.uuid, maintenance=False)
    node = conductor.get_node(node.uuid)
    assert node.maintenance is False
    assert node.maintenance_reason is None
    assert node.fault is None


# -- events ----------------------------------------------------------------------------------------


def _provision_view(events: list[Event]) -> list[tuple[Any, ...]]:
    return [
        (e.name, e.previous_state, e.event, e.state, e.target)
        for e in events
        if e.name.startswith("baremetal.")
    ]


def test_events_for_manage_provide_deploy() -> None:
    recorder = Recorder()
    conductor = make_conductor(listeners=[recorder])
    node = conductor.create_node(driver=FAKE_HW)
    assert recorder.events == []  # creating a node is not a transition

    # verb: the events' names; the state before, while the verb works, after
    plain, stepping = (
        [PROVISION_START, PROVISION_END],
        [PROVISION_START, STEP_START, STEP_END, PROVISION_END],
    )
    walk = {
        "manage": (plain, states.ENROLL, states.VERIFYING, states.MANAGEABLE),
        "provide": (stepping, states.MANAGEABLE, states.CLEANING, states.AVAILABLE),
        "deploy": (stepping, states.AVAILABLE, states.DEPLOYING, states.ACTIVE),
    }
    seen: dict[str, list[Event]] = {}
    for verb, (names, before, working, after) in walk.items():
        recorder.clear()
        conductor.do_provisioning_action(node.uuid, verb)
        assert recorder.names() == names, verb
        assert _provision_view(recorder.events) == [
            (PROVISION_START, before, verb, working, after),
            (PROVISION_END, working, "done", after, None),
        ]
        seen[verb] = list(recorder.events)
    for event in seen["provide"][1:3]:
        assert event.step == {"interface": "vendor", "step": "log_passthrough", "args": {}}
        assert event.state == states.CLEANING
        assert event.error is None
    assert seen["deploy"][1].step["step"] == "deploy"
    every = [event for events in seen.values() for event in events]
    assert all(e.node == node.uuid for e in every)
    assert all(e.timestamp is not None and e.timestamp.tzinfo is not None for e in every)


def test_events_for_a_failing_deploy_step() -> None:
    recorder, conductor, node = watched(states.AVAILABLE)
    conductor.do_provisioning_action(
        node.uuid, "deploy", deploy_steps=[dstep("deploy", "fail_deploy", 150)]
    )
    assert recorder.names() == [PROVISION_START, STEP_START, STEP_FAIL, PROVISION_ERROR]
    fail, error = recorder.events[2], recorder.events[3]
    assert fail.step["step"] == "fail_deploy"
    assert "image checksum mismatch" in fail.error
    assert (error.previous_state, error.event, error.state) == (
        states.DEPLOYING,
        "fail",
        states.DEPLOYFAIL,
    )
    assert error.error == conductor.get_node(node.uuid).last_error


def test_events_for_manual_clean_steps_in_order() -> None:
    recorder, conductor, node = watched(states.MANAGEABLE)
    conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[step("vendor", "step_b"), step("vendor", "step_a")]
    )
    steps = [(e.name, e.step["step"]) for e in recorder.events if e.step is not None]
    assert steps == [
        (STEP_START, "step_b"),
        (STEP_END, "step_b"),
        (STEP_START, "step_a"),
        (STEP_END, "step_a"),
    ]
    assert recorder.names()[0] == PROVISION_START
    assert recorder.names()[-1] == PROVISION_END
    assert recorder.events[0].target == states.MANAGEABLE


def test_one_provision_event_per_transition_emitted_after_save() -> None:
    # events.py: "Each transition produces exactly one provision_set event,
    # emitted after the new state is saved".
    seen: list[tuple[str, str, str]] = []
    conductor: Conductor

    def listener(event: Event) -> None:
        if event.name.startswith("baremetal."):
            stored = conductor.get_node(event.node)
            seen.append((event.state, stored.provision_state, event.event or ""))

    conductor = make_conductor(listeners=[listener])
    node = conductor.create_node(driver=FAKE_HW)
    for verb in ("manage", "provide", "deploy", "undeploy"):
        conductor.do_provisioning_action(node.uuid, verb)
    assert [event for _, _, event in seen] == [
        "manage", "done",  # enroll -> verifying -> manageable
        "provide", "done",  # -> cleaning -> available
        "deploy", "done",  # -> deploying -> active
        "delete", "clean", "done",  # -> deleting -> cleaning -> available
    ]  # fmt: skip
    mismatches = [(ev, state, stored) for state, stored, ev in seen if state != stored]
    assert mismatches == [], "events emitted before their state was saved"


def test_step_events_emitted_after_the_step_is_saved() -> None:
    seen: list[tuple[str, str, Any]] = []
    conductor: Conductor

    def listener(event: Event) -> None:
        if event.step is not None:
            stored = conductor.get_node(event.node)
            current = stored.clean_step or {}
            seen.append((event.name, event.step["step"], current.get("step")))

    conductor = make_conductor(listeners=[listener])
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[step("vendor", "step_a"), step("vendor", "step_b")]
    )
    # At step.start the store already records the step as the current one.
    starts = [(name, ev, stored) for name, ev, stored in seen if name == STEP_START]
    assert starts == [(STEP_START, "step_a", "step_a"), (STEP_START, "step_b", "step_b")]


def test_async_step_events_on_continuation() -> None:
    recorder, conductor, node = watched(states.MANAGEABLE)
    conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[step("vendor", "async_clean"), step("vendor", "step_a")]
    )
    assert recorder.names() == [PROVISION_START, STEP_START, PROVISION_START]
    assert recorder.events[-1].state == states.CLEANWAIT
    recorder.clear()
    conductor.continue_node_clean(node.uuid)
    view = [(e.name, e.step["step"] if e.step else e.state) for e in recorder.events]
    # Each step starts once and ends once, the async one when it is continued.
    assert [v for v in view if v[0].startswith("step.")] == [
        (STEP_END, "async_clean"),
        (STEP_START, "step_a"),
        (STEP_END, "step_a"),
    ]
    assert view[-1] == (PROVISION_END, states.MANAGEABLE)


#: Flows that fail: (state, driver, verb, the failing transition, how the error opens).
FAILING_FLOWS = {
    "verification": (states.ENROLL, "test-bad-power", "manage",
                     (states.VERIFYING, "fail", states.ENROLL),
                     "Failed to validate power driver interface"),
    "tear-down": (states.ACTIVE, "test-bad-teardown", "undeploy",
                  (states.DELETING, "fail", states.ERROR), "Failed to tear down"),
}  # fmt: skip


@pytest.mark.parametrize("flow", sorted(FAILING_FLOWS))
def test_a_failed_flow_is_an_error_event(flow: str) -> None:
    # Ironic emits provision_set.error for every 'fail' event; the node's
    # last_error travels with it so a listener knows why.
    state, driver, verb, transition, opening = FAILING_FLOWS[flow]
    recorder, conductor, node = watched(state, driver=driver)
    conductor.do_provisioning_action(node.uuid, verb)
    last = recorder.provision()[-1]
    assert (last.previous_state, last.event, last.state) == transition
    assert last.name == PROVISION_ERROR
    assert last.error == conductor.get_node(node.uuid).last_error
    assert last.error.startswith(opening)


def test_events_are_immutable() -> None:
    recorder, conductor, node = watched(states.MANAGEABLE, driver=FAKE_HW)
    conductor.do_provisioning_action(node.uuid, "provide")
    assert recorder.events
    for event in recorder.events:
        with pytest.raises(AttributeError):
            event.state = "hacked"  # type: ignore[misc]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            event.name = "hacked"  # type: ignore[misc]


def test_a_failing_listener_does_not_stop_the_flow() -> None:
    def broken(event: Event) -> None:
        raise RuntimeError("listener bug")

    recorder = Recorder()
    conductor = make_conductor(listeners=[broken, recorder])
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    conductor.do_provisioning_action(node.uuid, "provide")
    assert conductor.get_node(node.uuid).provision_state == states.AVAILABLE
    assert recorder.names()[-1] == PROVISION_END


def test_add_listener() -> None:
    recorder = Recorder()
    conductor = make_conductor()
    conductor.add_listener(recorder)
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    conductor.do_provisioning_action(node.uuid, "provide")
    assert recorder.names()[0] == PROVISION_START


def test_secrets_never_leak(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    recorder = Recorder()
    conductor = make_conductor(listeners=[recorder])
    node = conductor.create_node(
        driver=TEST_HW,
        driver_info={"ipmi_address": "10.0.0.9", "ipmi_password": SECRET, "auth_token": SECRET},
    )
    conductor.do_provisioning_action(node.uuid, "manage")
    conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[step("vendor", "secret_boom", bmc_password=SECRET)]
    )
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANFAIL
    assert node.driver_info["ipmi_password"] == SECRET  # kept, only hidden
    assert SECRET not in repr(node)
    assert SECRET not in str(node)
    assert SECRET not in (node.last_error or "")
    assert SECRET not in (node.maintenance_reason or "")
    assert SECRET not in repr(node.to_dict(mask=True))
    fail = [e for e in recorder.events if e.name == STEP_FAIL]
    assert fail
    assert fail[0].step["args"]["bmc_password"] != SECRET
    for event in recorder.events:
        assert SECRET not in repr(event)
    assert SECRET not in caplog.text


def test_secret_quoted_by_a_failing_step_is_not_repeated(caplog: pytest.LogCaptureFixture) -> None:
    # DESIGN §3: secrets never appear in logs, events or error messages,
    # even when a careless driver quotes one in its exception.
    caplog.set_level(logging.DEBUG)
    recorder = Recorder()
    conductor = make_conductor(listeners=[recorder])
    node = new_node(
        conductor,
        states.MANAGEABLE,
        driver_info={"ipmi_address": "10.0.0.9", "ipmi_password": SECRET},
    )
    conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "leaky")])
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANFAIL
    assert "vendor.leaky" in node.last_error
    assert "refused" in node.last_error
    assert SECRET not in node.last_error
    assert SECRET not in (node.maintenance_reason or "")
    for event in recorder.events:
        assert SECRET not in repr(event)
    assert SECRET not in caplog.text


def test_guard_veto_leaves_node_unchanged() -> None:
    asked: list[tuple[str, str, str, str]] = []

    def freeze(node: Node, verb: str, event: str, new_state: str) -> str | None:
        asked.append((node.uuid, verb, event, new_state))
        return "change freeze until Monday" if verb == "provide" else None

    recorder = Recorder()
    conductor = make_conductor(listeners=[recorder], guards=[freeze])
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    with unchanged(conductor, node.uuid), pytest.raises(TransitionRejected) as info:
        conductor.do_provisioning_action(node.uuid, "provide")
    assert "change freeze until Monday" in str(info.value)
    assert info.value.reason == "change freeze until Monday"
    assert node.uuid in str(info.value)
    after = conductor.get_node(node.uuid)
    assert after.reservation is None
    assert recorder.events == []
    assert asked == [(node.uuid, "provide", "provide", states.CLEANING)]

    # Other verbs pass the guard.
    conductor.do_provisioning_action(node.uuid, "inspect")
    assert conductor.get_node(node.uuid).provision_state == states.MANAGEABLE
    assert asked[-1] == (node.uuid, "inspect", "inspect", states.INSPECTING)


def test_add_guard() -> None:
    conductor = make_conductor()
    conductor.add_guard(lambda node, verb, event, new_state: "no deploys on Fridays")
    node = new_node(conductor, states.AVAILABLE, driver=FAKE_HW)
    with (
        unchanged(conductor, node.uuid),
        pytest.raises(TransitionRejected, match="no deploys on Fridays"),
    ):
        conductor.do_provisioning_action(node.uuid, "deploy")


# -- node CRUD and locking -------------------------------------------------------------------------


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


# -- examples/quickstart.py ------------------------------------------------------------------------


def test_quickstart_main_ends_in_available(capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(__file__).parents[2] / "examples" / "quickstart.py"
    spec = importlib.util.spec_from_file_location("quickstart_example", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    node = module.main()
    assert isinstance(node, Node)
    assert node.provision_state == states.AVAILABLE
    assert node.target_provision_state is None
    assert node.last_error is None
    out = capsys.readouterr().out
    assert "vendor.log_passthrough" in out
    assert "deploy.deploy" in out


# -- executor and timestamps ---------------------------------------------------------------------


def test_executor_runs_the_flow_in_the_background() -> None:
    executor = ManualExecutor()
    conductor = Conductor(store=MemoryStore(), executor=executor)
    node = conductor.create_node(driver=FAKE_HW, provision_state=states.MANAGEABLE)
    returned = conductor.do_provisioning_action(node.uuid, "provide")
    # The first transition happened in the caller and is saved; the rest waits.
    assert returned.provision_state == states.CLEANING
    stored = conductor.get_node(node.uuid)
    assert stored.provision_state == states.CLEANING
    assert stored.target_provision_state == states.AVAILABLE
    assert "fake_log_passthrough" not in stored.driver_internal_info
    assert executor.jobs
    executor.run_all()
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    assert node.target_provision_state is None
    assert node.reservation is None
    assert node.driver_internal_info["fake_log_passthrough"] == 1


def test_node_busy_in_the_background_is_locked_for_the_same_conductor() -> None:
    # DESIGN §6: a busy node raises NodeLocked. The worker holds the node's
    # reservation until it finishes; another request, even from the same
    # conductor, must not slip in (Ironic's reserve_node refuses any
    # existing reservation, its own host's included).
    executor = ManualExecutor()
    conductor = Conductor(store=MemoryStore(), executor=executor)
    node = conductor.create_node(driver=FAKE_HW, provision_state=states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "provide")
    stored = conductor.get_node(node.uuid)
    assert stored.reservation is not None
    with pytest.raises(NodeLocked) as info:
        conductor.do_provisioning_action(node.uuid, "manage")  # cleaning accepts 'manage'
    assert info.value.retryable is True
    with pytest.raises(NodeLocked):
        conductor.update_node(node.uuid, extra={"x": 1})
    assert conductor.get_node(node.uuid).provision_state == states.CLEANING
    executor.run_all()
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    assert node.driver_internal_info["fake_log_passthrough"] == 1
    assert node.reservation is None


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


@pytest.mark.parametrize(
    ("state", "verb", "kwargs", "end"),
    [
        (states.AVAILABLE, "deploy", {}, states.ACTIVE),
        (states.ACTIVE, "rescue", {"rescue_password": "pw"}, states.RESCUE),
        (states.MANAGEABLE, "inspect", {}, states.MANAGEABLE),
        (states.ACTIVE, "service", {"service_steps": [step("vendor", "step_a")]}, states.ACTIVE),
    ],
    ids=["deploy", "rescue", "inspect", "service"],
)
def test_retirement_blocks_nothing_else(
    state: str, verb: str, kwargs: dict[str, Any], end: str
) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state, retired=True, retired_reason="eol")
    conductor.do_provisioning_action(node.uuid, verb, **kwargs)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == end
    assert node.last_error is None
