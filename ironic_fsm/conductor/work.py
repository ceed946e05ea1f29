"""Claiming queued work: how conductor services pick up what others handed off.

The work queue is no table of its own: it is the nodes in a working state
(:data:`~ironic_fsm.conductor.launcher.WORKING_STATES`) that nobody holds.
A conductor built with ``hand_off=True`` (a CLI's, an API's) puts nodes
there after a verb or callback; a draining conductor puts back the flows it
stops at a step boundary. Each such node carries the flow it owes
(:data:`~ironic_fsm.conductor.reservations.QUEUED_KEY`), and the store announces
it (``NOTIFY ironic_fsm_work`` on PostgreSQL). :meth:`Work.claim_work`
reads the queue from the store's indexed columns, picks the nodes this
conductor owns, reserves them in one statement
(:func:`~ironic_fsm.stores._claim.reserve_queued`) and runs their flows.
The reservation stays the lock: of two conductors claiming one node, one
gets it and the other skips it.

A claim costs two statements whatever it takes, and no save: the claiming
thread wakes on every notification and every finished flow, so anything it
does per node (a round trip, a decode) is paid serially while the flow
threads wait for it. Each flow saves its node before it touches hardware
anyway, in its own thread.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.flows import Flows
from ironic_fsm.conductor.jobs import LOG, Job
from ironic_fsm.conductor.launcher import WORKING_STATES, Launcher
from ironic_fsm.conductor.outage import ended_unsaved, stalling
from ironic_fsm.conductor.ownership import Ownership
from ironic_fsm.conductor.reservations import QUEUED_KEY, Reservations
from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError
from ironic_fsm.node import Node
from ironic_fsm.stores._claim import QueuedNode
from ironic_fsm.stores.capabilities import StoreCapabilities
from ironic_fsm.task import Task

__all__ = ["Work"]

#: What a claimed node without a queued flow does: what ``recover`` does.
_RESUME = {"flow": "resume"}
#: How many times its share of the queue a limited claim reads (see ``_queue_head``).
_HEAD_MARGIN = 2


def queued_work(
    caps: StoreCapabilities, states: Collection[str], limit: int | None = None
) -> list[QueuedNode]:
    """The store's work queue (a module-level seam: tests put a stale scan in its place)."""
    return caps.queued_work(states, limit)


class Work:
    """:meth:`claim_work`: start the queued flows this conductor owns."""

    def __init__(self, ctx: Context, reservations: Reservations, launcher: Launcher,
                 flows: Flows, ownership: Ownership) -> None:  # fmt: skip
        self._ctx, self._reservations, self._launcher = ctx, reservations, launcher
        self._flows, self._ownership = flows, ownership

    def claim_work(self, limit: int | None = None) -> list[str]:
        """Reserve queued nodes this conductor owns, and run their flows; returns their UUIDs.

        A flow queued by a verb or callback starts as it would have in the
        caller (a step phase plans and starts its steps); one handed back by a
        drain goes on at its recorded step, so no step recorded done runs
        again; a working node queued by nothing (its flow ended unsaved)
        resumes as :meth:`recover` resumes one. With an executor the flows
        run there. ``limit`` caps how many nodes one call claims.

        Reads the queue from indexed columns, and with ``limit`` only its
        head (the whole queue only when the head is others'): it decodes
        only the nodes it reserves, whatever the size of the queue or the
        fleet. A node another conductor reserved first is skipped. A
        draining conductor, or one that hands work off itself, claims
        nothing.

        Raises:
            InvalidParameterValue: ``limit`` is not a positive integer.
        """
        if limit is not None and (type(limit) is not int or limit < 1):
            raise InvalidParameterValue(
                f"claim_work's limit must be a positive integer or None, not {limit!r}"
            )
        if self._launcher.draining or self._launcher.hand_off:
            return []
        mine = self._claimable(limit)
        if not mine:
            return []
        held = self._reservations.held
        for uuid in mine:  # counted before the store reserves them: see .holdings
            held.add(uuid)
        try:
            return self._start_all(mine)
        finally:
            for uuid in mine:
                held.discard(uuid)

    def _start_all(self, mine: list[str]) -> list[str]:
        """Reserve ``mine`` (those still queued) and start their flows, in queue order."""
        rank = {uuid: i for i, uuid in enumerate(mine)}
        reserved = self._ctx.caps.reserve_queued(mine, self._ctx.holder, WORKING_STATES)
        reserved.sort(key=lambda node: rank[node.uuid])
        claimed: list[str] = []
        for index, node in enumerate(reserved):
            try:
                if self._start_claimed(node):
                    claimed.append(node.uuid)
            except BaseException:
                for left in reserved[index + 1 :]:  # never started: not ours to keep
                    self._reservations.drop(left.uuid)
                raise
        return claimed

    def _claimable(self, limit: int | None) -> list[str]:
        """The queued nodes this conductor owns, oldest first, at most ``limit``."""
        queue, whole = self._queue_head(limit)
        mine = self._mine(queue)
        if not whole and len(mine) < (limit or 0):
            # The head of the queue is mostly others': what is ours may be further back.
            queue = queued_work(self._ctx.caps, WORKING_STATES)
            mine = self._mine(queue)
        if queue and not mine:
            # Rings younger than heartbeat_interval are trusted as they are: reading the
            # registry on every wake was a round trip per claim. Only when all the queue
            # looks like others' is a rebalance worth looking for now.
            self._ownership.refresh_ring()
            mine = self._mine(queue)
        return mine[:limit]

    def _mine(self, queue: list[QueuedNode]) -> list[str]:
        return [q.uuid for q in queue if self._ownership.owns(q.uuid, q.driver, q.conductor_group)]

    def _queue_head(self, limit: int | None) -> tuple[list[QueuedNode], bool]:
        """The oldest queued nodes, enough for ``limit`` of ours; and whether that is all.

        This conductor's share of the queue is about one in as many as the
        live conductors: reading twice that many leaves room for an uneven
        split, and a short head sends the caller to the whole queue.
        """
        if limit is None:
            return queued_work(self._ctx.caps, WORKING_STATES), True
        members = self._ownership.live_count()
        want = limit * max(members, 1) * _HEAD_MARGIN
        head = queued_work(self._ctx.caps, WORKING_STATES, limit=want)
        return head, len(head) < want

    def _start_claimed(self, node: Node) -> bool:
        """Hand a node just reserved to a flow thread (or run it here, without an executor)."""
        found = node.driver_internal_info.pop(QUEUED_KEY, None)
        flow: dict[str, Any] | None = found if isinstance(found, dict) else None
        try:
            driver = self._ctx.registry.driver_for(node)
            job = Job(Task(node=node, driver=driver, config=self._ctx.config), self._ctx)
            job.took_entry = True  # a copy re-read after a failure drops the stale entry too
        except IronicFSMError as exc:
            LOG.info("Node %s: not claimed: %s", node.uuid, exc)
            self._reservations.drop(node.uuid)
            return False
        LOG.info(
            "Node %s: claimed by %s in %s (%s)",
            node.uuid, self._ctx.holder, node.provision_state,
            "queued " + str(flow.get("flow")) if flow else "no queued flow: resumed",
        )  # fmt: skip
        self._launcher.flow_count(1, node.uuid)
        if self._launcher.executor is None:
            self._run_claimed(job, flow)
            return True
        try:
            self._launcher.executor.submit(self._run_claimed, job, flow)
        except BaseException:
            self._launcher.flow_count(-1, node.uuid)
            self._reservations.drop(node.uuid)
            raise
        return True

    def _run_claimed(self, job: Job, flow: dict[str, Any] | None) -> None:
        """The claimed node's flow, then the release that saves it and frees it.

        A drain that came since the claim hands the flow back untouched.
        """
        node = job.node
        try:
            if self._launcher.draining:
                self._launcher.queue(job, flow or _RESUME)
            else:
                self._reservations.guarded(job, stalling(lambda j: self._flows.run_flow(j, flow)))
        finally:
            try:
                self._reservations.release(job)
            except Exception as exc:
                ended_unsaved(node.uuid, "claimed work", exc)
            finally:
                self._launcher.flow_count(-1, node.uuid)
