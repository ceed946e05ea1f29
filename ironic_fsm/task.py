"""The task: what a step or interface method is given to work on."""

from __future__ import annotations

from typing import TYPE_CHECKING

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

    That is all a driver sees: the conductor keeps its own bookkeeping for
    the task (events waiting for a save, who holds the reservation) in a
    separate object, :class:`ironic_fsm.conductor.jobs.Job`.
    """

    node: Node
    driver: HardwareType
    config: Config
