"""A job: one reserved node at work, the active object every flow works through.

As Ironic's ``TaskManager``: a job fires the node's events (:meth:`Job.fire`),
checkpoints it (:meth:`Job.checkpoint`), notes its history (:meth:`Job.record`),
tells of its steps (:meth:`Job.step_event`), powers it (:meth:`Job.power`) and
calls its driver's interfaces (:meth:`Job.call`). Drivers get only the job's
:class:`~ironic_fsm.task.Task` (node, driver, config); the job's own notes (events
and history waiting for the save that records them) stay beside it.

The rule the job keeps: events are announced only after the save that records
them, and history is written in the same store transaction as the node, or not
at all (a store without history drops it: written apart, it could tell of a
change that then failed to save).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from operator import attrgetter
from time import perf_counter
from typing import TYPE_CHECKING, Any, Final

from ironic_fsm import history as h
from ironic_fsm import states as s
from ironic_fsm.agent import token as agent_tokens
from ironic_fsm.conductor.common import (
    INSPECTING_STATES,
    driver_error,
    inspection_times,
    scrub_node,
)
from ironic_fsm.conductor.context import DRIVER_CALL, SAVED, Context, Pending
from ironic_fsm.conductor.outage import RETRYABLE, NodeLost, save_through
from ironic_fsm.events import PROVISION_END, PROVISION_ERROR, PROVISION_START, Event
from ironic_fsm.exceptions import (
    ConcurrentUpdate,
    InvalidState,
    IronicFSMError,
    NodeLocked,
    NodeNotFound,
)
from ironic_fsm.masking import mask_secrets
from ironic_fsm.node import Node, check_name, check_storable
from ironic_fsm.task import Task

if TYPE_CHECKING:
    from ironic_fsm.hardware import HardwareType

__all__ = [
    "LOG", "UNSET", "Job", "NotTaken", "check_fields", "check_name_once", "driver_call", "emit",
    "event_of", "history_entries", "record_now", "tell_listeners",
]  # fmt: skip

LOG = logging.getLogger("ironic_fsm.conductor")

UNSET: Final[Any] = object()

#: The history event type of a failure, by the failure state it leads to (else provisioning).
_FAILURE_TYPES: Final = {
    s.CLEANFAIL: h.CLEANING,
    s.DEPLOYFAIL: h.DEPLOYING,
    s.SERVICEFAIL: h.SERVICING,
    s.INSPECTFAIL: h.INSPECTING,
    s.RESCUEFAIL: h.RESCUING,
    s.UNRESCUEFAIL: h.RESCUING,
}
#: A move that is a failure: by the event, or into one of these states.
_FAIL: Final = s.FAIL_EVENT
_ERROR_STATES: Final = s.FAILURE_STATES | {s.ERROR}
#: Power actions after which no ramdisk agent is running.
_ENDS_AGENT: Final = frozenset({s.POWER_OFF, s.SOFT_POWER_OFF, s.REBOOT, s.SOFT_REBOOT})
#: How an abort names the operation, by its event type.
_OPERATIONS: Final = {h.RESCUING: "rescue", h.INSPECTING: "inspection", h.DEPLOYING: "deployment"}


class NotTaken(Exception):
    """The save that was to take the node's reservation found it taken or changed.

    Raised by :meth:`Job.checkpoint` of a job still :attr:`~Job.taking`, with
    the store's refusal as ``cause``; caught by the verb that made the job,
    which read the node again or refuses (:meth:`~.verbs.Verbs.provision`),
    and let through by everything between: nothing was done yet.
    """

    def __init__(self, cause: IronicFSMError) -> None:
        super().__init__(str(cause))
        self.cause = cause


class Job:
    """One reserved node at work: the task drivers get, and the conductor's notes on it.

    A plain slotted class: one is made per request, on the hot path.
    """

    __slots__ = (
        "announce", "ctx", "detached", "events", "history", "name_ok", "ran_flow", "stalled",
        "taking", "task", "took_entry", "untimed",
    )  # fmt: skip

    def __init__(self, task: Task, ctx: Context) -> None:
        self.task = task
        #: What the conductor's parts share: the store, settings, clock, listeners.
        self.ctx = ctx
        #: Events waiting for the save that records them: plain tuples (:data:`~.context.Pending`)
        #: made into :class:`Event` objects only for listeners, or events already built.
        self.events: list[Pending | Event] = []
        #: History waiting for the save that records it: (severity, event type, text or
        #: ``None`` for the node's ``last_error`` as saved, user).
        self.history: list[tuple[str, str, str | None, str | None]] = []
        #: The reservation went elsewhere (a background worker), the node is gone, or
        #: the flow stalled on an outage: nothing here saves or releases it.
        self.detached = False
        #: The store stayed unavailable and the flow stopped (:func:`.outage.stalling`):
        #: the error; the node stays reserved at its last recorded step.
        self.stalled: Exception | None = None
        #: The node was queued: announce it once the release has been saved.
        self.announce = False
        #: The name last found to follow Ironic's rules (a str never changes: one check
        #: per name, not per save).
        self.name_ok: str | None = None
        #: A flow ran (:meth:`~.runtime.Runtime._guarded`): the final save also judges what it left.
        self.ran_flow = False
        #: The node's queue entry was taken at a claim: a re-read copy drops it too.
        self.took_entry = False
        #: The reservation is not taken yet: the next checkpoint takes it in its save
        #: (:meth:`~.reservations.Reservations.taking`), or raises :class:`NotTaken`.
        self.taking = False
        #: An event waiting in :attr:`events` has no time of its own (a step's): the save
        #: that records it gives it one.
        self.untimed = False

    # Read on every line of every flow: C-level getters, no Python call.
    if TYPE_CHECKING:

        @property
        def node(self) -> Node: ...

        @node.setter
        def node(self, node: Node) -> None: ...

        @property
        def driver(self) -> HardwareType: ...

    else:

        def _set_node(self, node):
            self.task.node = node

        node = property(attrgetter("task.node"), _set_node)
        driver = property(attrgetter("task.driver"))

    # -- events and saves ------------------------------------------------------------------

    def checkpoint(self) -> None:
        """Persist the node now, then tell listeners what led here.

        The conductor saves at checkpoints only: before it touches hardware,
        before each step starts, and when it releases the node. Events wait
        for the save that records them.
        """
        node = self.task.node
        ctx = self.ctx
        node.updated_at = ctx.clock()
        if node.last_error or node.maintenance_reason:
            # A last line of defence: no secret reaches the store in free text.
            if node.last_error:
                node.last_error = scrub_node(node, node.last_error)
            if node.maintenance_reason:
                node.maintenance_reason = scrub_node(node, node.maintenance_reason)
        caps = ctx.caps
        if not caps.checks_node_types:
            check_fields(self)
        elif node.name is not self.name_ok:  # the store checks the rest first, in the same words
            check_name_once(self)
        if self.taking:
            self._take(node)  # a verb's first save, which takes the reservation too
        else:
            try:
                try:
                    self._save(node)
                except RETRYABLE as exc:
                    if not self.ran_flow:
                        raise  # a request's own save: its caller hears of the outage at once
                    # A flow's: the database blinked, which is never the node's failure.
                    save_through(ctx, node, lambda: self._save(node), exc)
            except (NodeLocked, ConcurrentUpdate) as exc:
                if self.ran_flow and ctx.caps.reserving is not None:
                    raise NodeLost(exc) from exc  # taken over meanwhile: see NodeLost
                raise
        pending = self.events
        if pending:
            self.events = []
            tally = ctx.tally
            if tally is not None:  # the plain tuples as they are, after the time of this save
                items = tally.items
                if self.untimed:
                    items.append((SAVED, node.updated_at))
                items.extend(pending)
                if len(items) >= tally.fold_at:
                    tally.fold()
            self.untimed = False
            if ctx.listeners:
                tell_listeners(ctx, pending, node.updated_at)

    def _save(self, node: Node) -> None:
        """One try at writing the node, with the history noted for it (cleared once written).

        On a store that can (a :class:`~ironic_fsm.stores.capabilities.ReservingStore`),
        only while this conductor still holds the node: the same ``UPDATE``, its
        ``WHERE`` naming the holder too.
        """
        ctx = self.ctx
        caps = ctx.caps
        reserving = caps.reserving
        if reserving is not None:
            if self.history and caps.history is not None:
                entries = history_entries(ctx, node, self.history, now=node.updated_at)
                reserving.save_held(node, ctx.holder, history=entries)
            else:
                reserving.save_held(node, ctx.holder)
            self.history = []
        elif not self.history:
            caps.store.save(node)
        elif caps.history is not None:
            entries = history_entries(ctx, node, self.history, now=node.updated_at)
            caps.history.save(node, history=entries)
            self.history = []
        else:
            caps.store.save(node)  # a store without history drops entries: never written apart
            self.history = []

    def _take(self, node: Node) -> None:
        """The checkpoint's save that takes the reservation too (or leaves the node free)."""
        ctx = self.ctx
        history = self.history if ctx.caps.history is not None else None
        entries = history_entries(ctx, node, history, now=node.updated_at) if history else []
        try:
            ctx.caps.save_reserving(node, entries)
        except (NodeLocked, ConcurrentUpdate, NodeNotFound) as exc:
            raise NotTaken(exc) from exc
        self.taking = False
        self.history = []

    def fire(self, event: str, *, target_state: str | None = None, last_error: Any = UNSET) -> None:
        """Fire ``event`` on the node; the next checkpoint saves and announces it.

        Every transition passes here, so the inspection times follow the
        state whichever path moved it (:func:`~.common.inspection_times`).
        """
        node = self.task.node
        ctx = self.ctx
        lifecycle = ctx.lifecycle
        previous = node.provision_state
        node.provision_state, node.target_provision_state = lifecycle.advance(
            previous, node.target_provision_state, event, target_state
        )
        now = node.provision_updated_at = ctx.clock()
        if last_error is not UNSET:
            node.last_error = None if last_error is None else scrub_node(node, last_error)
        state = node.provision_state
        if state in INSPECTING_STATES or previous in INSPECTING_STATES:
            inspection_times(node, previous, state, now)
        failed = event == _FAIL or state in _ERROR_STATES
        if failed:
            self._record_failure(event, state, last_error)
            # A failed flow ends the agent's part: the next attempt boots a new one.
            agent_tokens.wipe(node.driver_internal_info)
        if ctx.told:
            if failed:
                name = PROVISION_ERROR
            else:
                name = PROVISION_END if state in ctx.stable else PROVISION_START
            # A plain tuple (see :data:`~.context.Pending`): an Event only for who wants one.
            self.events.append((
                name, node.uuid, node.name, previous, event, state,
                node.target_provision_state, None, node.last_error if failed else None, now,
            ))  # fmt: skip

    def _record_failure(self, event: str, state: str, last_error: Any) -> None:
        """Note the history entry of a move into a failure state (an abort is news)."""
        kind = _FAILURE_TYPES.get(state, h.PROVISIONING)
        if event == s.ABORT_EVENT:  # by request: news, not an error
            text = None
            if last_error is UNSET or not last_error:  # never an older last_error
                operation = _OPERATIONS.get(kind, kind)
                text = f"By request, the {operation} operation was aborted."
            self.record(h.INFO, kind, text)
        else:
            # Text from last_error as the checkpoint saves it (often set after this).
            self.record(h.ERROR, kind, None)

    def record(
        self, severity: str, event_type: str, event: str | None, *, user: str | None = None
    ) -> None:
        """Note a history entry; the next checkpoint writes it with the node, or not at all.

        ``event`` ``None`` stands for the node's ``last_error`` as that save
        records it. Nothing is noted when ``node_history`` is off.
        """
        if self.ctx.config.node_history:
            self.history.append((severity, event_type, event, user))

    def step_event(self, name: str, step: Mapping[str, Any], error: str | None = None) -> None:
        """Queue a step's event (start, end, failure) for the next checkpoint to announce."""
        ctx = self.ctx
        if not ctx.told:
            return
        node = self.task.node
        state = node.provision_state
        # Timed by the save that records it (the next checkpoint): no clock read here.
        self.untimed = True
        self.events.append((
            name, node.uuid, node.name, state, None, state, node.target_provision_state,
            step, error, None,
        ))  # fmt: skip

    # -- hardware -------------------------------------------------------------------------

    def call(self, kind: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``driver.<kind>.<method>(task, ...)``; foreign errors become DriverError.

        Third-party interfaces raise whatever they like, often with the
        credentials they were given in the text: callers get one typed,
        scrubbed error, with the original chained. A tally (metrics) times it.
        """
        tally = self.ctx.tally
        if tally is None:
            return self._call(kind, method, args, kwargs)
        started = perf_counter()
        try:
            result = self._call(kind, method, args, kwargs)
        except BaseException as exc:
            tally.items.append((
                DRIVER_CALL, (self.task.node.driver, kind, method), perf_counter() - started,
                type(exc).__name__,
            ))  # fmt: skip
            raise
        tally.items.append(
            (DRIVER_CALL, (self.task.node.driver, kind, method), perf_counter() - started, None)
        )
        return result

    def _call(self, kind: str, method: str, args: Any, kwargs: Any) -> Any:
        try:
            return getattr(getattr(self.task.driver, kind), method)(self.task, *args, **kwargs)
        except IronicFSMError:
            raise
        except Exception as exc:
            error = driver_error(exc, self.task.node, kind, method)
        raise error  # outside the handler: the original must not become its context

    def power(self, power_state: str, timeout: float | None = None) -> None:
        """Set the node's power (``reboot`` and the soft ones too), its target set meanwhile."""
        node = self.task.node
        if node.disable_power_off and power_state in (s.POWER_OFF, s.SOFT_POWER_OFF):
            raise InvalidState(
                f"Failed to set node power state to {power_state}: node {node.uuid} has "
                "disable_power_off set",
                node=node.uuid,
                state=power_state,
            )
        node.target_power_state = (
            s.POWER_ON
            if power_state in (s.REBOOT, s.SOFT_REBOOT)
            else (s.POWER_OFF if power_state == s.SOFT_POWER_OFF else power_state)
        )
        try:
            if power_state == s.REBOOT:
                self.call("power", "reboot", timeout=timeout)
            else:
                self.call("power", "set_power_state", power_state, timeout=timeout)
            node.power_state = node.target_power_state
            if power_state in _ENDS_AGENT:
                # A ramdisk does not survive its machine's power-off or reboot: nor does its token.
                agent_tokens.wipe(node.driver_internal_info)
        finally:
            node.target_power_state = None


def tell_listeners(ctx: Context, pending: list[Pending | Event], saved: datetime | None) -> None:
    """Tell each listener of each pending event, as an :class:`Event`."""
    for item in pending:
        emit(ctx, item if isinstance(item, Event) else event_of(item, saved))


def event_of(item: Pending, saved: datetime | None = None) -> Event:
    """The :class:`Event` of a pending tuple (timed ``saved`` if it has no time of its
    own): a step's arguments masked here, once."""
    name, node, node_name, previous, event, state, target, step, error, timestamp = item
    if timestamp is None:
        timestamp = saved
    if step is not None:
        # Only the arguments can hold secrets (an interface or step name is none).
        step = {
            "interface": step["interface"],
            "step": step["step"],
            "args": mask_secrets(args) if (args := step.get("args")) else {},
        }
    return Event(name, node, previous, event, state, target, step, error, timestamp, node_name)


def emit(ctx: Context, event: Event) -> None:
    """Tell every listener; a listener's failure is logged, never raised."""
    for listener in ctx.listeners:
        try:
            listener(event)
        except Exception:
            LOG.exception("Listener %r failed on %s for node %s", listener, event.name, event.node)


def history_entries(
    ctx: Context,
    node: Node,
    pending: list[tuple[str, str, str | None, str | None]],
    *,
    now: datetime | None = None,
) -> list[h.HistoryEntry]:
    """The entries noted for ``node``, made at ``now`` (the save's own time, when given)."""
    now = now or ctx.clock()
    host = ctx.config.host
    entries = []
    for severity, event_type, text, user in pending:
        if text is None and node.last_error:
            text = node.last_error  # scrubbed by the checkpoint that saves it
        else:
            text = scrub_node(node, text or f"Node {node.uuid} failed in {node.provision_state}")
        entries.append(
            h.new_entry(node.uuid, now, severity, event_type, text, conductor=host, user=user)
        )
    return entries


def record_now(
    ctx: Context, node: Node, severity: str, event_type: str, event: str, *, user: str | None = None
) -> None:
    """Write an entry that goes with no node change (a refused verb), at once.

    Never raises: a request refused for its own reason must not fail
    for its history instead.
    """
    history = ctx.caps.history
    if not ctx.config.node_history or history is None:
        return
    try:
        history.add_history(history_entries(ctx, node, [(severity, event_type, event, user)]))
    except Exception:
        LOG.exception("Node %s: could not record history", node.uuid)


def check_name_once(job: Job) -> None:
    """Ironic's name rules; a bad name raises what :meth:`Node.check_types` would."""
    node = job.node
    name = node.name
    if name is None or name is job.name_ok:
        return
    try:
        check_name(name)
    except Exception:
        node.check_types()  # a field of the wrong type is named first, as it always was
        raise
    job.name_ok = name


def check_fields(job: Job) -> None:
    """:meth:`Node.check_types`, the name checked once per job (see :attr:`Job.name_ok`)."""
    check_storable(job.node)
    check_name_once(job)


#: :meth:`Job.call` as a function of the job: ``driver_call(job, kind, method, ...)``.
driver_call = Job.call
