"""``redfish`` firmware: updates through ``UpdateService.SimpleUpdate`` and its task monitor."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any, Final
from urllib.parse import urlparse

from ironic_fsm.drivers.common import bmc_step, number
from ironic_fsm.drivers.redfish.driver_info import RedfishInfo, _info, _RedfishValidation
from ironic_fsm.drivers.redfish.session import (
    _bmc,
    _connection,
    _enum,
    _get_system,
    _refusal,
    _sushy,
    _wait_task_monitor,
)
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.interfaces import FirmwareInterface
from ironic_fsm.task import Task

__all__ = ["RedfishFirmware"]

LOG = logging.getLogger(__name__)

_FIRMWARE_ARG: Final = {
    "settings": {
        "description": "Firmware updates, each {'component': 'bios' or 'bmc', 'url': "
        "http(s) URL of the image, 'wait': optional seconds to pause afterwards}.",
        "required": True,
    }
}


def _loggable_url(url: str) -> str:
    """``url`` without user info or query: image URLs sometimes carry credentials or tokens."""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    if parsed.port:
        host = f"{host}:{parsed.port}"
    return f"{parsed.scheme}://{host}{parsed.path}"


def _check_firmware_settings(task: Task, settings: Any) -> list[dict[str, Any]]:
    problems = []
    if not isinstance(settings, list) or not settings:
        problems.append("settings must be a non-empty list")
        settings = []
    for n, item in enumerate(settings):
        where = f"settings[{n}]"
        if not isinstance(item, dict):
            problems.append(f"{where} must be a dict")
            continue
        unknown = set(item) - {"component", "url", "wait"}
        if unknown:
            problems.append(f"{where} has unknown key(s) {', '.join(sorted(unknown))}")
        if item.get("component") not in ("bios", "bmc"):
            problems.append(
                f"{where}.component must be 'bios' or 'bmc', got {item.get('component')!r}"
            )
        url = item.get("url")
        if not isinstance(url, str) or urlparse(url).scheme not in ("http", "https"):
            problems.append(f"{where}.url must be an http(s) URL, got {url!r}")
        wait = item.get("wait")
        if wait is not None and (number(wait) is None or (number(wait) or 0) < 0):
            problems.append(f"{where}.wait must be a non-negative number, got {wait!r}")
    if problems:
        raise InvalidParameterValue(
            f"Node {task.node.uuid}: invalid firmware update settings: {'; '.join(problems)}",
            node=task.node.uuid,
        )
    return [dict(s) for s in settings]


def _firmware_version(system: Any, component: str) -> str | None:
    """The BIOS version of the system, or the firmware version of its first manager."""
    if component == "bios":
        version = system.bios_version
    else:
        try:
            managers = system.managers
        except _sushy().exceptions.MissingAttributeError:
            managers = []
        version = managers[0].firmware_version if managers else None
    return str(version) if version else None


class RedfishFirmware(_RedfishValidation, FirmwareInterface):
    """Firmware updates through ``UpdateService.SimpleUpdate`` and its task monitor.

    A BMC that answers with a task (202 and ``Location``) is followed to
    the task's end. One that answers 2xx with nothing to follow (204, no
    ``Location``) has done the update within the request: then the
    version it reports afterwards must differ from the one before, when
    it reports one.
    """

    @bmc_step("service", _FIRMWARE_ARG)
    def update(self, task: Task, settings: list[dict[str, Any]]) -> str | None:
        updates = _check_firmware_settings(task, settings)
        info = _info(task)
        node = task.node
        done = []
        for item in updates:
            what = f"firmware update of the {item['component']}"
            with _bmc(task, info, what):
                conn = _connection(info)
                system = _get_system(info)
                if item["component"] == "bios":
                    targets = [system.path]
                else:
                    managers = system.managers
                    targets = [managers[0].path] if managers else []
                service = conn.get_update_service()
                protocol = "HTTPS" if item["url"].startswith("https:") else "HTTP"
                old_version = _firmware_version(system, item["component"])
                LOG.info(
                    "Node %s: %s from %s through BMC %s",
                    node.uuid,
                    what,
                    _loggable_url(item["url"]),
                    info.address,
                )
                try:
                    monitor = service.simple_update(
                        item["url"],
                        targets=targets,
                        transfer_protocol=_enum("UpdateTransferProtocolType", protocol),
                    )
                except _sushy().exceptions.MissingHeaderError:
                    # sushy raises this only after a 2xx answer without a task
                    # monitor: the BMC finished the update within the request.
                    monitor = None
            if monitor is None:
                self._check_synchronous(task, info, what, item["component"], old_version)
            else:
                _wait_task_monitor(task, info, what, monitor, info.firmware_update_timeout)
            done.append({"component": item["component"], "url": _loggable_url(item["url"])})
            if item.get("wait"):
                time.sleep(float(item["wait"]))
        with _bmc(task, info, "read firmware versions"):
            system = _get_system(info)
            versions: dict[str, Any] = {"bios": system.bios_version}
            with contextlib.suppress(_sushy().exceptions.MissingAttributeError):
                managers = system.managers
                if managers:
                    versions["bmc"] = managers[0].firmware_version
        previous = node.driver_internal_info.get("redfish_firmware") or {}
        node.driver_internal_info["redfish_firmware"] = {
            **versions,
            "updates": [*previous.get("updates", []), *done],
        }
        return None

    def _check_synchronous(
        self, task: Task, info: RedfishInfo, what: str, component: str, old: str | None
    ) -> None:
        """After an update done within the request: the BMC must report a new version."""
        with _bmc(task, info, f"read the version after the {what}"):
            new = _firmware_version(_get_system(info), component)
        if old is not None and new == old:
            raise _refusal(
                task,
                info,
                f"Redfish {what} on BMC {info.address} answered as done "
                f"(no task to follow), but the BMC still reports version {old}",
            )
        LOG.info(
            "Node %s: BMC %s completed the %s at once: version %s -> %s",
            task.node.uuid,
            info.address,
            what,
            old or "unknown",
            new or "unknown",
        )
