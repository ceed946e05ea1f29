"""The emulated systems: sushy-tools' fake driver with what real BMCs do (child process).

Power changes applied at once or after a delay, a boot history that uses
up a one-time override, BIOS attributes with pending changes, inventory,
storage volumes that keep their RAID shape, manager resets and per-system
quirks (:data:`QUIRKS`). :mod:`ironic_fsm.testing.redfish_fake_driver`
puts :class:`PeerFakeDriver` in place of the stock driver.
"""

from __future__ import annotations

import copy
import datetime
import time
import uuid as uuid_mod
from typing import Any

import flask
from sushy_tools import error
from sushy_tools.emulator.resources.systems import fakedriver

DEFAULT_BIOS: dict[str, Any] = {
    "BootMode": "Uefi",
    "EmbeddedSata": "Raid",
    "NicBoot1": "NetworkBoot",
    "ProcTurboMode": "Enabled",
    "SecureBootStatus": "Disabled",
    "SerialNumber": "QPX12345",
}
DEFAULT_VERSIONS: dict[str, Any] = {"BiosVersion": "1.0.0"}
BOOT_HISTORY_LIMIT = 50

#: The quirks a system can be given (key in its ``quirks`` dict: meaning).
QUIRKS: dict[str, str] = {
    "bios_reject": "{attribute: message or None}: the BIOS accepts the PATCH of these "
    "attributes, then fails to apply them (at once, or at the next boot with "
    "SUSHY_EMULATOR_FAKE_BIOS_APPLY='reboot') and says so only in the BIOS resource's "
    "@Redfish.Settings Messages (Base.1.0.SettingsFailed naming the attribute).",
    "bios_untimed": "True: @Redfish.Settings carries Messages but no Time (some BMCs), "
    "which sushy's update_status reads as 'no updates'.",
    "vmedia": "'actions' (stock: InsertMedia/EjectMedia actions), 'patch' (no actions, "
    "'Allow: GET, PATCH', insert and eject by PATCH) or 'none' (no actions, 'Allow: GET': "
    "the slot cannot be driven at all).",
    "update": "'task' (stock: 202 and a task monitor), 'sync' (204 without Location, "
    "nothing changes) or 'sync-bump' (204 without Location, the version is bumped at once).",
    "nic_states": "{mac: State}: the NIC's Status.State (e.g. 'Disabled', 'StandbyOffline').",
    "host_interface": "mac: that NIC is the host side of the BMC's host interface: Id "
    "'ToManager' (Lenovo XCC) or host_interface_id, and listed in the manager's "
    "HostInterfaces/1/HostEthernetInterfaces.",
    "host_interface_id": "the Id of the host interface's NIC (default 'ToManager').",
    "boot_targets": "list: BootSourceOverrideTarget@Redfish.AllowableValues exactly; [] "
    "publishes none. PATCHes of another target are refused (400).",
    "boot_enabled": "list: BootSourceOverrideEnabled@Redfish.AllowableValues (e.g. "
    "['Once', 'Disabled'] on BMCs without persistent overrides); PATCHes of another value "
    "are refused (400).",
    "boot_modes": "list: BootSourceOverrideMode@Redfish.AllowableValues; PATCHes of another "
    "mode are refused (400).",
    "reset_types": "list: ResetType@Redfish.AllowableValues of ComputerSystem.Reset exactly; "
    "other reset types are refused (400).",
    "volume_create": "'created' (stock: 201 and Location), 'sync' (204, no Location) or "
    "'accepted' (202, no Location): the volume is created either way.",
    "extra_processors": "[{'id', 'cores', 'threads'}]: more Processors members.",
    "processor_overrides": "{Id: {field: value}}: merged into that processor's document "
    "(e.g. {'ProcessorType': 'GPU'} or {'Status': {'State': 'Disabled'}}).",
}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def _merge(doc: dict[str, Any], changes: dict[str, Any]) -> None:
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            _merge(doc[key], value)
        else:
            doc[key] = copy.deepcopy(value)


def _cfg(key: str, default: Any) -> Any:
    return PeerFakeDriver._config.get(key, default)


class PeerFakeDriver(fakedriver.FakeDriver):  # type: ignore[misc]
    """The stock fake systems driver with the behaviour real BMCs have and tests need."""

    _config: Any
    _logger: Any

    # -- power ------------------------------------------------------------------

    def _boot(self, system: dict[str, Any]) -> None:
        """What a power-on does: consume a one-time override, apply pending BIOS."""
        history = list(system.get("boot_history") or [])
        image = (system.get("boot_image") or {}).get("Cd")
        history.append(
            {
                "target": system.get("boot_device", "Hdd"),
                "enabled": system.get("boot_enabled", "Continuous"),
                "mode": system.get("boot_mode", "UEFI"),
                "cd_inserted": bool(image and image[2]),
                "at": time.time(),
            }
        )
        system["boot_history"] = history[-BOOT_HISTORY_LIMIT:]
        if system.get("boot_enabled") == "Once":
            system["boot_enabled"] = "Disabled"
        pending = system.get("bios_pending")
        if pending:
            self._apply_bios(system, pending)
            system["bios_pending"] = {}

    def _update_if_needed(self, system: dict[str, Any]) -> dict[str, Any]:
        pending = system.get("pending_power")
        if pending and time.time() >= pending["apply_time"]:
            was = system.get("power_state")
            system["power_state"] = pending["power_state"]
            system["pending_power"] = None
            if pending["power_state"] == "On" and (was != "On" or pending.get("restart")):
                self._boot(system)
            self._update(system)
        return system

    def set_power_state(self, identity: str, state: str) -> None:
        system = self._get(identity)
        if state == "Nmi":
            self._update(system, nmi_count=system.get("nmi_count", 0) + 1)
            return
        restart = False
        if state in ("On", "ForceOn", "PushPowerButton") or (
            state == "PowerCycle" and system["power_state"] == "Off"
        ):
            target = "On"
        elif state in ("ForceOff", "GracefulShutdown"):
            target = "Off"
        elif state in ("ForceRestart", "GracefulRestart", "PowerCycle"):
            target, restart = "On", True
        else:
            raise error.NotSupportedError(f"Power state {state} is not supported")
        if system["power_state"] == target and not restart:
            return
        delay = float(_cfg("SUSHY_EMULATOR_FAKE_POWER_DELAY", 0) or 0)
        if restart:
            system["power_state"] = "Off"
        system["pending_power"] = {
            "power_state": target,
            "apply_time": time.time() + delay,
            "restart": restart,
        }
        self._update(system)
        if delay <= 0:
            self._update_if_needed(system)

    # -- boot -------------------------------------------------------------------

    def set_boot_enabled(self, identity: str, enabled: str) -> None:
        self._update(identity, boot_enabled=enabled)

    def get_boot_enabled(self, identity: str) -> str:
        return str(self._get(identity).get("boot_enabled", "Continuous"))

    # -- quirks -------------------------------------------------------------------

    def quirks(self, identity: str) -> dict[str, Any]:
        return dict(self._get(identity).get("quirks") or {})

    def set_quirks(
        self, identity: str, changes: dict[str, Any], replace: bool = False
    ) -> dict[str, Any]:
        """Merge ``changes`` into the system's quirks (``None`` removes one), or replace them."""
        unknown = sorted(set(changes) - set(QUIRKS))
        if unknown:
            raise error.BadRequest(f"Unknown quirk(s): {', '.join(unknown)}")
        quirks = {} if replace else self.quirks(identity)
        for key, value in changes.items():
            if value is None:
                quirks.pop(key, None)
            else:
                quirks[key] = value
        self._update(identity, quirks=quirks)
        return quirks

    # -- inventory --------------------------------------------------------------

    def get_nics(self, identity: str) -> list[dict[str, Any]]:
        system = self._get(identity)
        quirks = system.get("quirks") or {}
        host = quirks.get("host_interface")
        host_id = quirks.get("host_interface_id") or "ToManager"
        return [
            {"id": host_id if nic.get("mac") == host else nic.get("mac"), "mac": nic.get("mac")}
            for nic in system.get("nics") or []
        ]

    def get_total_memory(self, identity: str) -> int:
        memory = self._get(identity).get("memory_gb")
        if memory is None:
            raise error.NotSupportedError("No memory data")
        return int(memory)

    def get_total_cpus(self, identity: str) -> int:
        cpus = self._get(identity).get("cpus")
        if cpus is None:
            raise error.NotSupportedError("No CPU data")
        return int(cpus)

    def get_processors(self, identity: str) -> list[dict[str, Any]]:
        system = self._get(identity)
        cpus = system.get("cpus")
        if cpus is None:
            raise error.NotSupportedError("No CPU data")
        sockets = int(system.get("cpu_sockets", 1))
        per_socket = max(1, int(cpus) // sockets)
        return [
            {
                "id": f"CPU{n}",
                "Id": f"CPU{n}",
                "socket": f"CPU {n}",
                "vendor": system.get("cpu_vendor", "Contoso"),
                "model": system.get("cpu_model", "Virtual CPU"),
                "cores": per_socket,
                "threads": per_socket,
            }
            for n in range(sockets)
        ] + [
            {
                "id": extra["id"],
                "Id": extra["id"],
                "socket": extra.get("socket", extra["id"]),
                "vendor": extra.get("vendor", "Contoso"),
                "model": extra.get("model", "Accelerator"),
                "cores": extra.get("cores", 1),
                "threads": extra.get("threads", 1),
            }
            for extra in (system.get("quirks") or {}).get("extra_processors") or []
        ]

    # -- BIOS and firmware versions -------------------------------------------------

    def _bios_defaults(self, system: dict[str, Any]) -> dict[str, Any]:
        return dict(system.get("bios_defaults") or DEFAULT_BIOS)

    def get_bios(self, identity: str) -> dict[str, Any]:
        system = self._get(identity)
        current = dict(system.get("bios") or self._bios_defaults(system))
        if flask.has_request_context() and flask.request.path.rstrip("/").endswith("/Settings"):
            current.update(system.get("bios_pending") or {})
        return current

    def set_bios(self, identity: str, attributes: dict[str, Any]) -> None:
        system = self._get(identity)
        if not isinstance(attributes, dict):
            raise error.BadRequest("Attributes must be an object")
        current = dict(system.get("bios") or self._bios_defaults(system))
        unknown = sorted(set(attributes) - set(current))
        if unknown:
            raise error.BadRequest(f"Unknown BIOS attribute(s): {', '.join(unknown)}")
        if _cfg("SUSHY_EMULATOR_FAKE_BIOS_APPLY", "immediate") == "reboot":
            pending = dict(system.get("bios_pending") or {})
            pending.update(attributes)
            self._update(system, bios_pending=pending)
        else:
            self._apply_bios(system, attributes)
            self._update(system)

    def _apply_bios(self, system: dict[str, Any], attributes: dict[str, Any]) -> None:
        """Apply what this BIOS accepts; record the outcome where real BMCs do.

        Real BMCs accept a PATCH of the settings object and only later,
        when they apply it, find a value they cannot take: the only trace
        is the ``@Redfish.Settings`` messages of the BIOS resource.
        """
        reject = (system.get("quirks") or {}).get("bios_reject") or {}
        current = dict(system.get("bios") or self._bios_defaults(system))
        messages = []
        for name, value in attributes.items():
            if name in reject:
                messages.append(
                    {
                        "MessageId": "Base.1.0.SettingsFailed",
                        "Message": reject[name]
                        or f"The value {value!r} for the attribute {name} could not be applied.",
                        "MessageArgs": [name],
                        "RelatedProperties": [f"#/Attributes/{name}"],
                        "Severity": "Critical",
                        "Resolution": "Check the attribute's allowed values and dependencies.",
                    }
                )
            else:
                current[name] = value
        system["bios"] = current
        system["bios_result"] = {
            "Time": _now(),
            "Messages": messages
            or [
                {
                    "MessageId": "Base.1.0.Success",
                    "Message": "Successfully Completed Request",
                    "Severity": "OK",
                }
            ],
        }

    def reset_bios(self, identity: str) -> None:
        system = self._get(identity)
        self._update(
            system,
            bios=self._bios_defaults(system),
            bios_pending={},
            bios_resets=system.get("bios_resets", 0) + 1,
        )

    def get_versions(self, identity: str) -> dict[str, Any]:
        return dict(self._get(identity).get("versions") or DEFAULT_VERSIONS)

    def set_versions(self, identity: str, firmware_versions: dict[str, Any]) -> None:
        versions = self.get_versions(identity)
        versions.update(firmware_versions)
        self._update(identity, versions=versions)

    def reset_versions(self, identity: str) -> None:
        self._update(identity, versions=dict(DEFAULT_VERSIONS))

    # -- storage ------------------------------------------------------------------

    def find_or_create_storage_volume(self, data: dict[str, Any]) -> str:
        """Give new volumes a unique ID and keep what the client asked for.

        The stock route builds the ID from the PID and the time in seconds,
        so two volumes created within a second collide; and it keeps only
        Name, VolumeType and CapacityBytes of the request.
        """
        if data.get("peer_volume"):
            return str(data["Id"])
        data["Id"] = uuid_mod.uuid4().hex[:12]
        data["libvirtVolName"] = data["Id"]
        data["peer_volume"] = True
        body = flask.request.get_json(silent=True) if flask.has_request_context() else None
        if isinstance(body, dict):
            for key in ("RAIDType", "Links", "Description"):
                if key in body:
                    data[key] = copy.deepcopy(body[key])
        return str(data["Id"])

    # -- managers -----------------------------------------------------------------

    def reset_manager(self, identity: str, reset_type: str) -> None:
        system = self._get(identity)
        self._update(
            system,
            manager_resets=system.get("manager_resets", 0) + 1,
            last_manager_reset=reset_type,
        )
