"""Power-state sync: each conductor reads its own nodes' power from their BMCs.

Ironic's ``sync_power_states`` periodic task, as :meth:`PowerSync.sync_power_states`.
A pass:

1. asks the store for the nodes *due* (not synced within
   ``Config.sync_power_state_interval``) through an index
   (:func:`~ironic_fsm.stores.base.power_sync_due`): a pass with nothing due
   reads no record, whatever the size of the fleet;
2. keeps the nodes this conductor :meth:`owns` (its share of the hash ring)
   and, of those, the candidates: not reserved, not in maintenance, in a
   provision state where power may be read and set (stable and failure
   states but ``enroll`` and ``adopt failed``, as Ironic; never a working,
   wait or hold state, where a flow or a ramdisk owns the power);
3. reads each candidate's power through a pool of
   ``Config.sync_power_state_workers`` threads, with no reservation held;
4. changes a node only under its reservation, after checking again that it
   is still a candidate in the state that was read (a node reserved or
   changed meanwhile is left alone, and is due again at the next pass);
5. marks every node it looked at as synced, at ``now``.

What a pass does to a node, as Ironic does it:

* recorded power ``None``: the BMC's value is recorded (no discrepancy);
* recorded differs from the BMC: a discrepancy, in the node's history;
  then the recorded state is forced on the BMC
  (``Config.force_power_state_during_sync``, the default) or the BMC's
  state is accepted into the record;
* a failed read counts as a failure, and so does a discrepancy, until a
  pass finds the BMC agreeing with the record. When the count goes past
  ``Config.power_state_sync_max_retries`` (the first attempt plus that many
  retries: with 3, the fourth failure in a row), the node goes into
  maintenance with ``fault = 'power failure'`` and a ``maintenance_reason``
  saying what failed, and its recorded power becomes what the BMC said
  (``None`` when it could not be read);
* a node in maintenance *for* ``power failure`` whose power can be read
  again comes out of maintenance with the power it reports (Ironic's
  ``_power_failure_recovery``; here in the same pass and schedule, since
  there is no separate interval option). Maintenance set for any other
  reason is never touched.

The failure counts live in the conductor's memory, as Ironic keeps them:
they describe what this conductor saw of a BMC lately, and a restart or a
rebalance that forgets them only delays a maintenance by a few passes,
whereas persisting them would cost a write per failing node per pass.

Ironic also clears ``last_error`` when power matches; this does not, since
``last_error`` explains the node's provision state, which the sync does not
change (the history keeps what the sync found).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Final

import attrs

from ironic_fsm import history as h
from ironic_fsm import states as s
from ironic_fsm.conductor.common import describe_exc, scrub_node, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.jobs import LOG, Job
from ironic_fsm.conductor.launcher import Launcher
from ironic_fsm.conductor.power_events import (
    POWER_SET_END,
    POWER_SET_ERROR,
    POWER_SET_START,
    POWER_STATE_CORRECTED,
    PowerEvent,
    power_event,
)
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    IronicFSMError,
    NodeLocked,
    NodeNotFound,
)
from ironic_fsm.node import Node
from ironic_fsm.stores.base import PowerSyncRow
from ironic_fsm.task import Task

__all__ = [
    "POWER_FAILURE", "POWER_SET_END", "POWER_SET_ERROR", "POWER_SET_START",
    "POWER_STATE_CORRECTED", "power_event",
    "PowerEvent", "PowerSync", "PowerSyncReport",
]  # fmt: skip

#: Ironic's fault of a node the power sync put into maintenance.
POWER_FAILURE: Final = "power failure"
#: Ironic's notification names: the record now holds the BMC's power state...
#: ... the conductor set the BMC back to the recorded state, or failed to.

#: Stable or failure states in which Ironic does not sync power either.
_NEVER_SYNCED: Final = frozenset({s.ENROLL, s.ADOPTFAIL})
#: Power states a driver may report; anything else is a failed read (Ironic: ``error``).
_READABLE: Final = frozenset({s.POWER_ON, s.POWER_OFF})
#: A change made under the reservation: returns the outcome tags it adds.
_Change = Callable[..., tuple[str, ...]]


def _uuids() -> tuple[str, ...]:
    return ()


@attrs.frozen(kw_only=True)
class PowerSyncReport:
    """What one pass of :meth:`PowerSync.sync_power_states` did, as node UUIDs per outcome."""

    #: Power read from the BMC (whatever followed).
    checked: tuple[str, ...] = attrs.field(factory=_uuids)
    #: The BMC disagreed with a recorded power state.
    discrepancies: tuple[str, ...] = attrs.field(factory=_uuids)
    #: The recorded state was set on the BMC again.
    forced: tuple[str, ...] = attrs.field(factory=_uuids)
    #: The BMC's state was accepted into the record.
    accepted: tuple[str, ...] = attrs.field(factory=_uuids)
    #: The read, or the forcing, failed.
    failed: tuple[str, ...] = attrs.field(factory=_uuids)
    #: Put into maintenance (``fault = 'power failure'``) by this pass.
    maintenance_set: tuple[str, ...] = attrs.field(factory=_uuids)
    #: Out of maintenance: in it for ``power failure``, readable again.
    recovered: tuple[str, ...] = attrs.field(factory=_uuids)
    #: Candidates left alone: reserved, changed or deleted since the scan (due again).
    skipped: tuple[str, ...] = attrs.field(factory=_uuids)


class _Skip(Exception):
    """The node is no longer what the pass read: drop the reservation, change nothing."""


class _Failures:
    """Consecutive power-sync failures per node, in this conductor's memory (thread-safe)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def get(self, uuid: str) -> int:
        return self._counts.get(uuid, 0)

    def bump(self, uuid: str) -> int:
        with self._lock:
            count = self._counts[uuid] = self._counts.get(uuid, 0) + 1
        return count

    def reset(self, uuid: str) -> None:
        with self._lock:
            self._counts.pop(uuid, None)


class PowerSync:
    """Ironic's ``sync_power_states`` periodic task, for the nodes this conductor owns."""

    def __init__(
        self,
        ctx: Context,
        reservations: Reservations,
        launcher: Launcher,
        owns: Callable[[str, str, str], bool],
    ) -> None:
        self._ctx = ctx
        self._reservations = reservations
        self._launcher = launcher
        #: Whether this conductor does a node's work (its share of the rings).
        self._owns = owns
        #: Consecutive failures per node, in this conductor's memory.
        self._failures = _Failures()

    def sync_power_states(self, now: datetime | None = None) -> PowerSyncReport:
        """One pass of the power sync over the nodes due; see the module's description.

        Call it every ``Config.sync_power_state_interval`` seconds (the
        service does; 0 there means never). ``now`` (an aware datetime,
        default the conductor's clock) decides what is due and is recorded
        as the nodes' sync time. Never raises for one node's trouble: that
        node's outcome is in the report, and the log says why. A draining
        conductor (:meth:`drain`) syncs nothing, and a pass under way when the
        drain begins leaves the nodes it has not read due, for the others.
        """
        if now is not None and (not isinstance(now, datetime) or now.utcoffset() is None):
            raise InvalidParameterValue(
                f"sync_power_states needs a timezone-aware datetime, not {shown(now)}"
            )
        if self._launcher.draining:
            return PowerSyncReport()
        now = now or self._ctx.clock()
        cutoff = now - timedelta(seconds=self._ctx.config.sync_power_state_interval)
        mine = [
            row
            for row in self._ctx.caps.power_sync_due(cutoff)
            if self._owns(row.uuid, row.driver, row.conductor_group)
        ]
        failures = self._failures
        work = [(row.uuid, row.maintenance) for row in mine if self._sync_candidate(row)]
        work.sort(key=lambda item: -failures.get(item[0]))  # failing nodes first, as Ironic
        outcomes = self._read_all(work)
        retry = {uuid for uuid, tags in outcomes if "skipped" in tags}
        self._ctx.caps.mark_power_synced([row.uuid for row in mine if row.uuid not in retry], now)
        found: dict[str, list[str]] = {field.name: [] for field in attrs.fields(PowerSyncReport)}
        for uuid, tags in outcomes:
            for tag in tags:
                found[tag].append(uuid)
        return PowerSyncReport(**{name: tuple(uuids) for name, uuids in found.items()})

    # -- choosing -----------------------------------------------------------------------------

    def _power_syncable(self, state: str) -> bool:
        """Whether power may be read and set in provision state ``state``."""
        if state in _NEVER_SYNCED:
            return False
        return self._ctx.lifecycle.is_stable(state) or state in s.FAILURE_STATES

    def _sync_candidate(self, row: PowerSyncRow) -> bool:
        """A due node to read: free and syncable, or in maintenance for a power failure."""
        if row.reservation is not None:
            return False
        if row.maintenance:
            return row.fault == POWER_FAILURE and row.provision_state != s.ENROLL
        return self._power_syncable(row.provision_state)

    def _still_candidate(self, node: Node, recovering: bool) -> bool:
        """The same test on the full record (also: no power action under way)."""
        if node.target_power_state is not None:
            return False
        if recovering:
            return (
                node.maintenance
                and node.fault == POWER_FAILURE
                and node.provision_state != s.ENROLL
            )
        return not node.maintenance and self._power_syncable(node.provision_state)

    # -- reading ------------------------------------------------------------------------------

    def _read_all(self, work: list[tuple[str, bool]]) -> list[tuple[str, tuple[str, ...]]]:
        """Each node's outcome, read by at most ``sync_power_state_workers`` threads.

        The pool lives for the pass only: a conductor that is not syncing
        holds no threads, and a pass costs one pool start (well under a
        millisecond) beside the BMC round trips it overlaps.
        """
        workers = min(self._ctx.config.sync_power_state_workers, len(work))
        if workers <= 1:
            return [(uuid, self._sync_node(uuid, recovering)) for uuid, recovering in work]
        from concurrent.futures import ThreadPoolExecutor  # here: import ironic_fsm stays light

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="power-sync") as pool:
            results = pool.map(lambda item: self._sync_node(*item), work)
            return [(uuid, tags) for (uuid, _), tags in zip(work, results, strict=True)]

    def _sync_node(self, uuid: str, recovering: bool) -> tuple[str, ...]:
        """One node's outcome tags; a store or code failure skips it (due again next pass)."""
        if self._launcher.draining:
            return ("skipped",)
        try:
            node = self._ctx.caps.store.get(uuid)
            if node.reservation is not None or not self._still_candidate(node, recovering):
                return ("skipped",)
            return self._read(node, recovering)
        except NodeNotFound:
            return ("skipped",)
        except Exception:
            LOG.exception("Node %s: power sync failed unexpectedly", uuid)
            return ("skipped",)

    def _read(self, node: Node, recovering: bool) -> tuple[str, ...]:
        """Read the power with nothing reserved, then act on what was found."""
        uuid = node.uuid
        try:
            job = Job(
                Task(
                    node=node, driver=self._ctx.registry.driver_for(node), config=self._ctx.config
                ),
                self._ctx,
            )
            if node.power_state is None or recovering:
                try:
                    job.call("power", "validate")
                except InvalidParameterValue as exc:
                    if recovering:
                        return ("failed",)
                    # Nothing recorded and nothing to reach the BMC with: Ironic skips it.
                    LOG.info("Node %s: power not synced: %s", uuid, scrub_node(node, str(exc)))
                    return ()
            found = job.call("power", "get_power_state")
        except IronicFSMError as exc:
            return self._read_failed(node, recovering, describe_exc(exc))
        if found not in _READABLE:
            return self._read_failed(node, recovering, f"its driver reported {shown(found)}")
        return self._act(node, found, recovering)

    def _read_failed(self, node: Node, recovering: bool, why: str) -> tuple[str, ...]:
        why = scrub_node(node, why)
        if recovering:
            LOG.debug("Node %s: still no power state (%s)", node.uuid, why)
            return ("failed",)
        count = self._failures.bump(node.uuid)
        retries = self._ctx.config.power_state_sync_max_retries
        if count <= retries:
            LOG.warning(
                "Node %s: could not read its power state, attempt %d of %d: %s",
                node.uuid, count, retries + 1, why,
            )  # fmt: skip
            return ("failed",)
        reason = (
            f"Power state sync failed {count} times in a row for node {node.uuid} (the first "
            f"attempt and power_state_sync_max_retries={retries} retries); last: could not "
            f"read its power state: {why}"
        )
        return ("failed", *self._guarded_change(node, False, self._to_maintenance, None, reason))

    # -- acting (under the reservation) ---------------------------------------------------------

    def _act(self, node: Node, found: str, recovering: bool) -> tuple[str, ...]:
        failures = self._failures
        recorded = node.power_state
        if recovering:
            failures.reset(node.uuid)
            return ("checked", *self._guarded_change(node, True, self._recover, found))
        if recorded == found:
            failures.reset(node.uuid)
            return ("checked",)
        if recorded is None:
            failures.reset(node.uuid)
            return ("checked", *self._guarded_change(node, False, self._take, found))
        count = failures.bump(node.uuid)
        retries = self._ctx.config.power_state_sync_max_retries
        if count > retries:
            reason = (
                f"Power state sync failed {count} times in a row for node {node.uuid} (the "
                f"first attempt and power_state_sync_max_retries={retries} retries); last: its "
                f"BMC reports {found!r} but the record says {recorded!r}"
            )
            tags = self._guarded_change(node, False, self._to_maintenance, found, reason)
            return ("checked", "discrepancies", *tags)
        return ("checked", "discrepancies", *self._guarded_change(node, False, self._fix, found))

    def _guarded_change(
        self, seen: Node, recovering: bool, change: _Change, *args: object
    ) -> tuple[str, ...]:
        """Run ``change`` on the node under its reservation, if it is still as ``seen``."""
        try:
            with self._reservations.reserved(seen.uuid) as job:
                node = job.node
                if (
                    not self._still_candidate(node, recovering)
                    or node.provision_state != seen.provision_state
                    or node.power_state != seen.power_state
                ):
                    raise _Skip
                return change(job, *args)
        except (_Skip, NodeLocked, NodeNotFound):
            LOG.info("Node %s: changed or reserved during the power sync; next pass", seen.uuid)
            return ("skipped",)

    def record_power_discrepancy(self, job: Job, found: str, *, forced: bool) -> None:
        """For the power sync: the BMC reports ``found``, the record says otherwise.

        Call it before changing the node (or in maintenance), then checkpoint.
        """
        node = job.node
        action = (
            f"the conductor sets it back to {node.power_state!r}"
            if forced
            else f"the record now says {found!r}"
        )
        job.record(
            h.WARNING,
            h.POWER,
            f"Power state sync: node {node.uuid} is {found!r} on its BMC but recorded as "
            f"{node.power_state!r}; {action}",
        )

    def _take(self, job: Job, found: str) -> tuple[str, ...]:
        """Nothing was recorded: record what the BMC says (no discrepancy, as Ironic)."""
        self._set_recorded(job, found)
        return ()

    def _fix(self, job: Job, found: str) -> tuple[str, ...]:
        """A discrepancy: note it, then force the recorded state or accept the BMC's."""
        node = job.node
        recorded = node.power_state
        force = (
            self._ctx.config.force_power_state_during_sync
            and recorded in _READABLE
            and not node.disable_power_off  # never forced (Ironic's rule): the BMC's is kept
        )
        self.record_power_discrepancy(job, found, forced=force)
        if not force:
            self._set_recorded(job, found)
            return ("accepted",)
        assert recorded is not None
        try:
            job.power(recorded)
        except IronicFSMError as exc:
            error = scrub_node(
                node,
                f"Power state sync: could not set node {node.uuid} back to {recorded!r}: "
                + describe_exc(exc),
            )
            LOG.error("%s", error)
            job.record(h.ERROR, h.POWER, error)
            self._power_event(job, POWER_SET_ERROR, found, recorded, error)
            return ("failed",)
        LOG.warning("Node %s: was %r on its BMC; set back to %r", node.uuid, found, recorded)
        self._power_event(job, POWER_SET_END, found, recorded)
        return ("forced",)

    def _to_maintenance(self, job: Job, found: str | None, reason: str) -> tuple[str, ...]:
        """Too many failures: maintenance, Ironic's fault, and the BMC's word as the record."""
        node = job.node
        node.maintenance = True
        node.maintenance_reason = reason
        node.fault = POWER_FAILURE
        job.record(h.ERROR, h.MAINTENANCE, reason)
        self._set_recorded(job, found)
        self._failures.reset(node.uuid)  # counted again from zero once it recovers
        LOG.error("%s; the node is now in maintenance", scrub_node(node, reason))
        return ("maintenance_set",)

    def _recover(self, job: Job, found: str) -> tuple[str, ...]:
        """In maintenance for a power failure, readable again: out of maintenance."""
        node = job.node
        node.maintenance = False
        node.maintenance_reason = None
        node.fault = None
        job.record(
            h.INFO,
            h.MAINTENANCE,
            f"Power state sync: node {node.uuid} answers again ({found!r}); out of maintenance "
            "after its power failure",
        )
        self._set_recorded(job, found)
        LOG.info("Node %s: recovered from its power failure, power %r", node.uuid, found)
        return ("recovered",)

    def _set_recorded(self, job: Job, found: str | None) -> None:
        node = job.node
        previous = node.power_state
        if previous != found:
            node.power_state = found
            self._power_event(job, POWER_STATE_CORRECTED, previous, found)

    def _power_event(
        self,
        job: Job,
        name: str,
        previous: str | None,
        power_state: str | None,
        error: str | None = None,
    ) -> None:
        """Queue a :class:`PowerEvent`: announced after the save that records it."""
        if self._ctx.listeners:
            now = self._ctx.clock()
            job.events.append(power_event(job.node, name, previous, power_state, now, error))
