"""The runtime: reserve and release, checkpoint, fire events, spawn, guard, power.

Every flow runs on a :class:`Job`: the :class:`~ironic_fsm.task.Task` that
drivers see (node, driver, config) plus the conductor's own bookkeeping
for it (events waiting for the next save, and whether the reservation has
been handed over). Drivers never see the bookkeeping.

The rule the runtime keeps: events are announced only after the save that
records them (:meth:`Runtime._checkpoint`), and a refused request drops
its in-memory changes and releases the node unsaved (:meth:`Runtime._reserved`).
Node history goes the same way: :meth:`Runtime._record` notes an entry on
the job, and the next checkpoint writes it in the same store transaction as
the node (:func:`~ironic_fsm.stores.base.save_with_history`).

The work queue lives here too, because it is where a flow starts
(:meth:`Runtime._spawn`): a conductor that hands work off (the CLI's, an
API's) or that drains saves the node in its working state, marked with the
flow it owes (:data:`QUEUED_KEY`), releases it and announces it; a
conductor's ``claim_work`` picks it up there.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final, Protocol

import attrs

from ironic_fsm import history as h
from ironic_fsm import states as s
from ironic_fsm.conductor.common import (
    INSPECTING_STATES,
    check_ident,
    describe_exc,
    inspection_times,
    keeps_history,
    scrub_node,
    wrong_state,
)
from ironic_fsm.conductor.draining import Draining
from ironic_fsm.conductor.jobs import Job, check_fields, check_name_once, driver_call
from ironic_fsm.conductor.registry import HardwareRegistry
from ironic_fsm.config import Config
from ironic_fsm.events import PROVISION_END, PROVISION_ERROR, PROVISION_START, Event
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    IronicFSMError,
    NodeNotFound,
    StoreError,
)
from ironic_fsm.hardware import HardwareType
from ironic_fsm.machine import Lifecycle
from ironic_fsm.masking import mask_secrets
from ironic_fsm.node import NODE_FIELDS, Node
from ironic_fsm.stores import MemoryStore, Store
from ironic_fsm.task import Task

__all__ = [
    "QUEUED_KEY", "UNSET", "WORKING_STATES", "Executor", "Guard", "Job", "Listener", "Runtime",
    "driver_call", "wrong_state",
]  # fmt: skip

LOG = logging.getLogger("ironic_fsm.conductor")

#: A listener hears every :class:`~ironic_fsm.events.Event`.
Listener = Callable[[Event], None]


class Guard(Protocol):
    """Vetoes a user-requested transition by returning a reason (``None`` allows it)."""

    def __call__(self, node: Node, verb: str, event: str, new_state: str) -> str | None: ...


class Executor(Protocol):
    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Any: ...


UNSET: Final[Any] = object()

#: The working states: a node in one with no reservation is queued work.
WORKING_STATES: Final = s.UNSTABLE_STATES - s.WAIT_STATES
#: ``driver_internal_info`` key of a queued node: the flow it owes (``{"flow": name, ...}``).
QUEUED_KEY: Final = "queued_flow"

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
#: How an abort names the operation, by its event type.
_OPERATIONS: Final = {h.RESCUING: "rescue", h.INSPECTING: "inspection", h.DEPLOYING: "deployment"}


class _Reserved:
    """:meth:`Runtime._reserved`: a plain class, not a generator, as it runs on every verb."""

    __slots__ = ("ident", "job", "runtime", "uuid")

    def __init__(self, runtime: Runtime, ident: str) -> None:
        self.runtime = runtime
        self.ident = ident

    def __enter__(self) -> Job:
        runtime = self.runtime
        node = runtime.store.reserve(self.ident, runtime.holder)
        self.uuid = node.uuid
        try:
            driver = runtime._registry.driver_for(node)
        except BaseException:
            runtime._drop_reservation(self.uuid)
            raise
        self.job = Job(Task(node=node, driver=driver, config=runtime.config))
        return self.job

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.runtime._release(self.job)
        else:
            self.runtime._drop_reservation(self.uuid)


class Runtime(Draining):
    """The conductor's state and the primitives every flow is built from.

    The attributes are set by :class:`~ironic_fsm.conductor.Conductor`'s
    constructor, the one place that lists the conductor's state.
    """

    store: Store
    config: Config
    lifecycle: Lifecycle
    holder: str
    _listeners: list[Listener]
    _guards: list[Guard]
    _clock: Callable[[], datetime]
    _executor: Executor | None
    _registry: HardwareRegistry
    _hand_off: bool
    _drain: threading.Event
    _flows_running: list[None]

    def _now(self) -> datetime:
        return self._clock()

    def _driver_for(self, node: Node) -> HardwareType:
        return self._registry.driver_for(node)

    def hardware_type_for(self, node: Node) -> HardwareType:
        """The hardware type that drives ``node`` (its ``driver``), as registered or installed.

        Raises:
            DriverNotFound: no hardware type of that name here.
        """
        return self._registry.driver_for(node)

    def _task_for(self, node: Node) -> Task:
        """A task for reading a node's steps or plans, with nothing reserved."""
        return Task(node=node, driver=self._driver_for(node), config=self.config)

    # -- events and saves ---------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                LOG.exception(
                    "Listener %r failed on %s for node %s", listener, event.name, event.node
                )

    def _checkpoint(self, job: Job) -> None:
        """Persist the node now, then tell listeners what led here.

        The conductor saves at checkpoints only: before it touches hardware,
        before each step starts, and when it releases the node. Events wait
        for the save that records them.
        """
        node = job.node
        node.updated_at = self._clock()
        if node.last_error or node.maintenance_reason:
            # A last line of defence: no secret reaches the store in free text.
            if node.last_error:
                node.last_error = scrub_node(node, node.last_error)
            if node.maintenance_reason:
                node.maintenance_reason = scrub_node(node, node.maintenance_reason)
        store = self.store
        if type(store) is not MemoryStore:
            check_fields(job)
        elif node.name is not job.name_ok:  # MemoryStore checks the rest first, in the same words
            check_name_once(job)
        if not job.history:
            store.save(node)
        elif type(store) is MemoryStore or keeps_history(store):
            store.save(node, history=self._history_entries(node, job.history, now=node.updated_at))
            job.history = []
        else:
            store.save(node)  # a store without history drops entries: never written apart
            job.history = []
        pending = job.events
        if pending:
            job.events = []
            for event in pending:
                self._emit(event)

    # -- node history -------------------------------------------------------------------

    def _record(
        self,
        job: Job,
        severity: str,
        event_type: str,
        event: str | None,
        *,
        user: str | None = None,
    ) -> None:
        """Note a history entry; the next checkpoint writes it with the node, or not at all.

        ``event`` ``None`` stands for the node's ``last_error`` as that save
        records it. Nothing is noted when ``node_history`` is off.
        """
        if self.config.node_history:
            job.history.append((severity, event_type, event, user))

    def _record_now(
        self, node: Node, severity: str, event_type: str, event: str, *, user: str | None = None
    ) -> None:
        """Write an entry that goes with no node change (a refused verb), at once.

        Never raises: a request refused for its own reason must not fail
        for its history instead.
        """
        if not self.config.node_history or not keeps_history(self.store):
            return
        try:
            self.store.add_history(
                self._history_entries(node, [(severity, event_type, event, user)])
            )
        except Exception:
            LOG.exception("Node %s: could not record history", node.uuid)

    def _history_entries(
        self,
        node: Node,
        pending: list[tuple[str, str, str | None, str | None]],
        *,
        now: datetime | None = None,
    ) -> list[h.HistoryEntry]:
        """The entries noted for ``node``, made at ``now`` (the save's own time, when given)."""
        now = now or self._now()
        host = self.config.host
        entries = []
        for severity, event_type, text, user in pending:
            if text is None and node.last_error:
                text = node.last_error  # scrubbed by the checkpoint that saves it
            else:
                text = scrub_node(
                    node, text or f"Node {node.uuid} failed in {node.provision_state}"
                )
            entries.append(
                h.new_entry(node.uuid, now, severity, event_type, text, conductor=host, user=user)
            )
        return entries

    def _process(
        self,
        job: Job,
        event: str,
        *,
        target_state: str | None = None,
        last_error: Any = UNSET,
    ) -> None:
        """Fire ``event`` on the job's node; the next checkpoint saves and announces it.

        Every transition passes here, so the inspection times follow the
        state whichever path moved it (:func:`~.common.inspection_times`).
        """
        node = job.node
        previous = node.provision_state
        node.provision_state, node.target_provision_state = self.lifecycle.advance(
            previous, node.target_provision_state, event, target_state
        )
        now = node.provision_updated_at = self._clock()
        if last_error is not UNSET:
            node.last_error = None if last_error is None else scrub_node(node, last_error)
        state = node.provision_state
        if state in INSPECTING_STATES or previous in INSPECTING_STATES:
            inspection_times(node, previous, state, now)
        failed = event == _FAIL or state in _ERROR_STATES
        if failed:
            self._record_failure(job, event, state, last_error)
        if self._listeners:
            if failed:
                name = PROVISION_ERROR
            else:
                name = PROVISION_END if self.lifecycle.is_stable(state) else PROVISION_START
            job.events.append(
                Event(
                    name=name,
                    node=node.uuid,
                    previous_state=previous,
                    event=event,
                    state=state,
                    target=node.target_provision_state,
                    error=node.last_error if failed else None,
                    timestamp=now,
                )
            )

    def _record_failure(self, job: Job, event: str, state: str, last_error: Any) -> None:
        """Note the history entry of a move into a failure state (an abort is news)."""
        kind = _FAILURE_TYPES.get(state, h.PROVISIONING)
        if event == s.ABORT_EVENT:  # by request: news, not an error
            text = None
            if last_error is UNSET or not last_error:  # never an older last_error
                operation = _OPERATIONS.get(kind, kind)
                text = f"By request, the {operation} operation was aborted."
            self._record(job, h.INFO, kind, text)
        else:
            # Text from last_error as the checkpoint saves it (often set after this).
            self._record(job, h.ERROR, kind, None)

    def _step_event(
        self, name: str, job: Job, step: Mapping[str, Any], error: str | None = None
    ) -> None:
        if not self._listeners:
            return
        node = job.node
        job.events.append(
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

    # -- reservations -------------------------------------------------------------------

    def _reserved(self, ident: str, *, checked: bool = False) -> _Reserved:
        """Reserve the node and yield a job; on the way out, save and release.

        If the body raises, the node's in-memory changes are dropped and the
        reservation is simply released: a refused request changes nothing.
        ``checked``: ``ident`` already went through :func:`check_ident`.
        """
        return _Reserved(self, ident if checked else check_ident(ident))

    def _drop_reservation(self, uuid: str) -> None:
        """Release our reservation without saving; never masks the error being handled."""
        try:
            self.store.release(uuid, self.holder)
        except NodeNotFound:
            pass
        except BaseException:
            LOG.exception("Node %s: could not release the reservation", uuid)

    def _release(self, job: Job) -> None:
        """Clear our reservation in the same write as the node's final state.

        If that write fails, the reservation is still released and the
        failure is raised: an unsaved result is never reported as done.
        """
        if job.detached:
            return
        node = job.node
        node.reservation = None
        try:
            try:
                self._checkpoint(job)
            except InvalidParameterValue:
                if not (job.ran_flow and self._failed_unstorable(job)):
                    raise
        except BaseException as exc:
            self._drop_reservation(node.uuid)
            if isinstance(exc, Exception) and not isinstance(exc, IronicFSMError):
                raise StoreError(
                    f"Node {node.uuid}: the store could not save the node: {describe_exc(exc)}",
                    node=node.uuid,
                ) from exc
            raise
        if job.announce:
            job.announce = False
            self._announce(node.uuid)

    # -- the work queue -----------------------------------------------------------------

    def _queue(self, job: Job, flow: Mapping[str, Any]) -> None:
        """Leave ``flow`` to whichever conductor claims the node: mark it, release, announce.

        A node still in a wait state (a callback or ``unhold`` about to
        continue) first moves on to its working state, where the queue is.
        """
        node = job.node
        if node.provision_state in s.WAIT_STATES:
            self._process(job, s.RESUME_EVENT)
        node.driver_internal_info[QUEUED_KEY] = dict(flow)
        job.announce = True

    # -- running flows ------------------------------------------------------------------

    def _spawn(
        self, job: Job, work: Callable[[Job], None], *, queued: Mapping[str, Any] | None = None
    ) -> None:
        """Run ``work`` now, or in the executor; the reservation passes along.

        ``queued`` names the same work as a queue entry (``{"flow": ...}``):
        a conductor that hands work off, or drains, queues the node instead
        (:meth:`_queue`), and so does a drain that comes before the executor
        starts it. Work without one always runs.
        """
        if queued is not None and (self._hand_off or self._drain.is_set()):
            self._queue(job, queued)
            return
        if self._executor is None:
            running = self._flows_running  # as _flow_count(), without a call on every verb
            running.append(None)
            try:
                self._guarded(job, work)
            finally:
                running.pop()
            return
        self._flow_count(1)
        try:
            self._checkpoint(job)  # the caller sees the first transition saved
        except BaseException:
            self._flow_count(-1)
            raise
        task = job.task
        worker = Job(Task(node=task.node, driver=task.driver, config=task.config))
        job.node = attrs.evolve(task.node)
        job.detached = True

        def run() -> None:
            try:
                if queued is not None and self._drain.is_set():
                    self._queue(worker, queued)
                else:
                    self._guarded(worker, work)
            finally:
                try:
                    self._release(worker)
                except Exception:
                    LOG.exception("Node %s: background work ended unsaved", worker.node.uuid)
                finally:
                    self._flow_count(-1)

        self._executor.submit(run)

    def _guarded(self, job: Job, work: Callable[[Job], None]) -> None:
        """Run a flow; a bug in it fails the node instead of leaving it stuck.

        A flow whose driver assigned a field a value the record cannot hold
        fails too, from the last saved copy of the node: the failure state
        is what gets saved, never the bad value. The final save finds such
        a value (:meth:`_release`), as it checks every field anyway.
        """
        job.ran_flow = True
        try:
            work(job)
        except Exception as exc:
            self._fail_flow(job, exc)

    def _fail_flow(self, job: Job, exc: Exception) -> None:
        """Fail the flow's node for ``exc``: from its saved copy if it holds a bad value."""
        try:
            check_fields(job)
        except InvalidParameterValue:
            self._reread(job)
        node = job.node
        message = scrub_node(
            node,
            f"Unexpected error on node {node.uuid} in {node.provision_state}: " + describe_exc(exc),
        )
        LOG.error("%s", message)
        node.last_error = message
        if s.FAIL_EVENT in self.lifecycle.allowed_events(node.provision_state):
            self._process(job, s.FAIL_EVENT)

    def _failed_unstorable(self, job: Job) -> bool:
        """After a flow's final save was refused: if for a value the record cannot hold,
        fail the node from its saved copy and save that; ``False`` if for another reason."""
        try:
            check_fields(job)
        except InvalidParameterValue as exc:
            self._fail_flow(job, exc)
            job.node.reservation = None
            self._checkpoint(job)
            return True
        return False

    def _reread(self, job: Job) -> None:
        """The node as last saved (still reserved by us), in place: whoever holds it sees it."""
        node = job.node
        saved = self.store.get(node.uuid)
        for name in NODE_FIELDS:
            setattr(node, name, getattr(saved, name))
        if job.took_entry:  # taken at the claim; the saved copy still has it
            node.driver_internal_info.pop(QUEUED_KEY, None)
        job.events = []  # they told of changes now dropped
        job.history = []

    # -- power ----------------------------------------------------------------------------

    def _power(self, job: Job, power_state: str, timeout: float | None = None) -> None:
        node = job.node
        node.target_power_state = (
            s.POWER_ON
            if power_state in (s.REBOOT, s.SOFT_REBOOT)
            else (s.POWER_OFF if power_state == s.SOFT_POWER_OFF else power_state)
        )
        try:
            if power_state == s.REBOOT:
                driver_call(job, "power", "reboot", timeout=timeout)
            else:
                driver_call(job, "power", "set_power_state", power_state, timeout=timeout)
            node.power_state = node.target_power_state
        finally:
            node.target_power_state = None
