"""A node's target RAID configuration (1.12), and what a driver's logical disks may say.

As Ironic: the target is checked by the node's RAID interface unless it is
empty (``{}`` clears it), a RAID interface that has none (``no-raid``)
refuses a target, and nothing else about the node matters (its state,
its power): the target is only used by the ``create_configuration`` clean
and deploy steps, which build it (the ``fake`` one copies it to
``raid_config``).
"""

from __future__ import annotations

from typing import Any

from ironic_fsm.conductor.common import check_ident, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node, check_json

__all__ = ["Raid"]


class Raid:
    """Set a node's target RAID configuration; list a driver's logical disk properties."""

    def __init__(self, ctx: Context, reservations: Reservations) -> None:
        self._registry = ctx.registry  # the hardware types: the only other thing it uses
        self._reservations = reservations

    def set_target_raid_config(self, ident: str, config: object) -> Node:
        """Check ``config`` with the node's RAID interface and keep it (``{}``: none)."""
        ident = check_ident(ident)
        if type(config) is not dict:
            raise InvalidParameterValue(
                f"Node {ident}: a target RAID configuration is an object, not {shown(config)}",
                node=ident,
            )
        check_json(config, "The target RAID configuration")
        with self._reservations.reserved(ident) as job:
            if config:
                job.call("raid", "validate_raid_config", config)
            job.node.target_raid_config = config
            return job.node

    def logical_disk_properties(self, driver: str) -> dict[str, str]:
        """What the logical disks of a target may say, for the default RAID interface of
        hardware type ``driver`` (``UnsupportedDriverExtension`` for ``no-raid``)."""
        hardware = self._registry.driver_for(Node(driver=driver))
        properties: dict[str, Any] = hardware.raid.get_logical_disk_properties()
        return dict(properties)
