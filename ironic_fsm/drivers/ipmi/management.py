"""``ipmi`` management: the boot device (and reading its boot mode), through boot options."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from ironic_fsm.drivers.ipmi.driver_info import parse_driver_info
from ironic_fsm.drivers.ipmi.sensors import read_sensors
from ironic_fsm.drivers.ipmi.session import _check_reply, _Connection, _IPMIInterface
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.interfaces import ManagementInterface
from ironic_fsm.task import Task

__all__ = ["BOOT_DEVICE_TO_PYGHMI", "IPMIManagement"]

LOG = logging.getLogger(__name__)

#: Ironic's boot device names → pyghmi's.
BOOT_DEVICE_TO_PYGHMI: Final[Mapping[str, str]] = {
    "pxe": "network",
    "disk": "hd",
    "cdrom": "optical",
    "bios": "setup",
    "safe": "safe",
}

# What pyghmi may read back (its aliases included) → Ironic's names.
_PYGHMI_TO_BOOT_DEVICE: Final[Mapping[str, str]] = {
    "network": "pxe",
    "net": "pxe",
    "pxe": "pxe",
    "hd": "disk",
    "optical": "cdrom",
    "cd": "cdrom",
    "cdrom": "cdrom",
    "dvd": "cdrom",
    "setup": "bios",
    "bios": "bios",
    "f1": "bios",
    "safe": "safe",
}


def _boot_flags(task: Task, what: str) -> dict[str, Any]:
    """pyghmi's reading of the boot flags (boot device override, persistence, UEFI)."""
    node = task.node
    info = parse_driver_info(node)
    with _Connection(node, info) as bmc:
        reply = bmc.call(what, lambda c: _check_reply(node, info, what, c.get_bootdev()))
    return dict(reply)


class IPMIManagement(_IPMIInterface, ManagementInterface):
    """Boot device over IPMI system boot options, with Ironic's device names."""

    def get_supported_boot_devices(self, task: Task) -> list[str]:
        return list(BOOT_DEVICE_TO_PYGHMI)

    def get_sensors_data(self, task: Task) -> dict[str, dict[str, dict[str, Any]]]:
        """The SDR repository's sensors and readings
        (:func:`~ironic_fsm.drivers.ipmi.sensors.read_sensors`)."""
        return read_sensors(task)

    def set_boot_device(self, task: Task, device: str, persistent: bool = False) -> None:
        """Boot from ``device`` next time (or always); UEFI per the node's boot mode."""
        node = task.node
        if device not in BOOT_DEVICE_TO_PYGHMI:
            raise InvalidParameterValue(
                f"Node {node.uuid}: unsupported boot device {device!r}; supported: "
                f"{', '.join(BOOT_DEVICE_TO_PYGHMI)}",
                node=node.uuid,
            )
        info = parse_driver_info(node)
        name = BOOT_DEVICE_TO_PYGHMI[device]
        what = f"set boot device {device}"
        with _Connection(node, info) as bmc:
            bmc.call(
                what,
                lambda c: _check_reply(
                    node, info, what,
                    c.set_bootdev(name, persist=bool(persistent), uefiboot=info.uefi),
                ),
            )  # fmt: skip
        LOG.info(
            "Node %s: boot device %s (persistent=%s, uefi=%s) set through %s",
            node.uuid, device, bool(persistent), info.uefi, info.endpoint,
        )  # fmt: skip

    def get_boot_device(self, task: Task) -> dict[str, Any]:
        """``{'boot_device': Ironic name or None, 'persistent': bool or None}``."""
        node = task.node
        reply = _boot_flags(task, "get boot device")
        raw = reply.get("bootdev")
        device = _PYGHMI_TO_BOOT_DEVICE.get(raw) if isinstance(raw, str) else None
        if device is None:
            if raw not in ("default", None):
                LOG.debug("Node %s: BMC reports boot device %r, unknown to Ironic", node.uuid, raw)
            return {"boot_device": None, "persistent": None}
        return {"boot_device": device, "persistent": bool(reply.get("persistent"))}

    def get_boot_mode(self, task: Task) -> str | None:
        """The mode the boot flags request (``uefi``/``bios``); None when no override is set.

        IPMI carries the boot mode only inside a boot device override, so it
        cannot be set on its own: ``set_boot_mode`` stays unsupported and the
        mode follows ``ipmi_boot_mode`` (or the capability) at each
        ``set_boot_device``.
        """
        reply = _boot_flags(task, "get boot mode")
        if "uefimode" not in reply:
            return None
        return "uefi" if reply["uefimode"] else "bios"
