"""Ownership: which live conductor does a node's work, by the hash rings of :mod:`.ring`.

The rings are built over the registry's live records (:class:`~.fleet.FleetRecord`)
and read again when older than ``Config.heartbeat_interval``, or when this
conductor's own entry changed (registered, re-registered, went offline).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.fleet import FleetRecord
from ironic_fsm.conductor.ring import HashRings

__all__ = ["Ownership"]

LOG = logging.getLogger("ironic_fsm.conductor")


class Ownership:
    """:meth:`owns` and :meth:`refresh_ring`: this conductor's share of the rings."""

    def __init__(self, ctx: Context, fleet: FleetRecord) -> None:
        self._ctx = ctx
        self._fleet = fleet
        #: The rings over the live conductors last read, and when they were read.
        self.rings: HashRings | None = None
        self._read: datetime | None = None
        #: When they must be read again: ``heartbeat_interval`` after the last read.
        self._until: datetime | None = None
        #: The fleet record's generation the rings were read at.
        self._generation = -1
        #: When a process that never registers last read the live members, and their rings.
        self._seen: tuple[datetime, HashRings] | None = None
        #: The (group, hardware type) pairs reported as served by nobody, since the last rebuild.
        self._orphans_told: frozenset[tuple[str, str]] = frozenset()

    def owns(self, node_uuid: str, driver: str, conductor_group: str) -> bool:
        """Whether this conductor does the work of that node: its share of the ring.

        ``driver`` is the node's hardware type. True when the store keeps no
        registry, when this conductor has not registered, or when no
        conductor at all is alive (this one is late with its heartbeat and
        nobody else is up): one process then works alone, as without a
        fleet. A node whose group and hardware type no live conductor serves
        belongs to nobody (False everywhere); that is logged once per pair.
        """
        if self._fleet.record is None:
            return True
        rings = self._current_rings()
        if rings is None or not rings.members:  # no registry, or nobody alive
            return True
        owner = rings.owner(node_uuid, driver, conductor_group)
        if owner is None:
            self._tell_orphan(node_uuid, driver, conductor_group)
            return False
        return owner == self._ctx.holder

    def refresh_ring(self) -> None:
        """Read the registry now; rebuild the rings if the set of live conductors changed.

        Nothing to read before this conductor registers, or from a store
        without a registry: the conductor owns every node.
        """
        ctx, fleet = self._ctx, self._fleet
        now = ctx.clock()
        self._read = now
        self._until = now + timedelta(seconds=ctx.config.heartbeat_interval)
        self._generation = fleet.generation
        if fleet.record is None or ctx.caps.registry is None:
            self.rings = None
            return
        members = frozenset(
            (record.holder, record.conductor_group, record.hardware_types)
            for record in fleet.records()
            if fleet.alive(record, now)
        )
        rings = self.rings
        if rings is None or rings.members != members:
            if rings is not None:
                LOG.info(
                    "Conductor %s: %d live conductor(s), was %d; shares rebalanced",
                    ctx.holder, len(members), len(rings.members),
                )  # fmt: skip
            self.rings = HashRings(members)
            self._orphans_told = frozenset()

    def host_of(self, node_uuid: str, driver: str, conductor_group: str) -> str | None:
        """The host of the conductor doing the node's work: Ironic's node ``conductor`` field.

        By the same rings as :meth:`owns`: a registered conductor reads its
        own (kept fresh every heartbeat interval); a process that never
        registers (the command line) reads the registry's live members now.
        With nobody alive this process works alone, as :meth:`owns` says,
        so it names its own host; ``None`` when the live conductors serve
        none of the node's group and hardware type.
        """
        rings = self._current_rings() if self._fleet.record is not None else self._observed()
        if rings is None or not rings.members:
            return self._ctx.config.host
        holder = rings.owner(node_uuid, driver, conductor_group)
        return None if holder is None else holder.split(":", 1)[0]

    def _observed(self) -> HashRings:
        """The live members' rings as a process that never registers sees them: read from
        the registry at most once a heartbeat interval, not once a node (a page of 1,000
        nodes was 1,000 reads of the registry)."""
        now, seen = self._ctx.clock(), self._seen
        fresh = timedelta(seconds=self._ctx.config.heartbeat_interval)
        if seen is not None and seen[0] <= now < seen[0] + fresh:
            return seen[1]
        fleet = self._fleet
        live = [record for record in fleet.records() if fleet.alive(record, now)]
        rings = HashRings((r.holder, r.conductor_group, r.hardware_types) for r in live)
        self._seen = (now, rings)
        return rings

    def live_count(self) -> int:
        """How many live conductors the rings were last built over (1 before any)."""
        return len(self.rings.members) if self.rings is not None else 1

    def _current_rings(self) -> HashRings | None:
        """The rings (``None``: no registry), read again when stale or our entry changed."""
        read, until = self._read, self._until
        if (
            read is None
            or until is None
            or self._generation != self._fleet.generation
            or not read <= self._ctx.clock() < until
        ):
            self.refresh_ring()  # never read, our entry changed, stale, or the clock went back
        return self.rings

    def _tell_orphan(self, node_uuid: str, driver: str, group: str) -> None:
        pair = (group, driver)
        if pair in self._orphans_told:
            return
        self._orphans_told = self._orphans_told | {pair}
        LOG.warning(
            "No live conductor serves hardware type %r in conductor group %r: node %s "
            "and the others of that pair wait until one does",
            driver, group, node_uuid,
        )  # fmt: skip
