"""The flows: what the node does once a verb has moved it into a working state.

Verify, inspect, adopt, rescue and unrescue are one driver call each
(:meth:`Flows._operation`); tear-down leads into cleaning; cleaning,
deployment and servicing plan their steps and hand them to the step
engine. Each flow starts with the node reserved and its first transition
already fired; it ends with the node in a stable, wait, hold or failure
state.

Each flow has a name (:data:`FLOW_STATES`), so that it can wait in the
work queue as ``{"flow": name, ...}`` and be started from there by any
conductor (:meth:`Flows._run_flow`); ``resume`` goes on from whatever the
node recorded, as crash recovery does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from ironic_fsm import states as s
from ironic_fsm.conductor.common import check_ident, describe_exc, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.engine import (
    CLEAN,
    DEPLOY,
    FAILED,
    PHASE_BY_STATE,
    SERVICE,
    PhaseInfo,
    StepEngine,
)
from ironic_fsm.conductor.jobs import Job
from ironic_fsm.conductor.launcher import Launcher
from ironic_fsm.conductor.plans import Plans
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.exceptions import InvalidParameterValue, StepsNotAvailable
from ironic_fsm.inspection_rules import copy_changes
from ironic_fsm.node import Node, check_json
from ironic_fsm.planner import sort_steps, validate_user_steps
from ironic_fsm.steps import step_id
from ironic_fsm.task import Task

if TYPE_CHECKING:
    from ironic_fsm.conductor.inventory import Inventories

__all__ = ["FLOW_STATES", "Flows"]

#: The state each named flow starts from (``continue``: a step phase's working state).
FLOW_STATES: Final = {
    "verify": s.VERIFYING,
    "inspect": s.INSPECTING,
    "adopt": s.ADOPTING,
    "rescue": s.RESCUING,
    "unrescue": s.UNRESCUING,
    "tear_down": s.DELETING,
    "clean": s.CLEANING,
    "deploy": s.DEPLOYING,
    "service": s.SERVICING,
}


#: The flows that take no arguments: each flow's name and the method that runs it.
_SIMPLE_FLOWS: Final = {
    "verify": "_do_verify", "inspect": "_do_inspect", "adopt": "_do_adopt",
    "rescue": "_do_rescue", "unrescue": "_do_unrescue", "tear_down": "_do_tear_down",
    "deploy": "_do_deploy",
}  # fmt: skip


class Flows:
    """The work behind each verb, run in the caller or in the executor."""

    def __init__(self, ctx: Context, reservations: Reservations, launcher: Launcher,
                 plans: Plans, engine: StepEngine, inventories: Inventories) -> None:  # fmt: skip
        self._ctx, self._reservations, self._launcher = ctx, reservations, launcher
        self._plans, self._engine, self._inventories = plans, engine, inventories
        # Here, not at import: the rules and inventories bring the record classes in, which
        # ``import ironic_fsm`` does not need.
        from ironic_fsm.conductor.inspection_rules import InspectionRules

        self._rules = InspectionRules(ctx)

    def validate_interface(self, job: Job, kind: str) -> None:
        job.call(kind, "validate")

    # -- named flows: run here, or queued for any conductor -----------------------------

    def start(self, job: Job, flow: Mapping[str, Any]) -> None:
        """Set off the flow ``flow`` names (``{"flow": name, ...args}``), or queue it."""
        self._launcher.spawn(job, lambda j: self.run_flow(j, flow), queued=flow)

    def run_flow(self, job: Job, flow: Mapping[str, Any] | None) -> None:
        """Run a named flow; one that does not fit the node's state resumes it instead."""
        name = None if flow is None else flow.get("flow")
        state = job.node.provision_state
        phase = PHASE_BY_STATE.get(state)
        if flow is None or (FLOW_STATES.get(name or "") != state and name != "continue"):
            self.resume(job)
        elif name == "continue" and phase is not None and state != phase.hold:
            self._engine.continue_steps(job, phase)
        elif name in ("clean", "service"):
            steps, disable = flow.get("steps"), flow.get("disable_ramdisk") is True
            if name == "clean":
                self._do_clean(job, steps, disable_ramdisk=disable)
            else:
                self._do_service(job, steps or [], disable_ramdisk=disable)
        else:
            method = _SIMPLE_FLOWS.get(name or "")
            run: Callable[[Job], None] = self.resume if method is None else getattr(self, method)
            run(job)

    def resume(self, job: Job) -> None:
        """Continue whatever the node was doing when its flow stopped (crash, drain, queue)."""
        node = job.node
        state = node.provision_state
        phase = PHASE_BY_STATE.get(state)
        if phase is not None and state == phase.working:
            self._resume_steps(job, phase)
            return
        resume = {
            s.VERIFYING: self._do_verify,
            s.INSPECTING: self._do_inspect,
            s.ADOPTING: self._do_adopt,
            s.RESCUING: self._do_rescue,
            s.UNRESCUING: self._do_unrescue,
            s.DELETING: self._do_tear_down,
        }.get(state)
        if resume is not None:
            resume(job)

    def _resume_steps(self, job: Job, phase: PhaseInfo) -> None:
        node = job.node
        info = node.driver_internal_info
        index = info.get(phase.index_key)
        if info.get(phase.steps_key) is None:
            # Died before the plan was stored: fail visibly, do not guess.
            self._engine.phase_failed(
                job, phase,
                f"Node {node.uuid}: {phase.name} was interrupted before its steps were "
                "planned; start it again",
                step=None,
            )  # fmt: skip
        elif index is None:
            self._engine.start_steps(job, phase)
        else:
            self._engine.run_steps(job, phase, index)

    # -- one driver call each -----------------------------------------------------------

    def _do_verify(self, job: Job) -> None:
        node, task = job.node, job.task
        job.checkpoint()
        try:
            task.driver.power.validate(task)
            # The state-machine spec: verifying really reaches the controller.
            node.power_state = task.driver.power.get_power_state(task)
            steps = self._plans.driver_steps(job, "verify")
            overrides = self._ctx.config.verify_step_priority_override
            plan = [st for st in steps if overrides.get(step_id(st), st["priority"])]
            for step in sort_steps("verify", plan):
                getattr(task.driver, step["interface"]).execute_verify_step(task, step)
        except Exception as exc:
            job.fire(
                s.FAIL_EVENT,
                last_error=f"Failed to validate power driver interface for node {node.uuid}. "
                f"Error: {describe_exc(exc)}",
            )
            return
        job.fire(s.DONE_EVENT)

    def _operation(
        self,
        job: Job,
        call: Callable[[Task], Any],
        failure: str,
        results: Mapping[Any, str],
    ) -> None:
        """Run one driver operation of a flow and move the node on by its answer.

        The node is saved first (the flow's state is on record before the
        hardware is touched). ``results`` maps what the driver may return to
        the event that follows (``done``, ``wait``); an exception, or any
        other answer, fails the flow with ``failure`` and the reason.
        """
        node = job.node
        job.checkpoint()
        try:
            result = call(job.task)
        except Exception as exc:
            job.fire(s.FAIL_EVENT, last_error=f"{failure}: {describe_exc(exc)}")
            return
        event = results.get(result)
        if event is None:
            job.fire(
                s.FAIL_EVENT,
                last_error=f"{failure}: the driver returned an invalid state {shown(result)} "
                f"for node {node.uuid}",
            )
            return
        job.fire(event)

    def _do_inspect(self, job: Job) -> None:
        self._operation(
            job,
            job.driver.inspect.inspect_hardware,
            f"Failed to inspect hardware of node {job.node.uuid}",
            {s.INSPECTWAIT: s.WAIT_EVENT, s.MANAGEABLE: s.DONE_EVENT, None: s.DONE_EVENT},
        )

    def continue_node_inspect(
        self,
        ident: str,
        inventory: Mapping[str, Any] | None = None,
        plugin_data: Mapping[str, Any] | None = None,
    ) -> Node:
        """An asynchronous inspection reported back; finish it.

        Once the inspect interface took it, the inventory is kept (with
        ``plugin_data``) and the ports the interface asks for are made.
        """
        ident = check_ident(ident)
        for name, given in (("inventory", inventory), ("plugin data", plugin_data)):
            if given is None:
                continue
            if not isinstance(given, dict):
                raise InvalidParameterValue(
                    f"Node {ident}: the {name} must be a dictionary, not {type(given).__name__}",
                    node=ident,
                )
            check_json(given, f"The {name}")
        current = self._ctx.caps.store.get(ident)
        if current.reservation is None:  # held mid-flow: busy (NodeLocked), checked once free
            self._engine.require_state_of(current, s.INSPECTWAIT, "continue inspection")
        with self._reservations.reserved(ident) as job:
            self._engine.require_state_of(job.node, s.INSPECTWAIT, "continue inspection")
            node = job.node
            try:
                result = job.driver.inspect.continue_inspection(
                    job.task, inventory or {}, plugin_data or {}
                )
                if result != s.INSPECTWAIT and inventory is not None:
                    self._keep_inventory(job, inventory, plugin_data or {})
                if result != s.INSPECTWAIT and inventory:
                    self._run_inspection_rules(job, inventory)
            except Exception as exc:
                # As Ironic's inspection error handler: the ramdisk is ended, its boot undone.
                self._engine.call_quietly(job, job.driver.inspect.abort, "inspection clean-up")
                job.fire(
                    s.FAIL_EVENT,
                    last_error=f"Failed to process inspection data of node {node.uuid}: "
                    f"{describe_exc(exc)}",
                )
                return job.node
            if result != s.INSPECTWAIT:
                job.fire(s.DONE_EVENT)
            return job.node

    def _keep_inventory(
        self, job: Job, inventory: Mapping[str, Any], plugin_data: Mapping[str, Any]
    ) -> None:
        """The inventory kept, the ports the inspect interface asks for made, and the node's
        ports changed as it says (keep_ports, update_pxe_enabled)."""
        uuid = job.node.uuid
        self._inventories.keep(uuid, inventory, plugin_data)
        self._inventories.add_ports(uuid, job.driver.inspect.ports_from(job.task, inventory))
        ports = [(p.address, p.pxe_enabled, p.extra) for p in self._inventories.node_ports(uuid)]
        changes = job.driver.inspect.port_changes(job.task, inventory, ports)
        self._inventories.change_ports(uuid, changes)

    def _run_inspection_rules(self, job: Job, inventory: Mapping[str, Any]) -> None:
        """The inspection rules, run on the inventory the agent reported (as Ironic runs
        them); a store that keeps no records has none. A rule's ``fail`` raises."""
        if self._ctx.caps.records is None:
            return
        outcome = self._rules.run_rules(job.node, inventory)
        copy_changes(outcome.node, job.node)

    def _do_adopt(self, job: Job) -> None:
        self._operation(
            job,
            job.driver.deploy.take_over,
            f"Error while attempting to adopt node {job.node.uuid}",
            {None: s.DONE_EVENT},
        )

    def _do_rescue(self, job: Job) -> None:
        self._operation(
            job,
            job.driver.rescue.rescue,
            f"Failed to rescue node {job.node.uuid}",
            {s.RESCUEWAIT: s.WAIT_EVENT, s.RESCUE: s.DONE_EVENT},
        )

    def continue_node_rescue(self, ident: str) -> Node:
        """The rescue ramdisk is up: finish rescuing."""
        ident = check_ident(ident)
        current = self._ctx.caps.store.get(ident)
        if current.reservation is None:  # held mid-flow: busy (NodeLocked), checked once free
            self._engine.require_state_of(current, s.RESCUEWAIT, "continue rescue")
        with self._reservations.reserved(ident) as job:
            self._engine.require_state_of(job.node, s.RESCUEWAIT, "continue rescue")
            job.fire(s.RESUME_EVENT)
            job.fire(s.DONE_EVENT)
            return job.node

    def _do_unrescue(self, job: Job) -> None:
        self._operation(
            job,
            job.driver.rescue.unrescue,
            f"Failed to unrescue node {job.node.uuid}",
            {s.ACTIVE: s.DONE_EVENT, None: s.DONE_EVENT},
        )
        if job.node.provision_state == s.ACTIVE:
            job.node.instance_info.pop("rescue_password", None)

    # -- tear-down, then cleaning ---------------------------------------------------------

    def _do_tear_down(self, job: Job) -> None:
        node, task = job.node, job.task
        job.checkpoint()
        try:
            if not node.disable_power_off:  # such a node stays on (Ironic's rule)
                job.power(s.POWER_OFF)
            task.driver.deploy.tear_down(task)
            task.driver.deploy.clean_up(task)
        except Exception as exc:
            job.fire(s.FAIL_EVENT, last_error=f"Failed to tear down: {describe_exc(exc)}")
            return
        node.instance_info = {}
        node.instance_uuid = None  # as Ironic: an undeployed node is no longer associated
        node.instance_name = None
        node.driver_internal_info.pop(DEPLOY.steps_key, None)
        node.deploy_step = None
        job.fire(s.CLEAN_EVENT)
        self._do_clean(job, None)

    # -- the step phases --------------------------------------------------------------------

    def _do_clean(
        self, job: Job, user_steps: Sequence[Any] | None, *, disable_ramdisk: bool = False
    ) -> None:
        """Cleaning, from the moment the node entered ``cleaning``."""
        node = job.node
        manual = user_steps is not None
        info = node.driver_internal_info
        if not manual and self._plans.skip_automated_clean(node):
            node.clean_step = None
            self._engine.finish_phase(job, CLEAN)
            return
        if (
            not manual
            and node.maintenance
            and not self._ctx.config.allow_provisioning_in_maintenance
        ):
            self._engine.phase_failed(
                job, CLEAN, "Cleaning a node in maintenance mode is not allowed", step=None
            )
            return
        failure = f"Validation of node {node.uuid} for cleaning failed"
        if self._engine.attempt(job, CLEAN, job.driver.power.validate, failure) is FAILED:
            return
        info.pop(CLEAN.index_key, None)
        info["cleaning_disable_ramdisk"] = disable_ramdisk
        node.clean_step = {}
        try:
            info[CLEAN.steps_key] = self._plans.plan_clean(job, user_steps, disable_ramdisk)
        except StepsNotAvailable:
            # Agent-style interfaces know their steps once the ramdisk is up:
            # prepare, wait for it, and plan on continuation.
            info[CLEAN.steps_key] = None
            info["clean_plan_pending"] = {"steps": None if user_steps is None else list(user_steps)}
        except Exception as exc:
            self._engine.phase_failed(
                job, CLEAN, f"Cannot clean node {node.uuid}: {describe_exc(exc)}", step=None
            )
            return
        self._engine.start_steps(job, CLEAN)

    def _do_deploy(self, job: Job) -> None:
        if not job.node.driver_internal_info.get(DEPLOY.steps_key):
            self._engine.phase_failed(
                job, DEPLOY, "No deploy steps returned by the driver", step=None
            )
            return
        self._engine.start_steps(job, DEPLOY)

    def _do_service(
        self, job: Job, user_steps: Sequence[Any], *, disable_ramdisk: bool = False
    ) -> None:
        node = job.node
        info = node.driver_internal_info
        try:
            plan = validate_user_steps(
                "service", self._plans.driver_steps(job, "service"), user_steps,
                disallowed=self._ctx.config.disallow_service_steps,
                disable_ramdisk=disable_ramdisk,
            )  # fmt: skip
        except Exception as exc:
            self._engine.phase_failed(
                job, SERVICE, f"Cannot service node {node.uuid}: {describe_exc(exc)}", step=None
            )
            return
        info[SERVICE.steps_key] = plan
        info.pop(SERVICE.index_key, None)
        info["service_disable_ramdisk"] = disable_ramdisk
        node.service_step = {}
        self._engine.start_steps(job, SERVICE)
