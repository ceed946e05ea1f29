"""``redfish`` management: boot device and mode (``BootSourceOverride*``), secure boot, reset."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from ironic_fsm.drivers.common import bmc_step, capabilities
from ironic_fsm.drivers.redfish import vmedia
from ironic_fsm.drivers.redfish.driver_info import (
    BOOT_MODES,
    BOOT_MODES_REV,
    RedfishInfo,
    _info,
    _RedfishValidation,
)
from ironic_fsm.drivers.redfish.sensors import read_sensors
from ironic_fsm.drivers.redfish.session import (
    _bmc,
    _enum,
    _forget,
    _get_system,
    _refusal,
    _sushy,
    _value,
    _wait_for,
)
from ironic_fsm.exceptions import (
    BMCRequestFailed,
    BMCTimeout,
    BMCUnreachable,
    InvalidParameterValue,
    UnsupportedOperation,
)
from ironic_fsm.interfaces import ManagementInterface
from ironic_fsm.task import Task

__all__ = ["BOOT_DEVICE_MAP", "PERSISTENT_BOOT_DEVICE_KEY", "RedfishManagement"]

LOG = logging.getLogger(__name__)

#: Ironic boot device names to Redfish BootSourceOverrideTarget values.
BOOT_DEVICE_MAP: Final[Mapping[str, str]] = {
    "pxe": "Pxe",
    "disk": "Hdd",
    "cdrom": "Cd",
    "bios": "BiosSetup",
    "uefi-http": "UefiHttp",
}
#: Targets that also mean an Ironic boot device, tried after BOOT_DEVICE_MAP's when the BMC
#: does not allow that one: some BMCs (Supermicro's) offer virtual media only as ``UsbCd``.
_BOOT_TARGET_ALTERNATIVES: Final[Mapping[str, tuple[str, ...]]] = {"cdrom": ("UsbCd",)}
_BOOT_DEVICE_REV: Final[Mapping[str, str]] = {
    **{v: k for k, v in BOOT_DEVICE_MAP.items()},
    **{t: k for k, ts in _BOOT_TARGET_ALTERNATIVES.items() for t in ts},
}

_RESET_BMC_ARG: Final = {
    "reset_type": {
        "description": "'GracefulRestart' (default) or 'ForceRestart'.",
        "required": False,
    }
}


def _requested_boot_mode(node: Any, info: RedfishInfo) -> str | None:
    """``'uefi'``/``'bios'`` from driver_info or the node's capabilities, if either says."""
    if info.boot_mode:
        return info.boot_mode
    mode = capabilities(node).get("boot_mode", "").lower()
    return mode if mode in BOOT_MODES else None


def _allowed_targets(system: Any) -> list[str] | None:
    """The boot targets the BMC publishes (``@Redfish.AllowableValues``), or None if it does not.

    sushy also looks in the system's settings object, where some BMCs
    publish them instead.
    """
    boot = system.boot
    allowed = getattr(boot, "allowed_values", None) if boot is not None else None
    return [str(v) for v in allowed] if allowed else None


def _allowed_modes(system: Any) -> list[str] | None:
    """Our names (``uefi``/``bios``) of the boot modes the BMC publishes, or None."""
    boot = (system.json or {}).get("Boot") or {}
    allowed = boot.get("BootSourceOverrideMode@Redfish.AllowableValues")
    if not isinstance(allowed, list) or not allowed:
        return None
    return [BOOT_MODES_REV[m] for m in allowed if m in BOOT_MODES_REV]


def _boot_target(device: str, allowed: list[str] | None) -> str | None:
    """The Redfish target for ``device`` among those the BMC allows (None: none fits)."""
    choices = (BOOT_DEVICE_MAP[device], *_BOOT_TARGET_ALTERNATIVES.get(device, ()))
    if allowed is None:  # the BMC publishes nothing: the schema's choice
        return choices[0]
    return next((c for c in choices if c in allowed), None)


def _supported_devices(allowed: list[str] | None) -> list[str]:
    return [d for d in BOOT_DEVICE_MAP if _boot_target(d, allowed) is not None]


#: driver_internal_info key: the persistent boot device of a node whose BMC offers only
#: one-time overrides; the power interface sets it again (once) before each boot.
PERSISTENT_BOOT_DEVICE_KEY: Final = "redfish_persistent_boot_device"


def _allowed_enabled(system: Any) -> list[str] | None:
    """The ``BootSourceOverrideEnabled`` values the BMC publishes, or None."""
    boot = (system.json or {}).get("Boot") or {}
    allowed = boot.get("BootSourceOverrideEnabled@Redfish.AllowableValues")
    return [str(v) for v in allowed] if isinstance(allowed, list) and allowed else None


def _restore_boot_device(task: Task, system: Any) -> None:
    """Before a boot: set the persistent boot device again where the BMC has only ``Once``.

    Not when a one-time override is pending: that boot is its own (the
    persistent device comes back at the boot after it).
    """
    device = task.node.driver_internal_info.get(PERSISTENT_BOOT_DEVICE_KEY)
    management = task.driver.management
    if not device or not isinstance(management, RedfishManagement):
        return
    boot = system.boot
    if boot is not None and _value(boot.enabled) == "Once":
        return
    management.set_boot_device(task, str(device), persistent=True)


def _secure_boot(task: Task, iface: ManagementInterface, system: Any) -> Any:
    """The system's ``SecureBoot`` resource; a BMC without one does not support secure boot."""
    sushy = _sushy()
    try:
        return system.secure_boot
    except sushy.exceptions.MissingAttributeError:
        raise UnsupportedOperation(
            f"Node {task.node.uuid}: the BMC's system has no SecureBoot resource",
            interface=iface.interface_type,
            operation="secure boot",
        ) from None


class RedfishManagement(_RedfishValidation, ManagementInterface):
    """Boot device and mode through ``Boot.BootSourceOverride*``; BMC reset.

    The boot devices are those the BMC lists in
    ``BootSourceOverrideTarget@Redfish.AllowableValues`` (all of
    :data:`BOOT_DEVICE_MAP` only when it lists none), and a boot mode must
    be among ``BootSourceOverrideMode@Redfish.AllowableValues`` when the
    BMC publishes that: others are refused before anything is sent.
    """

    def get_sensors_data(self, task: Task) -> dict[str, dict[str, dict[str, Any]]]:
        """Fans, temperatures and power supplies of each chassis, and drives
        (:func:`~ironic_fsm.drivers.redfish.sensors.read_sensors`)."""
        return read_sensors(task)

    def attach_virtual_media(
        self, task: Task, device_type: str, image_url: str, image_download_source: str
    ) -> None:
        """Insert the image into a virtual media slot of the BMC (the BMC fetches it)."""
        vmedia.attach(task, device_type, image_url)

    def detach_virtual_media(self, task: Task, device_types: list[str]) -> None:
        vmedia.detach(task, device_types)

    def get_supported_boot_devices(self, task: Task) -> list[str]:
        info = _info(task)
        with _bmc(task, info, "read the allowed boot devices"):
            return _supported_devices(_allowed_targets(_get_system(info)))

    def set_boot_device(self, task: Task, device: str, persistent: bool = False) -> None:
        """Boot from ``device`` next time (``Once``) or always (``Continuous``).

        The boot mode goes with it when driver_info or the node's
        capabilities ask for one, because some BMCs reset it otherwise.
        """
        if device not in BOOT_DEVICE_MAP:
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: unsupported boot device {device!r}; supported: "
                f"{', '.join(BOOT_DEVICE_MAP)}",
                node=task.node.uuid,
            )
        info = _info(task)
        mode = _requested_boot_mode(task.node, info)
        with _bmc(task, info, f"set boot device {device!r}"):
            system = _get_system(info)
            allowed = _allowed_targets(system)
            target = _boot_target(device, allowed)
            if target is None:
                raise InvalidParameterValue(
                    f"Node {task.node.uuid}: BMC {info.address} does not allow boot device "
                    f"{device!r} (it allows the targets {', '.join(allowed or [])}); boot "
                    f"devices supported by this BMC: {', '.join(_supported_devices(allowed))}",
                    node=task.node.uuid,
                )
            modes = _allowed_modes(system)
            if mode and modes is not None and mode not in modes:
                raise InvalidParameterValue(
                    f"Node {task.node.uuid}: BMC {info.address} does not allow boot mode "
                    f"{mode!r} (from redfish_boot_mode or the boot_mode capability); it allows: "
                    f"{', '.join(modes) or 'none'}",
                    node=task.node.uuid,
                )
            enabled = "Continuous" if persistent else "Once"
            allowed_enabled = _allowed_enabled(system)
            # Some BMCs offer no Continuous override: the driver then keeps the
            # device and sets it once again before every boot (as Ironic does).
            emulated = (
                persistent
                and allowed_enabled is not None
                and "Continuous" not in allowed_enabled
                and "Once" in allowed_enabled
            )
            if emulated:
                enabled = "Once"
            system.set_system_boot_options(
                target=_enum("BootSource", target),
                enabled=_enum("BootSourceOverrideEnabled", enabled),
                mode=_enum("BootSourceOverrideMode", BOOT_MODES[mode]) if mode else None,
            )
        if emulated:
            task.node.driver_internal_info[PERSISTENT_BOOT_DEVICE_KEY] = device
        elif persistent:
            task.node.driver_internal_info.pop(PERSISTENT_BOOT_DEVICE_KEY, None)
        LOG.info(
            "Node %s: boot device %s (%s) set on BMC %s",
            task.node.uuid,
            device,
            "persistent, re-set before each boot" if emulated else enabled.lower(),
            info.address,
        )

    def get_boot_device(self, task: Task) -> dict[str, Any]:
        info = _info(task)
        with _bmc(task, info, "get boot device"):
            boot = _get_system(info).boot
            target = _value(boot.target)
            enabled = _value(boot.enabled)
        device = _BOOT_DEVICE_REV.get(target or "")
        kept = task.node.driver_internal_info.get(PERSISTENT_BOOT_DEVICE_KEY)
        return {
            "boot_device": device,
            "persistent": None
            if enabled is None
            else enabled == "Continuous" or (device is not None and device == kept),
        }

    def get_boot_mode(self, task: Task) -> str | None:
        """``'uefi'`` or ``'bios'`` as the BMC reports it (None when it does not)."""
        info = _info(task)
        with _bmc(task, info, "get boot mode"):
            mode = _value(_get_system(info).boot.mode)
        return BOOT_MODES_REV.get(mode or "")

    def get_supported_boot_modes(self, task: Task) -> list[str]:
        """Those the BMC publishes as allowed, or both when it publishes none."""
        info = _info(task)
        with _bmc(task, info, "read the allowed boot modes"):
            modes = _allowed_modes(_get_system(info))
        return list(BOOT_MODES) if modes is None else modes

    def set_boot_mode(self, task: Task, mode: str) -> None:
        """Set ``BootSourceOverrideMode`` alone; the boot device override stays as it is."""
        if mode not in BOOT_MODES:
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: unknown boot mode {mode!r}; expected uefi or bios",
                node=task.node.uuid,
            )
        info = _info(task)
        with _bmc(task, info, f"set boot mode {mode!r}"):
            system = _get_system(info)
            modes = _allowed_modes(system)
            if modes is not None and mode not in modes:
                raise InvalidParameterValue(
                    f"Node {task.node.uuid}: BMC {info.address} does not allow boot mode "
                    f"{mode!r}; it allows: {', '.join(modes) or 'none'}",
                    node=task.node.uuid,
                )
            system.set_system_boot_options(mode=_enum("BootSourceOverrideMode", BOOT_MODES[mode]))
        LOG.info("Node %s: boot mode %s set on BMC %s", task.node.uuid, mode, info.address)

    def get_secure_boot_state(self, task: Task) -> bool:
        """``SecureBootEnable`` of the system's ``SecureBoot`` resource."""
        info = _info(task)
        with _bmc(task, info, "get secure boot state"):
            return bool(_secure_boot(task, self, _get_system(info)).enabled)

    def set_secure_boot_state(self, task: Task, state: bool) -> None:
        """PATCH ``SecureBootEnable``; nothing is sent when it already has that value."""
        info = _info(task)
        with _bmc(task, info, f"set secure boot {'on' if state else 'off'}"):
            secure = _secure_boot(task, self, _get_system(info))
            if bool(secure.enabled) == bool(state):
                return
            secure.set_enabled(bool(state))
        LOG.info(
            "Node %s: secure boot turned %s on BMC %s",
            task.node.uuid, "on" if state else "off", info.address,
        )  # fmt: skip

    @bmc_step("service", _RESET_BMC_ARG)
    def reset_bmc(self, task: Task, reset_type: str = "GracefulRestart") -> None:
        """Restart the BMC (``Manager.Reset``) and wait until it answers again."""
        if reset_type not in ("GracefulRestart", "ForceRestart"):
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: reset_type must be 'GracefulRestart' or "
                f"'ForceRestart', got {reset_type!r}",
                node=task.node.uuid,
            )
        info = _info(task)
        with _bmc(task, info, "reset BMC"):
            managers = _get_system(info).managers
            if not managers:
                raise _refusal(task, info, f"BMC {info.address} lists no manager to reset")
            managers[0].reset_manager(_enum("ResetType", reset_type))
        _forget(info)

        def answers() -> bool:
            try:
                with _bmc(task, info, "reconnect after BMC reset"):
                    _get_system(info)
            except (BMCUnreachable, BMCTimeout, BMCRequestFailed):
                return False
            return True

        _wait_for(
            task, info, "answer after a reset", info.power_timeout, answers, lambda: "no answer"
        )
