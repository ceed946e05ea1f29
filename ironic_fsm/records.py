"""The records beside nodes: ports, port groups, chassis, allocations, volume connectors
and targets, inspection rules, and a node's firmware components and BIOS settings.

Field names are Ironic's, so that data moves between the two without a
mapping. Each record is plain data (an attrs class) that converts to and
from a JSON-safe dict, which is what stores keep; what a field may hold is
checked by the conductor before a store sees the record, and the store keeps
unique what must be (a port's MAC address, a name).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Final, TypeVar

import attrs

__all__ = [
    "RECORD_TYPES",
    "Allocation",
    "BiosSetting",
    "Chassis",
    "FirmwareComponent",
    "InspectionRule",
    "Port",
    "Portgroup",
    "Record",
    "VolumeConnector",
    "VolumeTarget",
]

#: The fields every record has that are not its data: identity and times.
_OWN: Final = frozenset({"uuid", "created_at", "updated_at"})

R = TypeVar("R", bound="Record")


#: Each record class's data fields, worked out once.
_DATA_FIELDS: dict[type, frozenset[str]] = {}


def _data_fields(cls: type) -> frozenset[str]:
    """The fields of ``cls`` a store keeps as data (all but identity and times)."""
    known = _DATA_FIELDS.get(cls)
    if known is None:
        known = _DATA_FIELDS[cls] = frozenset(f.name for f in attrs.fields(cls)) - _OWN
    return known


@attrs.define
class Record:
    """What every record has: a UUID and Ironic's two timestamps (set by the store)."""

    #: The API's name for the kind, and the stores' table ("ports", ...).
    kind: ClassVar[str] = ""
    #: How messages name one ("Port").
    word: ClassVar[str] = ""

    uuid: str
    created_at: datetime | None = attrs.field(default=None, kw_only=True)
    updated_at: datetime | None = attrs.field(default=None, kw_only=True)

    def data(self) -> dict[str, Any]:
        """Every field but the identity and the times, as JSON-safe values (what is stored)."""
        return {
            field.name: getattr(self, field.name)
            for field in attrs.fields(type(self))
            if field.name not in _OWN
        }

    def to_dict(self) -> dict[str, Any]:
        """Every field; times as aware datetimes."""
        return attrs.asdict(self, recurse=False)

    @classmethod
    def from_data(
        cls: type[R],
        uuid: str,
        data: dict[str, Any],
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
    ) -> R:
        """The record a store kept (keys it does not know, from a newer release, dropped)."""
        known = _data_fields(cls)
        if not data.keys() <= known:  # the usual case skips this copy (a page reads 1,000)
            data = {key: value for key, value in data.items() if key in known}
        return cls(uuid=uuid, created_at=created_at, updated_at=updated_at, **data)


@attrs.define
class Port(Record):
    """A network port of a node: its MAC ``address`` is unique across all ports."""

    kind: ClassVar[str] = "ports"
    word: ClassVar[str] = "Port"

    address: str = ""
    node_uuid: str = ""
    name: str | None = None
    portgroup_uuid: str | None = None
    pxe_enabled: bool = True
    local_link_connection: dict[str, Any] = attrs.field(factory=dict)
    physical_network: str | None = None
    is_smartnic: bool = False
    extra: dict[str, Any] = attrs.field(factory=dict)
    internal_info: dict[str, Any] = attrs.field(factory=dict)
    description: str | None = None
    vendor: str | None = None
    category: str | None = None
    available_for_dynamic_portgroup: bool = False


@attrs.define
class Portgroup(Record):
    """A group of a node's ports bonded together (``mode``: the bond's mode)."""

    kind: ClassVar[str] = "portgroups"
    word: ClassVar[str] = "Portgroup"

    node_uuid: str = ""
    address: str | None = None
    name: str | None = None
    mode: str | None = None
    properties: dict[str, Any] = attrs.field(factory=dict)
    standalone_ports_supported: bool = True
    extra: dict[str, Any] = attrs.field(factory=dict)
    internal_info: dict[str, Any] = attrs.field(factory=dict)
    physical_network: str | None = None
    category: str | None = None


@attrs.define
class Chassis(Record):
    """A chassis: a group of nodes (``Node.chassis_uuid``)."""

    kind: ClassVar[str] = "chassis"
    word: ClassVar[str] = "Chassis"

    description: str | None = None
    extra: dict[str, Any] = attrs.field(factory=dict)


@attrs.define
class Allocation(Record):
    """A request for a node: picked among the ``available`` ones that match it."""

    kind: ClassVar[str] = "allocations"
    word: ClassVar[str] = "Allocation"

    resource_class: str | None = None
    name: str | None = None
    node_uuid: str | None = None
    state: str = "allocating"
    last_error: str | None = None
    traits: list[str] = attrs.field(factory=list)
    candidate_nodes: list[str] = attrs.field(factory=list)
    extra: dict[str, Any] = attrs.field(factory=dict)
    owner: str | None = None
    conductor_affinity: str | None = None


@attrs.define
class VolumeConnector(Record):
    """A node's connector to remote volumes (an iSCSI initiator, a WWPN...)."""

    kind: ClassVar[str] = "volume_connectors"
    word: ClassVar[str] = "Volume connector"

    node_uuid: str = ""
    type: str = ""
    connector_id: str = ""
    extra: dict[str, Any] = attrs.field(factory=dict)


@attrs.define
class VolumeTarget(Record):
    """A remote volume a node boots from or uses (``boot_index`` unique per node)."""

    kind: ClassVar[str] = "volume_targets"
    word: ClassVar[str] = "Volume target"

    node_uuid: str = ""
    volume_type: str = ""
    volume_id: str = ""
    boot_index: int = 0
    properties: dict[str, Any] = attrs.field(factory=dict)
    extra: dict[str, Any] = attrs.field(factory=dict)


@attrs.define
class InspectionRule(Record):
    """A rule run on what inspection found: ``actions`` where every ``conditions`` holds.

    Rules of one ``phase`` run in ``priority`` order, highest first; a
    ``sensitive`` rule's conditions and actions are never shown.
    """

    kind: ClassVar[str] = "inspection_rules"
    word: ClassVar[str] = "Inspection rule"

    description: str | None = None
    phase: str = "main"
    priority: int = 0
    sensitive: bool = False
    conditions: list[dict[str, Any]] = attrs.field(factory=list)
    actions: list[dict[str, Any]] = attrs.field(factory=list)


@attrs.define
class FirmwareComponent(Record):
    """One firmware component of a node (``bios``, ``bmc``...), as its firmware interface
    last read it. Ironic keys it by node and component; the UUID is derived from both."""

    kind: ClassVar[str] = "firmware_components"
    word: ClassVar[str] = "Firmware component"

    node_uuid: str = ""
    component: str = ""
    initial_version: str | None = None
    current_version: str | None = None
    last_version_flashed: str | None = None


@attrs.define
class BiosSetting(Record):
    """One BIOS setting of a node, as its BIOS interface last read or applied it (keyed by
    node and name, as Ironic keys it; the UUID is derived from both)."""

    kind: ClassVar[str] = "bios_settings"
    word: ClassVar[str] = "BIOS setting"

    node_uuid: str = ""
    name: str = ""
    value: str | None = None
    attribute_type: str | None = None
    allowable_values: list[str] | None = None
    lower_bound: int | None = None
    max_length: int | None = None
    min_length: int | None = None
    read_only: bool | None = None
    reset_required: bool | None = None
    unique: bool | None = None
    upper_bound: int | None = None


@attrs.define
class NodeInventory(Record):
    """What the ramdisk agent found on a node at its last inspection (Ironic's node
    inventory): one per node, its UUID the node's, replaced at each inspection."""

    kind: ClassVar[str] = "node_inventory"
    word: ClassVar[str] = "Node inventory"

    node_uuid: str = ""
    inventory: dict[str, Any] = attrs.field(factory=dict)
    plugin_data: dict[str, Any] = attrs.field(factory=dict)


#: Every record type, by kind.
RECORD_TYPES: Final[dict[str, type[Record]]] = {
    t.kind: t
    for t in (
        Port, Portgroup, Chassis, Allocation, VolumeConnector, VolumeTarget,
        InspectionRule, FirmwareComponent, BiosSetting, NodeInventory,
    )
}  # fmt: skip
