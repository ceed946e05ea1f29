"""Recovery: liveness, taking over from dead holders, and timeouts.

A conductor that dies leaves its nodes reserved. :meth:`Recovery.recover`
finds holders that are gone (same host: the process has exited; another
host: the heartbeat expired), takes their nodes over and resumes each
interrupted flow at its recorded step. :meth:`Recovery.check_timeouts`
fails wait states that lasted too long and wakes ``wait`` steps whose
time is up. In a fleet, both act only on the nodes this conductor owns
(:meth:`~ironic_fsm.conductor.ownership.Ownership.owns`): a dead conductor's
nodes go to their new owner, and no two conductors time out the same
node. A draining conductor does neither.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from ironic_fsm import history as h
from ironic_fsm import states as s
from ironic_fsm.conductor.common import local_holder_alive, shown, wait_is_over
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.engine import PHASE_BY_STATE, StepEngine
from ironic_fsm.conductor.flows import Flows
from ironic_fsm.conductor.jobs import LOG, Job
from ironic_fsm.conductor.launcher import Launcher
from ironic_fsm.conductor.ownership import Ownership
from ironic_fsm.conductor.reservations import QUEUED_KEY, Reservations
from ironic_fsm.conductor.ring import node_group
from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError, NodeNotFound
from ironic_fsm.node import Node
from ironic_fsm.task import Task

__all__ = ["Recovery"]

#: Config option limiting each wait state outside the step phases.
_OTHER_TIMEOUTS = {s.INSPECTWAIT: "inspect_wait_timeout", s.RESCUEWAIT: "rescue_callback_timeout"}
#: The smallest step of a datetime.
_TICK = timedelta(microseconds=1)


def _timeout_option(state: str) -> str:
    """The config option limiting how long a node may stay in the wait state ``state``."""
    phase = PHASE_BY_STATE.get(state)
    if phase is not None:
        return phase.timeout_option
    return _OTHER_TIMEOUTS.get(state, "rescue_callback_timeout")


class Recovery:
    """Crash recovery and the periodic timeout check.

    Takes over the nodes of dead holders that this conductor owns (the rings
    say which) and resumes their flows; acts on wait states whose time is up.
    """

    def __init__(self, ctx: Context, reservations: Reservations, launcher: Launcher,
                 engine: StepEngine, flows: Flows, ownership: Ownership) -> None:  # fmt: skip
        self._ctx, self._reservations, self._launcher = ctx, reservations, launcher
        self._engine, self._flows, self._ownership = engine, flows, ownership

    def _holder_alive(
        self,
        holder: str,
        heartbeats: Mapping[str, datetime],
        updated_at: datetime | None,
        now: datetime,
    ) -> bool:
        """Whether ``holder`` still runs, from its name and signs of life alone.

        Takes the node's ``updated_at`` rather than the node, so that the
        recovery scan decides without reading any record: a holder without
        heartbeats was last seen when it last saved the node.
        """
        local = local_holder_alive(holder, self._ctx.config.host)
        if local is not None:
            return local
        last_seen = heartbeats.get(holder) or updated_at
        if last_seen is None:
            return False
        return now - last_seen < timedelta(seconds=self._ctx.config.heartbeat_timeout)

    def recover(self) -> list[str]:
        """Take over nodes whose holder is gone, and this conductor's own orphans; resume them.

        A flow resumes at the step recorded before the crash (steps are
        idempotent, as the cleaning spec requires); steps before it do not
        run again. Nodes in wait, hold, stable or failure states are just
        released: their flow goes on when its callback, ``unhold`` or a
        user's verb comes. Returns the UUIDs taken over.

        This conductor's own orphans are nodes the store says it holds that
        no thread of it holds: a flow stopped by a database outage, a
        release or a reservation whose answer was lost with the connection
        (:meth:`_take_back`). Nobody else may take them (their holder is
        alive), so this conductor goes on with them, the same way.

        Reads only the reservations (an index, no record decoded); a node
        is read only once its holder is known to be gone, so a pass with
        nothing to recover costs the same for any fleet. In a fleet, only
        the nodes this conductor owns are taken over; a draining
        conductor takes none.
        """
        if self._launcher.draining:
            return []
        held = self._ctx.caps.reserved()
        if not held:
            return []
        refreshed = False
        now = self._ctx.clock()
        heartbeats = self._ctx.caps.store.holders()
        taken: list[str] = []
        for uuid, holder, updated_at in held:
            if holder == self._ctx.holder:
                if self._take_back(uuid):
                    taken.append(uuid)
                continue
            if self._holder_alive(holder, heartbeats, updated_at, now):
                continue
            try:
                node = self._ctx.caps.store.get(uuid)
            except NodeNotFound:
                continue  # deleted since the scan
            if node.reservation != holder:
                continue  # released or taken over since the scan: not ours to take
            if not refreshed:
                # Once per pass, and only when there is a node to place.
                self._ownership.refresh_ring()
                refreshed = True
            if not self._ownership.owns(uuid, node.driver, node_group(node)):
                continue  # its owner takes it over
            LOG.warning(
                "Node %s: taking over from %s, which is gone (state %s)",
                uuid, holder, node.provision_state,
            )  # fmt: skip
            self._ctx.caps.store.release(uuid, holder)
            try:
                with self._reservations.reserved(uuid) as job:
                    job.record(
                        h.WARNING,
                        h.CONDUCTOR,
                        f"Conductor {self._ctx.config.host} took node {uuid} over from "
                        f"{holder}, which is gone, in {node.provision_state!r}",
                    )
                    self._go_on(job)
            except IronicFSMError as exc:
                LOG.info("Node %s: not taken over: %s", uuid, exc)
                continue
            taken.append(uuid)
        return taken

    def _go_on(self, job: Job) -> None:
        """Go on with a node whose flow stopped elsewhere: its queued flow, or from its step."""
        # Claimed but not yet started when its flow stopped: the node still owes its
        # queued flow, which must run rather than be "resumed" (a phase with no plan
        # yet would fail as interrupted).
        flow = job.node.driver_internal_info.pop(QUEUED_KEY, None)
        if isinstance(flow, dict):
            self._launcher.spawn(
                job, functools.partial(self._flows.run_flow, flow=flow), queued=flow
            )
        else:
            self._launcher.spawn(job, self._flows.resume, queued={"flow": "resume"})

    def _take_back(self, uuid: str) -> bool:
        """A node the store says this conductor holds: go on with it if no thread here does.

        Such an orphan is left by a flow stopped by a database outage, by a
        release that never reached the database, or by a reservation whose
        answer was lost with the connection. Whether a thread holds it is
        asked of :attr:`.Reservations.held` (counted before every reserve)
        and of the launcher (every running flow); the hold taken here keeps
        any other thread off it meanwhile.
        """
        held = self._reservations.held
        if self._launcher.runs(uuid) or not held.take(uuid):
            return False
        try:
            try:
                node = self._ctx.caps.store.get(uuid)
            except NodeNotFound:
                return False
            if (
                node.reservation != self._ctx.holder
                or not held.alone(uuid)
                or self._launcher.runs(uuid)
            ):
                return False  # released, or taken up by a thread here, since the scan
            LOG.warning(
                "Node %s: reserved by this conductor but no flow of its runs it (stopped by "
                "a database outage, or its release was lost); going on from %s",
                uuid, node.provision_state,
            )  # fmt: skip
            self._take_up(node)
            return True
        finally:
            held.discard(uuid)

    def _take_up(self, node: Node) -> None:
        """Resume an orphan of this conductor's as :meth:`recover` resumes a dead holder's.

        A node the rings now give another conductor is released for its
        owner to claim, as queued work.
        """
        uuid = node.uuid
        reservations = self._reservations
        if not self._ownership.owns(uuid, node.driver, node_group(node)):
            reservations.drop(uuid)
            reservations.announce(uuid)
            return
        try:
            driver = self._ctx.registry.driver_for(node)
        except IronicFSMError as exc:
            LOG.info("Node %s: released, not resumed: %s", uuid, exc)
            reservations.drop(uuid)
            return
        job = Job(Task(node=node, driver=driver, config=self._ctx.config), self._ctx)
        job.record(
            h.WARNING,
            h.CONDUCTOR,
            f"Conductor {self._ctx.config.host} went on with node {uuid}, which it held with "
            f"no flow running (stopped by a database outage), in {node.provision_state!r}",
        )
        try:
            self._go_on(job)
        except BaseException:
            reservations.drop(uuid)
            raise
        reservations.release(job)

    # -- timeouts -----------------------------------------------------------------------

    def check_timeouts(self, now: datetime | None = None) -> list[str]:
        """Fail nodes that waited too long; resume ``wait`` steps whose time is up.

        Call it periodically (Ironic does every 60 s). Nodes in maintenance
        or reserved by someone else are skipped, as in Ironic (a ``wait``
        step still ends in maintenance); holds never time out. Returns the
        UUIDs of the nodes it acted on.

        Reads only candidates, through the store's indexes: nodes whose
        ``wait`` step is up, and per wait state with a timeout, nodes in it
        since at least that long. Each is checked again as it is read.
        """
        if now is not None and (not isinstance(now, datetime) or now.utcoffset() is None):
            raise InvalidParameterValue(
                f"check_timeouts needs a timezone-aware datetime, not {shown(now)}"
            )
        now = now or self._ctx.clock()
        acted: dict[str, None] = {}
        if self._launcher.draining:
            return []
        self._ownership.refresh_ring()
        for node in self._ctx.caps.waking(now, reservation=None):
            if node.provision_state in s.WAIT_STATES:
                self._check_waiting(node, now, acted)
        for state in sorted(s.WAIT_STATES):
            timeout = getattr(self._ctx.config, _timeout_option(state))
            if not timeout:
                continue
            # updated_before is strict: one tick later keeps "at or past the timeout".
            since = now - timedelta(seconds=timeout) + _TICK
            for node in self._ctx.caps.in_states(
                [state], updated_before=since, reservation=None, maintenance=False
            ):
                if node.uuid not in acted:
                    self._check_waiting(node, now, acted)
        return list(acted)

    def _check_waiting(self, node: Node, now: datetime, acted: dict[str, None]) -> None:
        if not self._ownership.owns(node.uuid, node.driver, node_group(node)):
            return
        work = self._timeout_work(node, now)
        if work is not None:
            # Waking a wait step continues the phase: a flow that a drain may queue.
            woken = isinstance(work, functools.partial) and work.func == self._engine.continue_steps
            self._act_on(node.uuid, work, {"flow": "continue"} if woken else None)
            acted[node.uuid] = None

    def _timeout_work(self, node: Node, now: datetime) -> Callable[[Job], None] | None:
        """What the periodic check must do to a waiting node now, if anything."""
        state = node.provision_state
        phase = PHASE_BY_STATE.get(state)
        if phase is not None:
            wait_until = node.driver_internal_info.get(phase.wait_until_key)
            if wait_until is not None:
                if wait_is_over(wait_until, now):
                    return functools.partial(self._engine.continue_steps, phase=phase)
                return None
        if node.maintenance:
            return None
        timeout = getattr(self._ctx.config, _timeout_option(state))
        started = node.provision_updated_at
        if not timeout or started is None or now - started < timedelta(seconds=timeout):
            return None
        return functools.partial(self._time_out, state=state)

    def _act_on(
        self, uuid: str, work: Callable[[Job], None], queued: Mapping[str, Any] | None
    ) -> None:
        try:
            with self._reservations.reserved(uuid) as job:
                self._launcher.spawn(job, work, queued=queued)
        except IronicFSMError as exc:
            LOG.info("Node %s: skipped by the periodic check: %s", uuid, exc)

    def _time_out(self, job: Job, state: str) -> None:
        node = job.node
        if node.provision_state != state:
            return
        phase = PHASE_BY_STATE.get(state)
        if phase is not None:
            step = getattr(node, phase.step_field) or None
            self._engine.phase_failed(job, phase, phase.timeout_message(node, step), step=step)
        elif state == s.RESCUEWAIT:
            node.instance_info.pop("rescue_password", None)
            self._engine.call_quietly(job, lambda _task: job.power(s.POWER_OFF), "power off")
            self._engine.call_quietly(job, job.driver.rescue.clean_up, "rescue clean-up")
            job.fire(s.FAIL_EVENT,
                last_error=f"Timeout reached while waiting for rescue ramdisk callback for node "
                f"{node.uuid}",
            )  # fmt: skip
        elif state == s.INSPECTWAIT:
            # An agent may be up and waiting: the inspect interface ends it.
            self._engine.call_quietly(job, job.driver.inspect.abort, "inspection abort")
            job.fire(s.FAIL_EVENT,
                last_error=f"Timeout reached while inspecting node {node.uuid}",
            )  # fmt: skip
