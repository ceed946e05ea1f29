"""Conductor: failure states reached by real flows, and the way out of each (docs/operator.rst).

Each failure state is reached by running a flow that fails (not by import),
then every verb is tried on a fresh copy: exactly the verbs of
api_verb_matrix.tsv work; the others are refused with InvalidStateRequested
and change nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from helpers import (
    BAD_TEARDOWN_HW,
    PHASE_CASES,
    PHASE_IDS,
    TEST_HW,
    PhaseCase,
    Recorder,
    calls,
    dstep,
    load_verb_matrix,
    make_conductor,
    new_node,
    snapshot,
    step,
    verb_arguments,
)

from ironic_fsm import Conductor, states
from ironic_fsm.exceptions import InvalidStateRequested

VERBS, MATRIX = load_verb_matrix()


def _clean_failed(c: Conductor) -> str:
    node = new_node(c, states.MANAGEABLE)
    c.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "boom")])
    return node.uuid


def _deploy_failed(c: Conductor) -> str:
    node = new_node(c, states.AVAILABLE)
    c.do_provisioning_action(
        node.uuid, "deploy", deploy_steps=[dstep("deploy", "fail_deploy", 150)]
    )
    return node.uuid


def _error(c: Conductor) -> str:
    node = new_node(c, states.ACTIVE, driver=BAD_TEARDOWN_HW)
    c.do_provisioning_action(node.uuid, "undeploy")
    return node.uuid


def _service_failed(c: Conductor) -> str:
    node = new_node(c, states.ACTIVE)
    c.do_provisioning_action(node.uuid, "service", service_steps=[step("vendor", "boom_service")])
    return node.uuid


def _inspect_failed(c: Conductor) -> str:
    node = new_node(c, states.MANAGEABLE, driver_info={"fail_on": ["inspect"]})
    c.do_provisioning_action(node.uuid, "inspect")
    return node.uuid


def _adopt_failed(c: Conductor) -> str:
    node = new_node(c, states.MANAGEABLE, driver_info={"fail_on": ["adopt"]})
    c.do_provisioning_action(node.uuid, "adopt")
    return node.uuid


def _rescue_failed(c: Conductor) -> str:
    node = new_node(c, states.ACTIVE, driver_info={"fail_on": ["rescue"]})
    c.do_provisioning_action(node.uuid, "rescue", rescue_password="pw")
    return node.uuid


def _unrescue_failed(c: Conductor) -> str:
    node = new_node(c, states.ACTIVE, driver_info={"fail_on": ["unrescue"]})
    c.do_provisioning_action(node.uuid, "rescue", rescue_password="pw")
    c.do_provisioning_action(node.uuid, "unrescue")
    return node.uuid


REACH: dict[str, Callable[[Conductor], str]] = {
    states.CLEANFAIL: _clean_failed,
    states.DEPLOYFAIL: _deploy_failed,
    states.ERROR: _error,
    states.SERVICEFAIL: _service_failed,
    states.INSPECTFAIL: _inspect_failed,
    states.ADOPTFAIL: _adopt_failed,
    states.RESCUEFAIL: _rescue_failed,
    states.UNRESCUEFAIL: _unrescue_failed,
}


@pytest.mark.parametrize("state", sorted(REACH))
def test_flow_reaches_failure_state(state: str) -> None:
    conductor = make_conductor()
    uuid = REACH[state](conductor)
    node = conductor.get_node(uuid)
    assert node.provision_state == state
    assert node.last_error
    assert node.reservation is None


FAILURE_CASES = [(state, verb) for state in sorted(REACH) for verb in VERBS]


@pytest.mark.parametrize(
    ("state", "verb"), FAILURE_CASES, ids=[f"{s}-{v}" for s, v in FAILURE_CASES]
)
def test_only_matrix_verbs_leave_a_failure_state(state: str, verb: str) -> None:
    recorder = Recorder()
    conductor = make_conductor(listeners=[recorder])
    uuid = REACH[state](conductor)
    # The operator has looked at the node: maintenance (set by step
    # failures) is cleared so that it does not mask the state check.
    conductor.update_node(uuid, maintenance=False)
    before = snapshot(conductor.get_node(uuid))
    recorder.clear()
    target = MATRIX[state][verb]
    if target is None:
        with pytest.raises(InvalidStateRequested) as info:
            conductor.do_provisioning_action(uuid, verb, **verb_arguments(verb, "step_a"))
        assert verb in str(info.value)
        assert state in str(info.value)
        assert snapshot(conductor.get_node(uuid)) == before
        assert recorder.events == []
    else:
        conductor.do_provisioning_action(uuid, verb, **verb_arguments(verb, "step_a"))
        first = recorder.provision()[0]
        assert (first.previous_state, first.state) == (state, target)


# -- specific failure behaviour --------------------------------------------------------------------


def test_tear_down_failure_goes_to_error() -> None:
    conductor = make_conductor()
    node = new_node(
        conductor, states.ACTIVE, driver=BAD_TEARDOWN_HW, instance_info={"image_source": "img"}
    )
    conductor.do_provisioning_action(node.uuid, "undeploy")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.ERROR
    assert node.target_provision_state is None
    assert node.last_error.startswith("Failed to tear down")
    assert "disk would not wipe" in node.last_error


_WayOut = tuple[Callable[[Conductor], str], dict[str, object], str, str, str | None]

#: The way out of a failure state: (reach it, fields the operator changes first, verb,
#: landing state, how last_error opens afterwards or None for cleared).
WAYS_OUT: dict[str, _WayOut] = {
    "error-rebuild": (_error, {}, "rebuild", states.ACTIVE, None),
    "error-undeploy-retries-tear-down": (
        _error, {"driver": TEST_HW}, "undeploy", states.AVAILABLE, None,
    ),
    "service-failed-abort": (
        _service_failed, {"maintenance": False}, "abort", states.ACTIVE,
        "By request, the service operation was aborted",
    ),
    "inspect-failed-manage": (
        _inspect_failed, {}, "manage", states.MANAGEABLE, "Failed to inspect hardware of node",
    ),
    "deploy-failed-undeploy": (_deploy_failed, {}, "undeploy", states.AVAILABLE, None),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(WAYS_OUT))
def test_way_out_of_a_failure_state(case: str) -> None:
    reach, changes, verb, landing, error = WAYS_OUT[case]
    conductor = make_conductor()
    uuid = reach(conductor)
    if changes:
        conductor.update_node(uuid, **changes)
    conductor.do_provisioning_action(uuid, verb)
    node = conductor.get_node(uuid)
    assert node.provision_state == landing
    assert node.target_provision_state is None
    if error is None:
        assert node.last_error is None
    else:
        assert node.last_error.startswith(error)
    if verb == "rebuild":
        assert calls(node) == ["deploy"]


def test_service_failed_abort_refused_in_maintenance() -> None:
    from ironic_fsm.exceptions import InvalidState

    conductor = make_conductor()
    uuid = _service_failed(conductor)
    before = snapshot(conductor.get_node(uuid))
    assert before["maintenance"] is True
    with pytest.raises(InvalidState) as info:
        conductor.do_provisioning_action(uuid, "abort")
    assert uuid in str(info.value)
    assert snapshot(conductor.get_node(uuid)) == before


def test_inspect_failed_keeps_its_target_and_says_why() -> None:
    conductor = make_conductor()
    uuid = _inspect_failed(conductor)
    node = conductor.get_node(uuid)
    assert node.target_provision_state == states.MANAGEABLE
    assert "no inventory" in node.last_error


def test_adopt_failed_message() -> None:
    conductor = make_conductor()
    uuid = _adopt_failed(conductor)
    node = conductor.get_node(uuid)
    assert node.target_provision_state == states.ACTIVE
    assert node.last_error.startswith(f"Error while attempting to adopt node {uuid}")


# -- a failing step, in each phase --------------------------------------------------------------

#: How each phase's failed-step message opens ({uuid} is the node).
_STEP_FAILURE_OPENING = {
    "clean": "Node {uuid} failed clean step vendor.boom",
    "deploy": "Deploy step deploy.fail_deploy failed",
    "service": "Node {uuid} failed service step vendor.boom_service",
}


@pytest.mark.parametrize("phase", PHASE_CASES, ids=PHASE_IDS)
def test_step_failure(phase: PhaseCase) -> None:
    conductor = make_conductor()
    node = phase.new_node(conductor, power_state=states.POWER_ON)
    phase.run(conductor, node.uuid, *phase.plain("step_a"), phase.boom_step, *phase.plain("step_b"))
    node = conductor.get_node(node.uuid)
    assert calls(node) == [*phase.plain("step_a"), phase.boom_step]
    assert node.provision_state == phase.fail
    assert node.target_provision_state == phase.target
    assert node.last_error.startswith(_STEP_FAILURE_OPENING[phase.name].format(uuid=node.uuid))
    assert phase.boom_text in node.last_error
    # Cleaning and servicing failures are hardware faults; a deploy failure is not.
    assert node.maintenance is (phase.fault is not None)
    assert node.fault == phase.fault
    if phase.fault is not None:
        assert node.uuid in node.maintenance_reason
        assert f"{phase.step_iface}.{phase.boom_step}" in node.maintenance_reason
    # The deploy-steps spec: deploy_step keeps showing the step that failed;
    # the others clear theirs. (Later steps, and the core deploy step, did not run.)
    shown = getattr(node, phase.step_field)
    if phase.keeps_step:
        assert (shown["interface"], shown["step"]) == (phase.step_iface, phase.boom_step)
    else:
        assert not shown
    # poweroff_in_cleanfail / poweroff_in_servicefail are False by default.
    assert node.power_state == states.POWER_ON
