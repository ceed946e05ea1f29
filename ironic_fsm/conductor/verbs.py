"""The verbs: ``do_provisioning_action`` from its arguments to the flow it starts.

A verb is checked in three rounds, cheapest first, so that a refusal
writes nothing and, mostly, locks nothing: its arguments
(:func:`argument_problems`), then the node's state and flags on a plain
read (:meth:`Verbs._precheck_verb`), then again under the reservation,
with the guards. The handler for the verb's event (:data:`Verbs._HANDLERS`)
fires the first transition and spawns the flow.

On a store that takes a reservation in a save
(:attr:`~.reservations.Reservations.can_take`), a verb that starts a flow
(:data:`_TAKEN_BY_FIRST_SAVE`) is decided once, on the copy of the node the
store last wrote (else a read), and its first save takes the reservation
(:meth:`Verbs._provision_taking`): no separate read or reservation. A copy
found stale (the save refused as changed, or a refusal decided on it) is
read again and decided again; a node someone holds is refused with
:class:`~ironic_fsm.exceptions.NodeLocked`, as ever.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NamedTuple

import attrs

from ironic_fsm import history as h
from ironic_fsm import states as s
from ironic_fsm.conductor.common import check_ident, shown, wrong_state
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.engine import DEPLOY, PHASE_BY_STATE, SERVICE, StepEngine
from ironic_fsm.conductor.flows import Flows
from ironic_fsm.conductor.jobs import Job, NotTaken, record_now
from ironic_fsm.conductor.launcher import Launcher
from ironic_fsm.conductor.plans import Plans
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.exceptions import (
    ConcurrentUpdate,
    InvalidParameterValue,
    InvalidState,
    InvalidStateRequested,
    NodeInMaintenance,
    NodeIsRetired,
    NodeProtected,
    TransitionRejected,
)
from ironic_fsm.node import Node
from ironic_fsm.planner import check_requested_steps
from ironic_fsm.steps import Phase
from ironic_fsm.stores import locked_error

__all__ = ["Request", "Verbs", "argument_problems"]

#: Verbs refused in maintenance whatever the configuration says.
_MAINTENANCE_VERBS = frozenset({"clean", "service", "rescue", "unrescue"})


class Request(NamedTuple):
    """What the caller asked for, beyond the node: the verb and its arguments."""

    verb: str
    clean_steps: Any = None
    deploy_steps: Any = None
    service_steps: Any = None
    runbook: Any = None
    disable_ramdisk: Any = False
    rescue_password: Any = None
    configdrive: Any = None


#: What a config drive's JSON form may hold (Ironic's schema; ``vendor_data`` from API 1.59).
_CONFIGDRIVE_KEYS = frozenset({"meta_data", "network_data", "user_data", "vendor_data"})
#: The events whose handler starts a flow and touches no hardware before the flow's first
#: save: on a store that can, that save takes the reservation (see the module's doc).
_TAKEN_BY_FIRST_SAVE = frozenset(
    {
        s.MANAGE_EVENT, s.PROVIDE_EVENT, s.CLEAN_EVENT, s.DEPLOY_EVENT, s.REBUILD_EVENT,
        s.DELETE_EVENT, s.INSPECT_EVENT, s.ADOPT_EVENT, s.RESCUE_EVENT, s.UNRESCUE_EVENT,
        s.SERVICE_EVENT,
    }
)  # fmt: skip
#: How often a verb is decided on a copy found stale before it gives up (ConcurrentUpdate).
_DECISIONS = 3

#: Verbs that need an argument: with none of these, a bare verb has nothing to check.
_VERBS_WITH_ARGUMENTS = frozenset({"clean", "service", "rescue"})


def _value_problems(request: Request) -> list[str]:
    problems = []
    runbook = request.runbook
    if runbook is not None and (type(runbook) is not str or not runbook):
        problems.append(f"runbook must be a runbook's name, not {type(runbook).__name__}")
    if request.disable_ramdisk is not True and request.disable_ramdisk is not False:
        problems.append("disable_ramdisk must be True or False")
    if not _password_ok(request.rescue_password):
        problems.append("rescue_password must be a string without NUL characters")
    problems += _configdrive_problems(request.configdrive)
    requested: tuple[tuple[Phase, Any], ...] = (
        ("clean", request.clean_steps),
        ("service", request.service_steps),
        ("deploy", request.deploy_steps),
    )
    for phase, given in requested:
        if given is not None and isinstance(given, list):
            problems.extend(
                check_requested_steps(
                    phase, given, source=f"{phase}_steps", require_priority=phase == "deploy"
                )
            )
    return problems


def _configdrive_problems(drive: Any) -> list[str]:
    """A config drive is an image (gzipped, base64), its URL, or its JSON form (Ironic's
    schema: the four keys, each an object but ``user_data``)."""
    if drive is None or type(drive) is str:
        return []
    if not isinstance(drive, dict):
        return [f"configdrive must be a string or an object, not {shown(drive)}"]
    problems = [f"configdrive has an unknown key {key!r}" for key in drive if key not in
                _CONFIGDRIVE_KEYS]  # fmt: skip
    for key in ("meta_data", "network_data", "vendor_data"):
        if key in drive and not isinstance(drive[key], dict):
            problems.append(f"configdrive's {key} must be an object, not {shown(drive[key])}")
    user_data = drive.get("user_data")
    if user_data is not None and not isinstance(user_data, (dict, list, str)):
        problems.append(f"configdrive's user_data must be an object, list or string, "
                        f"not {shown(user_data)}")  # fmt: skip
    return problems


def _password_ok(password: Any) -> bool:
    return password is None or (type(password) is str and "\x00" not in password)


def _placement_problems(request: Request) -> list[str]:
    """Arguments given with a verb that has no use for them."""
    verb = request.verb
    password = request.rescue_password if _password_ok(request.rescue_password) else None
    allowed: tuple[tuple[Any, str, tuple[str, ...], str], ...] = (
        (request.clean_steps, "clean_steps", ("clean",), "'clean'"),
        (request.service_steps, "service_steps", ("service",), "'service'"),
        (request.deploy_steps, "deploy_steps", ("active", "deploy", "rebuild"),
         "'active', 'deploy' or 'rebuild'"),
        (password, "rescue_password", ("rescue",), "'rescue'"),
        (request.runbook, "runbook", ("clean", "service"), "'clean' or 'service'"),
        (request.configdrive, "configdrive", ("active", "deploy", "rebuild"),
         "'active', 'deploy' or 'rebuild'"),
    )  # fmt: skip
    return [
        f"{name} may only be given with {verbs}"
        for value, name, accepted, verbs in allowed
        if value is not None and verb not in accepted
    ]


def _steps_or_runbook(phase: str, steps: Any, runbook: Any) -> list[str]:
    """``clean`` and ``service`` take a step list or a runbook: exactly one."""
    name = f"{phase}_steps"
    if steps is not None and runbook is not None:
        return [f'provide either "{name}" or a runbook, not both']
    if steps is None and runbook is None:
        return [f"'{phase}' needs {name} (a list of steps) or a runbook"]
    if steps is not None and (not isinstance(steps, list) or not steps):
        return [f"{name} must be a non-empty list, not {shown(steps)}"]
    return []


def argument_problems(request: Request) -> list[str]:
    """Every problem with a verb's arguments that needs no node, in one list."""
    verb, clean_steps, deploy_steps, service_steps, runbook, disable_ramdisk, password, drive = (
        request
    )
    if (
        clean_steps is None
        and deploy_steps is None
        and service_steps is None
        and runbook is None
        and password is None
        and drive is None
        and disable_ramdisk is False
        and verb not in _VERBS_WITH_ARGUMENTS
    ):
        return []  # the usual bare verb: nothing given, nothing needed
    problems = _value_problems(request) + _placement_problems(request)
    if verb == "clean":
        problems += _steps_or_runbook("clean", request.clean_steps, request.runbook)
    if verb == "service":
        problems += _steps_or_runbook("service", request.service_steps, request.runbook)
    password = request.rescue_password if _password_ok(request.rescue_password) else None
    if verb == "rescue" and (not isinstance(password, str) or not password.strip()):
        problems.append("'rescue' needs a non-blank rescue_password")
    deploy_steps = request.deploy_steps
    if deploy_steps is not None and not isinstance(deploy_steps, list):
        problems.append(f"deploy_steps must be a list, not {shown(deploy_steps)}")
    return problems


def _refuse_in_maintenance(node: Node, verb: str) -> None:
    if node.maintenance:
        raise NodeInMaintenance(
            f"The action {verb!r} can not be performed on node {node.uuid} while it is "
            f"in maintenance mode",
            node=node.uuid,
            verb=verb,
        )


def _refuse_retired(node: Node) -> None:
    if node.retired:
        raise NodeIsRetired(
            f"The providing operation can't be performed on node {node.uuid} because it is retired",
            node=node.uuid,
        )


#: The verbs that run the user's own steps: event and flow target.
_USER_STEP_VERBS: Mapping[str, tuple[str, str]] = {
    "clean": (s.CLEAN_EVENT, s.MANAGEABLE),
    "service": (s.SERVICE_EVENT, s.ACTIVE),
}


def _check_read_version(node: Node, verb: str, read_version: int) -> None:
    """Refuse a verb decided on an older read of the node (one verb per step).

    A verb the node's new state accepts too (``rescue`` in ``rescue``) would
    otherwise be issued again by a caller that read the node before
    another caller's verb.
    """
    if node.version != read_version:
        raise InvalidStateRequested(
            f"Node {node.uuid} changed since reconcile read it; {verb!r} was not issued",
            node=node.uuid,
            verb=verb,
        )


class Verbs:
    """``do_provisioning_action``'s work: Ironic's checks, the guards, then one handler per event.

    The handler starts the verb's flow through the launcher (:data:`_HANDLERS`).
    """

    def __init__(self, ctx: Context, reservations: Reservations, launcher: Launcher,
                 plans: Plans, engine: StepEngine, flows: Flows) -> None:  # fmt: skip
        self._ctx, self._reservations, self._launcher = ctx, reservations, launcher
        self._plans, self._engine, self._flows = plans, engine, flows

    def provision(
        self, ident: str, verb: str, request: Request, *, read_version: int | None = None
    ) -> Node:
        """``do_provisioning_action``'s work; ``read_version`` is the version the caller
        decided on (``reconcile``): a node saved since then is refused, not acted on.
        """
        ident = check_ident(ident)
        if not isinstance(verb, str):
            raise InvalidParameterValue(
                f"Node {ident}: the requested action must be a verb (a string), "
                f"not {type(verb).__name__}",
                node=ident,
            )
        event = self._ctx.lifecycle.verbs.get(verb)
        if event is None:
            raise InvalidStateRequested(
                f"The requested action {verb!r} could not be understood; known verbs: "
                f"{', '.join(sorted(self._ctx.lifecycle.verbs))}",
                node=ident,
                verb=verb,
            )
        problems = argument_problems(request)
        if problems:
            raise InvalidParameterValue(
                f"Node {ident}: invalid arguments for {verb!r}: {'; '.join(problems)}",
                node=ident,
                verb=verb,
            )
        if event in _TAKEN_BY_FIRST_SAVE and self._reservations.can_take:
            return self._provision_taking(ident, verb, event, request, read_version)
        # Refuse before reserving, so that a refused verb writes nothing. A
        # node another conductor holds may be in a passing state: reserving
        # says it is busy (NodeLocked, retryable), and the checks under the
        # reservation decide once it is free.
        current = self._ctx.caps.store.get(ident)
        if current.reservation is None:
            self._check_verb(current, verb, event)
            if read_version is not None:  # reconcile's: no call for the usual verb
                _check_read_version(current, verb, read_version)
            self._precheck_verb(current, request, event)
        with self._reservations.reserved(ident, checked=True) as job:
            self._check_verb(job.node, verb, event)
            if read_version is not None:
                _check_read_version(job.node, verb, read_version)
            if self._ctx.guards:
                self._ask_guards(job.node, verb, event)
            self._HANDLERS.get(event, Verbs._verb_generic)(self, job, request)
            return job.node

    def _provision_taking(
        self, ident: str, verb: str, event: str, request: Request, read_version: int | None
    ) -> Node:
        """:meth:`provision` whose first save takes the reservation (the same checks, in the
        same order, on one copy of the node).

        Guards and ``read_version`` are asked on a fresh read only: a guard's
        refusal is written to history, and reconcile decided on a read of its own.
        """
        fresh = read_version is not None or bool(self._ctx.guards)
        for _ in range(_DECISIONS):
            current, fresh = self._reservations.read(ident, fresh)
            if current.reservation is not None:
                if fresh:
                    raise locked_error(current.uuid, current.reservation)
                fresh = True  # the copy says held: only a read may refuse
                continue
            taking = self._reservations.taking(current)
            try:
                self._check_verb(current, verb, event)
                if read_version is not None:
                    _check_read_version(current, verb, read_version)
                self._precheck_verb(current, request, event)
                with taking as job:
                    if self._ctx.guards:
                        self._ask_guards(job.node, verb, event)
                    self._HANDLERS.get(event, Verbs._verb_generic)(self, job, request)
                    return job.node
            except NotTaken as exc:
                if not isinstance(exc.cause, ConcurrentUpdate):
                    raise exc.cause from None  # held (NodeLocked) or gone, as a reservation says
            except Exception:
                if fresh or not taking.pending:
                    raise
            fresh = True  # decided on a stale copy: read, and decide again
        raise ConcurrentUpdate(
            f"Node {ident} kept changing while {verb!r} was decided on it; nothing was done, "
            "retry it",
            node=ident,
        )

    def _ask_guards(self, node: Node, verb: str, event: str) -> None:
        new_state = self._ctx.lifecycle.next_state(node.provision_state, event)
        for guard in self._ctx.guards:
            reason = guard(attrs.evolve(node), verb, event, new_state)
            if reason:
                message = (
                    f"Node {node.uuid}: {verb!r} ({node.provision_state} -> {new_state}) "
                    f"rejected: {reason}"
                )
                # The node stays as it was; only its history tells of the refusal.
                record_now(self._ctx, node, h.WARNING, h.PROVISIONING, message)
                raise TransitionRejected(message, node=node.uuid, verb=verb, reason=reason)

    def _precheck_verb(self, node: Node, request: Request, event: str) -> None:
        """The handlers' refusals that need no hardware, on an unlocked read.

        They run again under the reservation; finding them here first means
        the usual refusals never lock the node at all.
        """
        verb = request.verb
        if node.maintenance and (
            verb in _MAINTENANCE_VERBS
            or event in (s.DEPLOY_EVENT, s.REBUILD_EVENT)
            or (verb == "provide" and not self._ctx.config.allow_provisioning_in_maintenance)
        ):
            _refuse_in_maintenance(node, verb)
        if verb == "provide" and node.retired:
            _refuse_retired(node)
        if node.protected and (verb == "rebuild" or event == s.DELETE_EVENT):
            raise NodeProtected(
                f"Node {node.uuid} is protected; unset protected before {verb}",
                node=node.uuid,
            )
        if request.runbook is not None and verb in ("clean", "service"):
            self._ctx.registry.driver_for(
                node
            )  # an unknown driver is refused first, as under the lock
            self._plans.runbook_steps(node, request.runbook)
        if event in (s.DEPLOY_EVENT, s.REBUILD_EVENT) and (
            request.deploy_steps or node.instance_info.get("traits")
        ):
            # Only what the caller brought can make the plan fail here.
            job = Job(self._ctx.task_for(node), self._ctx)
            self._plans.plan_deploy(
                node, self._plans.driver_steps(job, "deploy"), request.deploy_steps
            )

    def _check_verb(self, node: Node, verb: str, event: str) -> None:
        lifecycle = self._ctx.lifecycle
        if not lifecycle.accepts(node.provision_state, event):
            lifecycle.allowed_events(node.provision_state)  # an unknown state: InvalidState
            raise wrong_state(
                node,
                f'The requested action "{verb}" can not be performed on node '
                f'"{node.uuid}" while it is in state "{node.provision_state}"',
                verb=verb,
            )

    # Each handler runs with the node reserved and the event known to be
    # accepted by the node's state.

    def _verb_generic(self, job: Job, request: Request) -> None:
        # Events of derived lifecycles (e.g. "retire"): a plain transition.
        job.fire(self._ctx.lifecycle.verbs[request.verb])

    def _verb_manage(self, job: Job, request: Request) -> None:
        if job.node.provision_state == s.ENROLL:
            job.fire(s.MANAGE_EVENT, last_error=None)
            self._flows.start(job, {"flow": "verify"})
        else:
            job.fire(s.MANAGE_EVENT)

    def _verb_provide(self, job: Job, request: Request) -> None:
        node = job.node
        if not self._ctx.config.allow_provisioning_in_maintenance:
            _refuse_in_maintenance(node, "provide")
        _refuse_retired(node)
        if not self._plans.skip_automated_clean(node):
            self._plans.automated_runbook(node)  # refuse now if the configuration cannot be met
        job.fire(s.PROVIDE_EVENT, last_error=None)
        self._flows.start(job, {"flow": "clean", "steps": None})

    def _verb_clean(self, job: Job, request: Request) -> None:
        self._start_requested_steps(job, request, "clean", request.clean_steps)

    def _start_requested_steps(self, job: Job, request: Request, phase: Phase, steps: Any) -> None:
        """``clean`` and ``service``: the user's steps or a runbook's, checked, then the flow."""
        node = job.node
        _refuse_in_maintenance(node, request.verb)
        if request.runbook is not None:
            steps = self._plans.runbook_steps(node, request.runbook)
        self._plans.check_disallowed(node, phase, steps)
        self._plans.check_requested(job, phase, steps, request.disable_ramdisk)
        event, target = _USER_STEP_VERBS[phase]
        job.fire(event, target_state=target, last_error=None)
        flow = {"flow": phase, "steps": list(steps), "disable_ramdisk": request.disable_ramdisk}
        self._flows.start(job, flow)

    def _verb_deploy(self, job: Job, request: Request) -> None:
        node, verb = job.node, request.verb
        if node.maintenance:
            _refuse_in_maintenance(node, verb)
        if verb == "rebuild" and node.protected:
            raise NodeProtected(
                f"Node {node.uuid} is protected and cannot be rebuilt", node=node.uuid
            )
        self._flows.validate_interface(job, "power")
        self._flows.validate_interface(job, "deploy")
        plan = self._plans.deploy_plan(job, request.deploy_steps)
        if request.configdrive is not None:  # kept as given; an object is built at write time
            node.instance_info["configdrive"] = request.configdrive
        job.fire(s.REBUILD_EVENT if verb == "rebuild" else s.DEPLOY_EVENT, last_error=None)
        node.driver_internal_info[DEPLOY.steps_key] = plan
        node.driver_internal_info.pop(DEPLOY.index_key, None)
        node.deploy_step = {}
        self._flows.start(job, {"flow": "deploy"})

    def _verb_delete(self, job: Job, request: Request) -> None:
        node = job.node
        if node.protected:
            raise NodeProtected(
                f"Node {node.uuid} is protected; unset protected before undeploying",
                node=node.uuid,
            )
        job.fire(s.DELETE_EVENT, last_error=None)
        self._flows.start(job, {"flow": "tear_down"})

    def _verb_inspect(self, job: Job, request: Request) -> None:
        self._flows.validate_interface(job, "inspect")
        job.fire(s.INSPECT_EVENT, last_error=None)
        self._flows.start(job, {"flow": "inspect"})

    def _verb_adopt(self, job: Job, request: Request) -> None:
        job.fire(s.ADOPT_EVENT, last_error=None)
        self._flows.start(job, {"flow": "adopt"})

    def _verb_rescue(self, job: Job, request: Request) -> None:
        _refuse_in_maintenance(job.node, "rescue")
        self._flows.validate_interface(job, "rescue")
        job.node.instance_info["rescue_password"] = request.rescue_password
        job.fire(s.RESCUE_EVENT, last_error=None)
        self._flows.start(job, {"flow": "rescue"})

    def _verb_unrescue(self, job: Job, request: Request) -> None:
        _refuse_in_maintenance(job.node, "unrescue")
        job.fire(s.UNRESCUE_EVENT, last_error=None)
        self._flows.start(job, {"flow": "unrescue"})

    def _verb_service(self, job: Job, request: Request) -> None:
        self._start_requested_steps(job, request, "service", request.service_steps)

    def _verb_unhold(self, job: Job, request: Request) -> None:
        phase = PHASE_BY_STATE[job.node.provision_state]
        job.fire(s.UNHOLD_EVENT)
        # A hold is a pause in the plan, not a wait for hardware: go on.
        self._launcher.spawn(
            job, lambda j: self._engine.continue_steps(j, phase), queued={"flow": "continue"}
        )

    def _verb_abort(self, job: Job, request: Request) -> None:
        node = job.node
        state = node.provision_state
        phase = PHASE_BY_STATE.get(state)
        if phase is not None:
            self._engine.abort_steps(job, phase)
        elif state == s.SERVICEFAIL:
            if node.maintenance:
                raise InvalidState(
                    f'Can not abort service on node "{node.uuid}" while it is in maintenance '
                    "mode; unset maintenance first",
                    node=node.uuid,
                    state=state,
                )
            self._engine.finish_abort(job, SERVICE, None)
        elif state == s.RESCUEWAIT:
            node.instance_info.pop("rescue_password", None)
            job.fire(s.ABORT_EVENT)
            job.checkpoint()
            self._engine.call_quietly(job, job.driver.rescue.clean_up, "rescue clean-up")
        elif state == s.INSPECTWAIT:
            job.call("inspect", "abort")
            job.fire(s.ABORT_EVENT, last_error="Inspection was aborted by request.")

    #: The handler of each event; events of derived lifecycles get ``_verb_generic``.
    _HANDLERS: ClassVar[Mapping[str, Callable[[Verbs, Job, Request], None]]] = {
        s.MANAGE_EVENT: _verb_manage,
        s.PROVIDE_EVENT: _verb_provide,
        s.CLEAN_EVENT: _verb_clean,
        s.DEPLOY_EVENT: _verb_deploy,
        s.REBUILD_EVENT: _verb_deploy,
        s.DELETE_EVENT: _verb_delete,
        s.INSPECT_EVENT: _verb_inspect,
        s.ADOPT_EVENT: _verb_adopt,
        s.RESCUE_EVENT: _verb_rescue,
        s.UNRESCUE_EVENT: _verb_unrescue,
        s.SERVICE_EVENT: _verb_service,
        s.UNHOLD_EVENT: _verb_unhold,
        s.ABORT_EVENT: _verb_abort,
    }
