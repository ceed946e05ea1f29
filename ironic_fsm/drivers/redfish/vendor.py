"""``redfish`` vendor interface: Ironic's ``eject_vmedia`` pass-through method.

Ironic kept it after the generic ``/v1/nodes/{id}/vmedia`` API came
(1.89); clients that learnt it first still call it. ``boot_device`` names
Redfish's media kinds (``cd``, ``dvd``, ``usb``, ``floppy``); without it,
every slot is ejected.
"""

from __future__ import annotations

import reprlib
from typing import Final

from ironic_fsm.drivers.redfish import vmedia
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.interfaces import VendorInterface
from ironic_fsm.passthru import passthru
from ironic_fsm.task import Task

__all__ = ["RedfishVendor"]

#: Each ``boot_device`` Ironic's method takes, and the device type of its slots.
_KINDS: Final = {"cd": "cdrom", "dvd": "cdrom", "usb": "disk", "floppy": "floppy"}


class RedfishVendor(VendorInterface):
    """Ejects virtual media on request, as Ironic's redfish vendor interface does."""

    @passthru(["POST"], description="Eject virtual media: 'boot_device' (cd, dvd, usb or "
              "floppy) names which; without it, every device is ejected.")  # fmt: skip
    def eject_vmedia(self, task: Task, boot_device: str | None = None) -> None:
        if boot_device is None:
            types = sorted(set(_KINDS.values()))
        elif isinstance(boot_device, str) and boot_device.lower() in _KINDS:
            types = [_KINDS[boot_device.lower()]]
        else:
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: boot_device must be one of "
                f"{', '.join(_KINDS)}, not {reprlib.repr(boot_device)}",
                node=task.node.uuid,
            )
        vmedia.detach(task, types)
