"""What every part of a conductor shares: the store, the settings, the clock, its identity.

One :class:`Context` per :class:`~ironic_fsm.conductor.Conductor`, built by its
constructor and handed to each part it wires; a part keeps the context and owns
only its own state. Nothing here does I/O.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Protocol

from ironic_fsm.conductor.registry import HardwareRegistry
from ironic_fsm.config import Config
from ironic_fsm.events import Event
from ironic_fsm.machine import Lifecycle
from ironic_fsm.node import Node
from ironic_fsm.stores.capabilities import StoreCapabilities
from ironic_fsm.task import Task

if TYPE_CHECKING:
    from ironic_fsm.conductor.power_sync import PowerSyncReport
    from ironic_fsm.conductor.sensors import SensorReport

__all__ = ["DRIVER_CALL", "SAVED", "Context", "Guard", "Listener", "Observer", "Pending", "Tally"]

#: A listener hears every :class:`~ironic_fsm.events.Event`.
Listener = Callable[[Event], None]

#: An event as the conductor notes it, before anyone wants an :class:`Event` of it: its
#: fields as a plain tuple (name, node, node_name, previous_state, event, state, target,
#: step as planned, with its arguments unmasked, error, timestamp: ``None`` for the time of
#: the save that records it, see :data:`SAVED`). The tally reads it
#: as it is; listeners get ``ironic_fsm.conductor.jobs.event_of(pending)``.
Pending = tuple[
    str, str, str | None, str | None, str | None, str, str | None, Mapping[str, Any] | None,
    str | None, datetime | None,
]  # fmt: skip
#: The first item of a tally's ``(SAVED, time)``: the time of the save whose pending events
#: follow it, for those noted without one (a step's: a step is timed by the saves that
#: record its start and its end, no clock read of its own).
SAVED: Final = "saved"
#: The first item of a tally's driver-call tuple: (DRIVER_CALL, (hardware type, interface
#: kind, method), seconds, the class name of what it raised or ``None``).
DRIVER_CALL: Final = "driver.call"


class Guard(Protocol):
    """Vetoes a user-requested transition by returning a reason (``None`` allows it)."""

    def __call__(self, node: Node, verb: str, event: str, new_state: str) -> str | None: ...


class Tally(Protocol):
    """Counts what flows do, from plain tuples, on the flows' own threads: for metrics.

    Set with :meth:`~ironic_fsm.conductor.Conductor.count_with`. The flows
    append to :attr:`items` (each save's :data:`Pending` events, in one
    ``extend``, and each driver call's ``DRIVER_CALL`` tuple) and call
    :meth:`fold` once :attr:`fold_at` are waiting; nothing is built for it.
    A conductor without one pays a ``None`` test per driver call.
    """

    #: What waits to be counted (a deque: appends from any thread, no lock).
    items: deque[Any]
    #: How many may wait before the flow that sees them folds them.
    fold_at: int

    def fold(self) -> None:
        """Count what waits (thread-safe)."""


class Observer(Protocol):
    """Watches what the conductor does beyond its flows (heartbeats, takeovers, power syncs,
    sensor passes): for metrics (``ironic_fsm.metrics``).

    Set with :meth:`~ironic_fsm.conductor.Conductor.observe`.
    """

    def heartbeat(self, ok: bool) -> None:
        """A heartbeat was sent (``ok``) or failed."""

    def took_over(self, uuids: Sequence[str]) -> None:
        """A recovery pass took over these nodes from dead holders (possibly none)."""

    def power_synced(self, report: PowerSyncReport) -> None:
        """A power-sync pass ended with this report."""

    def sensors_read(self, report: SensorReport) -> None:
        """A sensor pass ended with these readings and failures."""

    def agent_heartbeat(self, outcome: str) -> None:
        """A ramdisk agent's heartbeat was ``accepted``, or refused (the error's class name)."""


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
        observer: Who watches heartbeats, takeovers, power syncs and sensor passes
            (:class:`Observer`), or ``None``.
        tally: Who counts flows, steps and driver calls (:class:`Tally`), or ``None``.
        told: Whether anyone hears of events (a listener or the tally): the flows
            note them only then (:meth:`update_told`).
    """

    __slots__ = (
        "caps", "clock", "config", "guards", "holder", "lifecycle", "listeners", "observer",
        "registry", "stable", "tally", "told",
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
        self.tally: Tally | None = None
        self.told = bool(listeners)
        #: The lifecycle's stable states, at hand for every transition.
        self.stable: frozenset[str] = lifecycle.stable_states

    def update_told(self) -> None:
        """Note whether anyone hears of events now (after a listener or tally came or went)."""
        self.told = bool(self.listeners) or self.tally is not None

    def task_for(self, node: Node) -> Task:
        """A task for reading a node's steps or plans, with nothing reserved."""
        return Task(node=node, driver=self.registry.driver_for(node), config=self.config)
