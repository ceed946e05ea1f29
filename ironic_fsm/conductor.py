"""The conductor: takes verbs, drives nodes through the lifecycle, runs steps.

The conductor is the only part of ironic_fsm that does I/O: it reads and
writes the store and calls hardware interfaces. Without an ``executor`` it
works synchronously: a verb returns once the node has settled in a stable,
wait, hold or failure state. With an executor (anything with
``submit(fn, *args)``, such as :class:`concurrent.futures.ThreadPoolExecutor`)
the first transition happens in the caller and the rest in the executor.

A node is reserved in the store for the whole of an operation; a node that
is busy raises :class:`~ironic_fsm.exceptions.NodeLocked`. The node's state
and current step are saved before each step starts and after it ends, so
:meth:`Conductor.recover` can resume an interrupted flow at its step.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import re
import reprlib
import uuid as _uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any, Final, Protocol

import attrs

from ironic_fsm import states as s
from ironic_fsm.config import Config
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
    InvalidParameterValue,
    InvalidState,
    InvalidStateRequested,
    IronicFSMError,
    NodeInMaintenance,
    NodeIsRetired,
    NodeNotFound,
    NodeProtected,
    StepFailed,
    StepNotAllowed,
    StepsNotAvailable,
    StoreError,
    TransitionRejected,
)
from ironic_fsm.hardware import HardwareType, load_hardware_type
from ironic_fsm.machine import LIFECYCLE, Lifecycle
from ironic_fsm.masking import mask_secrets, scrub, secret_values
from ironic_fsm.node import (
    INTERFACE_KINDS,
    NODE_FIELDS,
    Node,
    check_field,
    check_json,
    is_uuid_like,
)
from ironic_fsm.planner import (
    check_priority_conflicts,
    check_requested_steps,
    driver_error,
    gather_steps,
    plan_automated_clean_for,
    plan_deploy,
    sort_steps,
    validate_user_steps,
)
from ironic_fsm.steps import RESERVED_STEPS, Phase, step_id
from ironic_fsm.stores import MemoryStore, Store
from ironic_fsm.task import Task

__all__ = ["Conductor", "Guard", "Listener"]

LOG = logging.getLogger(__name__)

#: A listener hears every :class:`~ironic_fsm.events.Event`.
Listener = Callable[[Event], None]


class Guard(Protocol):
    """Vetoes a user-requested transition by returning a reason (``None`` allows it)."""

    def __call__(self, node: Node, verb: str, event: str, new_state: str) -> str | None: ...


class _Executor(Protocol):
    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Any: ...


_UNSET: Final[Any] = object()

# Fields users may not set through update_node: the lifecycle owns them.
_READ_ONLY_FIELDS: Final = frozenset(
    {
        "uuid", "provision_state", "target_provision_state", "reservation", "version",
        "created_at", "updated_at", "provision_updated_at", "clean_step", "deploy_step",
        "service_step", "power_state", "target_power_state", "driver_internal_info", "fault",
    }
)  # fmt: skip


@attrs.frozen
class _PhaseInfo:
    """Where a step phase keeps its bookkeeping."""

    name: Phase
    working: str
    wait: str
    hold: str
    fail: str
    step_field: str
    steps_key: str
    index_key: str
    skip_key: str
    wait_until_key: str
    timeout_option: str
    fault: str | None


_CLEAN: Final = _PhaseInfo(
    "clean", s.CLEANING, s.CLEANWAIT, s.CLEANHOLD, s.CLEANFAIL, "clean_step", "clean_steps",
    "clean_step_index", "skip_current_clean_step", "clean_wait_until", "clean_callback_timeout",
    "clean failure",
)  # fmt: skip
_DEPLOY: Final = _PhaseInfo(
    "deploy", s.DEPLOYING, s.DEPLOYWAIT, s.DEPLOYHOLD, s.DEPLOYFAIL, "deploy_step",
    "deploy_steps", "deploy_step_index", "skip_current_deploy_step", "deploy_wait_until",
    "deploy_callback_timeout", None,
)  # fmt: skip
_SERVICE: Final = _PhaseInfo(
    "service", s.SERVICING, s.SERVICEWAIT, s.SERVICEHOLD, s.SERVICEFAIL, "service_step",
    "service_steps", "service_step_index", "skip_current_service_step", "service_wait_until",
    "service_callback_timeout", "service failure",
)  # fmt: skip
_PHASE_BY_STATE: Final = {
    state: phase
    for phase in (_CLEAN, _DEPLOY, _SERVICE)
    for state in (phase.working, phase.wait, phase.hold)
}

# States in which the node is busy with a flow: no power changes, no verbs
# beyond those of the matrix.
_BUSY_STATES: Final = s.UNSTABLE_STATES | s.HOLD_STATES


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def _scrub(node: Node, text: str) -> str:
    """``text`` without any secret value of the node's driver_info or instance_info.

    NUL characters go too: no database stores them, and free text from a
    driver must never make a record unsaveable.
    """
    text = scrub(text, secret_values(node.driver_info, node.instance_info))
    text = _mention_node_once(node.uuid, text)
    return text.replace("\x00", "\\x00") if "\x00" in text else text


def _mention_node_once(uuid: str, text: str) -> str:
    """``text`` naming the node ``uuid`` at most once.

    Messages are built in layers (a flow's prefix around a driver's or a
    step's error), and each layer likes to say which node it is about.
    The first mention stays; later ones are folded away.
    """
    first = text.find(uuid)
    if first < 0 or text.find(uuid, first + len(uuid)) < 0:
        return text
    head, tail = text[: first + len(uuid)], text[first + len(uuid) :]
    quoted = re.escape(uuid)
    for pattern, replacement in (
        (rf"[Nn]ode \"?{quoted}\"?: ", ""),
        (rf"\s+(?:on|of|for|from|to) [Nn]ode \"?{quoted}\"?", ""),
        (rf"[Nn]ode \"?{quoted}\"?", "the node"),
        (quoted, "the node"),
    ):
        tail = re.sub(pattern, replacement, tail)
    return head + tail


def _driver_call(task: Task, kind: str, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``task.driver.<kind>.<method>(task, ...)``; foreign errors become DriverError.

    Third-party interfaces raise whatever they like, often with the
    credentials they were given in the text: callers get one typed,
    scrubbed error, with the original chained.
    """
    try:
        return getattr(getattr(task.driver, kind), method)(task, *args, **kwargs)
    except IronicFSMError:
        raise
    except Exception as exc:
        raise driver_error(exc, task.node, kind, method) from exc


def _wait_is_over(wait_until: object, now: datetime) -> bool:
    """Whether a ``wait`` step's recorded end has passed; an unreadable one has.

    A driver may have overwritten the record; one bad value must neither
    stall the node forever nor stop the periodic check for every other node.
    """
    try:
        return datetime.fromisoformat(wait_until) <= now  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True


def _shown(value: object) -> str:
    """A short, safe rendering of a bad argument (it may be huge, deep or secret)."""
    if isinstance(value, (list, dict, tuple, set)):
        return f"a {type(value).__name__} of {len(value)} item(s)" if value else repr(value)
    return reprlib.repr(value)


def _check_ident(ident: object) -> str:
    """Refuse an identifier that cannot name a node, before any store sees it.

    A UUID in another spelling (upper case, braces) is put in canonical
    form: names cannot look like UUIDs, so nothing else could be meant.
    """
    if type(ident) is not str or not ident or len(ident) > 255 or "\x00" in ident:
        shown = ident if type(ident) is str and len(ident) <= 64 else type(ident).__name__
        raise InvalidParameterValue(
            f"A node is named by its UUID or name (a string of 1 to 255 characters without "
            f"NUL), not {shown!r}",
            node=None,
        )
    if (len(ident) != 36 or not ident.islower()) and is_uuid_like(ident):
        return str(_uuid.UUID(ident))
    return ident


def _refuse_steps(ident: str, phase: Phase, steps: Any) -> None:
    """Refuse a step list no driver could accept (see ``check_requested_steps``)."""
    problems = check_requested_steps(
        phase, steps, source=f"{phase}_steps", require_priority=phase == "deploy"
    )
    if problems:
        raise InvalidParameterValue(
            f"Node {ident}: invalid {phase} steps: {'; '.join(problems)}", node=ident
        )


def _process_start(pid: int) -> str | None:
    """The start time of a process of this host (clock ticks since boot), if known."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def _process_alive(pid: int, started: str | None = None) -> bool:
    """Whether a process of this host still runs.

    A zombie counts as gone, and so does a process whose start time differs
    from the recorded one: its PID was reused (after a reboot, say).
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return True
    if fields and fields[0] == "Z":
        return False
    return started is None or len(fields) < 20 or fields[19] == started


def _describe_exc(exc: BaseException) -> str:
    if isinstance(exc, IronicFSMError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


class Conductor:
    """Drives nodes through Ironic's lifecycle.

    Args:
        store: Where nodes live; ``None`` means a new :class:`MemoryStore`.
        config: Operator settings; ``None`` means Ironic's defaults.
        listeners: Callables that receive every :class:`~ironic_fsm.events.Event`.
        clock: Returns the current time as an aware UTC datetime; injected
            so tests and simulations control time.
        executor: Runs long work in the background (``submit(fn, *args)``);
            ``None`` runs everything in the calling thread.
        lifecycle: The state machine; :data:`~ironic_fsm.LIFECYCLE` or one
            derived from it.
        guards: Callables that may veto user-requested transitions.
    """

    def __init__(
        self,
        store: Store | None = None,
        config: Config | None = None,
        listeners: Iterable[Listener] = (),
        clock: Callable[[], datetime] | None = None,
        executor: _Executor | None = None,
        *,
        lifecycle: Lifecycle = LIFECYCLE,
        guards: Iterable[Guard] = (),
    ) -> None:
        self.store: Store = store if store is not None else MemoryStore()
        self.config = config if config is not None else Config()
        self.lifecycle = lifecycle
        self._listeners: list[Listener] = list(listeners)
        self._guards: list[Guard] = list(guards)
        self._clock = clock or _utcnow
        self._executor = executor
        self._hardware: dict[str, HardwareType] = {}
        self._templates: dict[str, list[dict[str, Any]]] = {}
        self._runbooks: dict[str, tuple[list[dict[str, Any]], frozenset[str]]] = {}
        #: This conductor's identity in reservations: host, process and instance.
        # The token carries the process start time, so that a reused PID is
        # not mistaken for this process after it is gone.
        started = _process_start(os.getpid()) or "0"
        self.holder = f"{self.config.host}:{os.getpid()}:{started}-{_uuid.uuid4().hex[:8]}"

    # -- registration ---------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        """Start sending events to ``listener``."""
        self._listeners.append(listener)

    def add_guard(self, guard: Guard) -> None:
        """Let ``guard`` veto user-requested transitions."""
        self._guards.append(guard)

    def register_hardware_type(self, name: str, hardware_type: HardwareType) -> None:
        """Make ``hardware_type`` available to nodes whose ``driver`` is ``name``.

        Raises:
            InvalidParameterValue: two enabled clean steps of one interface
                share a priority (after the operator's overrides).
        """
        if not isinstance(hardware_type, HardwareType):
            raise InvalidParameterValue(
                f"register_hardware_type({name!r}, ...) needs a HardwareType, "
                f"got {type(hardware_type).__name__}"
            )
        self._check_hardware_type(name, hardware_type)
        self._hardware[name] = hardware_type

    def _check_hardware_type(self, name: str, hardware_type: HardwareType) -> None:
        for kind, iface in hardware_type.interfaces():
            # Only declared steps can be checked before a node exists.
            declared = [info.as_dict(kind) for info in iface.step_definitions["clean"]]
            check_priority_conflicts(
                "clean",
                declared,
                overrides=self.config.clean_step_priority_override,
                owner=f"Hardware type {name!r}",
            )

    def _hardware_type(self, name: str) -> HardwareType:
        hardware_type = self._hardware.get(name)
        if hardware_type is None:
            hardware_type = load_hardware_type(name)
            self._check_hardware_type(name, hardware_type)
            self._hardware[name] = hardware_type
        return hardware_type

    def _driver_for(self, node: Node) -> HardwareType:
        hardware_type = self._hardware_type(node.driver)
        choices = {kind: node.interface_name(kind) for kind in INTERFACE_KINDS}
        return hardware_type.select(choices) if any(choices.values()) else hardware_type

    def add_deploy_template(self, name: str, steps: Sequence[Mapping[str, Any]]) -> None:
        """A named set of deploy steps, applied to nodes whose instance traits name it.

        Each step is ``{'interface', 'step', 'args', 'priority'}``.
        """
        if not isinstance(name, str) or not name:
            raise InvalidParameterValue(
                f"Deploy template name must be a string, not {_shown(name)}"
            )
        problems = check_requested_steps(
            "deploy", steps, source=f"deploy template {name}", require_priority=True
        )
        if problems:
            raise InvalidParameterValue(
                f"Invalid deploy template {name!r}: {'; '.join(problems)}", problems=problems
            )
        self._templates[name] = [dict(step) for step in steps]

    def add_runbook(
        self, name: str, steps: Sequence[Mapping[str, Any]], traits: Iterable[str] = ()
    ) -> None:
        """A named list of steps for manual cleaning or servicing.

        A runbook may be used on a node that carries one of ``traits``
        (or, with no traits, a node that carries the runbook's name as a trait).
        """
        if not isinstance(name, str) or not name:
            raise InvalidParameterValue(f"Runbook name must be a string, not {_shown(name)}")
        problems = check_requested_steps("clean", steps, source=f"runbook {name}")
        if not isinstance(traits, (list, tuple, set, frozenset)) or not all(
            type(trait) is str and trait for trait in traits
        ):
            problems.append(f"the traits of runbook {name} must be a list of trait names")
        if problems:
            raise InvalidParameterValue(
                f"Invalid runbook {name!r}: {'; '.join(problems)}", problems=problems
            )
        self._runbooks[name] = ([dict(step) for step in steps], frozenset(traits))

    # -- plumbing -------------------------------------------------------------------

    def _now(self) -> datetime:
        return self._clock()

    def _emit(self, event: Event) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                LOG.exception(
                    "Listener %r failed on %s for node %s", listener, event.name, event.node
                )

    def _checkpoint(self, task: Task) -> None:
        """Persist the node now, then tell listeners what led here.

        The conductor saves at checkpoints only: before it touches hardware,
        before each step starts, and when it releases the node. Events wait
        for the save that records them.
        """
        node = task.node
        node.updated_at = self._now()
        if node.last_error or node.maintenance_reason:
            # A last line of defence: no secret reaches the store in free text.
            if node.last_error:
                node.last_error = _scrub(node, node.last_error)
            if node.maintenance_reason:
                node.maintenance_reason = _scrub(node, node.maintenance_reason)
        node.check_types()
        self.store.save(node)
        pending = task._pending_events
        if pending:
            task._pending_events = []
            for event in pending:
                self._emit(event)

    def _process(
        self,
        task: Task,
        event: str,
        *,
        target_state: str | None = None,
        last_error: Any = _UNSET,
    ) -> None:
        """Fire ``event`` on the task's node; the next checkpoint saves and announces it."""
        node = task.node
        previous = node.provision_state
        node.provision_state, node.target_provision_state = self.lifecycle.advance(
            previous, node.target_provision_state, event, target_state
        )
        node.provision_updated_at = self._now()
        if last_error is not _UNSET:
            node.last_error = None if last_error is None else _scrub(node, last_error)
        state = node.provision_state
        if event == s.FAIL_EVENT or state in s.FAILURE_STATES or state == s.ERROR:
            name = PROVISION_ERROR
        elif self.lifecycle.is_stable(state):
            name = PROVISION_END
        else:
            name = PROVISION_START
        if self._listeners:
            task._pending_events.append(
                Event(
                    name=name,
                    node=node.uuid,
                    previous_state=previous,
                    event=event,
                    state=state,
                    target=node.target_provision_state,
                    error=node.last_error if name == PROVISION_ERROR else None,
                    timestamp=node.provision_updated_at,
                )
            )

    def _step_event(
        self, name: str, task: Task, step: Mapping[str, Any], error: str | None = None
    ) -> None:
        if not self._listeners:
            return
        node = task.node
        task._pending_events.append(
            Event(
                name=name,
                node=node.uuid,
                previous_state=node.provision_state,
                event=None,
                state=node.provision_state,
                target=node.target_provision_state,
                step=mask_secrets(
                    {
                        "interface": step["interface"],
                        "step": step["step"],
                        "args": step.get("args", {}),
                    }
                ),
                error=error,
                timestamp=self._now(),
            )
        )

    @contextmanager
    def _reserved(self, ident: str) -> Iterator[Task]:
        """Reserve the node and yield a task; on the way out, save and release.

        If the body raises, the node's in-memory changes are dropped and the
        reservation is simply released: a refused request changes nothing.
        """
        node = self.store.reserve(_check_ident(ident), self.holder)
        try:
            task = Task(node=node, driver=self._driver_for(node), config=self.config)
            yield task
        except BaseException:
            self._drop_reservation(node.uuid)
            raise
        self._release(task)

    def _drop_reservation(self, uuid: str) -> None:
        """Release our reservation without saving; never masks the error being handled."""
        try:
            self.store.release(uuid, self.holder)
        except NodeNotFound:
            pass
        except BaseException:
            LOG.exception("Node %s: could not release the reservation", uuid)

    def _release(self, task: Task) -> None:
        """Clear our reservation in the same write as the node's final state.

        If that write fails, the reservation is still released and the
        failure is raised: an unsaved result is never reported as done.
        """
        if task._detached:
            return
        node = task.node
        node.reservation = None
        try:
            self._checkpoint(task)
        except BaseException as exc:
            self._drop_reservation(node.uuid)
            if isinstance(exc, Exception) and not isinstance(exc, IronicFSMError):
                raise StoreError(
                    f"Node {node.uuid}: the store could not save the node: {_describe_exc(exc)}",
                    node=node.uuid,
                ) from exc
            raise

    def _spawn(self, task: Task, work: Callable[[Task], None]) -> None:
        """Run ``work`` now, or in the executor; the reservation passes along."""
        if self._executor is None:
            self._guarded(task, work)
            return
        self._checkpoint(task)  # the caller sees the first transition saved
        worker = Task(node=task.node, driver=task.driver, config=task.config)
        task.node = attrs.evolve(task.node)
        task._detached = True

        def run() -> None:
            try:
                self._guarded(worker, work)
            finally:
                try:
                    self._release(worker)
                except Exception:
                    LOG.exception("Node %s: background work ended unsaved", worker.node.uuid)

        self._executor.submit(run)

    def _guarded(self, task: Task, work: Callable[[Task], None]) -> None:
        """Run a flow; a bug in it fails the node instead of leaving it stuck.

        A flow whose driver assigned a field a value the record cannot hold
        fails too, from the last saved copy of the node: the failure state
        is what gets saved, never the bad value.
        """
        try:
            work(task)
            task.node.check_types()  # what the final save will need
        except Exception as exc:
            try:
                task.node.check_types()
            except InvalidParameterValue:
                task.node = self.store.get(task.node.uuid)  # still reserved by us
                task._pending_events = []  # they told of changes now dropped
            node = task.node
            message = _scrub(
                node,
                f"Unexpected error on node {node.uuid} in {node.provision_state}: "
                + _describe_exc(exc),
            )
            LOG.error("%s", message)
            node.last_error = message
            if s.FAIL_EVENT in self.lifecycle.allowed_events(node.provision_state):
                self._process(task, s.FAIL_EVENT)

    # -- nodes ----------------------------------------------------------------------------

    def create_node(self, **fields: Any) -> Node:
        """Enroll a node; any :class:`~ironic_fsm.Node` field may be given.

        ``provision_state`` may be given to import an existing record; it
        defaults to ``enroll``.

        Raises:
            InvalidParameterValue: an unknown field, an unknown state, a
                duplicate UUID or name.
            DriverNotFound: the driver is neither registered nor installed.
        """
        unknown = sorted(set(fields) - set(NODE_FIELDS))
        if unknown:
            raise InvalidParameterValue(
                f"Unknown node field(s): {', '.join(unknown)}", fields=unknown
            )
        node = Node(**fields)  # checks every field's type and shape
        for field in ("provision_state", "target_provision_state"):
            value = getattr(node, field)
            if value is not None and value not in self.lifecycle.states:
                raise InvalidParameterValue(
                    f"Node {node.uuid}: unknown {field.replace('_', ' ')} {value!r}",
                    node=node.uuid,
                    state=value,
                )
        self._driver_for(node)
        now = self._now()
        node.created_at = node.created_at or now
        node.updated_at = now
        node.provision_updated_at = node.provision_updated_at or now
        node.reservation = None
        self.store.create(node)
        return node

    def get_node(self, ident: str) -> Node:
        """The node with this UUID or name."""
        return self.store.get(_check_ident(ident))

    def list_nodes(self, **filters: Any) -> list[Node]:
        """Nodes whose fields equal the filters (``retired``, ``maintenance``, ...).

        A filter no node could ever match (an unknown field, a value of the
        wrong type, a state this lifecycle does not have) is an error, not
        an empty list.
        """
        checked = {}
        for key, value in filters.items():
            if key not in NODE_FIELDS:
                raise InvalidParameterValue(
                    f"Cannot filter nodes on unknown field {key!r}", fields=[key]
                )
            checked[key] = check_field(key, value)
        for key in ("provision_state", "target_provision_state"):
            value = checked.get(key)
            if value is not None and value not in self.lifecycle.states:
                raise InvalidParameterValue(
                    f"Cannot filter nodes on {key} {value!r}: not a state of this lifecycle",
                    fields=[key],
                )
        return self.store.list(**checked)

    def update_node(self, ident: str, **fields: Any) -> Node:
        """Change user-settable fields, with Ironic's rules for retirement and protection.

        Raises:
            InvalidParameterValue: unknown or lifecycle-owned fields;
                ``retired_reason`` without ``retired``; ``protected_reason``
                without ``protected``.
            InvalidState: ``retired`` set on an ``available`` node, or
                ``protected`` set outside ``active``.
            NodeLocked: the node is busy.
        """
        ident = _check_ident(ident)
        bad = sorted(set(fields) - set(NODE_FIELDS))
        if bad:
            raise InvalidParameterValue(f"Unknown node field(s): {', '.join(bad)}", fields=bad)
        owned = sorted(set(fields) & _READ_ONLY_FIELDS)
        if owned:
            raise InvalidParameterValue(
                f"Node {ident}: field(s) {', '.join(owned)} are managed by the lifecycle "
                "and cannot be updated",
                node=ident,
                fields=owned,
            )
        fields = {key: check_field(key, value) for key, value in fields.items()}
        # Every refusal is found on a plain read first, so that a refused
        # update never locks the node; the checks run again under the lock.
        current = self.store.get(ident)
        self._check_update(current, dict(fields))
        if fields.get("name") is not None and fields["name"] != current.name:
            try:
                holder = self.store.get(fields["name"])
            except NodeNotFound:
                pass
            else:
                raise InvalidParameterValue(
                    f"Node {current.uuid}: the name {fields['name']!r} is taken by node "
                    f"{holder.uuid}",
                    node=current.uuid,
                )
        with self._reserved(current.uuid) as task:
            self._apply_update(task, fields)
            return task.node

    def _check_update(self, node: Node, fields: dict[str, Any]) -> HardwareType | None:
        """Refuse what Ironic refuses; return the node's new hardware if it changes.

        ``fields`` gains the reasons that an update clears implicitly.
        """
        if "retired" in fields:
            retired = fields["retired"]
            if not isinstance(retired, bool):
                raise InvalidParameterValue(f"Node {node.uuid}: retired must be True or False")
            if retired and not node.retired and node.provision_state == s.AVAILABLE:
                raise InvalidState(
                    f"Node {node.uuid} can not have 'retired' set in provision state "
                    f"'available'; move it to manageable first",
                    node=node.uuid,
                    state=node.provision_state,
                )
            if not retired:
                fields.setdefault("retired_reason", None)
        if fields.get("retired_reason") is not None and not fields.get("retired", node.retired):
            raise InvalidParameterValue(
                f"Node {node.uuid}: retired_reason can only be set when retired is True",
                node=node.uuid,
            )
        if "protected" in fields:
            protected = fields["protected"]
            if not isinstance(protected, bool):
                raise InvalidParameterValue(f"Node {node.uuid}: protected must be True or False")
            if protected and node.provision_state != s.ACTIVE:
                raise InvalidState(
                    f"Node {node.uuid}: protected can only be set in provision state 'active', "
                    f"not {node.provision_state!r}",
                    node=node.uuid,
                    state=node.provision_state,
                )
            if not protected:
                fields.setdefault("protected_reason", None)
        if fields.get("protected_reason") is not None and not fields.get(
            "protected", node.protected
        ):
            raise InvalidParameterValue(
                f"Node {node.uuid}: protected_reason can only be set when protected is True",
                node=node.uuid,
            )
        if "maintenance" in fields and fields["maintenance"] is False:
            fields.setdefault("maintenance_reason", None)
        if "driver" in fields or any(f"{kind}_interface" in fields for kind in INTERFACE_KINDS):
            return self._driver_for(attrs.evolve(node, **fields))
        return None

    def _apply_update(self, task: Task, fields: dict[str, Any]) -> None:
        node = task.node
        driver = self._check_update(node, fields)
        if driver is not None:
            task.driver = driver
        if fields.get("maintenance") is False:
            node.fault = None
        for key, value in fields.items():
            setattr(node, key, value)

    def delete_node(self, ident: str) -> None:
        """Remove a node record; allowed in manageable, enroll, adopt failed (and available).

        Raises:
            InvalidStateRequested: the node is in another state.
            NodeProtected: the node is protected.
        """
        ident = _check_ident(ident)
        self._check_delete(self.store.get(ident))
        with self._reserved(ident) as task:
            self._check_delete(task.node)
            self.store.delete(task.node.uuid)
            task._detached = True  # nothing left to release

    def _check_delete(self, node: Node) -> None:
        allowed = set(s.DELETE_ALLOWED_STATES)
        if self.config.allow_deleting_available_nodes:
            allowed.add(s.AVAILABLE)
        if node.protected:
            raise NodeProtected(
                f"Node {node.uuid} is protected and cannot be deleted", node=node.uuid
            )
        if node.provision_state not in allowed:
            raise InvalidStateRequested(
                f"Node {node.uuid} cannot be deleted in provision state "
                f"{node.provision_state!r}; allowed in: {', '.join(sorted(allowed))}",
                node=node.uuid,
                state=node.provision_state,
            )

    # -- power -------------------------------------------------------------------------------

    def set_power_state(self, ident: str, power_state: str, timeout: float | None = None) -> Node:
        """Power the node on or off, or reboot it, through its power interface.

        Refused while a flow is running (cleaning, deploying, waiting,
        holding, ...); allowed in stable and failure states, so that an
        operator can act on a node in ``clean failed``.
        """
        ident = _check_ident(ident)
        if not isinstance(power_state, str) or power_state not in s.POWER_STATES:
            shown = power_state if isinstance(power_state, str) else type(power_state).__name__
            raise InvalidParameterValue(
                f"Node {ident}: unknown power state {shown!r}; expected one of "
                f"{', '.join(sorted(s.POWER_STATES))}",
                node=ident,
            )
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise InvalidParameterValue(
                f"Node {ident}: the power timeout must be a positive number of seconds, "
                f"not {_shown(timeout)}",
                node=ident,
            )
        self._check_power(self.store.get(ident))
        with self._reserved(ident) as task:
            self._check_power(task.node)
            self._power(task, power_state, timeout)
            return task.node

    def _check_power(self, node: Node) -> None:
        if node.provision_state in _BUSY_STATES:
            raise InvalidStateRequested(
                f"Node {node.uuid}: power state cannot be changed while the node is in "
                f"provision state {node.provision_state!r}",
                node=node.uuid,
                state=node.provision_state,
            )

    def _power(self, task: Task, power_state: str, timeout: float | None = None) -> None:
        node = task.node
        node.target_power_state = (
            s.POWER_ON
            if power_state in (s.REBOOT, s.SOFT_REBOOT)
            else (s.POWER_OFF if power_state == s.SOFT_POWER_OFF else power_state)
        )
        try:
            if power_state == s.REBOOT:
                _driver_call(task, "power", "reboot", timeout=timeout)
            else:
                _driver_call(task, "power", "set_power_state", power_state, timeout=timeout)
            node.power_state = node.target_power_state
        finally:
            node.target_power_state = None

    # -- steps queries ----------------------------------------------------------------------

    def _driver_steps(self, task: Task, phase: Phase) -> list[dict[str, Any]]:
        return gather_steps(phase, task.driver, task)

    def _steps_for(
        self, ident: str, phase: Phase, *, fresh: bool = False
    ) -> tuple[Node, list[dict[str, Any]]]:
        node = self.store.get(_check_ident(ident))
        task = Task(node=node, driver=self._driver_for(node), config=self.config)
        return node, gather_steps(phase, task.driver, task, fresh=fresh)

    def get_clean_steps(self, ident: str, min_priority: int = 0) -> list[dict[str, Any]]:
        """The node's clean steps (operator overrides applied), highest priority first."""
        if isinstance(min_priority, bool) or not isinstance(min_priority, int):
            raise InvalidParameterValue(
                f"Node {ident}: min_priority must be an integer, not {_shown(min_priority)}",
                node=ident,
            )
        _, steps = self._steps_for(ident, "clean", fresh=True)
        overrides = self.config.clean_step_priority_override
        for step in steps:
            step["priority"] = overrides.get(step_id(step), step["priority"])
        return [st for st in sort_steps("clean", steps) if st["priority"] >= min_priority]

    def get_deploy_steps(self, ident: str) -> list[dict[str, Any]]:
        """The node's deploy steps, highest priority first."""
        _, steps = self._steps_for(ident, "deploy", fresh=True)
        return sort_steps("deploy", steps)

    def get_service_steps(self, ident: str) -> list[dict[str, Any]]:
        """The node's service steps, highest priority first."""
        _, steps = self._steps_for(ident, "service", fresh=True)
        return sort_steps("service", steps)

    def validate_clean_steps(
        self, ident: str, clean_steps: Sequence[Any], disable_ramdisk: bool = False
    ) -> list[dict[str, Any]]:
        """Check a manual clean request without changing anything; return the plan."""
        _refuse_steps(ident, "clean", clean_steps)
        node, steps = self._steps_for(ident, "clean")
        return validate_user_steps(
            "clean", steps, clean_steps, disallowed=self.config.disallow_clean_steps,
            disable_ramdisk=disable_ramdisk, node=node.uuid,
        )  # fmt: skip

    def validate_service_steps(
        self, ident: str, service_steps: Sequence[Any], disable_ramdisk: bool = False
    ) -> list[dict[str, Any]]:
        """Check a service request without changing anything; return the plan."""
        _refuse_steps(ident, "service", service_steps)
        node, steps = self._steps_for(ident, "service")
        return validate_user_steps(
            "service", steps, service_steps, disallowed=self.config.disallow_service_steps,
            disable_ramdisk=disable_ramdisk, node=node.uuid,
        )  # fmt: skip

    def validate_deploy_steps(
        self, ident: str, deploy_steps: Sequence[Any] | None = None
    ) -> list[dict[str, Any]]:
        """Check a deploy request (templates included) without changing anything."""
        if deploy_steps is not None:
            _refuse_steps(ident, "deploy", deploy_steps)
        node, steps = self._steps_for(ident, "deploy")
        return self._plan_deploy(node, steps, deploy_steps)

    def _plan_deploy(
        self, node: Node, steps: list[dict[str, Any]], user_steps: Sequence[Any] | None
    ) -> list[dict[str, Any]]:
        instance_traits = node.instance_info.get("traits") or []
        return plan_deploy(
            steps,
            templates=self._templates,
            user_steps=user_steps,
            node_traits=node.traits,
            instance_traits=instance_traits,
            disallowed=self.config.disallow_deploy_steps,
            node=node.uuid,
        )

    # -- verbs --------------------------------------------------------------------------------

    def do_provisioning_action(
        self,
        ident: str,
        verb: str,
        *,
        clean_steps: Sequence[Any] | None = None,
        deploy_steps: Sequence[Any] | None = None,
        service_steps: Sequence[Any] | None = None,
        runbook: str | None = None,
        disable_ramdisk: bool = False,
        rescue_password: str | None = None,
    ) -> Node:
        """Ask the node to do ``verb`` (``manage``, ``provide``, ``deploy``, ...).

        Without an executor, returns the node once it has settled (stable,
        wait, hold or failure state).

        Raises:
            InvalidStateRequested: the node's state does not accept the verb;
                nothing changed.
            InvalidParameterValue: arguments that do not fit the verb.
            NodeLocked: the node is busy.
            NodeInMaintenance, NodeProtected, NodeIsRetired: as Ironic refuses.
        """
        ident = _check_ident(ident)
        if not isinstance(verb, str):
            raise InvalidParameterValue(
                f"Node {ident}: the requested action must be a verb (a string), "
                f"not {type(verb).__name__}",
                node=ident,
            )
        event = self.lifecycle.verbs.get(verb)
        if event is None:
            raise InvalidStateRequested(
                f"The requested action {verb!r} could not be understood; known verbs: "
                f"{', '.join(sorted(self.lifecycle.verbs))}",
                node=ident,
                verb=verb,
            )
        self._check_arguments(ident, verb, clean_steps, deploy_steps, service_steps, runbook,
                              rescue_password, disable_ramdisk)  # fmt: skip
        # Refuse before reserving, so that a refused verb writes nothing.
        current = self.store.get(ident)
        self._check_verb(current, verb, event)
        self._precheck_verb(current, verb, event, deploy_steps=deploy_steps, runbook=runbook)
        with self._reserved(ident) as task:
            node = task.node
            self._check_verb(node, verb, event)
            new_state = self.lifecycle.next_state(node.provision_state, event)
            for guard in self._guards:
                reason = guard(attrs.evolve(node), verb, event, new_state)
                if reason:
                    raise TransitionRejected(
                        f"Node {node.uuid}: {verb!r} ({node.provision_state} -> {new_state}) "
                        f"rejected: {reason}",
                        node=node.uuid,
                        verb=verb,
                        reason=reason,
                    )
            handler = getattr(self, f"_verb_{event}", self._verb_generic)
            handler(
                task,
                verb=verb,
                clean_steps=clean_steps,
                deploy_steps=deploy_steps,
                service_steps=service_steps,
                runbook=runbook,
                disable_ramdisk=disable_ramdisk,
                rescue_password=rescue_password,
            )
            return task.node

    def _precheck_verb(
        self, node: Node, verb: str, event: str, *, deploy_steps: Any, runbook: Any
    ) -> None:
        """The handlers' refusals that need no hardware, on an unlocked read.

        They run again under the reservation; finding them here first means
        the usual refusals never lock the node at all.
        """
        maintenance_verbs = {"clean", "service", "rescue", "unrescue"}
        if node.maintenance and (
            verb in maintenance_verbs
            or (event == s.DEPLOY_EVENT or event == s.REBUILD_EVENT)
            or (verb == "provide" and not self.config.allow_provisioning_in_maintenance)
        ):
            raise NodeInMaintenance(
                f"The action {verb!r} can not be performed on node {node.uuid} while it is in "
                f"maintenance mode",
                node=node.uuid,
                verb=verb,
            )
        if verb == "provide" and node.retired:
            raise NodeIsRetired(
                f"The providing operation can't be performed on node {node.uuid} because it "
                f"is retired",
                node=node.uuid,
            )
        if node.protected and (verb == "rebuild" or event == s.DELETE_EVENT):
            raise NodeProtected(
                f"Node {node.uuid} is protected; unset protected before {verb}",
                node=node.uuid,
            )
        if runbook is not None and verb in ("clean", "service"):
            self._runbook_steps(Task(node=node, driver=self._driver_for(node), config=self.config),
                                runbook)  # fmt: skip
        if event in (s.DEPLOY_EVENT, s.REBUILD_EVENT) and (
            deploy_steps or node.instance_info.get("traits")
        ):
            # Only what the caller brought can make the plan fail here.
            task = Task(node=node, driver=self._driver_for(node), config=self.config)
            self._plan_deploy(node, self._driver_steps(task, "deploy"), deploy_steps)

    def _check_verb(self, node: Node, verb: str, event: str) -> None:
        if event not in self.lifecycle.allowed_events(node.provision_state):
            raise InvalidStateRequested(
                f'The requested action "{verb}" can not be performed on node '
                f'"{node.uuid}" while it is in state "{node.provision_state}"',
                node=node.uuid,
                verb=verb,
                state=node.provision_state,
            )

    def _verb_generic(self, task: Task, *, verb: str, **_: Any) -> None:
        # Events of derived lifecycles (e.g. "retire"): a plain transition.
        self._process(task, self.lifecycle.verbs[verb])

    def _check_arguments(
        self,
        ident: str,
        verb: str,
        clean_steps: Any,
        deploy_steps: Any,
        service_steps: Any,
        runbook: Any,
        rescue_password: Any,
        disable_ramdisk: Any = False,
    ) -> None:
        problems = []
        if runbook is not None and (type(runbook) is not str or not runbook):
            problems.append(f"runbook must be a runbook's name, not {type(runbook).__name__}")
        if disable_ramdisk is not True and disable_ramdisk is not False:
            problems.append("disable_ramdisk must be True or False")
        if rescue_password is not None and (
            type(rescue_password) is not str or "\x00" in rescue_password
        ):
            problems.append("rescue_password must be a string without NUL characters")
            rescue_password = None
        requested: tuple[tuple[Phase, Any, str], ...] = (
            ("clean", clean_steps, "clean_steps"),
            ("service", service_steps, "service_steps"),
            ("deploy", deploy_steps, "deploy_steps"),
        )
        for phase, given, name in requested:
            if given is not None and isinstance(given, list):
                problems.extend(
                    check_requested_steps(
                        phase, given, source=name, require_priority=phase == "deploy"
                    )
                )
        if clean_steps is not None and verb != "clean":
            problems.append("clean_steps may only be given with 'clean'")
        if service_steps is not None and verb != "service":
            problems.append("service_steps may only be given with 'service'")
        if deploy_steps is not None and verb not in ("active", "deploy", "rebuild"):
            problems.append("deploy_steps may only be given with 'active', 'deploy' or 'rebuild'")
        if rescue_password is not None and verb != "rescue":
            problems.append("rescue_password may only be given with 'rescue'")
        if runbook is not None and verb not in ("clean", "service"):
            problems.append("runbook may only be given with 'clean' or 'service'")
        if verb == "clean":
            if clean_steps is not None and runbook is not None:
                problems.append('provide either "clean_steps" or a runbook, not both')
            elif clean_steps is None and runbook is None:
                problems.append("'clean' needs clean_steps (a list of steps) or a runbook")
            elif clean_steps is not None and (not isinstance(clean_steps, list) or not clean_steps):
                problems.append(f"clean_steps must be a non-empty list, not {_shown(clean_steps)}")
        if verb == "service":
            if service_steps is not None and runbook is not None:
                problems.append('provide either "service_steps" or a runbook, not both')
            elif service_steps is None and runbook is None:
                problems.append("'service' needs service_steps (a list of steps) or a runbook")
            elif service_steps is not None and (
                not isinstance(service_steps, list) or not service_steps
            ):
                problems.append(
                    f"service_steps must be a non-empty list, not {_shown(service_steps)}"
                )
        if verb == "rescue" and (
            not isinstance(rescue_password, str) or not rescue_password.strip()
        ):
            problems.append("'rescue' needs a non-blank rescue_password")
        if deploy_steps is not None and not isinstance(deploy_steps, list):
            problems.append(f"deploy_steps must be a list, not {_shown(deploy_steps)}")
        if problems:
            raise InvalidParameterValue(
                f"Node {ident}: invalid arguments for {verb!r}: {'; '.join(problems)}",
                node=ident,
                verb=verb,
            )

    def _runbook_steps(self, task: Task, name: str) -> list[dict[str, Any]]:
        entry = self._runbooks.get(name)
        if entry is None:
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: no runbook named {name!r}", node=task.node.uuid
            )
        steps, traits = entry
        allowed = traits or frozenset({name})
        if not allowed & set(task.node.traits):
            raise InvalidParameterValue(
                f"Runbook {name!r} has not been approved for node {task.node.uuid}: the node "
                f"carries none of its traits ({', '.join(sorted(allowed))})",
                node=task.node.uuid,
            )
        return [dict(step) for step in steps]

    def _check_disallowed(self, task: Task, phase: Phase, steps: Sequence[Any]) -> None:
        blocked = set(getattr(self.config, f"disallow_{phase}_steps"))
        bad = [step_id(st) for st in steps if isinstance(st, Mapping) and step_id(st) in blocked]
        if bad:
            raise StepNotAllowed(
                f"Node {task.node.uuid}: {phase} step(s) {', '.join(bad)} are not allowed "
                f"(operator configuration disallow_{phase}_steps)",
                node=task.node.uuid,
                steps=bad,
            )

    def _check_maintenance(self, task: Task, verb: str) -> None:
        if task.node.maintenance:
            raise NodeInMaintenance(
                f"The action {verb!r} can not be performed on node {task.node.uuid} while it is "
                f"in maintenance mode",
                node=task.node.uuid,
                verb=verb,
            )

    # Each _verb_<event> handler runs with the node reserved and the event
    # known to be accepted by the node's state.

    def _verb_manage(self, task: Task, **_: Any) -> None:
        if task.node.provision_state == s.ENROLL:
            self._process(task, s.MANAGE_EVENT, last_error=None)
            self._spawn(task, self._do_verify)
        else:
            self._process(task, s.MANAGE_EVENT)

    def _verb_provide(self, task: Task, **_: Any) -> None:
        node = task.node
        if node.maintenance and not self.config.allow_provisioning_in_maintenance:
            self._check_maintenance(task, "provide")
        if node.retired:
            raise NodeIsRetired(
                f"The providing operation can't be performed on node {node.uuid} because it "
                f"is retired",
                node=node.uuid,
            )
        if not self._skip_automated_clean(node):
            self._automated_runbook(task)  # refuse now if the configuration cannot be met
        self._process(task, s.PROVIDE_EVENT, last_error=None)
        self._spawn(task, lambda t: self._do_clean(t, None))

    def _verb_clean(self, task: Task, *, clean_steps: Any, runbook: Any, disable_ramdisk: bool,
                    **_: Any) -> None:  # fmt: skip
        self._check_maintenance(task, "clean")
        steps = self._runbook_steps(task, runbook) if runbook is not None else clean_steps
        self._check_disallowed(task, "clean", steps)
        self._process(task, s.CLEAN_EVENT, target_state=s.MANAGEABLE, last_error=None)
        self._spawn(task, lambda t: self._do_clean(t, steps, disable_ramdisk=disable_ramdisk))

    def _verb_deploy(self, task: Task, *, verb: str, deploy_steps: Any, **_: Any) -> None:
        node = task.node
        if node.maintenance:
            self._check_maintenance(task, verb)
        if verb == "rebuild" and node.protected:
            raise NodeProtected(
                f"Node {node.uuid} is protected and cannot be rebuilt", node=node.uuid
            )
        self._validate_interface(task, "power")
        self._validate_interface(task, "deploy")
        plan = self._plan_deploy(node, self._driver_steps(task, "deploy"), deploy_steps)
        event = s.REBUILD_EVENT if verb == "rebuild" else s.DEPLOY_EVENT
        self._process(task, event, last_error=None)
        node.driver_internal_info[_DEPLOY.steps_key] = plan
        node.driver_internal_info.pop(_DEPLOY.index_key, None)
        node.deploy_step = {}
        self._spawn(task, self._do_deploy)

    _verb_rebuild = _verb_deploy

    def _verb_delete(self, task: Task, **_: Any) -> None:
        node = task.node
        if node.protected:
            raise NodeProtected(
                f"Node {node.uuid} is protected; unset protected before undeploying",
                node=node.uuid,
            )
        self._process(task, s.DELETE_EVENT, last_error=None)
        self._spawn(task, self._do_tear_down)

    def _verb_inspect(self, task: Task, **_: Any) -> None:
        self._validate_interface(task, "inspect")
        self._process(task, s.INSPECT_EVENT, last_error=None)
        self._spawn(task, self._do_inspect)

    def _verb_adopt(self, task: Task, **_: Any) -> None:
        self._process(task, s.ADOPT_EVENT, last_error=None)
        self._spawn(task, self._do_adopt)

    def _verb_rescue(self, task: Task, *, rescue_password: str, **_: Any) -> None:
        self._check_maintenance(task, "rescue")
        self._validate_interface(task, "rescue")
        task.node.instance_info["rescue_password"] = rescue_password
        self._process(task, s.RESCUE_EVENT, last_error=None)
        self._spawn(task, self._do_rescue)

    def _verb_unrescue(self, task: Task, **_: Any) -> None:
        self._check_maintenance(task, "unrescue")
        self._process(task, s.UNRESCUE_EVENT, last_error=None)
        self._spawn(task, self._do_unrescue)

    def _verb_service(self, task: Task, *, service_steps: Any, runbook: Any,
                      disable_ramdisk: bool, **_: Any) -> None:  # fmt: skip
        self._check_maintenance(task, "service")
        steps = self._runbook_steps(task, runbook) if runbook is not None else service_steps
        self._check_disallowed(task, "service", steps)
        self._process(task, s.SERVICE_EVENT, target_state=s.ACTIVE, last_error=None)
        self._spawn(task, lambda t: self._do_service(t, steps, disable_ramdisk=disable_ramdisk))

    def _verb_unhold(self, task: Task, **_: Any) -> None:
        phase = _PHASE_BY_STATE[task.node.provision_state]
        self._process(task, s.UNHOLD_EVENT)
        # A hold is a pause in the plan, not a wait for hardware: go on.
        self._spawn(task, lambda t: self._continue(t, phase))

    def _verb_abort(self, task: Task, **_: Any) -> None:
        node = task.node
        state = node.provision_state
        phase = _PHASE_BY_STATE.get(state)
        if phase is not None:
            self._abort_steps(task, phase)
        elif state == s.SERVICEFAIL:
            if node.maintenance:
                raise InvalidState(
                    f'Can not abort service on node "{node.uuid}" while it is in maintenance '
                    "mode; unset maintenance first",
                    node=node.uuid,
                    state=state,
                )
            self._finish_service_abort(task, None)
        elif state == s.RESCUEWAIT:
            node.instance_info.pop("rescue_password", None)
            self._process(task, s.ABORT_EVENT)
            self._checkpoint(task)
            self._call_quietly(task, task.driver.rescue.clean_up, "rescue clean-up")
        elif state == s.INSPECTWAIT:
            _driver_call(task, "inspect", "abort")
            self._process(task, s.ABORT_EVENT, last_error="Inspection was aborted by request.")

    # -- verification, inspection, adoption, rescue -------------------------------------------

    def _validate_interface(self, task: Task, kind: str) -> None:
        _driver_call(task, kind, "validate")

    def _do_verify(self, task: Task) -> None:
        node = task.node
        self._checkpoint(task)
        try:
            task.driver.power.validate(task)
            # The state-machine spec: verifying really reaches the controller.
            node.power_state = task.driver.power.get_power_state(task)
            steps = self._driver_steps(task, "verify")
            overrides = self.config.verify_step_priority_override
            plan = [st for st in steps if overrides.get(step_id(st), st["priority"])]
            for step in sort_steps("verify", plan):
                getattr(task.driver, step["interface"]).execute_verify_step(task, step)
        except Exception as exc:
            self._process(
                task,
                s.FAIL_EVENT,
                last_error=f"Failed to validate power driver interface for node {node.uuid}. "
                f"Error: {_describe_exc(exc)}",
            )
            return
        self._process(task, s.DONE_EVENT)

    def _operation(
        self,
        task: Task,
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
        node = task.node
        self._checkpoint(task)
        try:
            result = call(task)
        except Exception as exc:
            self._process(task, s.FAIL_EVENT, last_error=f"{failure}: {_describe_exc(exc)}")
            return
        event = results.get(result)
        if event is None:
            self._process(
                task,
                s.FAIL_EVENT,
                last_error=f"{failure}: the driver returned an invalid state {_shown(result)} "
                f"for node {node.uuid}",
            )
            return
        self._process(task, event)

    def _do_inspect(self, task: Task) -> None:
        self._operation(
            task,
            task.driver.inspect.inspect_hardware,
            f"Failed to inspect hardware of node {task.node.uuid}",
            {s.INSPECTWAIT: s.WAIT_EVENT, s.MANAGEABLE: s.DONE_EVENT, None: s.DONE_EVENT},
        )

    def continue_node_inspect(self, ident: str, inventory: Mapping[str, Any] | None = None) -> Node:
        """An asynchronous inspection reported back; finish it."""
        ident = _check_ident(ident)
        if inventory is not None:
            if not isinstance(inventory, dict):
                raise InvalidParameterValue(
                    f"Node {ident}: the inventory must be a dictionary, not "
                    f"{type(inventory).__name__}",
                    node=ident,
                )
            check_json(inventory, "The inventory")
        self._require_state_of(self.store.get(ident), s.INSPECTWAIT,
                               "continue inspection")  # fmt: skip
        with self._reserved(ident) as task:
            self._require_state(task, s.INSPECTWAIT, "continue inspection")
            node = task.node
            try:
                result = task.driver.inspect.continue_inspection(task, inventory or {})
            except Exception as exc:
                self._process(
                    task,
                    s.FAIL_EVENT,
                    last_error=f"Failed to process inspection data of node {node.uuid}: "
                    f"{_describe_exc(exc)}",
                )
                return task.node
            if result != s.INSPECTWAIT:
                self._process(task, s.DONE_EVENT)
            return task.node

    def _do_adopt(self, task: Task) -> None:
        self._operation(
            task,
            task.driver.deploy.take_over,
            f"Error while attempting to adopt node {task.node.uuid}",
            {None: s.DONE_EVENT},
        )

    def _do_rescue(self, task: Task) -> None:
        self._operation(
            task,
            task.driver.rescue.rescue,
            f"Failed to rescue node {task.node.uuid}",
            {s.RESCUEWAIT: s.WAIT_EVENT, s.RESCUE: s.DONE_EVENT},
        )

    def continue_node_rescue(self, ident: str) -> Node:
        """The rescue ramdisk is up: finish rescuing."""
        ident = _check_ident(ident)
        self._require_state_of(self.store.get(ident), s.RESCUEWAIT,
                               "continue rescue")  # fmt: skip
        with self._reserved(ident) as task:
            self._require_state(task, s.RESCUEWAIT, "continue rescue")
            self._process(task, s.RESUME_EVENT)
            self._process(task, s.DONE_EVENT)
            return task.node

    def _do_unrescue(self, task: Task) -> None:
        self._operation(
            task,
            task.driver.rescue.unrescue,
            f"Failed to unrescue node {task.node.uuid}",
            {s.ACTIVE: s.DONE_EVENT, None: s.DONE_EVENT},
        )
        if task.node.provision_state == s.ACTIVE:
            task.node.instance_info.pop("rescue_password", None)

    def _require_state(self, task: Task, state: str, action: str) -> None:
        self._require_state_of(task.node, state, action)

    def _require_state_of(self, node: Node, state: str, action: str) -> None:
        if node.provision_state != state:
            raise InvalidStateRequested(
                f"Cannot {action} on node {node.uuid} in provision state "
                f"{node.provision_state!r}; it must be in {state!r}",
                node=node.uuid,
                state=node.provision_state,
            )

    # -- tear-down ---------------------------------------------------------------------------

    def _do_tear_down(self, task: Task) -> None:
        node = task.node
        self._checkpoint(task)
        try:
            self._power(task, s.POWER_OFF)
            task.driver.deploy.tear_down(task)
            task.driver.deploy.clean_up(task)
        except Exception as exc:
            self._process(
                task, s.FAIL_EVENT, last_error=f"Failed to tear down: {_describe_exc(exc)}"
            )
            return
        node.instance_info = {}
        node.driver_internal_info.pop(_DEPLOY.steps_key, None)
        node.deploy_step = None
        self._process(task, s.CLEAN_EVENT)
        self._do_clean(task, None)

    # -- cleaning ------------------------------------------------------------------------------

    def _skip_automated_clean(self, node: Node) -> bool:
        if node.automated_clean is None:
            return not self.config.automated_clean
        return not node.automated_clean

    def _do_clean(
        self, task: Task, user_steps: Sequence[Any] | None, *, disable_ramdisk: bool = False
    ) -> None:
        """Cleaning, from the moment the node entered ``cleaning``."""
        node = task.node
        manual = user_steps is not None
        info = node.driver_internal_info
        if not manual and self._skip_automated_clean(node):
            node.clean_step = None
            self._finish_phase(task, _CLEAN)
            return
        if not manual and node.maintenance and not self.config.allow_provisioning_in_maintenance:
            self._phase_failed(
                task, _CLEAN, "Cleaning a node in maintenance mode is not allowed", step=None
            )
            return
        try:
            task.driver.power.validate(task)
        except Exception as exc:
            self._phase_failed(
                task, _CLEAN,
                f"Validation of node {node.uuid} for cleaning failed: {_describe_exc(exc)}",
                step=None,
            )  # fmt: skip
            return
        info.pop(_CLEAN.index_key, None)
        info["cleaning_disable_ramdisk"] = disable_ramdisk
        node.clean_step = {}
        try:
            info[_CLEAN.steps_key] = self._plan_clean(task, user_steps, disable_ramdisk)
        except StepsNotAvailable:
            # Agent-style interfaces know their steps once the ramdisk is up:
            # prepare, wait for it, and plan on continuation.
            info[_CLEAN.steps_key] = None
            info["clean_plan_pending"] = {"steps": None if user_steps is None else list(user_steps)}
        except Exception as exc:
            self._phase_failed(
                task, _CLEAN, f"Cannot clean node {node.uuid}: {_describe_exc(exc)}", step=None
            )
            return
        self._start_steps(task, _CLEAN)

    def _plan_clean(
        self, task: Task, user_steps: Sequence[Any] | None, disable_ramdisk: bool
    ) -> list[dict[str, Any]]:
        """The steps of this cleaning: the user's, a runbook's, or the driver's."""
        blocked = self.config.disallow_clean_steps
        if user_steps is not None:
            # No node prefix: the caller's message names the node already.
            return validate_user_steps(
                "clean", self._driver_steps(task, "clean"), user_steps, disallowed=blocked,
                disable_ramdisk=disable_ramdisk,
            )  # fmt: skip
        runbook = self._automated_runbook(task)
        if runbook is not None:
            # Declarative automated cleaning: in list order; disallowed steps
            # are dropped silently, as for driver steps.
            wanted = [st for st in runbook if step_id(st) not in blocked]
            return validate_user_steps("clean", self._driver_steps(task, "clean"), wanted)
        return plan_automated_clean_for(
            task.driver, task, overrides=self.config.clean_step_priority_override,
            disallowed=blocked,
        )  # fmt: skip

    def _automated_runbook(self, task: Task) -> list[dict[str, Any]] | None:
        """The runbook automated cleaning must use, if the configuration asks for one."""
        config = self.config
        if config.automated_cleaning_step_source == "autogenerated":
            return None
        node = task.node
        name = None
        if config.automated_cleaning_runbook_from_node:
            name = node.driver_info.get("cleaning_runbook")
        name = (
            name
            or config.automated_cleaning_runbook_by_resource_class.get(node.resource_class or "")
            or config.automated_cleaning_runbook
        )
        if name is None:
            if config.automated_cleaning_step_source == "runbook":
                raise InvalidParameterValue(
                    f"Unable to perform cleaning for node {node.uuid}: configuration requires a "
                    "runbook for automated cleaning and none was configured",
                    node=node.uuid,
                )
            return None
        if config.automated_cleaning_runbook_validate_traits:
            return self._runbook_steps(task, name)
        entry = self._runbooks.get(name)
        if entry is None:
            raise InvalidParameterValue(
                f"Node {node.uuid}: no runbook named {name!r}", node=node.uuid
            )
        return [dict(step) for step in entry[0]]

    def _start_steps(self, task: Task, phase: _PhaseInfo) -> None:
        """Prepare the node for the planned steps (ramdisk, deploy prep), then run them."""
        node = task.node
        info = node.driver_internal_info
        plan: list[dict[str, Any]] = info.get(phase.steps_key) or []
        deploy = task.driver.deploy
        prepare: Callable[[Task], str | None] | None = None
        if phase is _DEPLOY:
            prepare, what, flag = deploy.prepare, "deployment", None
        else:
            noun = "cleaning" if phase is _CLEAN else "service"
            what = "cleaning" if phase is _CLEAN else "servicing"
            flag = f"{noun}_ramdisk_prepared"
            disabled = info.get(f"{noun}_disable_ramdisk", False)
            pending = phase is _CLEAN and "clean_plan_pending" in info
            if pending or (not disabled and any(st.get("requires_ramdisk", True) for st in plan)):
                prepare = getattr(
                    deploy, "prepare_cleaning" if phase is _CLEAN else "prepare_service"
                )
        if prepare is not None:
            self._checkpoint(task)
            try:
                prepared = prepare(task)
            except Exception as exc:
                self._phase_failed(
                    task, phase,
                    f"Failed to prepare node {node.uuid} for {what}: {_describe_exc(exc)}",
                    step=None,
                )  # fmt: skip
                return
            if flag is not None:
                info[flag] = True
            if prepared == phase.wait:
                self._process(task, s.WAIT_EVENT)  # the ramdisk calls back to continue
                return
        self._run_steps(task, phase, 0)

    # -- deployment ----------------------------------------------------------------------------

    def _do_deploy(self, task: Task) -> None:
        node = task.node
        if not node.driver_internal_info.get(_DEPLOY.steps_key):
            self._phase_failed(task, _DEPLOY, "No deploy steps returned by the driver", step=None)
            return
        self._start_steps(task, _DEPLOY)

    # -- servicing ------------------------------------------------------------------------------

    def _do_service(
        self, task: Task, user_steps: Sequence[Any], *, disable_ramdisk: bool = False
    ) -> None:
        node = task.node
        info = node.driver_internal_info
        try:
            plan = validate_user_steps(
                "service", self._driver_steps(task, "service"), user_steps,
                disallowed=self.config.disallow_service_steps,
                disable_ramdisk=disable_ramdisk,
            )  # fmt: skip
        except Exception as exc:
            self._phase_failed(
                task, _SERVICE, f"Cannot service node {node.uuid}: {_describe_exc(exc)}",
                step=None,
            )  # fmt: skip
            return
        info[_SERVICE.steps_key] = plan
        info.pop(_SERVICE.index_key, None)
        info["service_disable_ramdisk"] = disable_ramdisk
        node.service_step = {}
        self._start_steps(task, _SERVICE)

    # -- the step engine -------------------------------------------------------------------------

    def _run_steps(self, task: Task, phase: _PhaseInfo, index: int) -> None:
        """Run the phase's planned steps from ``index`` until done, waiting or failed."""
        node = task.node
        info = node.driver_internal_info
        steps: list[dict[str, Any]] = info.get(phase.steps_key) or []
        while index < len(steps):
            step = steps[index]
            info[phase.index_key] = index
            setattr(node, phase.step_field, dict(step))
            self._step_event(STEP_START, task, step)
            # Recorded before it starts; this save also records that the
            # previous step ended. Recovery re-runs the recorded step.
            self._checkpoint(task)
            try:
                result = self._execute_step(task, phase, step)
            except Exception as exc:
                self._step_failed(task, phase, step, exc)
                return
            if result is None:
                self._step_event(STEP_END, task, step)
                index += 1
                continue
            if result in (phase.wait, phase.hold):
                if node.provision_state == phase.working:
                    event = s.WAIT_EVENT if result == phase.wait else s.HOLD_EVENT
                    self._process(task, event)
                return
            self._step_failed(
                task,
                phase,
                step,
                StepFailed(
                    f"While executing step {step_id(step)} on node {node.uuid}, step returned "
                    f"invalid value: {_shown(result)}",
                    node=node.uuid,
                    step=step_id(step),
                ),
            )
            return
        self._finish_phase(task, phase)

    def _execute_step(self, task: Task, phase: _PhaseInfo, step: Mapping[str, Any]) -> str | None:
        name = step["step"]
        if name in RESERVED_STEPS:
            return self._reserved_step(task, phase, step)
        iface = getattr(task.driver, step["interface"])
        result: str | None = getattr(iface, f"execute_{phase.name}_step")(task, step)
        return result

    def _reserved_step(self, task: Task, phase: _PhaseInfo, step: Mapping[str, Any]) -> str | None:
        name = step["step"]
        if name == "hold":
            return phase.hold
        if name == "wait":
            seconds = (step.get("args") or {}).get("seconds")
            if seconds is not None:
                until = self._now() + timedelta(seconds=seconds)
                task.node.driver_internal_info[phase.wait_until_key] = until.isoformat()
            return phase.wait
        power = {"power_on": s.POWER_ON, "power_off": s.POWER_OFF, "reboot": s.REBOOT}[name]
        self._power(task, power)
        return None

    def _step_failed(
        self, task: Task, phase: _PhaseInfo, step: Mapping[str, Any], exc: BaseException
    ) -> None:
        node = task.node
        sid = step_id(step)
        if phase is _DEPLOY:
            if isinstance(exc, IronicFSMError):
                message = f"Deploy step {sid} failed: {exc}."
            else:
                message = f"Deploy step {sid} failed with {type(exc).__name__}: {exc}."
        else:
            message = f"Node {node.uuid} failed {phase.name} step {sid}: {_describe_exc(exc)}"
        message = _scrub(node, message)
        LOG.warning("%s", message)
        self._step_event(STEP_FAIL, task, step, error=message)
        self._phase_failed(task, phase, message, step=step)

    def _phase_failed(
        self,
        task: Task,
        phase: _PhaseInfo,
        message: str,
        *,
        step: Mapping[str, Any] | None,
        event: str = s.FAIL_EVENT,
    ) -> None:
        """Ironic's error handlers: record, tidy up, and move to the failure state."""
        node = task.node
        info = node.driver_internal_info
        if phase is _DEPLOY:
            try:
                task.driver.deploy.clean_up(task)
            except Exception as exc:
                message += f" Also failed to clean up: {_describe_exc(exc)}"
            # The deploy-steps spec: deploy_step keeps showing the failed step.
            node.deploy_step = dict(step) if step is not None else {}
        else:
            if step is not None and phase.fault is not None:
                node.maintenance = True
                node.fault = phase.fault
                node.maintenance_reason = node.maintenance_reason or message
            teardown = "tear_down_cleaning" if phase is _CLEAN else "tear_down_service"
            prepared_key = f"{'cleaning' if phase is _CLEAN else 'service'}_ramdisk_prepared"
            if info.pop(prepared_key, False):
                try:
                    getattr(task.driver.deploy, teardown)(task)
                except Exception as exc:
                    message += f". Also failed to tear down {phase.name}ing: {_describe_exc(exc)}"
            setattr(node, phase.step_field, {})
            info.pop(phase.index_key, None)
            power_off = (
                self.config.poweroff_in_cleanfail
                if phase is _CLEAN
                else self.config.poweroff_in_servicefail
            )
            if power_off:
                try:
                    self._power(task, s.POWER_OFF)
                except Exception as exc:
                    message += f". Also failed to power off: {_describe_exc(exc)}"
        info.pop(phase.skip_key, None)
        info.pop(phase.wait_until_key, None)
        if node.provision_state == phase.fail:
            node.last_error = message
        else:
            self._process(task, event, last_error=message)

    def _finish_phase(self, task: Task, phase: _PhaseInfo) -> None:
        node = task.node
        info = node.driver_internal_info
        setattr(node, phase.step_field, None)
        info.pop(phase.index_key, None)
        info.pop(phase.skip_key, None)
        info.pop(phase.wait_until_key, None)
        info[phase.steps_key] = None
        if phase is _CLEAN:
            if info.pop("cleaning_ramdisk_prepared", False):
                try:
                    task.driver.deploy.tear_down_cleaning(task)
                except Exception as exc:
                    self._phase_failed(
                        task, _CLEAN,
                        f"Failed to tear down from cleaning for node {node.uuid}: "
                        f"{_describe_exc(exc)}",
                        step=None,
                    )  # fmt: skip
                    return
            info.pop("cleaning_disable_ramdisk", None)
            manual = node.target_provision_state == s.MANAGEABLE
            self._process(task, s.MANAGE_EVENT if manual or node.retired else s.DONE_EVENT)
        elif phase is _SERVICE:
            if info.pop("service_ramdisk_prepared", False):
                try:
                    task.driver.deploy.tear_down_service(task)
                except Exception as exc:
                    self._phase_failed(
                        task, _SERVICE,
                        f"Failed to tear down from servicing for node {node.uuid}: "
                        f"{_describe_exc(exc)}",
                        step=None,
                    )  # fmt: skip
                    return
            info.pop("service_disable_ramdisk", None)
            self._process(task, s.DONE_EVENT)
        else:
            self._process(task, s.DONE_EVENT)

    # -- continuation, abort, timeouts ------------------------------------------------------------

    def continue_node_clean(self, ident: str) -> Node:
        """An asynchronous clean step (or the ramdisk) finished: go on with the next step."""
        return self._continue_verb(ident, _CLEAN)

    def continue_node_deploy(self, ident: str) -> Node:
        """An asynchronous deploy step finished: go on with the next step."""
        return self._continue_verb(ident, _DEPLOY)

    def continue_node_service(self, ident: str) -> Node:
        """An asynchronous service step finished: go on with the next step."""
        return self._continue_verb(ident, _SERVICE)

    def _continue_verb(self, ident: str, phase: _PhaseInfo) -> Node:
        ident = _check_ident(ident)
        self._require_state_of(self.store.get(ident), phase.wait,
                               f"continue {phase.name}ing")  # fmt: skip
        with self._reserved(ident) as task:
            self._require_state(task, phase.wait, f"continue {phase.name}ing")
            self._spawn(task, lambda t: self._continue(t, phase))
            return task.node

    def _continue(self, task: Task, phase: _PhaseInfo) -> None:
        """From the phase's wait state: honour abort_after, resume, run the next step."""
        node = task.node
        info = node.driver_internal_info
        pending = info.pop("clean_plan_pending", None) if phase is _CLEAN else None
        if pending is not None:
            try:
                info[_CLEAN.steps_key] = self._plan_clean(
                    task, pending["steps"], info.get("cleaning_disable_ramdisk", False)
                )
            except Exception as exc:
                self._phase_failed(
                    task, _CLEAN, f"Cannot clean node {node.uuid}: {_describe_exc(exc)}",
                    step=None,
                )  # fmt: skip
                return
        current = info.get(phase.index_key)
        skip = info.pop(phase.skip_key, True)
        info.pop(phase.wait_until_key, None)
        step = getattr(node, phase.step_field) or None
        if step and current is not None:
            if step.get("abort_after"):
                self._abort_after(task, phase, step)
                return
            if skip:  # otherwise the step runs again and ends later
                self._step_event(STEP_END, task, step)
        index = 0 if current is None else (current + 1 if skip else current)
        self._process(task, s.RESUME_EVENT)
        self._run_steps(task, phase, index)

    def _abort_message(self, phase: _PhaseInfo, step: Mapping[str, Any] | None) -> str:
        message = f"By request, the {phase.name} operation was aborted"
        if step:
            message += f' during or after the completion of step "{step_id(step)}"'
        return message

    def _abort_steps(self, task: Task, phase: _PhaseInfo) -> None:
        """``abort`` in a phase's wait or hold state."""
        node = task.node
        step = getattr(node, phase.step_field) or None
        if step and not step.get("abortable", False) and step["step"] != "hold":
            # Not interruptible: abort once the step is done.
            setattr(node, phase.step_field, dict(step, abort_after=True))
            return
        message = self._abort_message(phase, step)
        if phase is _SERVICE:
            self._process(task, s.FAIL_EVENT)
            self._finish_service_abort(task, message)
            return
        self._process(task, s.ABORT_EVENT, last_error=message)
        self._tidy_after_abort(task, phase)

    def _abort_after(self, task: Task, phase: _PhaseInfo, step: Mapping[str, Any]) -> None:
        message = self._abort_message(phase, step)
        self._process(task, s.FAIL_EVENT, last_error=message)
        self._tidy_after_abort(task, phase)

    def _tidy_after_abort(self, task: Task, phase: _PhaseInfo) -> None:
        node = task.node
        info = node.driver_internal_info
        self._checkpoint(task)
        if phase is _DEPLOY:
            self._call_quietly(task, task.driver.deploy.clean_up, "deploy clean-up")
        elif phase is _CLEAN:
            if info.pop("cleaning_ramdisk_prepared", False):
                self._call_quietly(task, task.driver.deploy.tear_down_cleaning, "clean tear-down")
            node.clean_step = {}
        else:
            if info.pop("service_ramdisk_prepared", False):
                self._call_quietly(task, task.driver.deploy.tear_down_service, "service tear-down")
            node.service_step = {}
        info.pop(phase.index_key, None)
        info.pop(phase.skip_key, None)
        info.pop(phase.wait_until_key, None)

    def _finish_service_abort(self, task: Task, message: str | None) -> None:
        node = task.node
        info = node.driver_internal_info
        if info.pop("service_ramdisk_prepared", False):
            self._call_quietly(task, task.driver.deploy.tear_down_service, "service tear-down")
        node.service_step = {}
        info.pop(_SERVICE.index_key, None)
        info.pop(_SERVICE.wait_until_key, None)
        if message is None:
            message = "By request, the service operation was aborted"
        self._process(task, s.ABORT_EVENT, last_error=message)

    def _call_quietly(self, task: Task, func: Callable[[Task], Any], what: str) -> None:
        try:
            func(task)
        except Exception as exc:
            node = task.node
            node.last_error = (node.last_error or "") + f" Also failed {what}: {_describe_exc(exc)}"
            LOG.warning("Node %s: %s failed: %s", node.uuid, what, _scrub(node, _describe_exc(exc)))

    # -- liveness and crash recovery ------------------------------------------------------

    def heartbeat(self) -> None:
        """Tell the store this conductor is alive.

        Call it periodically (more often than ``Config.heartbeat_timeout``)
        when several hosts share a store: conductors elsewhere take over
        nodes of a holder whose heartbeat has expired. Holders on the same
        host are checked by process id instead, at once.
        """
        self.store.heartbeat(self.holder, self._now())

    def _holder_alive(
        self, holder: str, heartbeats: Mapping[str, datetime], node: Node, now: datetime
    ) -> bool:
        host, _, rest = holder.partition(":")
        pid_text, _, token = rest.partition(":")
        if host == self.config.host and pid_text.isdigit():
            started = token.partition("-")[0] if "-" in token else None
            return _process_alive(int(pid_text), started if started != "0" else None)
        last_seen = heartbeats.get(holder) or node.updated_at
        if last_seen is None:
            return False
        return now - last_seen < timedelta(seconds=self.config.heartbeat_timeout)

    def recover(self) -> list[str]:
        """Take over nodes whose holder is gone and resume their flows.

        A flow resumes at the step recorded before the crash (steps are
        idempotent, as the cleaning spec requires); steps before it do not
        run again. Nodes in wait, hold, stable or failure states are just
        released: their flow goes on when its callback, ``unhold`` or a
        user's verb comes. Returns the UUIDs taken over.
        """
        now = self._now()
        heartbeats = self.store.holders()
        taken: list[str] = []
        for node in self.store.list():
            holder = node.reservation
            if holder is None or holder == self.holder:
                continue
            if self._holder_alive(holder, heartbeats, node, now):
                continue
            LOG.warning(
                "Node %s: taking over from %s, which is gone (state %s)",
                node.uuid, holder, node.provision_state,
            )  # fmt: skip
            self.store.release(node.uuid, holder)
            try:
                with self._reserved(node.uuid) as task:
                    self._spawn(task, self._resume)
            except IronicFSMError as exc:
                LOG.info("Node %s: not taken over: %s", node.uuid, exc)
                continue
            taken.append(node.uuid)
        return taken

    def _resume(self, task: Task) -> None:
        """Continue whatever the node was doing when its holder died."""
        node = task.node
        state = node.provision_state
        phase = _PHASE_BY_STATE.get(state)
        if phase is not None and state == phase.working:
            info = node.driver_internal_info
            index = info.get(phase.index_key)
            if info.get(phase.steps_key) is None:
                # Died before the plan was stored: fail visibly, do not guess.
                self._phase_failed(
                    task, phase,
                    f"Node {node.uuid}: {phase.name} was interrupted before its steps were "
                    "planned; start it again",
                    step=None,
                )  # fmt: skip
            elif index is None:
                self._start_steps(task, phase)
            else:
                self._run_steps(task, phase, index)
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
            resume(task)

    def check_timeouts(self, now: datetime | None = None) -> list[str]:
        """Fail nodes that waited too long; resume ``wait`` steps whose time is up.

        Call it periodically (Ironic does every 60 s). Nodes in maintenance
        or reserved by someone else are skipped, as in Ironic; holds never
        time out. Returns the UUIDs of the nodes it acted on.
        """
        if now is not None and (not isinstance(now, datetime) or now.utcoffset() is None):
            raise InvalidParameterValue(
                f"check_timeouts needs a timezone-aware datetime, not {_shown(now)}"
            )
        now = now or self._now()
        acted: list[str] = []
        waiting = [n for st in sorted(s.WAIT_STATES) for n in self.store.list(provision_state=st)]
        for node in waiting:
            state = node.provision_state
            if node.reservation is not None:
                continue
            phase = _PHASE_BY_STATE.get(state)
            if phase is not None:
                wait_until = node.driver_internal_info.get(phase.wait_until_key)
                if wait_until is not None:
                    if _wait_is_over(wait_until, now):
                        self._act_on(node.uuid, functools.partial(self._continue, phase=phase))
                        acted.append(node.uuid)
                    continue
            if node.maintenance:
                continue
            option = (
                phase.timeout_option
                if phase
                else (
                    "inspect_wait_timeout" if state == s.INSPECTWAIT else "rescue_callback_timeout"
                )
            )
            timeout = getattr(self.config, option)
            started = node.provision_updated_at
            if not timeout or started is None or now - started < timedelta(seconds=timeout):
                continue
            self._act_on(node.uuid, functools.partial(self._time_out, state=state))
            acted.append(node.uuid)
        return acted

    def _act_on(self, uuid: str, work: Callable[[Task], None]) -> None:
        try:
            with self._reserved(uuid) as task:
                self._spawn(task, work)
        except IronicFSMError as exc:
            LOG.info("Node %s: skipped by the periodic check: %s", uuid, exc)

    def _time_out(self, task: Task, state: str) -> None:
        node = task.node
        if task.node.provision_state != state:
            return
        if state == s.CLEANWAIT:
            step = node.clean_step or None
            message = (
                "Timeout reached while cleaning the node. Please check if the ramdisk "
                "responsible for the cleaning is running on the node."
            )
            if step:
                message += f" Failed on step {step_id(step)}."
            self._phase_failed(task, _CLEAN, message, step=step)
        elif state == s.SERVICEWAIT:
            step = node.service_step or None
            message = f"Timeout reached while servicing node {node.uuid}."
            if step:
                message += f" Failed on step {step_id(step)}."
            self._phase_failed(task, _SERVICE, message, step=step)
        elif state == s.DEPLOYWAIT:
            step = node.deploy_step or None
            self._phase_failed(
                task, _DEPLOY, f"Timeout reached while waiting for callback for node {node.uuid}",
                step=step,
            )  # fmt: skip
        elif state == s.RESCUEWAIT:
            node.instance_info.pop("rescue_password", None)
            self._call_quietly(task, lambda t: self._power(t, s.POWER_OFF), "power off")
            self._call_quietly(task, task.driver.rescue.clean_up, "rescue clean-up")
            self._process(
                task, s.FAIL_EVENT,
                last_error=f"Timeout reached while waiting for rescue ramdisk callback for node "
                f"{node.uuid}",
            )  # fmt: skip
        elif state == s.INSPECTWAIT:
            self._process(
                task, s.FAIL_EVENT,
                last_error=f"Timeout reached while inspecting node {node.uuid}",
            )  # fmt: skip
