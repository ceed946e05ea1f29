"""Conductor: asynchronous steps, continuation, abort, hold/unhold, wait and timeouts.

Explicit flow targets survive wait/hold/unhold/resume/abort/fail (docs/states.rst,
"Target bookkeeping"); the reserved steps hold and wait are honoured (docs/steps.rst);
``continue_node_*``, abort and ``check_timeouts`` as docs/operator.rst describes them.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import (
    FAKE_HW,
    PHASE_CASES,
    PHASE_IDS,
    SERVICE_CASE,
    Clock,
    PhaseCase,
    StepDeploy,
    build_hardware,
    calls,
    make_conductor,
    new_node,
    snapshot,
    step,
    unchanged,
)

from ironic_fsm import Conductor, Config, Node, states
from ironic_fsm.exceptions import InvalidParameterValue, InvalidStateRequested
from ironic_fsm.task import Task

HOLD = {"interface": "deploy", "step": "hold"}


def _manual_clean(conductor: Conductor, uuid: str, *steps: dict[str, Any]) -> Node:
    return conductor.do_provisioning_action(uuid, "clean", clean_steps=list(steps))


# -- cleaning: wait and continue -------------------------------------------------------------------


def test_automated_clean_step_waits_with_target_available() -> None:
    config = Config(clean_step_priority_override={"vendor.async_clean": 20, "vendor.step_a": 10})
    conductor = make_conductor(config=config)
    node = new_node(conductor, states.MANAGEABLE)
    result = conductor.do_provisioning_action(node.uuid, "provide")
    node = conductor.get_node(node.uuid)
    assert result.provision_state == node.provision_state == states.CLEANWAIT
    assert node.target_provision_state == states.AVAILABLE
    assert calls(node) == ["async_clean"]
    assert node.clean_step["step"] == "async_clean"
    assert node.reservation is None

    conductor.continue_node_clean(node.uuid)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    assert node.target_provision_state is None
    assert calls(node) == ["async_clean", "step_a"]


_A, _B, _ASYNC = step("vendor", "step_a"), step("vendor", "step_b"), step("vendor", "async_clean")

#: Manual cleanings that pause: (steps, where they pause, calls by then, how the
#: operator resumes, calls at the end). Each ends in manageable, its target.
MANUAL_PAUSES: dict[str, tuple[tuple[dict[str, Any], ...], str, list[str], str, list[str]]] = {
    "async-step": ((_A, _ASYNC, _B), states.CLEANWAIT, ["step_a", "async_clean"], "continue",
                   ["step_a", "async_clean", "step_b"]),
    "async-step-last": ((_ASYNC,), states.CLEANWAIT, ["async_clean"], "continue",
                        ["async_clean"]),
    "hold-last": ((_A, HOLD), states.CLEANHOLD, ["step_a"], "unhold", ["step_a"]),
    # hold is the conductor's, whatever interface the step names
    "hold-of-any-interface": (({"interface": "vendor", "step": "hold"}, _A), states.CLEANHOLD,
                              [], "unhold", ["step_a"]),
    # without seconds, a wait step waits for continue, however long
    "wait-without-seconds": (({"interface": "deploy", "step": "wait"}, _A), states.CLEANWAIT,
                             [], "continue", ["step_a"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(MANUAL_PAUSES))
def test_manual_clean_pauses_then_ends_in_manageable(case: str) -> None:
    steps, paused, calls_paused, resume, calls_done = MANUAL_PAUSES[case]
    clock = Clock()
    conductor = make_conductor(clock=clock)
    node = new_node(conductor, states.MANAGEABLE)
    _manual_clean(conductor, node.uuid, *steps)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == paused
    assert node.target_provision_state == states.MANAGEABLE
    assert calls(node) == calls_paused
    assert conductor.check_timeouts(now=clock.at(60)) == []

    if resume == "continue":
        conductor.continue_node_clean(node.uuid)
    else:
        conductor.do_provisioning_action(node.uuid, resume)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.target_provision_state is None
    assert calls(node) == calls_done


def test_two_async_steps_need_two_continues() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    _manual_clean(
        conductor,
        node.uuid,
        step("vendor", "async_clean"),
        step("vendor", "async_clean"),
        step("vendor", "step_a"),
    )
    conductor.continue_node_clean(node.uuid)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANWAIT
    assert node.target_provision_state == states.MANAGEABLE
    assert calls(node) == ["async_clean", "async_clean"]
    conductor.continue_node_clean(node.uuid)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert calls(node) == ["async_clean", "async_clean", "step_a"]


@pytest.mark.parametrize("rerun", [False, True], ids=["async-step", "step-asks-to-be-rerun"])
@pytest.mark.parametrize("phase", PHASE_CASES, ids=PHASE_IDS)
def test_waiting_step_then_continue(phase: PhaseCase, rerun: bool) -> None:
    # A step that waits ends with the continuation; one that asks to be re-run runs again first.
    first = phase.again_step if rerun else phase.async_step
    ran = [f"{first}#1", f"{first}#2"] if rerun else [first]
    conductor = make_conductor()
    node = phase.new_node(conductor)
    phase.run(conductor, node.uuid, first, *phase.plain("step_b"))
    node = conductor.get_node(node.uuid)
    assert node.provision_state == phase.wait
    assert node.target_provision_state == phase.target
    assert calls(node) == ran[:1]
    phase.resume(conductor, node.uuid)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == phase.done
    assert node.target_provision_state is None
    assert calls(node) == [*ran, *phase.plain("step_b"), *phase.tail]
    assert f"skip_current_{phase.name}_step" not in node.driver_internal_info


@pytest.mark.parametrize(
    "state", [states.MANAGEABLE, states.CLEANING, states.CLEANHOLD, states.AVAILABLE]
)
def test_continue_node_clean_requires_clean_wait(state: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidStateRequested):
        conductor.continue_node_clean(node.uuid)


class _RamdiskDeploy(StepDeploy):
    """Cleaning that boots a ramdisk first: prepare_cleaning waits for it."""

    def prepare_cleaning(self, task: Task) -> str:
        return states.CLEANWAIT


def _ramdisk_node(conductor: Conductor) -> Node:
    """A manageable node whose steps that need the ramdisk wait for it to boot."""
    conductor.register_hardware_type("ramdisk-hw", build_hardware(deploy=_RamdiskDeploy()))
    return new_node(conductor, states.MANAGEABLE, driver="ramdisk-hw")


def test_prepare_cleaning_may_wait_for_a_ramdisk() -> None:
    conductor = make_conductor()
    node = _ramdisk_node(conductor)
    # firmware.update needs the ramdisk: cleaning waits for it to boot first.
    _manual_clean(conductor, node.uuid, step("firmware", "update", settings=[{"c": "bmc"}]))
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANWAIT
    assert node.target_provision_state == states.MANAGEABLE
    assert "fake_firmware" not in node.driver_internal_info
    conductor.continue_node_clean(node.uuid)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.driver_internal_info["fake_firmware"] == [{"c": "bmc"}]


# -- deploy and service: wait and continue ---------------------------------------------------------


# -- abort -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("phase", PHASE_CASES, ids=PHASE_IDS)
def test_abort_abortable_async_step(phase: PhaseCase) -> None:
    conductor = make_conductor()
    node = phase.new_node(conductor)
    phase.run(conductor, node.uuid, phase.async_step, *phase.plain("step_a"))
    conductor.do_provisioning_action(node.uuid, "abort")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == phase.aborted
    assert node.target_provision_state == phase.aborted_target
    assert node.last_error.startswith(f"By request, the {phase.name} operation was aborted")
    assert f"{phase.step_iface}.{phase.async_step}" in node.last_error
    assert calls(node) == [phase.async_step]
    assert node.maintenance is False
    # Deployment keeps showing the step it stopped at; the others clear it.
    assert bool(getattr(node, phase.step_field)) is phase.keeps_step


def test_abort_abortable_automated_clean_step_keeps_target_available() -> None:
    config = Config(clean_step_priority_override={"vendor.async_clean": 20})
    conductor = make_conductor(config=config)
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "provide")
    conductor.do_provisioning_action(node.uuid, "abort")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANFAIL
    assert node.target_provision_state == states.AVAILABLE
    assert node.last_error.startswith("By request, the clean operation was aborted")


@pytest.mark.parametrize("last", [True, False], ids=["last-step", "not-last-step"])
@pytest.mark.parametrize("phase", PHASE_CASES, ids=PHASE_IDS)
def test_abort_non_abortable_step_is_deferred(phase: PhaseCase, last: bool) -> None:
    conductor = make_conductor()
    node = phase.new_node(conductor)
    phase.run(conductor, node.uuid, phase.noabort_step, *([] if last else phase.plain("step_a")))
    conductor.do_provisioning_action(node.uuid, "abort")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == phase.wait
    assert node.target_provision_state == phase.target
    assert getattr(node, phase.step_field)["step"] == phase.noabort_step
    assert getattr(node, phase.step_field)["abort_after"] is True
    assert node.last_error is None

    phase.resume(conductor, node.uuid)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == phase.fail
    assert node.target_provision_state == phase.target
    assert node.last_error.startswith(f"By request, the {phase.name} operation was aborted")
    assert calls(node) == [phase.noabort_step]


@pytest.mark.parametrize("phase", PHASE_CASES, ids=PHASE_IDS)
def test_abort_in_hold(phase: PhaseCase) -> None:
    conductor = make_conductor()
    node = phase.new_node(conductor)
    phase.run(conductor, node.uuid, *phase.plain("step_a"), "hold", *phase.plain("step_b"))
    assert conductor.get_node(node.uuid).provision_state == phase.hold
    conductor.do_provisioning_action(node.uuid, "abort")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == phase.aborted
    assert node.target_provision_state == phase.aborted_target
    assert node.last_error.startswith(f"By request, the {phase.name} operation was aborted")
    assert "Async execution" not in node.last_error
    assert calls(node) == list(phase.plain("step_a"))


# -- hold / unhold ---------------------------------------------------------------------------------


@pytest.mark.parametrize("phase", PHASE_CASES, ids=PHASE_IDS)
def test_hold_and_unhold(phase: PhaseCase) -> None:
    conductor = make_conductor()
    node = phase.new_node(conductor)
    phase.run(conductor, node.uuid, *phase.plain("step_a"), "hold", *phase.plain("step_b"))
    node = conductor.get_node(node.uuid)
    assert node.provision_state == phase.hold
    assert node.target_provision_state == phase.target
    assert calls(node) == list(phase.plain("step_a"))

    conductor.do_provisioning_action(node.uuid, "unhold")
    node = conductor.get_node(node.uuid)
    # Ironic 39 ends a manual clean in available here (target lost) and a
    # service in service failed (its unhold loses the target); ironic_fsm does not.
    assert node.provision_state == phase.done
    assert node.target_provision_state is None
    assert node.last_error is None
    assert calls(node) == [*phase.plain("step_a"), *phase.plain("step_b"), *phase.tail]


def test_runbook_hold_is_honoured() -> None:
    conductor = make_conductor()
    conductor.add_runbook("rb", [HOLD, step("vendor", "step_a")], traits=["CUSTOM_RB"])
    node = new_node(conductor, states.MANAGEABLE, traits=["CUSTOM_RB"])
    conductor.do_provisioning_action(node.uuid, "clean", runbook="rb")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANHOLD
    assert node.target_provision_state == states.MANAGEABLE
    conductor.do_provisioning_action(node.uuid, "unhold")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert calls(node) == ["step_a"]


def test_reserved_power_steps_run_in_manual_clean() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, power_state=states.POWER_OFF)
    _manual_clean(
        conductor, node.uuid, {"interface": "power", "step": "power_on"}, step("vendor", "step_a")
    )
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.power_state == states.POWER_ON
    _manual_clean(conductor, node.uuid, {"interface": "power", "step": "power_off"})
    assert conductor.get_node(node.uuid).power_state == states.POWER_OFF


# -- wait steps and timeouts -----------------------------------------------------------------------


@pytest.mark.parametrize("phase", PHASE_CASES, ids=PHASE_IDS)
def test_wait_step_with_seconds_resumes_after_the_time(phase: PhaseCase) -> None:
    clock = Clock()
    conductor = make_conductor(clock=clock)
    node = phase.new_node(conductor)
    wait = {"interface": "deploy", "step": "wait", "args": {"seconds": 60}}
    phase.run(conductor, node.uuid, *phase.plain("step_a"), wait, *phase.plain("step_b"))
    node = conductor.get_node(node.uuid)
    assert node.provision_state == phase.wait
    assert node.target_provision_state == phase.target
    assert calls(node) == list(phase.plain("step_a"))

    for early in (30, 59):
        assert conductor.check_timeouts(now=clock.at(early)) == []
        node = conductor.get_node(node.uuid)
        assert node.provision_state == phase.wait
        assert calls(node) == list(phase.plain("step_a"))

    assert conductor.check_timeouts(now=clock.at(60)) == [node.uuid]
    node = conductor.get_node(node.uuid)
    assert node.provision_state == phase.done
    assert node.target_provision_state is None
    assert calls(node) == [*phase.plain("step_a"), *phase.plain("step_b"), *phase.tail]


#: How each phase words a timed-out wait: the opening, and whether the
#: message names the step and the node.
_TIMEOUT_TEXT = {
    "clean": ("Timeout reached while cleaning the node", True, False),
    "deploy": ("Timeout reached while waiting for callback for node", False, True),
    "service": ("Timeout reached while servicing node", True, True),
}


@pytest.mark.parametrize("phase", PHASE_CASES, ids=PHASE_IDS)
def test_wait_times_out_with_fault_when_a_step_was_recorded(phase: PhaseCase) -> None:
    clock = Clock()
    config = Config(**{f"{phase.name}_callback_timeout": 100})
    conductor = make_conductor(config=config, clock=clock)
    node = phase.new_node(conductor)
    phase.run(conductor, node.uuid, phase.async_step, *phase.plain("step_a"))
    assert conductor.check_timeouts(now=clock.at(99)) == []
    assert conductor.get_node(node.uuid).provision_state == phase.wait

    assert conductor.check_timeouts(now=clock.at(101)) == [node.uuid]
    node = conductor.get_node(node.uuid)
    assert node.provision_state == phase.fail
    assert node.target_provision_state == phase.target
    opening, names_step, names_node = _TIMEOUT_TEXT[phase.name]
    assert node.last_error.startswith(opening)
    assert (f"{phase.step_iface}.{phase.async_step}" in node.last_error) is names_step
    assert (node.uuid in node.last_error) is names_node
    assert node.maintenance is (phase.fault is not None)
    assert node.fault == phase.fault
    assert calls(node) == [phase.async_step]


def test_clean_wait_times_out_without_fault_when_no_step_was_recorded() -> None:
    clock = Clock()
    conductor = make_conductor(config=Config(clean_callback_timeout=100), clock=clock)
    node = new_node(
        conductor,
        states.CLEANWAIT,
        target_provision_state=states.AVAILABLE,
        provision_updated_at=clock.at(0),
    )
    assert conductor.check_timeouts(now=clock.at(101)) == [node.uuid]
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANFAIL
    assert node.target_provision_state == states.AVAILABLE
    assert node.last_error.startswith("Timeout reached while cleaning the node")
    assert node.maintenance is False
    assert node.fault is None


def test_clean_callback_timeout_zero_disables() -> None:
    clock = Clock()
    conductor = make_conductor(config=Config(clean_callback_timeout=0), clock=clock)
    node = new_node(conductor, states.MANAGEABLE)
    _manual_clean(conductor, node.uuid, step("vendor", "async_clean"))
    assert conductor.check_timeouts(now=clock.at(10**7)) == []
    assert conductor.get_node(node.uuid).provision_state == states.CLEANWAIT


def test_default_clean_callback_timeout_is_1800_seconds() -> None:
    clock = Clock()
    conductor = make_conductor(clock=clock)
    node = new_node(conductor, states.MANAGEABLE)
    _manual_clean(conductor, node.uuid, step("vendor", "async_clean"))
    assert conductor.check_timeouts(now=clock.at(1799)) == []
    assert conductor.check_timeouts(now=clock.at(1801)) == [node.uuid]
    assert conductor.get_node(node.uuid).provision_state == states.CLEANFAIL


def test_check_timeouts_uses_the_injected_clock_by_default() -> None:
    clock = Clock()
    conductor = make_conductor(config=Config(clean_callback_timeout=100), clock=clock)
    node = new_node(conductor, states.MANAGEABLE)
    _manual_clean(conductor, node.uuid, step("vendor", "async_clean"))
    clock.advance(50)
    assert conductor.check_timeouts() == []
    clock.advance(51)
    assert conductor.check_timeouts() == [node.uuid]
    assert conductor.get_node(node.uuid).provision_state == states.CLEANFAIL


@pytest.mark.parametrize("phase", PHASE_CASES, ids=PHASE_IDS)
def test_holds_never_time_out(phase: PhaseCase) -> None:
    clock = Clock()
    config = Config(clean_callback_timeout=1, deploy_callback_timeout=1, service_callback_timeout=1)
    conductor = make_conductor(config=config, clock=clock)
    node = phase.new_node(conductor)
    phase.run(conductor, node.uuid, "hold")
    before = snapshot(conductor.get_node(node.uuid))
    assert before["provision_state"] == phase.hold
    assert conductor.check_timeouts(now=clock.at(10**7)) == []
    assert snapshot(conductor.get_node(node.uuid)) == before


def test_check_timeouts_skips_maintenance_and_reserved_nodes() -> None:
    clock = Clock()
    conductor = make_conductor(config=Config(clean_callback_timeout=100), clock=clock)
    in_maintenance = new_node(conductor, states.MANAGEABLE)
    reserved = new_node(conductor, states.MANAGEABLE)
    for node in (in_maintenance, reserved):
        _manual_clean(conductor, node.uuid, step("vendor", "async_clean"))
    conductor.update_node(in_maintenance.uuid, maintenance=True)
    conductor.store.reserve(reserved.uuid, "other-host:1:x")
    assert conductor.check_timeouts(now=clock.at(10_000)) == []
    assert conductor.get_node(in_maintenance.uuid).provision_state == states.CLEANWAIT
    assert conductor.get_node(reserved.uuid).provision_state == states.CLEANWAIT


def test_check_timeouts_leaves_stable_nodes_alone() -> None:
    clock = Clock()
    conductor = make_conductor(config=Config(clean_callback_timeout=1), clock=clock)
    node = new_node(conductor, states.AVAILABLE, driver=FAKE_HW, provision_updated_at=clock.at(0))
    before = snapshot(conductor.get_node(node.uuid))
    assert conductor.check_timeouts(now=clock.at(10**6)) == []
    assert snapshot(conductor.get_node(node.uuid)) == before


# -- inspection and rescue waits -------------------------------------------------------------------


def test_async_inspection_waits_and_continues() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, driver_info={"fail_on": ["inspect_async"]})
    conductor.do_provisioning_action(node.uuid, "inspect")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.INSPECTWAIT
    assert node.target_provision_state == states.MANAGEABLE
    conductor.continue_node_inspect(node.uuid, {"cpus": 64})
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.target_provision_state is None
    assert node.properties["cpus"] == 64


def test_abort_async_inspection() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, driver_info={"fail_on": ["inspect_async"]})
    conductor.do_provisioning_action(node.uuid, "inspect")
    conductor.do_provisioning_action(node.uuid, "abort")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.INSPECTFAIL
    assert node.last_error == "Inspection was aborted by request."


def test_inspect_wait_times_out() -> None:
    clock = Clock()
    conductor = make_conductor(config=Config(inspect_wait_timeout=100), clock=clock)
    node = new_node(conductor, states.MANAGEABLE, driver_info={"fail_on": ["inspect_async"]})
    conductor.do_provisioning_action(node.uuid, "inspect")
    assert conductor.check_timeouts(now=clock.at(99)) == []
    assert conductor.check_timeouts(now=clock.at(101)) == [node.uuid]
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.INSPECTFAIL
    assert node.last_error.startswith("Timeout reached while inspecting")


def test_async_rescue_waits_and_continues() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.ACTIVE, driver_info={"fail_on": ["rescue_async"]})
    conductor.do_provisioning_action(node.uuid, "rescue", rescue_password="let-me-in")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.RESCUEWAIT
    assert node.target_provision_state == states.RESCUE
    conductor.continue_node_rescue(node.uuid)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.RESCUE
    assert node.target_provision_state is None


def test_abort_rescue_wait() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.ACTIVE, driver_info={"fail_on": ["rescue_async"]})
    conductor.do_provisioning_action(node.uuid, "rescue", rescue_password="let-me-in")
    conductor.do_provisioning_action(node.uuid, "abort")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.RESCUEFAIL
    assert node.target_provision_state == states.RESCUE
    assert "rescue_password" not in node.instance_info
    assert node.driver_internal_info["rescue_clean_ups"] == 1


def test_rescue_wait_times_out() -> None:
    clock = Clock()
    conductor = make_conductor(config=Config(rescue_callback_timeout=100), clock=clock)
    node = new_node(conductor, states.ACTIVE, driver_info={"fail_on": ["rescue_async"]})
    conductor.do_provisioning_action(node.uuid, "rescue", rescue_password="let-me-in")
    assert conductor.check_timeouts(now=clock.at(101)) == [node.uuid]
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.RESCUEFAIL
    assert node.target_provision_state == states.RESCUE
    assert node.last_error.startswith("Timeout reached while waiting for rescue ramdisk callback")
    assert "rescue_password" not in node.instance_info


# -- servicing specifics ---------------------------------------------------------------------------


def test_unknown_service_step_is_refused_before_any_step() -> None:
    # Ironic 39 runs unvalidated service steps (bug 7); here a bad request is refused
    # before the node moves, as the API answers 400, through every entry point alike.
    conductor = make_conductor()
    uuid = SERVICE_CASE.new_node(conductor).uuid
    with unchanged(conductor, uuid), pytest.raises(InvalidParameterValue, match=r"vendor\.nope"):
        SERVICE_CASE.run(conductor, uuid, "step_a", "nope")
    node = conductor.get_node(uuid)
    assert (node.provision_state, node.target_provision_state) == (states.ACTIVE, None)
    assert calls(node) == []
    assert node.maintenance is False


@pytest.mark.parametrize("password", [None, "", "   "])
def test_rescue_requires_a_password(password: str | None) -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.ACTIVE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue):
        conductor.do_provisioning_action(node.uuid, "rescue", rescue_password=password)


def test_abort_while_waiting_for_the_ramdisk() -> None:
    conductor = make_conductor()
    node = _ramdisk_node(conductor)
    _manual_clean(conductor, node.uuid, step("firmware", "update", settings=[]))
    assert conductor.get_node(node.uuid).provision_state == states.CLEANWAIT
    conductor.do_provisioning_action(node.uuid, "abort")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANFAIL
    assert node.target_provision_state == states.MANAGEABLE
    assert node.last_error == "By request, the clean operation was aborted"
    assert node.maintenance is False
