"""Volume connectors and targets as stores keep them (Ironic's unique pairs)."""

from __future__ import annotations

from typing import Final

from ironic_fsm.records import VolumeConnector, VolumeTarget
from ironic_fsm.stores._records import Kind

__all__ = ["VOLUME_CONNECTORS", "VOLUME_TARGETS"]

#: A connector's ``(type, connector_id)`` is unique, as an initiator is one machine's.
VOLUME_CONNECTORS: Final = Kind(
    VolumeConnector,
    columns=("node_uuid", "type", "connector_id"),
    unique=(("type", "connector_id"),),
    labels={"connector_id": "connector ID"},
)
#: A node boots from one target per ``boot_index``.
VOLUME_TARGETS: Final = Kind(
    VolumeTarget,
    columns=("node_uuid", "volume_id", "boot_index"),
    unique=(("node_uuid", "boot_index"),),
    labels={"node_uuid": "node", "boot_index": "boot index"},
)
