"""Inspection rules, firmware components, BIOS settings and inventories as stores keep them."""

from __future__ import annotations

from typing import Final

from ironic_fsm.records import BiosSetting, FirmwareComponent, InspectionRule, NodeInventory
from ironic_fsm.stores._records import Kind

__all__ = ["BIOS_SETTINGS", "FIRMWARE_COMPONENTS", "INSPECTION_RULES", "NODE_INVENTORY"]

#: Rules belong to no node; they are run by phase, in priority order.
INSPECTION_RULES: Final = Kind(InspectionRule, columns=("phase", "priority"), by_node=None)
#: One row per component of a node.
FIRMWARE_COMPONENTS: Final = Kind(
    FirmwareComponent,
    columns=("node_uuid", "component"),
    unique=(("node_uuid", "component"),),
    labels={"node_uuid": "node"},
)
#: One row per setting of a node.
BIOS_SETTINGS: Final = Kind(
    BiosSetting,
    columns=("node_uuid", "name"),
    unique=(("node_uuid", "name"),),
    labels={"node_uuid": "node"},
)
#: One inventory per node (schema 17), keyed by it.
NODE_INVENTORY: Final = Kind(
    NodeInventory,
    columns=("node_uuid",),
    unique=(("node_uuid",),),
    labels={"node_uuid": "node"},
)
