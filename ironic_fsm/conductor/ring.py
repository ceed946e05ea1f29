"""Ownership: which live conductor does a node's work, by a consistent-hash ring.

As in Ironic, each (conductor group, hardware type) pair has its own ring,
over the live conductors of that group that serve that type (the registry's
records, alive as :meth:`Ownership._conductor_alive` says). A node belongs
to the conductor its UUID hashes to. When a conductor joins or dies only
about 1/N of the nodes change hands, so a rebalance moves little work.

The ring is :class:`uhashring.HashRing`, chosen by measurement against
``tooz.hashring`` (Ironic's) and ``clandestined`` (rendezvous hashing), for
100 conductors and 20,000 node UUIDs: uhashring builds in 30 ms, looks up
in 2 us and moves 1.04 % of the nodes when one of 100 goes (ideal: 1 %);
it is pure Python with no dependencies and maintained. tooz looks up in
6 us but brings eight OpenStack libraries and a 100 ms import;
clandestined needs no build but a lookup costs 40 us (it hashes every
conductor). Keys are md5-hashed, so every process computes the same ring.

Rings are rebuilt only when the set of live conductors changes, and per
pair only when a node of that pair is asked about. The registry is read
by :meth:`Ownership.refresh_ring`: the periodic passes (``claim_work``,
``recover``, ``check_timeouts``) call it once each, and :meth:`Ownership.owns`
calls it when the last read is older than ``Config.heartbeat_interval``, or
after this conductor registered, heartbeated or went offline.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, Final

from ironic_fsm.conductor.common import local_holder_alive
from ironic_fsm.conductor.runtime import LOG, Runtime
from ironic_fsm.node import Node
from ironic_fsm.stores.base import ConductorRecord, ConductorRegistry

__all__ = ["HashRings", "Member", "Ownership", "node_group"]

#: A live conductor as the rings see it: holder token, conductor group, hardware types.
Member = tuple[str, str, tuple[str, ...]]

_NOBODY: Final = ""


def node_group(node: Node) -> str:
    """The node's conductor group (``""`` is Ironic's default group), which picks its ring."""
    return node.conductor_group


class HashRings:
    """The rings of every (conductor group, hardware type) pair over one set of live conductors.

    Immutable once made: a change in the live set makes a new one. Each
    pair's ring is built on its first lookup; a pair that one conductor
    serves needs no ring, and a pair nobody serves has no owner.
    """

    def __init__(self, members: Iterable[Member]) -> None:
        self.members: frozenset[Member] = frozenset(members)
        #: Per pair: the ring, the one holder serving it, or ``_NOBODY``.
        self._rings: dict[tuple[str, str], Any] = {}

    def owner(self, node_uuid: str, hardware_type: str, group: str) -> str | None:
        """The holder token of the conductor owning the node; ``None`` if nobody serves it."""
        key = (group, hardware_type)
        ring = self._rings.get(key)
        if ring is None:
            ring = self._rings[key] = self._build(key)
        if isinstance(ring, str):
            return ring or None
        found: str = ring.get_node(node_uuid)
        return found

    def _build(self, key: tuple[str, str]) -> Any:
        group, hardware_type = key
        holders = sorted(
            holder
            for holder, member_group, types in self.members
            if member_group == group and hardware_type in types
        )
        if len(holders) <= 1:
            return holders[0] if holders else _NOBODY
        # Imported on first use: a process that never shares a store never loads it.
        from uhashring import HashRing  # type: ignore[import-untyped]

        return HashRing(nodes=holders)


class Ownership(Runtime):
    """:meth:`owns` and the registry reads behind it (the records, who is alive)."""

    #: What this conductor last wrote to the registry (``None``: not registered yet).
    _fleet_record: ConductorRecord | None = None
    #: Set by ``unregister``: heartbeats no longer bring the conductor back online.
    _fleet_stopped: bool = False
    #: The rings over the live conductors last read, and when they were read.
    _rings: HashRings | None = None
    _rings_read: datetime | None = None
    #: When they must be read again: ``heartbeat_interval`` after the last read.
    _rings_until: datetime | None = None
    #: The (group, hardware type) pairs reported as served by nobody, since the last rebuild.
    _orphans_told: frozenset[tuple[str, str]] = frozenset()

    def owns(self, node_uuid: str, driver: str, conductor_group: str) -> bool:
        """Whether this conductor does the work of that node: its share of the ring.

        ``driver`` is the node's hardware type. True when the store keeps no
        registry, when this conductor has not registered, or when no
        conductor at all is alive (this one is late with its heartbeat and
        nobody else is up): one process then works alone, as without a
        fleet. A node whose group and hardware type no live conductor serves
        belongs to nobody (False everywhere); that is logged once per pair.
        """
        if self._fleet_record is None:
            return True
        rings = self._current_rings()
        if rings is None or not rings.members:  # no registry, or nobody alive
            return True
        owner = rings.owner(node_uuid, driver, conductor_group)
        if owner is None:
            self._tell_orphan(node_uuid, driver, conductor_group)
            return False
        return owner == self.holder

    def refresh_ring(self) -> None:
        """Read the registry now; rebuild the rings if the set of live conductors changed.

        Nothing to read before this conductor registers, or from a store
        without a registry: the conductor owns every node.
        """
        now = self._now()
        self._rings_read = now
        self._rings_until = now + timedelta(seconds=self.config.heartbeat_interval)
        if self._fleet_record is None or not isinstance(self.store, ConductorRegistry):
            self._rings = None
            return
        members = frozenset(
            (record.holder, record.conductor_group, record.hardware_types)
            for record in self._conductor_records()
            if self._conductor_alive(record, now)
        )
        rings = self._rings
        if rings is None or rings.members != members:
            if rings is not None:
                LOG.info(
                    "Conductor %s: %d live conductor(s), was %d; shares rebalanced",
                    self.holder, len(members), len(rings.members),
                )  # fmt: skip
            self._rings = HashRings(members)
            self._orphans_told = frozenset()

    # -- for the conductor's own use ----------------------------------------------------------

    def _current_rings(self) -> HashRings | None:
        """The rings (``None``: no registry), read again when older than ``heartbeat_interval``."""
        read, until = self._rings_read, self._rings_until
        if read is None or until is None or not read <= self._now() < until:
            self.refresh_ring()  # never read, forgotten, stale, or the clock went back
        return self._rings

    def _forget_rings(self) -> None:
        """This conductor's own entry changed: read the registry on the next :meth:`owns`."""
        self._rings_read = self._rings_until = None

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

    def _conductor_records(self) -> list[ConductorRecord]:
        """The registry's records (with each conductor's holder token), or just our own."""
        store = self.store
        if isinstance(store, ConductorRegistry):
            return store.list_conductors()
        record = self._fleet_record
        return [] if record is None else [record]

    def _conductor_alive(self, record: ConductorRecord, now: datetime) -> bool:
        """Online and heard from within ``heartbeat_timeout`` (recovery's rule for holders);
        on this host, also still running: a conductor killed here is dead at once."""
        timeout = timedelta(seconds=self.config.heartbeat_timeout)
        if not record.online or now - record.updated_at >= timeout:
            return False
        return local_holder_alive(record.holder, self.config.host) is not False
