"""Every kind of record beside nodes, by table: what both built-in stores keep."""

from __future__ import annotations

from typing import Final

from ironic_fsm.stores._allocations import ALLOCATIONS
from ironic_fsm.stores._chassis import CHASSIS
from ironic_fsm.stores._node_settings import (
    BIOS_SETTINGS,
    FIRMWARE_COMPONENTS,
    INSPECTION_RULES,
    NODE_INVENTORY,
)
from ironic_fsm.stores._portgroups import PORTGROUPS
from ironic_fsm.stores._ports import PORTS
from ironic_fsm.stores._records import Kind
from ironic_fsm.stores._volumes import VOLUME_CONNECTORS, VOLUME_TARGETS

__all__ = ["KINDS"]

KINDS: Final[dict[str, Kind]] = {
    kind.table: kind
    for kind in (
        PORTS,
        PORTGROUPS,
        CHASSIS,
        ALLOCATIONS,
        VOLUME_CONNECTORS,
        VOLUME_TARGETS,
        INSPECTION_RULES,
        FIRMWARE_COMPONENTS,
        BIOS_SETTINGS,
        NODE_INVENTORY,
    )
}
