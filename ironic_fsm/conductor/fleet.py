"""The fleet: this conductor in the store's conductor registry, and the others it sees.

Conductors sharing a store find each other through it, as Ironic's do
through its ``conductors`` table: each one registers (hostname, conductor
group, the hardware types it serves), heartbeats, and goes offline when it
stops cleanly. :meth:`FleetRecord.list_conductors` tells the live from the dead
the way Ironic does: alive means online and heard from within
``Config.heartbeat_timeout``, so a conductor that dies is seen as dead once
that much time has passed, and one that stops cleanly at once.

Nothing is written when a conductor is built: it registers on its first
:meth:`FleetRecord.heartbeat` (or an explicit :meth:`FleetRecord.register`), which the
service hosting it calls on its timer. A store without the registry
methods (:class:`~ironic_fsm.stores.ConductorRegistry`) still works: the
conductor then knows only itself, and lists only itself.

Which live conductor does which node's work is
:meth:`~.ownership.Ownership.owns`, which reads the records kept here.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from datetime import datetime, timedelta

import attrs

from ironic_fsm.conductor.common import local_holder_alive
from ironic_fsm.conductor.context import Context
from ironic_fsm.exceptions import DriverNotFound
from ironic_fsm.hardware import installed_hardware_types
from ironic_fsm.stores.base import ConductorRecord

__all__ = ["ConductorInfo", "FleetRecord"]

LOG = logging.getLogger("ironic_fsm.conductor")


def _names(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(names)


@attrs.frozen(kw_only=True)
class ConductorInfo:
    """One conductor as :meth:`FleetRecord.list_conductors` reports it (Ironic's resource)."""

    #: ``Config.host`` of that conductor (several processes on one host share it).
    hostname: str
    conductor_group: str
    #: The hardware types it serves, sorted (Ironic's ``drivers``).
    hardware_types: tuple[str, ...] = attrs.field(converter=_names)
    #: Online, and heard from within ``heartbeat_timeout`` of now.
    alive: bool
    #: Its last heartbeat (or registration, or the moment it went offline).
    updated_at: datetime


class FleetRecord:
    """This conductor's row in the registry: register, heartbeat, unregister; and the others.

    Owns the record last written, whether a clean stop happened, and the lock
    that orders them. :attr:`generation` counts the writes, so that the rings
    (:class:`~.ownership.Ownership`) know when to read the registry again.
    """

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        #: What this conductor last wrote to the registry (``None``: not registered yet).
        self.record: ConductorRecord | None = None
        #: Set by ``unregister``: heartbeats no longer bring the conductor back online.
        self._stopped = False
        self._lock = threading.Lock()
        #: The installed hardware types, read once (entry points do not change under a process).
        self._installed: tuple[str, ...] | None = None
        #: Bumped by every change of this conductor's own entry.
        self.generation = 0

    def register(self) -> ConductorInfo:
        """Enter the conductor registry as online, now; again after :meth:`unregister`.

        Replaces the rows of earlier conductors of this host that stopped or
        died (a restart takes its predecessor's place), and leaves live ones.

        Raises:
            DriverNotFound: a name in ``Config.enabled_hardware_types`` is
                neither installed nor registered (a conductor that cannot
                serve what it is told to serve should not start, as in Ironic).
        """
        now = self._ctx.clock()
        with self._lock:
            previous = self.record
            keep = previous is not None and not self._stopped
            record = self._write(now, previous.started_at if previous and keep else now)
        LOG.info(
            "Conductor %s registered (host %s, group %r, hardware types %s)",
            self._ctx.holder, record.hostname, record.conductor_group,
            ", ".join(record.hardware_types) or "none",
        )  # fmt: skip
        return self._info(record, now)

    def heartbeat(self) -> None:
        """Refresh this conductor's row; the first call registers it.

        After :meth:`unregister` it stays offline until :meth:`register`, so
        that a late timer cannot undo a clean stop.
        """
        now = self._ctx.clock()
        with self._lock:
            record = self.record
            if self._stopped:
                return
            if record is None or record.hardware_types != self.served_types():
                self._write(now, now if record is None else record.started_at)
                return
            store = self._ctx.caps.registry
            if store is not None and not store.conductor_heartbeat(self._ctx.holder, now):
                # The row is gone (a restored database, or a sibling replaced us while
                # we were late): register again, as the same conductor.
                self._write(now, record.started_at)
                return
            self.record = record._replace(online=True, updated_at=now)

    def unregister(self) -> None:
        """Go offline in the registry at once: call it when stopping cleanly.

        Other conductors see this one as not alive from now on, without
        waiting for ``heartbeat_timeout``. Reservations are not touched:
        finish or hand back the work first.
        """
        now = self._ctx.clock()
        with self._lock:
            self._stopped = True
            record = self.record
            store = self._ctx.caps.registry
            if store is not None:
                store.unregister_conductor(self._ctx.holder, now)
            if record is not None:
                self.record = record._replace(online=False, updated_at=now)
            self.generation += 1
        LOG.info("Conductor %s unregistered (offline)", self._ctx.holder)

    def list_conductors(self) -> list[ConductorInfo]:
        """Every conductor registered in the store, alive or not, by hostname.

        On a store without the registry methods, only this conductor, once
        it has registered: it cannot know about the others.
        """
        now = self._ctx.clock()
        return [self._info(record, now) for record in self.records()]

    def records(self) -> list[ConductorRecord]:
        """The registry's records (with each conductor's holder token), or just our own."""
        store = self._ctx.caps.registry
        if store is not None:
            return store.list_conductors()
        record = self.record
        return [] if record is None else [record]

    def alive(self, record: ConductorRecord, now: datetime) -> bool:
        """Online and heard from within ``heartbeat_timeout`` (recovery's rule for holders);
        on this host, also still running: a conductor killed here is dead at once."""
        config = self._ctx.config
        timeout = timedelta(seconds=config.heartbeat_timeout)
        if not record.online or now - record.updated_at >= timeout:
            return False
        return local_holder_alive(record.holder, config.host) is not False

    def served_types(self) -> tuple[str, ...]:
        """The hardware types this conductor serves: enabled (default: installed) and registered."""
        installed = self._installed
        if installed is None:
            installed = self._installed = tuple(installed_hardware_types())
        registered = self._ctx.registry.names()  # given to register_hardware_type
        enabled = self._ctx.config.enabled_hardware_types
        if enabled is None:
            return tuple(sorted(registered.union(installed)))
        missing = [name for name in enabled if name not in registered and name not in installed]
        if missing:
            raise DriverNotFound(
                f"Config.enabled_hardware_types names hardware types that are neither installed "
                f"nor registered: {', '.join(missing)}; installed: "
                f"{', '.join(installed) or 'none'}",
                name=missing[0],
                installed=list(installed),
            )
        return tuple(sorted(registered.union(enabled)))

    def _info(self, record: ConductorRecord, now: datetime) -> ConductorInfo:
        return ConductorInfo(
            hostname=record.hostname,
            conductor_group=record.conductor_group,
            hardware_types=record.hardware_types,
            alive=self.alive(record, now),
            updated_at=record.updated_at,
        )

    def _write(self, now: datetime, started: datetime) -> ConductorRecord:
        """Write this conductor's row as online at ``now``; the caller holds the lock."""
        config = self._ctx.config
        record = ConductorRecord(
            holder=self._ctx.holder,
            hostname=config.host,
            conductor_group=config.conductor_group,
            hardware_types=self.served_types(),
            online=True,
            started_at=started,
            updated_at=now,
        )
        store = self._ctx.caps.registry
        if store is not None:
            expired = now - timedelta(seconds=config.heartbeat_timeout)
            store.register_conductor(record, replace_before=expired)
        self.record = record
        self._stopped = False
        self.generation += 1
        return record
