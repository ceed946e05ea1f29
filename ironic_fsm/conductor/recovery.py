"""Recovery: liveness, taking over from dead holders, and timeouts.

A conductor that dies leaves its nodes reserved. :meth:`Recovery.recover`
finds holders that are gone (same host: the process has exited; another
host: the heartbeat expired), takes their nodes over and resumes each
interrupted flow at its recorded step. :meth:`Recovery.check_timeouts`
fails wait states that lasted too long and wakes ``wait`` steps whose
time is up.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from ironic_fsm import history as h
from ironic_fsm import states as s
from ironic_fsm.conductor.common import process_alive, shown, wait_is_over
from ironic_fsm.conductor.engine import PHASE_BY_STATE, PhaseInfo
from ironic_fsm.conductor.flows import Flows
from ironic_fsm.conductor.runtime import LOG, Job
from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError, NodeNotFound
from ironic_fsm.node import Node
from ironic_fsm.stores.base import in_states, reserved, waking

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


class Recovery(Flows):
    """Heartbeats, crash recovery and the periodic timeout check."""

    def heartbeat(self) -> None:
        """Tell the store this conductor is alive.

        Call it periodically (more often than ``Config.heartbeat_timeout``)
        when several hosts share a store: conductors elsewhere take over
        nodes of a holder whose heartbeat has expired. Holders on the same
        host are checked by process id instead, at once.
        """
        self.store.heartbeat(self.holder, self._now())

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
        host, _, rest = holder.partition(":")
        pid_text, _, token = rest.partition(":")
        if host == self.config.host and pid_text.isdigit():
            started = token.partition("-")[0] if "-" in token else None
            return process_alive(int(pid_text), started if started != "0" else None)
        last_seen = heartbeats.get(holder) or updated_at
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

        Reads only the reservations (an index, no record decoded); a node
        is read only once its holder is known to be gone, so a pass with
        nothing to recover costs the same for any fleet.
        """
        held = reserved(self.store)
        if not held:
            return []
        now = self._now()
        heartbeats = self.store.holders()
        taken: list[str] = []
        for uuid, holder, updated_at in held:
            if holder == self.holder or self._holder_alive(holder, heartbeats, updated_at, now):
                continue
            try:
                node = self.store.get(uuid)
            except NodeNotFound:
                continue  # deleted since the scan
            if node.reservation != holder:
                continue  # released or taken over since the scan: not ours to take
            LOG.warning(
                "Node %s: taking over from %s, which is gone (state %s)",
                uuid, holder, node.provision_state,
            )  # fmt: skip
            self.store.release(uuid, holder)
            try:
                with self._reserved(uuid) as job:
                    self._record(
                        job,
                        h.WARNING,
                        h.CONDUCTOR,
                        f"Conductor {self.config.host} took node {uuid} over from "
                        f"{holder}, which is gone, in {node.provision_state!r}",
                    )
                    self._spawn(job, self._resume)
            except IronicFSMError as exc:
                LOG.info("Node %s: not taken over: %s", uuid, exc)
                continue
            taken.append(uuid)
        return taken

    def _resume(self, job: Job) -> None:
        """Continue whatever the node was doing when its holder died."""
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
            self._phase_failed(
                job, phase,
                f"Node {node.uuid}: {phase.name} was interrupted before its steps were "
                "planned; start it again",
                step=None,
            )  # fmt: skip
        elif index is None:
            self._start_steps(job, phase)
        else:
            self._run_steps(job, phase, index)

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
        now = now or self._now()
        acted: dict[str, None] = {}
        for node in waking(self.store, now, reservation=None):
            if node.provision_state in s.WAIT_STATES:
                self._check_waiting(node, now, acted)
        for state in sorted(s.WAIT_STATES):
            timeout = getattr(self.config, _timeout_option(state))
            if not timeout:
                continue
            # updated_before is strict: one tick later keeps "at or past the timeout".
            since = now - timedelta(seconds=timeout) + _TICK
            for node in in_states(
                self.store, [state], updated_before=since, reservation=None, maintenance=False
            ):
                if node.uuid not in acted:
                    self._check_waiting(node, now, acted)
        return list(acted)

    def _check_waiting(self, node: Node, now: datetime, acted: dict[str, None]) -> None:
        work = self._timeout_work(node, now)
        if work is not None:
            self._act_on(node.uuid, work)
            acted[node.uuid] = None

    def _timeout_work(self, node: Node, now: datetime) -> Callable[[Job], None] | None:
        """What the periodic check must do to a waiting node now, if anything."""
        state = node.provision_state
        phase = PHASE_BY_STATE.get(state)
        if phase is not None:
            wait_until = node.driver_internal_info.get(phase.wait_until_key)
            if wait_until is not None:
                if wait_is_over(wait_until, now):
                    return functools.partial(self._continue, phase=phase)
                return None
        if node.maintenance:
            return None
        timeout = getattr(self.config, _timeout_option(state))
        started = node.provision_updated_at
        if not timeout or started is None or now - started < timedelta(seconds=timeout):
            return None
        return functools.partial(self._time_out, state=state)

    def _act_on(self, uuid: str, work: Callable[[Job], None]) -> None:
        try:
            with self._reserved(uuid) as job:
                self._spawn(job, work)
        except IronicFSMError as exc:
            LOG.info("Node %s: skipped by the periodic check: %s", uuid, exc)

    def _time_out(self, job: Job, state: str) -> None:
        node = job.node
        if node.provision_state != state:
            return
        phase = PHASE_BY_STATE.get(state)
        if phase is not None:
            step = getattr(node, phase.step_field) or None
            self._phase_failed(job, phase, phase.timeout_message(node, step), step=step)
        elif state == s.RESCUEWAIT:
            node.instance_info.pop("rescue_password", None)
            self._call_quietly(job, lambda _task: self._power(job, s.POWER_OFF), "power off")
            self._call_quietly(job, job.driver.rescue.clean_up, "rescue clean-up")
            self._process(
                job, s.FAIL_EVENT,
                last_error=f"Timeout reached while waiting for rescue ramdisk callback for node "
                f"{node.uuid}",
            )  # fmt: skip
        elif state == s.INSPECTWAIT:
            self._process(
                job, s.FAIL_EVENT,
                last_error=f"Timeout reached while inspecting node {node.uuid}",
            )  # fmt: skip
