"""The step engine: start, run, continue, fail, finish and abort a phase's steps.

Cleaning, deployment and servicing run the same engine. What differs
between them is data, kept in one table (:data:`PHASES`): states and
events, where the plan and the current step are recorded, how the node is
prepared and tidied up, how a failure is worded and what it does to the
node. No code here asks which phase it is running.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, Final

import attrs

from ironic_fsm import history as h
from ironic_fsm import states as s
from ironic_fsm.conductor.common import check_ident, describe_exc, scrub_node, shown, wrong_state
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.jobs import LOG, Job
from ironic_fsm.conductor.launcher import Launcher
from ironic_fsm.conductor.plans import Plans
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.events import STEP_END, STEP_FAIL, STEP_START
from ironic_fsm.exceptions import IronicFSMError, StepFailed
from ironic_fsm.node import Node
from ironic_fsm.steps import RESERVED_STEPS, Phase, step_id
from ironic_fsm.task import Task

__all__ = [
    "CLEAN",
    "DEPLOY",
    "FAILED",
    "PHASES",
    "PHASE_BY_STATE",
    "SERVICE",
    "PhaseInfo",
    "StepEngine",
]

Step = Mapping[str, Any]

#: What :meth:`StepEngine._attempt` returns when the call failed (and so did the phase).
FAILED: Final[Any] = object()


def _deploy_step_failure(node: Node, sid: str, exc: BaseException) -> str:
    # Ironic's wording for deploy steps (the seeds' tests read it).
    if isinstance(exc, IronicFSMError):
        return f"Deploy step {sid} failed: {exc}."
    return f"Deploy step {sid} failed with {type(exc).__name__}: {exc}."


def _clean_timeout(node: Node, step: Step | None) -> str:
    message = (
        "Timeout reached while cleaning the node. Please check if the ramdisk "
        "responsible for the cleaning is running on the node."
    )
    return message + (f" Failed on step {step_id(step)}." if step else "")


def _service_timeout(node: Node, step: Step | None) -> str:
    message = f"Timeout reached while servicing node {node.uuid}."
    return message + (f" Failed on step {step_id(step)}." if step else "")


def _deploy_timeout(node: Node, step: Step | None) -> str:
    return f"Timeout reached while waiting for callback for node {node.uuid}"


def _clean_done_event(node: Node) -> str:
    # Manual cleaning (and cleaning a retired node) ends in manageable.
    return (
        s.MANAGE_EVENT
        if node.target_provision_state == s.MANAGEABLE or node.retired
        else s.DONE_EVENT
    )


def _done_event(node: Node) -> str:
    return s.DONE_EVENT


@attrs.frozen
class PhaseInfo:
    """Everything that differs between cleaning, deployment and servicing."""

    name: Phase
    #: The phase's working, wait, hold and failure states.
    working: str
    wait: str
    hold: str
    fail: str
    #: Node field showing the current step; driver_internal_info keys of the plan.
    step_field: str
    steps_key: str
    index_key: str
    skip_key: str
    wait_until_key: str
    #: Config option: seconds the wait state may last.
    timeout_option: str
    #: What a failed step sets as the node's fault (and maintenance), if anything.
    fault: str | None
    #: The gerund in messages ("Failed to prepare node X for cleaning").
    doing: str
    #: Deploy-interface methods: set the node up before the steps, undo it after.
    prepare: str
    cleanup: str
    #: driver_internal_info flag "prepare ran, undo it at the end"; None: the
    #: phase undoes only on failure or abort (deployment).
    prepared_key: str | None
    #: driver_internal_info flag: the user asked for no ramdisk. None: always prepare.
    disable_ramdisk_key: str | None
    #: driver_internal_info key of a plan waiting for the ramdisk's steps (cleaning).
    plan_pending_key: str | None
    #: A failure keeps showing the failed step (deployment) instead of clearing it.
    keeps_failed_step: bool
    #: How a failed cleanup is noted in last_error; its label after an abort.
    cleanup_failed_note: str
    cleanup_label: str
    #: Config option: power the node off when the phase fails.
    poweroff_option: str | None
    #: Abort goes through the failure state first (servicing, as in Ironic).
    abort_via_fail: bool
    #: The message for a failed step, and for a timed-out wait.
    step_failure: Callable[[Node, str, BaseException], str]
    timeout_message: Callable[[Node, Step | None], str]
    #: The event that ends the phase successfully.
    done_event: Callable[[Node], str]
    #: How a failed ``prepare`` is worded (Ironic's); None: "Failed to prepare node X for ...".
    prepare_failure: str | None = None


CLEAN: Final = PhaseInfo(
    name="clean", working=s.CLEANING, wait=s.CLEANWAIT, hold=s.CLEANHOLD, fail=s.CLEANFAIL,
    step_field="clean_step", steps_key="clean_steps", index_key="clean_step_index",
    skip_key="skip_current_clean_step", wait_until_key="clean_wait_until",
    timeout_option="clean_callback_timeout", fault="clean failure", doing="cleaning",
    prepare="prepare_cleaning", cleanup="tear_down_cleaning",
    prepared_key="cleaning_ramdisk_prepared", disable_ramdisk_key="cleaning_disable_ramdisk",
    plan_pending_key="clean_plan_pending", keeps_failed_step=False,
    cleanup_failed_note=". Also failed to tear down cleaning", cleanup_label="clean tear-down",
    poweroff_option="poweroff_in_cleanfail", abort_via_fail=False,
    step_failure=lambda node, sid, exc: (
        f"Node {node.uuid} failed clean step {sid}: {describe_exc(exc)}"
    ),
    timeout_message=_clean_timeout, done_event=_clean_done_event,
)  # fmt: skip
DEPLOY: Final = PhaseInfo(
    name="deploy", working=s.DEPLOYING, wait=s.DEPLOYWAIT, hold=s.DEPLOYHOLD, fail=s.DEPLOYFAIL,
    step_field="deploy_step", steps_key="deploy_steps", index_key="deploy_step_index",
    skip_key="skip_current_deploy_step", wait_until_key="deploy_wait_until",
    timeout_option="deploy_callback_timeout", fault=None, doing="deployment",
    prepare="prepare", cleanup="clean_up", prepared_key=None, disable_ramdisk_key=None,
    plan_pending_key=None, keeps_failed_step=True,
    cleanup_failed_note=" Also failed to clean up", cleanup_label="deploy clean-up",
    poweroff_option=None, abort_via_fail=False, step_failure=_deploy_step_failure,
    timeout_message=_deploy_timeout, done_event=_done_event,
    prepare_failure="Failed to prepare to deploy",
)  # fmt: skip
SERVICE: Final = PhaseInfo(
    name="service", working=s.SERVICING, wait=s.SERVICEWAIT, hold=s.SERVICEHOLD,
    fail=s.SERVICEFAIL, step_field="service_step", steps_key="service_steps",
    index_key="service_step_index", skip_key="skip_current_service_step",
    wait_until_key="service_wait_until", timeout_option="service_callback_timeout",
    fault="service failure", doing="servicing", prepare="prepare_service",
    cleanup="tear_down_service", prepared_key="service_ramdisk_prepared",
    disable_ramdisk_key="service_disable_ramdisk", plan_pending_key=None,
    keeps_failed_step=False,
    cleanup_failed_note=". Also failed to tear down serviceing",  # sic: the message as it was
    cleanup_label="service tear-down", poweroff_option="poweroff_in_servicefail",
    abort_via_fail=True,
    step_failure=lambda node, sid, exc: (
        f"Node {node.uuid} failed service step {sid}: {describe_exc(exc)}"
    ),
    timeout_message=_service_timeout, done_event=_done_event,
)  # fmt: skip

PHASES: Final = {phase.name: phase for phase in (CLEAN, DEPLOY, SERVICE)}
#: The interface method that runs one of a phase's steps.
_EXECUTE: Final = {name: f"execute_{name}_step" for name in PHASES}
#: The phase a node is in, by its working, wait or hold state.
PHASE_BY_STATE: Final = {
    state: phase for phase in PHASES.values() for state in (phase.working, phase.wait, phase.hold)
}


class StepEngine:
    """Runs a phase's planned steps, saving before each one so recovery can resume it."""

    def __init__(self, ctx: Context, reservations: Reservations, launcher: Launcher,
                 plans: Plans) -> None:  # fmt: skip
        self._ctx, self._reservations, self._launcher = ctx, reservations, launcher
        self._plans = plans

    def call_quietly(self, job: Job, func: Callable[[Task], Any], what: str) -> None:
        """Tidy-up after a failure: its own failure is noted, never raised."""
        try:
            func(job.task)
        except Exception as exc:
            node = job.node
            node.last_error = (node.last_error or "") + f" Also failed {what}: {describe_exc(exc)}"
            LOG.warning(
                "Node %s: %s failed: %s", node.uuid, what, scrub_node(node, describe_exc(exc))
            )

    def require_state_of(self, node: Node, state: str, action: str) -> None:
        if node.provision_state != state:
            raise wrong_state(
                node,
                f"Cannot {action} on node {node.uuid} in provision state "
                f"{node.provision_state!r}; it must be in {state!r}",
            )

    # -- start and run ----------------------------------------------------------------------

    def _needs_prepare(self, phase: PhaseInfo, info: Mapping[str, Any]) -> bool:
        if phase.disable_ramdisk_key is None:
            return True
        if phase.plan_pending_key is not None and phase.plan_pending_key in info:
            return True  # the ramdisk must come up to tell its steps
        plan: list[dict[str, Any]] = info.get(phase.steps_key) or []
        disabled = info.get(phase.disable_ramdisk_key, False)
        return not disabled and any(st.get("requires_ramdisk", True) for st in plan)

    def start_steps(self, job: Job, phase: PhaseInfo) -> None:
        """Prepare the node for the planned steps (ramdisk, deploy prep), then run them."""
        node = job.node
        info = node.driver_internal_info
        if self._needs_prepare(phase, info):
            job.checkpoint()
            failure = (
                phase.prepare_failure or f"Failed to prepare node {node.uuid} for {phase.doing}"
            )
            prepared = self.attempt(job, phase, getattr(job.driver.deploy, phase.prepare), failure)
            if prepared is FAILED:
                return
            if phase.prepared_key is not None:
                info[phase.prepared_key] = True
            if prepared == phase.wait:
                job.fire(s.WAIT_EVENT)  # the ramdisk calls back to continue
                return
        self.run_steps(job, phase, 0)

    def run_steps(self, job: Job, phase: PhaseInfo, index: int) -> None:
        """Run the phase's planned steps from ``index`` until done, waiting or failed.

        A draining conductor stops at the boundary before each step (the
        steps before it are recorded done by this save) and queues the node
        to resume at that step elsewhere.
        """
        node = job.node
        info = node.driver_internal_info
        steps: list[dict[str, Any]] = info.get(phase.steps_key) or []
        while index < len(steps):
            step = steps[index]
            info[phase.index_key] = index
            setattr(node, phase.step_field, dict(step))
            if self._launcher.drain_event.is_set():  # draining
                self._launcher.queue(job, {"flow": "resume"})
                return
            if self._ctx.told:
                job.step_event(STEP_START, step)
            # Recorded before it starts; this save also records that the
            # previous step ended. Recovery re-runs the recorded step.
            job.checkpoint()
            try:
                result = self._execute_step(job, phase, step)
            except Exception as exc:
                self._step_failed(job, phase, step, exc)
                return
            if result is None:
                if self._ctx.told:
                    job.step_event(STEP_END, step)
                index += 1
                continue
            if result in (phase.wait, phase.hold):
                if node.provision_state == phase.working:
                    event = s.WAIT_EVENT if result == phase.wait else s.HOLD_EVENT
                    job.fire(event)
                return
            self._step_failed(
                job,
                phase,
                step,
                StepFailed(
                    f"While executing step {step_id(step)} on node {node.uuid}, step returned "
                    f"invalid value: {shown(result)}",
                    node=node.uuid,
                    step=step_id(step),
                ),
            )
            return
        self.finish_phase(job, phase)

    def _execute_step(self, job: Job, phase: PhaseInfo, step: Step) -> str | None:
        if step["step"] in RESERVED_STEPS:
            return self._reserved_step(job, phase, step)
        iface = getattr(job.driver, step["interface"])
        result: str | None = getattr(iface, _EXECUTE[phase.name])(job.task, step)
        return result

    def _reserved_step(self, job: Job, phase: PhaseInfo, step: Step) -> str | None:
        name = step["step"]
        if name == "hold":
            return phase.hold
        if name == "wait":
            seconds = (step.get("args") or {}).get("seconds")
            if seconds is not None:
                until = self._ctx.clock() + timedelta(seconds=seconds)
                job.node.driver_internal_info[phase.wait_until_key] = until.isoformat()
            return phase.wait
        power = {"power_on": s.POWER_ON, "power_off": s.POWER_OFF, "reboot": s.REBOOT}[name]
        job.power(power)
        return None

    # -- fail and finish ----------------------------------------------------------------------

    def attempt(self, job: Job, phase: PhaseInfo, call: Callable[[Task], Any], failure: str) -> Any:
        """Run one driver call of the phase: its result, or :data:`FAILED` and the phase failed.

        The failure is ``failure`` and the reason, and it names no step:
        the call is the phase's own, not one of the planned steps.
        """
        try:
            return call(job.task)
        except Exception as exc:
            self.phase_failed(job, phase, f"{failure}: {describe_exc(exc)}", step=None)
            return FAILED

    def fail_step(self, job: Job, phase: PhaseInfo, step: Step, exc: BaseException) -> None:
        """An asynchronous step ended in failure (the agent said so): fail it and the phase."""
        self._step_failed(job, phase, step, exc)

    def _step_failed(self, job: Job, phase: PhaseInfo, step: Step, exc: BaseException) -> None:
        node = job.node
        message = scrub_node(node, phase.step_failure(node, step_id(step), exc))
        LOG.warning("%s", message)
        job.step_event(STEP_FAIL, step, error=message)
        self.phase_failed(job, phase, message, step=step)

    def phase_failed(
        self,
        job: Job,
        phase: PhaseInfo,
        message: str,
        *,
        step: Step | None,
        event: str = s.FAIL_EVENT,
    ) -> None:
        """Ironic's error handlers: record, tidy up, and move to the failure state."""
        node = job.node
        info = node.driver_internal_info
        if step is not None and phase.fault is not None:
            node.maintenance = True
            node.fault = phase.fault
            node.maintenance_reason = node.maintenance_reason or message
            job.record(
                h.ERROR,
                h.MAINTENANCE,
                f"Maintenance set with fault {phase.fault!r}: {message}",
            )
        if phase.prepared_key is None or info.pop(phase.prepared_key, False):
            try:
                getattr(job.driver.deploy, phase.cleanup)(job.task)
            except Exception as exc:
                message += f"{phase.cleanup_failed_note}: {describe_exc(exc)}"
        if phase.keeps_failed_step:
            # The deploy-steps spec: deploy_step keeps showing the failed step.
            setattr(node, phase.step_field, dict(step) if step is not None else {})
        else:
            setattr(node, phase.step_field, {})
            info.pop(phase.index_key, None)
        if (
            phase.poweroff_option is not None
            and getattr(self._ctx.config, phase.poweroff_option)
            and not node.disable_power_off
        ):
            try:
                job.power(s.POWER_OFF)
            except Exception as exc:
                message += f". Also failed to power off: {describe_exc(exc)}"
        info.pop(phase.skip_key, None)
        info.pop(phase.wait_until_key, None)
        if node.provision_state == phase.fail:
            node.last_error = message
        else:
            job.fire(event, last_error=message)

    def finish_phase(self, job: Job, phase: PhaseInfo) -> None:
        node = job.node
        info = node.driver_internal_info
        setattr(node, phase.step_field, None)
        info.pop(phase.index_key, None)
        info.pop(phase.skip_key, None)
        info.pop(phase.wait_until_key, None)
        info[phase.steps_key] = None
        if phase.prepared_key is not None and info.pop(phase.prepared_key, False):
            failure = f"Failed to tear down from {phase.doing} for node {node.uuid}"
            if (
                self.attempt(job, phase, getattr(job.driver.deploy, phase.cleanup), failure)
                is FAILED
            ):
                return
        if phase.disable_ramdisk_key is not None:
            info.pop(phase.disable_ramdisk_key, None)
        job.fire(phase.done_event(node))

    # -- continue -------------------------------------------------------------------------------

    def continue_node_clean(self, ident: str) -> Node:
        """An asynchronous clean step (or the ramdisk) finished: go on with the next step."""
        return self._continue_verb(ident, CLEAN)

    def continue_node_deploy(self, ident: str) -> Node:
        """An asynchronous deploy step finished: go on with the next step."""
        return self._continue_verb(ident, DEPLOY)

    def continue_node_service(self, ident: str) -> Node:
        """An asynchronous service step finished: go on with the next step."""
        return self._continue_verb(ident, SERVICE)

    def _continue_verb(self, ident: str, phase: PhaseInfo) -> Node:
        ident = check_ident(ident)
        action = f"continue {phase.name}ing"
        current = self._ctx.caps.store.get(ident)
        if current.reservation is None:  # held mid-flow: busy (NodeLocked), checked once free
            self.require_state_of(current, phase.wait, action)
        with self._reservations.reserved(ident) as job:
            self.require_state_of(job.node, phase.wait, action)
            self._launcher.spawn(
                job, lambda j: self.continue_steps(j, phase), queued={"flow": "continue"}
            )
            return job.node

    def continue_steps(self, job: Job, phase: PhaseInfo) -> None:
        """From the phase's wait state: honour abort_after, resume, run the next step.

        A queued continuation was resumed when it was queued: it starts in the
        working state and goes on from there.
        """
        node = job.node
        info = node.driver_internal_info
        key = phase.plan_pending_key
        pending = info.pop(key, None) if key is not None else None
        if pending is not None:
            try:
                info[phase.steps_key] = self._plans.plan_clean(
                    job, pending["steps"], info.get(phase.disable_ramdisk_key or "", False)
                )
            except Exception as exc:
                self.phase_failed(
                    job, phase, f"Cannot clean node {node.uuid}: {describe_exc(exc)}", step=None
                )
                return
        current = info.get(phase.index_key)
        skip = info.pop(phase.skip_key, True)
        info.pop(phase.wait_until_key, None)
        step = getattr(node, phase.step_field) or None
        if step and current is not None:
            if step.get("abort_after"):
                self._abort_after(job, phase, step)
                return
            if skip:  # otherwise the step runs again and ends later
                job.step_event(STEP_END, step)
        index = 0 if current is None else (current + 1 if skip else current)
        if node.provision_state == phase.wait:
            job.fire(s.RESUME_EVENT)
        self.run_steps(job, phase, index)

    # -- abort ----------------------------------------------------------------------------------

    def _abort_message(self, phase: PhaseInfo, step: Step | None) -> str:
        message = f"By request, the {phase.name} operation was aborted"
        if step:
            message += f' during or after the completion of step "{step_id(step)}"'
        return message

    def abort_steps(self, job: Job, phase: PhaseInfo) -> None:
        """``abort`` in a phase's wait or hold state."""
        node = job.node
        step = getattr(node, phase.step_field) or None
        if step and not step.get("abortable", False) and step["step"] != "hold":
            # Not interruptible: abort once the step is done.
            setattr(node, phase.step_field, dict(step, abort_after=True))
            return
        message = self._abort_message(phase, step)
        if phase.abort_via_fail:
            job.fire(s.FAIL_EVENT)
            self.finish_abort(job, phase, message)
            return
        job.fire(s.ABORT_EVENT, last_error=message)
        self._tidy_after_abort(job, phase)

    def _abort_after(self, job: Job, phase: PhaseInfo, step: Step) -> None:
        job.fire(s.FAIL_EVENT, last_error=self._abort_message(phase, step))
        self._tidy_after_abort(job, phase)

    def _undo_prepare_quietly(self, job: Job, phase: PhaseInfo) -> None:
        info = job.node.driver_internal_info
        if phase.prepared_key is None or info.pop(phase.prepared_key, False):
            cleanup = getattr(job.driver.deploy, phase.cleanup)
            self.call_quietly(job, cleanup, phase.cleanup_label)

    def _tidy_after_abort(self, job: Job, phase: PhaseInfo) -> None:
        node = job.node
        info = node.driver_internal_info
        job.checkpoint()
        self._undo_prepare_quietly(job, phase)
        if not phase.keeps_failed_step:
            setattr(node, phase.step_field, {})
        info.pop(phase.index_key, None)
        info.pop(phase.skip_key, None)
        info.pop(phase.wait_until_key, None)

    def finish_abort(self, job: Job, phase: PhaseInfo, message: str | None) -> None:
        """Abort from the failure state (servicing): tidy up, then leave it by ``abort``."""
        node = job.node
        info = node.driver_internal_info
        self._undo_prepare_quietly(job, phase)
        setattr(node, phase.step_field, {})
        info.pop(phase.index_key, None)
        info.pop(phase.wait_until_key, None)
        if message is None:
            message = f"By request, the {phase.name} operation was aborted"
        job.fire(s.ABORT_EVENT, last_error=message)
