"""What every part of a conductor shares: the store, the settings, the clock, its identity.

One :class:`Context` per :class:`~ironic_fsm.conductor.Conductor`, built by its
constructor and handed to each part it wires; a part keeps the context and owns
only its own state. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from ironic_fsm.conductor.registry import HardwareRegistry
from ironic_fsm.config import Config
from ironic_fsm.events import Event
from ironic_fsm.machine import Lifecycle
from ironic_fsm.node import Node
from ironic_fsm.stores.capabilities import StoreCapabilities
from ironic_fsm.task import Task

if TYPE_CHECKING:
    from ironic_fsm.conductor.power_sync import PowerSyncReport

__all__ = ["Context", "Guard", "Listener", "Observer"]

#: A listener hears every :class:`~ironic_fsm.events.Event`.
Listener = Callable[[Event], None]


class Guard(Protocol):
    """Vetoes a user-requested transition by returning a reason (``None`` allows it)."""

    def __call__(self, node: Node, verb: str, event: str, new_state: str) -> str | None: ...


class Observer(Protocol):
    """Watches what the conductor does beyond its events: for metrics (``ironic_fsm.metrics``).

    Set with :meth:`~ironic_fsm.conductor.Conductor.observe`; a conductor
    without one pays a ``None`` test per driver call and nothing else.
    """

    def driver_call(self, driver: str, kind: str, method: str) -> AbstractContextManager[object]:
        """Wraps one call of ``driver.<kind>.<method>``: times it, notes whether it raised."""

    def heartbeat(self, ok: bool) -> None:
        """A heartbeat was sent (``ok``) or failed."""

    def took_over(self, uuids: Sequence[str]) -> None:
        """A recovery pass took over these nodes from dead holders (possibly none)."""

    def power_synced(self, report: PowerSyncReport) -> None:
        """A power-sync pass ended with this report."""


class Context:
    """The conductor's shared, process-wide state: read by every part, set in one place.

    Attributes:
        caps: The store and what it offers
            (:class:`~ironic_fsm.stores.capabilities.StoreCapabilities`).
        config: Operator settings.
        lifecycle: The state machine.
        clock: The current time, aware UTC.
        holder: This conductor's identity in reservations and the registry.
        registry: The hardware types, as registered or installed.
        listeners: Who hears every event (``add_listener`` appends).
        guards: Who may veto a user-requested transition (``add_guard`` appends).
        observer: Who watches driver calls, heartbeats, takeovers and power syncs
            (:class:`Observer`), or ``None``.
    """

    __slots__ = (
        "caps", "clock", "config", "guards", "holder", "lifecycle", "listeners", "observer",
        "registry",
    )  # fmt: skip

    def __init__(self, caps: StoreCapabilities, config: Config, lifecycle: Lifecycle,
                 clock: Callable[[], datetime], holder: str, registry: HardwareRegistry,
                 listeners: list[Listener], guards: list[Guard]) -> None:  # fmt: skip
        self.caps, self.config, self.lifecycle, self.clock = caps, config, lifecycle, clock
        self.holder, self.registry, self.listeners, self.guards = (
            holder,
            registry,
            listeners,
            guards,
        )
        self.observer: Observer | None = None

    def task_for(self, node: Node) -> Task:
        """A task for reading a node's steps or plans, with nothing reserved."""
        return Task(node=node, driver=self.registry.driver_for(node), config=self.config)
