"""What every part of a conductor shares: the store, the settings, the clock, its identity.

One :class:`Context` per :class:`~ironic_fsm.conductor.Conductor`, built by its
constructor and handed to each part it wires; a part keeps the context and owns
only its own state. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from ironic_fsm.conductor.registry import HardwareRegistry
from ironic_fsm.config import Config
from ironic_fsm.events import Event
from ironic_fsm.machine import Lifecycle
from ironic_fsm.node import Node
from ironic_fsm.stores.capabilities import StoreCapabilities
from ironic_fsm.task import Task

__all__ = ["Context", "Guard", "Listener"]

#: A listener hears every :class:`~ironic_fsm.events.Event`.
Listener = Callable[[Event], None]


class Guard(Protocol):
    """Vetoes a user-requested transition by returning a reason (``None`` allows it)."""

    def __call__(self, node: Node, verb: str, event: str, new_state: str) -> str | None: ...


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
    """

    __slots__ = (
        "caps", "clock", "config", "guards", "holder", "lifecycle", "listeners", "registry",
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

    def task_for(self, node: Node) -> Task:
        """A task for reading a node's steps or plans, with nothing reserved."""
        return Task(node=node, driver=self.registry.driver_for(node), config=self.config)
