"""Virtual media on request (``POST/DELETE /v1/nodes/{id}/vmedia``, 1.89), through sushy.

A device type names the BMC slots it goes into (Ironic's mapping): ``cdrom``
a CD or DVD slot, ``floppy`` a floppy one, ``disk`` a USB stick one. The
system's slots are used, else a manager's; a slot the BMC cannot insert
into (no action, no PATCH) is not used.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from ironic_fsm.drivers.redfish.boot import _vmedia_lacks
from ironic_fsm.drivers.redfish.driver_info import _info
from ironic_fsm.drivers.redfish.session import _bmc, _get_system, _refusal, _sushy, _value
from ironic_fsm.task import Task

__all__ = ["MEDIA_TYPES", "attach", "detach"]

LOG = logging.getLogger(__name__)

#: Each device type and the Redfish media types of the slots it goes into.
MEDIA_TYPES: Final = {"cdrom": {"CD", "DVD"}, "floppy": {"Floppy"}, "disk": {"USBStick"}}


def _slots(system: Any, device_type: str) -> list[Any]:
    """The usable slots of ``device_type`` (the system's, else the first manager's that has)."""
    errors = _sushy().exceptions
    absent = (errors.MissingAttributeError, errors.ResourceNotFoundError)
    wanted = MEDIA_TYPES[device_type]

    def of(owner: Any) -> list[Any]:
        try:
            devices = owner.virtual_media.get_members()
        except absent:
            return []
        return [
            d for d in devices
            if {_value(t) for t in d.media_types or []} & wanted and _vmedia_lacks(d) is None
        ]  # fmt: skip

    found = of(system)
    if not found:
        try:
            managers = list(system.managers)
        except absent:
            managers = []
        for manager in managers:
            found = of(manager)
            if found:
                break
    return found


def attach(task: Task, device_type: str, image_url: str) -> None:
    """Insert ``image_url`` into the first free slot of ``device_type`` (else the first)."""
    info = _info(task)
    with _bmc(task, info, f"insert virtual media ({device_type})"):
        slots = _slots(_get_system(info), device_type)
        if not slots:
            raise _refusal(
                task, info, f"BMC {info.address} offers no usable virtual media of type "
                f"{device_type}",
            )  # fmt: skip
        slot = next((s for s in slots if not s.inserted), slots[0])
        if slot.inserted:
            slot.eject_media()
        slot.insert_media(image_url, inserted=True, write_protected=True)
    LOG.info("Node %s: virtual media %s inserted on BMC %s", task.node.uuid, device_type,
             info.address)  # fmt: skip


def detach(task: Task, device_types: list[str]) -> None:
    """Eject whatever the slots of ``device_types`` hold."""
    info = _info(task)
    with _bmc(task, info, "eject virtual media"):
        system = _get_system(info)
        for device_type in device_types:
            for slot in _slots(system, device_type):
                if slot.inserted:
                    slot.eject_media()
