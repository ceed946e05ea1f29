"""The fleet: this conductor in the store's conductor registry, and the others it sees.

Conductors sharing a store find each other through it, as Ironic's do
through its ``conductors`` table: each one registers (hostname, conductor
group, the hardware types it serves), heartbeats, and goes offline when it
stops cleanly. :meth:`Fleet.list_conductors` tells the live from the dead
the way Ironic does: alive means online and heard from within
``Config.heartbeat_timeout``, so a conductor that dies is seen as dead once
that much time has passed, and one that stops cleanly at once.

Nothing is written when a conductor is built: it registers on its first
:meth:`Fleet.heartbeat` (or an explicit :meth:`Fleet.register`), which the
service hosting it calls on its timer. A store without the registry
methods (:class:`~ironic_fsm.stores.ConductorRegistry`) still works: the
conductor then knows only itself, and lists only itself.

Which live conductor does which node's work is :meth:`Fleet.owns`, from
:mod:`ironic_fsm.conductor.ring`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime, timedelta

import attrs

from ironic_fsm.conductor.ring import Ownership
from ironic_fsm.conductor.runtime import LOG
from ironic_fsm.exceptions import DriverNotFound
from ironic_fsm.hardware import installed_hardware_types
from ironic_fsm.stores.base import ConductorRecord, ConductorRegistry

__all__ = ["ConductorInfo", "Fleet"]


def _names(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(names)


@attrs.frozen(kw_only=True)
class ConductorInfo:
    """One conductor as :meth:`Fleet.list_conductors` reports it (Ironic's conductor resource)."""

    #: ``Config.host`` of that conductor (several processes on one host share it).
    hostname: str
    conductor_group: str
    #: The hardware types it serves, sorted (Ironic's ``drivers``).
    hardware_types: tuple[str, ...] = attrs.field(converter=_names)
    #: Online, and heard from within ``heartbeat_timeout`` of now.
    alive: bool
    #: Its last heartbeat (or registration, or the moment it went offline).
    updated_at: datetime


class Fleet(Ownership):
    """Registration, heartbeats and the list of conductors sharing the store."""

    #: The installed hardware types, read once (entry points do not change under a process).
    _fleet_installed: tuple[str, ...] | None = None

    def register(self) -> ConductorInfo:
        """Enter the conductor registry as online, now; again after :meth:`unregister`.

        Replaces the rows of earlier conductors of this host that stopped or
        died (a restart takes its predecessor's place), and leaves live ones.

        Raises:
            DriverNotFound: a name in ``Config.enabled_hardware_types`` is
                neither installed nor registered (a conductor that cannot
                serve what it is told to serve should not start, as in Ironic).
        """
        now = self._now()
        with self._fleet_lock():
            previous = self._fleet_record
            keep = previous is not None and not self._fleet_stopped
            record = self._fleet_write(now, previous.started_at if previous and keep else now)
        LOG.info(
            "Conductor %s registered (host %s, group %r, hardware types %s)",
            self.holder, record.hostname, record.conductor_group,
            ", ".join(record.hardware_types) or "none",
        )  # fmt: skip
        return self._conductor_info(record, now)

    def heartbeat(self) -> None:
        """Tell the store this conductor is alive: for recovery, and in the registry.

        Call it periodically, well within ``Config.heartbeat_timeout``
        (``Config.heartbeat_interval``, 10 s, in Ironic): conductors elsewhere
        take over the nodes of a holder whose heartbeat expired, and see a
        conductor whose heartbeat expired as dead. The first call registers
        the conductor; after :meth:`unregister` it stays offline until
        :meth:`register`, so that a late timer cannot undo a clean stop.
        """
        super().heartbeat()  # type: ignore[misc]  # the reservation holder's (Recovery)
        now = self._now()
        with self._fleet_lock():
            record = self._fleet_record
            if self._fleet_stopped:
                return
            if record is None or record.hardware_types != self._served_types():
                self._fleet_write(now, now if record is None else record.started_at)
                return
            store = self.store
            if isinstance(store, ConductorRegistry) and not store.conductor_heartbeat(
                self.holder, now
            ):
                # The row is gone (a restored database, or a sibling replaced us while
                # we were late): register again, as the same conductor.
                self._fleet_write(now, record.started_at)
                return
            self._fleet_record = record._replace(online=True, updated_at=now)

    def unregister(self) -> None:
        """Go offline in the registry at once: call it when stopping cleanly.

        Other conductors see this one as not alive from now on, without
        waiting for ``heartbeat_timeout``. Reservations are not touched:
        finish or hand back the work first.
        """
        now = self._now()
        with self._fleet_lock():
            self._fleet_stopped = True
            record = self._fleet_record
            store = self.store
            if isinstance(store, ConductorRegistry):
                store.unregister_conductor(self.holder, now)
            if record is not None:
                self._fleet_record = record._replace(online=False, updated_at=now)
            self._forget_rings()
        LOG.info("Conductor %s unregistered (offline)", self.holder)

    def list_conductors(self) -> list[ConductorInfo]:
        """Every conductor registered in the store, alive or not, by hostname.

        On a store without the registry methods, only this conductor, once
        it has registered: it cannot know about the others.
        """
        now = self._now()
        return [self._conductor_info(record, now) for record in self._conductor_records()]

    # -- for the conductor's own use ----------------------------------------------------------

    def _conductor_info(self, record: ConductorRecord, now: datetime) -> ConductorInfo:
        return ConductorInfo(
            hostname=record.hostname,
            conductor_group=record.conductor_group,
            hardware_types=record.hardware_types,
            alive=self._conductor_alive(record, now),
            updated_at=record.updated_at,
        )

    def _fleet_lock(self) -> threading.Lock:
        """This conductor's registry lock (made on first use: construction stays as it was)."""
        lock: threading.Lock = self.__dict__.setdefault("_fleet_lock_", threading.Lock())
        return lock

    def _fleet_write(self, now: datetime, started: datetime) -> ConductorRecord:
        """Write this conductor's row as online at ``now``; the caller holds the lock."""
        config = self.config
        record = ConductorRecord(
            holder=self.holder,
            hostname=config.host,
            conductor_group=config.conductor_group,
            hardware_types=self._served_types(),
            online=True,
            started_at=started,
            updated_at=now,
        )
        store = self.store
        if isinstance(store, ConductorRegistry):
            expired = now - timedelta(seconds=config.heartbeat_timeout)
            store.register_conductor(record, replace_before=expired)
        self._fleet_record = record
        self._fleet_stopped = False
        self._forget_rings()
        return record

    def _served_types(self) -> tuple[str, ...]:
        """The hardware types this conductor serves: enabled (default: installed) and registered."""
        installed = self._fleet_installed
        if installed is None:
            installed = self._fleet_installed = tuple(installed_hardware_types())
        registered = self._registry.names()  # given to register_hardware_type
        enabled = self.config.enabled_hardware_types
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
