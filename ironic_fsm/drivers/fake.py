"""``fake-hardware``: every interface in memory, so the whole lifecycle runs without a BMC.

The fake interfaces keep their state on the node record (power state,
boot device in ``driver_internal_info``, BIOS settings, RAID
configuration), so that tests and demos can check what "happened".
"""

from __future__ import annotations

import logging
from typing import Any, Final

from ironic_fsm import states
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.hardware import HardwareType
from ironic_fsm.interfaces import (
    BIOSInterface,
    BootInterface,
    ConsoleInterface,
    DeployInterface,
    FirmwareInterface,
    InspectInterface,
    ManagementInterface,
    PowerInterface,
    RAIDInterface,
    RescueInterface,
    StorageInterface,
    VendorInterface,
)
from ironic_fsm.passthru import driver_passthru, passthru
from ironic_fsm.steps import clean_step, deploy_step, service_step
from ironic_fsm.task import Task

__all__ = [
    "FakeBIOS",
    "FakeBoot",
    "FakeConsole",
    "FakeDeploy",
    "FakeFirmware",
    "FakeInspect",
    "FakeManagement",
    "FakePower",
    "FakeRAID",
    "FakeRescue",
    "FakeStorage",
    "FakeVendor",
    "fake_hardware",
]

LOG = logging.getLogger(__name__)

_SETTINGS_ARG = {
    "settings": {
        "description": "A list of BIOS settings, each {'name': ..., 'value': ...}.",
        "required": True,
    }
}


class FakePower(PowerInterface):
    """Power kept in ``node.power_state``; changes are instant."""

    def get_power_state(self, task: Task) -> str:
        return task.node.power_state or states.POWER_OFF

    def set_power_state(self, task: Task, power_state: str, timeout: float | None = None) -> None:
        if power_state in (states.REBOOT, states.SOFT_REBOOT):
            task.node.power_state = states.POWER_ON
        elif power_state == states.SOFT_POWER_OFF:
            task.node.power_state = states.POWER_OFF
        elif power_state in (states.POWER_ON, states.POWER_OFF):
            task.node.power_state = power_state
        else:
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: unsupported power state {power_state!r}",
                node=task.node.uuid,
            )

    def reboot(self, task: Task, timeout: float | None = None) -> None:
        task.node.power_state = states.POWER_ON


class FakeManagement(ManagementInterface):
    """Boot device, boot mode and secure boot kept in ``driver_internal_info``.

    Under ``fake_boot_device`` (PXE, not persistent, until set: what Ironic's
    fake management always answers), ``fake_boot_mode`` (``uefi`` until set)
    and ``fake_secure_boot`` (off until set).
    """

    def get_supported_boot_devices(self, task: Task) -> list[str]:
        return ["pxe", "disk", "cdrom", "bios", "safe"]

    def attach_virtual_media(
        self, task: Task, device_type: str, image_url: str, image_download_source: str
    ) -> None:
        """Kept under ``fake_vmedia``: device type -> URL and source."""
        media = dict(task.node.driver_internal_info.get("fake_vmedia") or {})
        media[device_type] = {
            "image_url": image_url,
            "image_download_source": image_download_source,
        }
        task.node.driver_internal_info["fake_vmedia"] = media

    def get_supported_indicators(self, task: Task) -> dict[str, dict[str, dict[str, Any]]]:
        """Ironic's fake ones: a read-only chassis LED and a system LED that can blink."""
        return {
            "chassis": {"led-0": {"readonly": True, "states": ["OFF", "ON"]}},
            "system": {"led": {"readonly": False, "states": ["BLINKING", "OFF", "ON"]}},
        }

    def get_indicator_state(self, task: Task, component: str, indicator: str) -> str:
        """``ON`` until set (under ``fake_indicators``)."""
        states = task.node.driver_internal_info.get("fake_indicators") or {}
        return str(states.get(f"{indicator}@{component}", "ON"))

    def set_indicator_state(self, task: Task, component: str, indicator: str, state: str) -> None:
        states = dict(task.node.driver_internal_info.get("fake_indicators") or {})
        states[f"{indicator}@{component}"] = state
        task.node.driver_internal_info["fake_indicators"] = states

    def inject_nmi(self, task: Task) -> None:
        """Counted under ``fake_nmi``."""
        info = task.node.driver_internal_info
        info["fake_nmi"] = int(info.get("fake_nmi", 0)) + 1

    def detach_virtual_media(self, task: Task, device_types: list[str]) -> None:
        media = dict(task.node.driver_internal_info.get("fake_vmedia") or {})
        for device_type in device_types:
            media.pop(device_type, None)
        task.node.driver_internal_info["fake_vmedia"] = media

    def set_boot_device(self, task: Task, device: str, persistent: bool = False) -> None:
        if device not in self.get_supported_boot_devices(task):
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: unsupported boot device {device!r}",
                node=task.node.uuid,
            )
        task.node.driver_internal_info["fake_boot_device"] = {
            "boot_device": device,
            "persistent": persistent,
        }

    def get_boot_device(self, task: Task) -> dict[str, Any]:
        current = task.node.driver_internal_info.get("fake_boot_device")
        return dict(current) if current else {"boot_device": "pxe", "persistent": False}

    def get_supported_boot_modes(self, task: Task) -> list[str]:
        return ["uefi", "bios"]

    def get_boot_mode(self, task: Task) -> str | None:
        mode = task.node.driver_internal_info.get("fake_boot_mode", "uefi")
        return str(mode) if mode is not None else None

    def set_boot_mode(self, task: Task, mode: str) -> None:
        if mode not in self.get_supported_boot_modes(task):
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: unsupported boot mode {mode!r}; supported: uefi, bios",
                node=task.node.uuid,
            )
        task.node.driver_internal_info["fake_boot_mode"] = mode

    def get_secure_boot_state(self, task: Task) -> bool:
        return bool(task.node.driver_internal_info.get("fake_secure_boot", False))

    def set_secure_boot_state(self, task: Task, state: bool) -> None:
        task.node.driver_internal_info["fake_secure_boot"] = bool(state)


class FakeDeploy(DeployInterface):
    """Deploys nothing, instantly; records that it ran."""

    @deploy_step(priority=100)
    def deploy(self, task: Task) -> str | None:
        task.node.driver_internal_info["fake_deployed"] = True
        return None

    def tear_down(self, task: Task) -> str | None:
        task.node.driver_internal_info.pop("fake_deployed", None)
        return None


class FakeBoot(BootInterface):
    """Boots nothing."""


class FakeBIOS(BIOSInterface):
    """BIOS settings kept in ``driver_internal_info['fake_bios_settings']``."""

    @clean_step(priority=0, argsinfo=_SETTINGS_ARG)
    @deploy_step(priority=0, argsinfo=_SETTINGS_ARG)
    def apply_configuration(self, task: Task, settings: list[dict[str, Any]]) -> str | None:
        if not isinstance(settings, list) or not all(
            isinstance(s, dict) and "name" in s and "value" in s for s in settings
        ):
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: bios.apply_configuration needs settings as a list "
                f"of {{'name', 'value'}} dicts, got {settings!r}",
                node=task.node.uuid,
            )
        current = task.node.driver_internal_info.setdefault("fake_bios_settings", {})
        current.update({s["name"]: s["value"] for s in settings})
        return None

    @clean_step(priority=0)
    @deploy_step(priority=0)
    def factory_reset(self, task: Task) -> str | None:
        task.node.driver_internal_info["fake_bios_settings"] = {}
        return None

    def cached_settings(self, task: Task) -> dict[str, Any]:
        return dict(task.node.driver_internal_info.get("fake_bios_settings") or {})


class FakeRAID(RAIDInterface):
    """Copies ``target_raid_config`` to ``raid_config``."""

    @clean_step(priority=0)
    @deploy_step(priority=0)
    def create_configuration(
        self, task: Task, create_root_volume: bool = True, create_nonroot_volumes: bool = True
    ) -> str | None:
        self.validate_raid_config(task, task.node.target_raid_config)
        task.node.raid_config = {
            "logical_disks": [dict(d) for d in task.node.target_raid_config["logical_disks"]]
        }
        return None

    @clean_step(priority=0)
    @deploy_step(priority=0)
    def delete_configuration(self, task: Task) -> str | None:
        task.node.raid_config = {}
        return None


class FakeInspect(InspectInterface):
    """Reports a small, fixed inventory."""

    def inspect_hardware(self, task: Task) -> str:
        task.node.properties.update({"cpus": 2, "memory_mb": 4096, "local_gb": 40})
        return states.MANAGEABLE

    def abort(self, task: Task) -> None:
        return None


class FakeRescue(RescueInterface):
    """Rescues instantly."""

    def rescue(self, task: Task) -> str:
        return states.RESCUE

    def unrescue(self, task: Task) -> str:
        return states.ACTIVE


class FakeVendor(VendorInterface):
    """A priority-1 clean step that only logs, and a raw pass-through disallowed by default.

    Its pass-through methods are those of Ironic's fake vendor interface:
    each answers whether ``bar`` is its word; ``echo`` (on the hardware
    type) answers its arguments.
    """

    @passthru(["POST"], description="Whether bar is 'kazoo' (asynchronous).")
    def second_method(self, task: Task, bar: str) -> bool:
        task.node.driver_internal_info["fake_vendor_bar"] = bar
        return bar == "kazoo"

    @passthru(["POST"], async_call=False, description="Whether bar is 'meow'.")
    def third_method_sync(self, task: Task, bar: str) -> bool:
        task.node.driver_internal_info["fake_vendor_bar"] = bar
        return bar == "meow"

    @passthru(["POST"], require_exclusive_lock=False, description="Whether bar is 'woof'.")
    def fourth_method_shared_lock(self, task: Task, bar: str) -> bool:
        return bar == "woof"

    @driver_passthru(["GET", "POST"], async_call=False, description="Its arguments, back.")
    def echo(self, http_method: str, **kwargs: Any) -> dict[str, Any]:
        return {"http_method": http_method, **kwargs}

    @clean_step(priority=1, requires_ramdisk=False)
    @service_step(requires_ramdisk=False)
    @passthru(["POST"], description="Logs and counts its calls.")
    def log_passthrough(self, task: Task, **kwargs: Any) -> None:
        LOG.debug("Node %s: fake vendor step log_passthrough ran", task.node.uuid)
        task.node.driver_internal_info["fake_log_passthrough"] = (
            task.node.driver_internal_info.get("fake_log_passthrough", 0) + 1
        )

    @clean_step(
        priority=0,
        argsinfo={"raw_bytes": {"description": "Bytes to send, as hex pairs.", "required": True}},
    )
    @service_step(
        argsinfo={"raw_bytes": {"description": "Bytes to send, as hex pairs.", "required": True}},
    )
    def send_raw(self, task: Task, raw_bytes: str) -> None:
        task.node.driver_internal_info["fake_raw_sent"] = raw_bytes


class FakeFirmware(FirmwareInterface):
    """Records the firmware it was asked to install."""

    @clean_step(
        priority=0,
        argsinfo={"settings": {"description": "Firmware components to update.", "required": True}},
    )
    @service_step(
        argsinfo={"settings": {"description": "Firmware components to update.", "required": True}},
    )
    def update(self, task: Task, settings: list[dict[str, Any]]) -> None:
        task.node.driver_internal_info["fake_firmware"] = list(settings)


#: One of each kind: every interface of ``fake-hardware``.
_FAKES: Final = (
    FakePower,
    FakeManagement,
    FakeDeploy,
    FakeBoot,
    FakeBIOS,
    FakeRAID,
    FakeInspect,
    FakeRescue,
    FakeVendor,
    FakeFirmware,
)


class FakeConsole(ConsoleInterface):
    """A console that is "running" while ``driver_internal_info['fake_console']`` says so."""

    def start_console(self, task: Task) -> None:
        task.node.driver_internal_info["fake_console"] = True

    def stop_console(self, task: Task) -> None:
        task.node.driver_internal_info.pop("fake_console", None)

    def get_console(self, task: Task) -> dict[str, Any]:
        running = task.node.driver_internal_info.get("fake_console", False)
        return {"type": "fake", "url": "fake://console" if running else None}


class FakeStorage(StorageInterface):
    """Attaches nothing; says an image must be written, as a local-disk node needs."""


def fake_hardware() -> HardwareType:
    """The ``fake-hardware`` type (entry point factory).

    Every kind's first implementation is its fake; like Ironic's, it
    accepts any installed implementation of any kind (to rehearse one
    without hardware).
    """
    from ironic_fsm.drivers.common import GENERIC_CHOICES, hardware

    fakes: dict[str, list[Any]] = {fake.interface_type: [("fake", fake())] for fake in _FAKES}
    fakes["console"] = [("fake", FakeConsole())]
    fakes["storage"] = [("fake", FakeStorage())]
    for kind, names in GENERIC_CHOICES.items():  # network: flat (a plugin), then noop
        fakes.setdefault(kind, []).extend(names)
    return hardware("Every interface in memory; no hardware needed.", fakes, any_interface=True)
