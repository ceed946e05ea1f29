"""The ``redfish`` hardware type's ``driver_info``: its keys, their checks, the parsed result.

Why the connection settings have their own defaults: sushy's own (10
retries 3 s apart, a 60 s read timeout) make one dead BMC block a worker
for up to ten minutes. Here a refused connection fails in about a second
and a silent BMC within ``read_timeout x retries`` (20 s by default).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlparse

from ironic_fsm.drivers.common import (
    BadValue,
    Check,
    DriverInfoValidation,
    Library,
    check_driver_info,
    number,
    parse_bool,
    positive_seconds,
)
from ironic_fsm.exceptions import InvalidParameterValue, MissingDependency

if TYPE_CHECKING:
    from ironic_fsm.node import Node
    from ironic_fsm.task import Task

__all__ = ["DRIVER_INFO", "RedfishInfo", "missing_sushy", "parse_driver_info"]

#: The ``driver_info`` keys the redfish hardware type reads, with descriptions.
DRIVER_INFO: Final[Mapping[str, str]] = {
    "redfish_address": "URL of the BMC, e.g. https://10.0.0.5 (a bare host means https). Required.",
    "redfish_system_id": "Path of the system, e.g. /redfish/v1/Systems/1 (a bare id is put "
    "under /redfish/v1/Systems/). Optional when the BMC has exactly one system.",
    "redfish_username": "User name for the BMC. Optional.",
    "redfish_password": "Password for the BMC. Optional; never logged or shown.",
    "redfish_verify_ca": "Verify the BMC's TLS certificate: true, false, or the path of a "
    "CA bundle file or directory. Default true.",
    "redfish_connect_timeout": "Seconds to wait for the TCP connection. Default 5.",
    "redfish_read_timeout": "Seconds to wait for each answer. Default 10.",
    "redfish_server_side_retries": "How many times sushy tries a request on transport "
    "errors, and retries a GET on 5xx answers. Default 2; 0 means 1 (sushy reads 0 as 3).",
    "redfish_server_side_retries_delay": "Seconds between those attempts. Default 0.5; 0 "
    "means 1 ms (sushy reads 0 as 2 s).",
    "redfish_boot_mode": "'uefi' or 'bios': boot mode to request with boot device changes. "
    "Default: properties/capabilities boot_mode, else the BMC's current mode.",
    "redfish_deploy_iso": "http(s) URL of a deploy ISO: deploy boots it through virtual "
    "media when the BMC offers it (otherwise the node boots from the network).",
    "redfish_rescue_iso": "http(s) URL of a rescue ISO: rescue boots it through virtual "
    "media when the BMC offers it (otherwise the node boots from the network).",
    "redfish_power_timeout": "Seconds to wait for the BMC to report a new power state. Default 60.",
    "redfish_task_timeout": "Seconds to wait for BIOS changes to apply (after a reboot when "
    "the BMC applies them at boot) and for RAID volume tasks. Default 600.",
    "redfish_firmware_update_timeout": "Seconds to wait for a firmware update task. Default 1800.",
}

_DEFAULTS: Final[Mapping[str, float]] = {
    "redfish_connect_timeout": 5.0,
    "redfish_read_timeout": 10.0,
    "redfish_server_side_retries": 2,
    "redfish_server_side_retries_delay": 0.5,
    "redfish_power_timeout": 60.0,
    "redfish_task_timeout": 600.0,
    "redfish_firmware_update_timeout": 1800.0,
}

#: sushy treats 0 retries and a 0 s delay as "use the default" (3 tries, 2 s):
#: the smallest values that mean what the operator asked for.
_MIN_RETRIES: Final = 1
_MIN_DELAY: Final = 0.001

_SYSTEMS_ROOT: Final = "/redfish/v1/Systems/"

BOOT_MODES: Final[Mapping[str, str]] = {"uefi": "UEFI", "bios": "Legacy"}
BOOT_MODES_REV: Final[Mapping[str, str]] = {"UEFI": "uefi", "Legacy": "bios"}


class _RefusingConnector:
    """Stands in for sushy's public connector, which downloads message registries.

    sushy fetches registries it cannot get from the BMC from their
    PublicationUri on the Internet; a conductor should never reach out
    there behind the operator's back (and tests must never).
    """

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionRefusedError(
            "ironic_fsm does not download Redfish registries from the Internet"
        )

    get = request = post = _refuse


_REFUSING_CONNECTOR: Final = _RefusingConnector()


@dataclass(frozen=True)
class RedfishInfo:
    """The node's Redfish settings, validated, with defaults filled in."""

    address: str
    system_id: str | None
    username: str | None
    password: str | None = field(repr=False)
    verify_ca: bool | str
    connect_timeout: float
    read_timeout: float
    server_side_retries: int
    server_side_retries_delay: float
    boot_mode: str | None
    deploy_iso: str | None
    rescue_iso: str | None
    power_timeout: float
    task_timeout: float
    firmware_update_timeout: float

    def cache_key(self) -> tuple[Any, ...]:
        """What identifies one sushy connection: BMC, credentials, TLS and timeouts.

        The password enters only as a digest, so the key can be shown in
        debugging without leaking it. Timeouts are part of the key because
        sushy binds them into the connection.
        """
        digest = hashlib.sha256((self.password or "").encode()).hexdigest()
        return (
            self.address,
            self.username,
            digest,
            self.verify_ca,
            self.connect_timeout,
            self.read_timeout,
            self.server_side_retries,
            self.server_side_retries_delay,
        )

    def sushy_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :class:`sushy.Sushy` (0 mapped past sushy's falsy defaults)."""
        return {
            "username": self.username,
            "password": self.password,
            "verify": self.verify_ca,
            "public_connector": _REFUSING_CONNECTOR,
            "connect_timeout": self.connect_timeout,
            "read_timeout": self.read_timeout,
            "server_side_retries": max(self.server_side_retries, _MIN_RETRIES),
            "server_side_retries_delay": max(self.server_side_retries_delay, _MIN_DELAY),
        }


# -- the checks, one a key ------------------------------------------------------------------


def _address(value: Any, info: Mapping[str, Any]) -> str:
    if isinstance(value, str) and not value.strip():
        raise BadValue("is missing")
    if not isinstance(value, str):
        raise BadValue(f"must be a URL string, got {type(value).__name__}")
    address = value.strip().rstrip("/")
    if "://" not in address:
        address = f"https://{address}"
    parsed = urlparse(address)
    if parsed.username is not None or parsed.password is not None:
        # Checked first, and the value is not repeated: it holds a password.
        raise BadValue("must not contain credentials; use redfish_username and redfish_password")
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise BadValue(f"must be an http(s) URL, got {address!r}")
    try:
        parsed.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise BadValue(f"has an invalid port: {address!r}") from None
    return address


def _system_id(value: Any, info: Mapping[str, Any]) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadValue(f"must be a non-empty string, got {value!r}")
    system_id = value.strip()
    return system_id if system_id.startswith("/") else _SYSTEMS_ROOT + system_id


def _username(value: Any, info: Mapping[str, Any]) -> str:
    if not isinstance(value, str):
        raise BadValue(f"must be a string, got {type(value).__name__}")
    return value


def _password(value: Any, info: Mapping[str, Any]) -> str:
    if not isinstance(value, str):
        raise BadValue("must be a string")
    if "redfish_username" not in info:
        raise BadValue("is set but redfish_username is missing")
    return value


def _verify_ca(value: Any, info: Mapping[str, Any]) -> bool | str:
    flag = parse_bool(value)
    if flag is not None:
        return flag
    if not isinstance(value, str) or not value.strip():
        raise BadValue(f"must be a boolean or a CA bundle path, got {value!r}")
    if not os.path.exists(value):
        raise BadValue(
            f"must be a boolean or an existing CA file or directory, got {value!r} (no such path)"
        )
    return value


def _retries(value: Any, info: Mapping[str, Any]) -> int:
    retries = number(value)
    if retries is None or retries < 0 or retries != int(retries):
        raise BadValue(f"must be a non-negative integer, got {value!r}")
    return int(retries)


def _delay(value: Any, info: Mapping[str, Any]) -> float:
    delay = number(value)
    if delay is None or delay < 0:
        raise BadValue(f"must be a non-negative number of seconds, got {value!r}")
    return delay


def _boot_mode(value: Any, info: Mapping[str, Any]) -> str:
    if not isinstance(value, str) or value.strip().lower() not in BOOT_MODES:
        raise BadValue(f"must be 'uefi' or 'bios', got {value!r}")
    return value.strip().lower()


def _iso_url(value: Any, info: Mapping[str, Any]) -> str:
    parsed = urlparse(value) if isinstance(value, str) else None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise BadValue(f"must be an http(s) URL, got {value!r}")
    return str(value)


_NUMBER_CHECKS: Final[Mapping[str, Callable[[Any, Mapping[str, Any]], Any]]] = {
    "redfish_server_side_retries": _retries,
    "redfish_server_side_retries_delay": _delay,
}

_CHECKS: Final[Mapping[str, Check]] = {
    "redfish_address": Check(_address, required=True),
    "redfish_system_id": Check(_system_id),
    "redfish_username": Check(_username),
    "redfish_password": Check(_password),
    # An explicit null is refused, not taken for the default: it is no Boolean.
    "redfish_verify_ca": Check(_verify_ca, True, none_is_set=True),
    **{
        key: Check(_NUMBER_CHECKS.get(key, positive_seconds), default)
        for key, default in _DEFAULTS.items()
    },
    "redfish_boot_mode": Check(_boot_mode),
    "redfish_deploy_iso": Check(_iso_url),
    "redfish_rescue_iso": Check(_iso_url),
}


def parse_driver_info(node: Node) -> RedfishInfo:
    """Validate the node's Redfish ``driver_info`` and fill in defaults.

    Raises:
        InvalidParameterValue: naming every missing or malformed key (and
            never the password's value); ``keys`` lists them.
    """
    checked = check_driver_info(node.driver_info or {}, _CHECKS)
    if checked.problems:
        raise InvalidParameterValue(
            f"Node {node.uuid}: invalid Redfish driver_info: "
            f"{'; '.join(checked.problems.values())}",
            node=node.uuid,
            keys=sorted(checked.problems),
        )
    # The fields are the keys without their prefix.
    return RedfishInfo(**{k.removeprefix("redfish_"): v for k, v in checked.values.items()})


def missing_sushy() -> MissingDependency:
    """The error for an installation without the ``redfish`` extra."""
    return MissingDependency(
        "The redfish hardware type needs sushy: pip install ironic_fsm[redfish]", extra="redfish"
    )


def _info(task: Task) -> RedfishInfo:
    return parse_driver_info(task.node)


class _RedfishValidation(DriverInfoValidation):
    """Shared ``get_properties``/``validate``: every interface reads the same driver_info."""

    driver_info_keys = DRIVER_INFO
    library = Library("sushy", missing_sushy)

    def check_driver_info(self, node: Node) -> None:
        parse_driver_info(node)
