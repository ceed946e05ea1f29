"""Conductor: the events listeners see, guards that veto, and secrets kept out of both.

The order and content of events and the guards' veto are those of the
embedding guide's "Listeners and the event order" and "Guards" sections
(docs/embedding.rst); secrets never appear in events, logs or errors, as
the driver author's guide's "Secrets" section (docs/driver-author.rst) says.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
import pytest
from helpers import (
    FAKE_HW,
    SECRET,
    TEST_HW,
    Recorder,
    dstep,
    make_conductor,
    new_node,
    step,
    unchanged,
    watched,
)

from ironic_fsm import Conductor, Node, states
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
    TransitionRejected,
)


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
    assert all(e.node_name is None for e in every)  # this node has no name
    assert all(e.timestamp is not None and e.timestamp.tzinfo is not None for e in every)


def test_events_name_the_node_as_it_was_named() -> None:
    """A listener says "dc-07 failed" without reading the store (events carry the name)."""
    recorder, conductor, node = watched(states.AVAILABLE)
    conductor.update_node(node.uuid, name="dc-07")
    conductor.do_provisioning_action(
        node.uuid, "deploy", deploy_steps=[dstep("deploy", "fail_deploy", 150)]
    )
    assert recorder.events
    assert {(e.node, e.node_name) for e in recorder.events} == {(node.uuid, "dc-07")}
    error = recorder.events[-1]
    assert f"{error.node_name} failed: {error.error}".startswith("dc-07 failed: ")


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
    # docs/driver-author.rst: secrets never appear in logs, events or error messages,
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
