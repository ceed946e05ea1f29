"""The task: what a step or interface method is given to work on."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from ironic_fsm.config import Config
    from ironic_fsm.hardware import HardwareType
    from ironic_fsm.node import Node

__all__ = ["Task"]


@attrs.define
class Task:
    """One node, reserved for the duration of an operation, and its interfaces.

    Interface methods read and change ``task.node``; the conductor saves the
    node around every step. ``task.driver.<kind>`` reaches the node's other
    interfaces (``task.driver.power.set_power_state(...)``).
    """

    node: Node
    driver: HardwareType
    config: Config
    # Conductor bookkeeping: events waiting for the next save, and whether
    # the reservation has been handed over (or the node deleted).
    _pending_events: list[Any] = attrs.field(factory=list, init=False, repr=False, eq=False)
    _detached: bool = attrs.field(default=False, init=False, repr=False, eq=False)
