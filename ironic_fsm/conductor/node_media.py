"""Virtual media attached on request (1.89), and a node's firmware components (1.86).

Virtual media goes through the node's management interface, which does
what its BMC can (``fake`` keeps it in ``driver_internal_info``,
``redfish`` inserts it through sushy); one that cannot refuses
(``UnsupportedOperation``). Firmware components are what the node's
firmware interface last reported, kept in the store beside the node.
"""

from __future__ import annotations

import uuid as _uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ironic_fsm.conductor.common import check_ident, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.records import records_of
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.records import FirmwareComponent
from ironic_fsm.stores.base import RecordQuery

__all__ = ["DEVICE_TYPES", "DOWNLOAD_SOURCES", "NodeMedia"]

#: The virtual media device types Ironic takes, and where the image may be fetched from.
DEVICE_TYPES: Final = ("cdrom", "disk", "floppy")
DOWNLOAD_SOURCES: Final = ("http", "local", "swift")
#: The namespace of the UUIDs given to a node's components (derived: node and name).
_COMPONENTS: Final = _uuid.UUID("6f1c3b52-4a0e-4f7e-9d7e-2a1f0c5b8e11")


class NodeMedia:
    """Attach and detach virtual media; keep and list firmware components."""

    def __init__(self, ctx: Context, reservations: Reservations) -> None:
        self._ctx = ctx
        self._reservations = reservations

    def attach_virtual_media(
        self, ident: str, device_type: str, image_url: str, image_download_source: str = "local"
    ) -> None:
        ident = check_ident(ident)
        _check_choice(device_type, DEVICE_TYPES, "device_type", ident)
        _check_choice(image_download_source, DOWNLOAD_SOURCES, "image_download_source", ident)
        if not isinstance(image_url, str) or not image_url:
            raise InvalidParameterValue(
                f"Node {ident}: image_url must be a URL, not {shown(image_url)}", node=ident
            )
        with self._reservations.reserved(ident) as job:
            job.call(
                "management", "attach_virtual_media", device_type, image_url,
                image_download_source,
            )  # fmt: skip

    def detach_virtual_media(self, ident: str, device_types: Iterable[str] | None = None) -> None:
        ident = check_ident(ident)
        wanted = list(DEVICE_TYPES if device_types is None else device_types)
        for device_type in wanted:
            _check_choice(device_type, DEVICE_TYPES, "device_types", ident)
        with self._reservations.reserved(ident) as job:
            job.call("management", "detach_virtual_media", wanted)

    def list_firmware_components(self, ident: str) -> list[FirmwareComponent]:
        """The node's components, as its firmware interface last reported them."""
        node = self._ctx.caps.store.get(check_ident(ident))
        records = records_of(self._ctx, FirmwareComponent)
        query = RecordQuery(filters={"node_uuid": node.uuid})
        return records.list_records(FirmwareComponent, query)

    def record_firmware_components(
        self, ident: str, components: Iterable[Mapping[str, Any]]
    ) -> list[FirmwareComponent]:
        """Keep what a firmware interface read: ``component`` and ``current_version`` each
        (``initial_version`` is the first version seen, kept across later reads)."""
        node = self._ctx.caps.store.get(check_ident(ident))
        records = records_of(self._ctx, FirmwareComponent)
        known = {c.component: c for c in self.list_firmware_components(node.uuid)}
        for item in components:
            name, version = item.get("component"), item.get("current_version")
            if not isinstance(name, str) or not name:
                raise InvalidParameterValue(f"A firmware component needs a name: {shown(item)}")
            old = known.get(name)
            if old is None:
                records.add_record(FirmwareComponent(
                    uuid=str(_uuid.uuid5(_COMPONENTS, f"{node.uuid}/{name}")),
                    node_uuid=node.uuid, component=name, initial_version=version,
                    current_version=version,
                    last_version_flashed=item.get("last_version_flashed"),
                ))  # fmt: skip
            elif old.current_version != version:
                old.current_version = version
                old.last_version_flashed = item.get("last_version_flashed", version)
                records.replace_record(old)
        return self.list_firmware_components(node.uuid)


def _check_choice(value: object, choices: tuple[str, ...], field: str, node: str) -> None:
    if value not in choices:
        raise InvalidParameterValue(
            f"Node {node}: {field} must be one of {', '.join(choices)}, not {shown(value)}",
            node=node,
        )
