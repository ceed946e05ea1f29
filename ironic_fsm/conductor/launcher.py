"""The launcher: where every flow starts, now, in the executor, or queued for a claim.

A conductor that hands work off (the CLI's, an API's) or that drains saves the
node in its working state, marked with the flow it owes (:data:`QUEUED_KEY`),
releases it and announces it; a conductor's ``claim_work`` picks it up there.
The launcher also counts the running flows and keeps the drain, what a
conductor's service watches as it stops.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import attrs

from ironic_fsm import states as s
from ironic_fsm.conductor.jobs import Job
from ironic_fsm.conductor.outage import ended_unsaved, stalling
from ironic_fsm.conductor.reservations import QUEUED_KEY, Reservations
from ironic_fsm.task import Task

__all__ = ["WORKING_STATES", "Executor", "Launcher"]

LOG = logging.getLogger("ironic_fsm.conductor")

#: The working states: a node in one with no reservation is queued work.
WORKING_STATES: Final = s.UNSTABLE_STATES - s.WAIT_STATES


class Executor(Protocol):
    def submit(self, fn: Callable[..., Any], /, *args: Any) -> Any: ...


class Launcher:
    """``spawn`` and ``queue``; ``drain``, ``draining`` and ``running``.

    Attributes:
        executor: Runs flows in the background; ``None``: in the caller.
        hand_off: Queue every flow that can be queued instead of running it.
        drain_event: Set by :meth:`drain`; a flow reads it at each step boundary.
    """

    __slots__ = ("_reservations", "_running", "drain_event", "executor", "hand_off")

    def __init__(
        self, reservations: Reservations, executor: Executor | None, hand_off: bool
    ) -> None:
        self._reservations = reservations
        self.executor = executor
        self.hand_off = hand_off
        self.drain_event = threading.Event()
        #: The node of each running flow: ``list.append`` and ``list.remove`` are atomic,
        #: so the count needs no lock on every verb.
        self._running: list[str] = []

    def drain(self, holder: str) -> None:
        """Stop taking work; flows hand back at their next step boundary (not undone)."""
        if not self.drain_event.is_set():
            LOG.info("Conductor %s draining: no new work, flows hand back at a step", holder)
        self.drain_event.set()

    @property
    def draining(self) -> bool:
        """Whether :meth:`drain` was called."""
        return self.drain_event.is_set()

    def running(self) -> int:
        """Flows running now, or submitted to the executor and not finished."""
        return len(self._running)

    def runs(self, uuid: str) -> bool:
        """Whether a flow of this conductor is running (or submitted) on node ``uuid``."""
        return uuid in self._running

    def flow_count(self, delta: int, uuid: str) -> None:
        if delta > 0:
            self._running.append(uuid)
        else:
            self._running.remove(uuid)

    def queue(self, job: Job, flow: Mapping[str, Any]) -> None:
        """Leave ``flow`` to whichever conductor claims the node: mark it, release, announce.

        A node still in a wait state (a callback or ``unhold`` about to
        continue) first moves on to its working state, where the queue is.
        """
        node = job.task.node
        if node.provision_state in s.WAIT_STATES:
            job.fire(s.RESUME_EVENT)
        node.driver_internal_info[QUEUED_KEY] = dict(flow)
        job.announce = True

    def spawn(
        self, job: Job, work: Callable[[Job], None], *, queued: Mapping[str, Any] | None = None
    ) -> None:
        """Run ``work`` now, or in the executor; the reservation passes along.

        ``queued`` names the same work as a queue entry (``{"flow": ...}``):
        a conductor that hands work off, or drains, queues the node instead
        (:meth:`queue`), and so does a drain that comes before the executor
        starts it. Work without one always runs.
        """
        if queued is not None and (self.hand_off or self.drain_event.is_set()):
            self.queue(job, queued)
            return
        reservations = self._reservations
        executor = self.executor
        uuid = job.task.node.uuid
        if executor is None:
            running = self._running  # as flow_count(), without a call on every verb
            running.append(uuid)
            try:
                reservations.guarded(job, stalling(work))
            finally:
                running.remove(uuid)
            if job.stalled is not None:  # the node stays reserved, for recover()
                raise job.stalled
            return
        self.flow_count(1, uuid)
        try:
            job.checkpoint()  # the caller sees the first transition saved
        except BaseException:
            self.flow_count(-1, uuid)
            raise
        task = job.task
        worker = Job(Task(node=task.node, driver=task.driver, config=task.config), job.ctx)
        job.node = attrs.evolve(task.node)
        job.detached = True

        def run() -> None:
            try:
                if queued is not None and self.drain_event.is_set():
                    self.queue(worker, queued)
                else:
                    reservations.guarded(worker, stalling(work))
            finally:
                try:
                    reservations.release(worker)
                except Exception as exc:
                    ended_unsaved(uuid, "background work", exc)
                finally:
                    self.flow_count(-1, uuid)

        executor.submit(run)
