"""``redfish``: node management through a Redfish BMC, built on sushy.

Every interface of the hardware type reads the node's ``driver_info``
(see :data:`DRIVER_INFO`), talks to the BMC through one cached
:class:`sushy.Sushy` connection per BMC and credentials, and turns sushy's
errors into :class:`~ironic_fsm.exceptions.HardwareError` subclasses whose
messages name the node and the BMC address, never the password.

sushy is an optional dependency (``pip install ironic_fsm[redfish]``): it is
imported on first use, and :func:`redfish_hardware` raises
:class:`~ironic_fsm.exceptions.MissingDependency` without it.

Why the connection settings have their own defaults: sushy's own (10
retries 3 s apart, a 60 s read timeout) make one dead BMC block a worker
for up to ten minutes. Here a refused connection fails in about a second
and a silent BMC within ``read_timeout x retries`` (20 s by default).

What the interfaces record on the node:

* ``driver_internal_info['redfish_bios_settings']``: the BIOS attributes
  as last read (after every BIOS step, or :meth:`RedfishBIOS.cache_bios_settings`).
* ``raid_config``: the volumes :meth:`RedfishRAID.create_configuration`
  made, each logical disk with ``controller``, ``volume_id``,
  ``physical_disks`` and the real ``size_gb``.
* ``properties``: ``memory_mb``, ``cpus``, ``cpu_arch``, ``local_gb``
  where the BMC reports them, ``capabilities`` (``boot_mode``) and
  ``macs``, the NIC MAC addresses (lower case, sorted).
* ``driver_internal_info['redfish_firmware']``: BIOS and BMC versions after
  a firmware update, and the updates applied.
* ``driver_internal_info['redfish_persistent_boot_device']``: on BMCs that
  offer only one-time boot overrides, the persistent boot device, set
  again before each boot.

What the BMC says wins over what the Redfish schema allows: settings it
reports as rejected, the virtual media actions, reset types, boot targets
and modes it offers, the NICs and processors it reports enabled (see the
"What real BMCs do that the schema doesn't say" section of the docs).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar
from urllib.parse import urlparse

from ironic_fsm import states
from ironic_fsm.exceptions import (
    BMCAuthError,
    BMCRequestFailed,
    BMCTimeout,
    BMCUnreachable,
    InvalidParameterValue,
    IronicFSMError,
    MissingDependency,
)
from ironic_fsm.hardware import HardwareType
from ironic_fsm.interfaces import (
    BIOSInterface,
    BootInterface,
    DeployInterface,
    FirmwareInterface,
    InspectInterface,
    ManagementInterface,
    PowerInterface,
    RAIDInterface,
    RescueInterface,
)
from ironic_fsm.masking import scrub
from ironic_fsm.node import INTERFACE_KINDS
from ironic_fsm.steps import clean_step, deploy_step, service_step
from ironic_fsm.task import Task

__all__ = [
    "BIOSSettingsRejected",
    "DRIVER_INFO",
    "PERSISTENT_BOOT_DEVICE_KEY",
    "RedfishBIOS",
    "RedfishRescue",
    "RedfishBoot",
    "RedfishDeploy",
    "RedfishFirmware",
    "RedfishInfo",
    "RedfishInspect",
    "RedfishManagement",
    "RedfishPower",
    "RedfishRAID",
    "clear_connection_cache",
    "parse_driver_info",
    "redfish_hardware",
]

LOG = logging.getLogger(__name__)

T = TypeVar("T")

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
    "redfish_connect_timeout": 5,
    "redfish_read_timeout": 10,
    "redfish_server_side_retries": 2,
    "redfish_server_side_retries_delay": 0.5,
    "redfish_power_timeout": 60,
    "redfish_task_timeout": 600,
    "redfish_firmware_update_timeout": 1800,
}

#: sushy treats 0 retries and a 0 s delay as "use the default" (3 tries, 2 s):
#: the smallest values that mean what the operator asked for.
_MIN_RETRIES: Final = 1
_MIN_DELAY: Final = 0.001

_SYSTEMS_ROOT: Final = "/redfish/v1/Systems/"
_GIB: Final = 1024**3

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
_BOOT_MODES: Final[Mapping[str, str]] = {"uefi": "UEFI", "bios": "Legacy"}
_BOOT_MODES_REV: Final[Mapping[str, str]] = {"UEFI": "uefi", "Legacy": "bios"}

_POWER_MAP: Final[Mapping[str, str]] = {
    "On": states.POWER_ON,
    "PoweringOn": states.POWER_ON,
    "Off": states.POWER_OFF,
    "PoweringOff": states.POWER_OFF,
}

_ARCH_BY_INSTRUCTION_SET: Final[Mapping[str, str]] = {
    "x86-64": "x86_64",
    "x86": "i686",
    "IA-64": "ia64",
    "ARM-A64": "aarch64",
    "ARM-A32": "armv7l",
    "MIPS64": "mips64",
    "MIPS32": "mips",
    "PowerISA": "ppc64le",
}
_ARCH_BY_ARCHITECTURE: Final[Mapping[str, str]] = {
    "x86": "x86_64",
    "IA-64": "ia64",
    "ARM": "aarch64",
    "MIPS": "mips64",
    "Power": "ppc64le",
}

#: RAID level -> (Redfish RAIDType, legacy VolumeType, minimum number of drives).
_RAID_LEVELS: Final[Mapping[str, tuple[str, str, int]]] = {
    "0": ("RAID0", "NonRedundant", 1),
    "1": ("RAID1", "Mirrored", 2),
    "5": ("RAID5", "StripedWithParity", 3),
    "6": ("RAID6", "StripedWithParity", 4),
    "1+0": ("RAID10", "SpannedMirrors", 4),
    "5+0": ("RAID50", "SpannedStripesWithParity", 6),
    "6+0": ("RAID60", "SpannedStripesWithParity", 8),
}

_SETTINGS_ARG: Final = {
    "settings": {
        "description": "A list of BIOS settings, each {'name': ..., 'value': ...}.",
        "required": True,
    }
}
_FIRMWARE_ARG: Final = {
    "settings": {
        "description": "Firmware updates, each {'component': 'bios' or 'bmc', 'url': "
        "http(s) URL of the image, 'wait': optional seconds to pause afterwards}.",
        "required": True,
    }
}
_RAID_ARGS: Final = {
    "create_root_volume": {
        "description": "Create the logical disk marked is_root_volume (default true).",
        "required": False,
    },
    "create_nonroot_volumes": {
        "description": "Create the other logical disks (default true).",
        "required": False,
    },
}
_RESET_BMC_ARG: Final = {
    "reset_type": {
        "description": "'GracefulRestart' (default) or 'ForceRestart'.",
        "required": False,
    }
}


# -- sushy, imported lazily ------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _sushy() -> Any:
    try:
        import sushy
    except ImportError as exc:
        raise MissingDependency(
            "The redfish hardware type needs sushy: pip install ironic_fsm[redfish]",
            extra="redfish",
        ) from exc
    return sushy


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


class BIOSSettingsRejected(BMCRequestFailed):
    """The BMC took BIOS settings, then reported that it could not apply them.

    Real BMCs accept the PATCH of the settings object and find out only
    when they apply it (at once or at the next boot); the verdict is in the
    BIOS resource's ``@Redfish.Settings`` messages. ``attributes`` lists the
    rejected attribute names where the BMC says which.
    """


# -- driver_info -----------------------------------------------------------------------------------


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


def _number(value: Any) -> float | None:
    """A finite number from an int, float or numeric string (JSON and CLI input); else None."""
    if isinstance(value, bool):
        return None
    number: float | None = None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value.strip())
    return number if number is not None and math.isfinite(number) else None


def parse_driver_info(node: Any) -> RedfishInfo:
    """Validate the node's Redfish ``driver_info`` and fill in defaults.

    Raises:
        InvalidParameterValue: naming every missing or malformed key (and
            never the password's value).
    """
    info: Mapping[str, Any] = node.driver_info or {}
    problems: list[str] = []

    address = info.get("redfish_address")
    if address is None or (isinstance(address, str) and not address.strip()):
        problems.append("redfish_address is missing")
        address = ""
    elif not isinstance(address, str):
        problems.append(f"redfish_address must be a URL string, got {type(address).__name__}")
        address = ""
    else:
        address = address.strip().rstrip("/")
        if "://" not in address:
            address = f"https://{address}"
        parsed = urlparse(address)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            problems.append(f"redfish_address must be an http(s) URL, got {address!r}")
        elif parsed.username is not None or parsed.password is not None:
            # The value is not repeated: it holds a password.
            problems.append(
                "redfish_address must not contain credentials; use redfish_username and "
                "redfish_password"
            )
        else:
            try:
                parsed.port  # noqa: B018 - raises ValueError on a bad port
            except ValueError:
                problems.append(f"redfish_address has an invalid port: {address!r}")

    system_id = info.get("redfish_system_id")
    if system_id is not None:
        if not isinstance(system_id, str) or not system_id.strip():
            problems.append(f"redfish_system_id must be a non-empty string, got {system_id!r}")
            system_id = None
        else:
            system_id = system_id.strip()
            if not system_id.startswith("/"):
                system_id = _SYSTEMS_ROOT + system_id

    username = info.get("redfish_username")
    password = info.get("redfish_password")
    if username is not None and not isinstance(username, str):
        problems.append(f"redfish_username must be a string, got {type(username).__name__}")
        username = None
    if password is not None and not isinstance(password, str):
        problems.append("redfish_password must be a string")
        password = None
    if password is not None and username is None and "redfish_username" not in info:
        problems.append("redfish_password is set but redfish_username is missing")

    verify: bool | str = True
    raw_verify = info.get("redfish_verify_ca", True)
    if isinstance(raw_verify, bool):
        verify = raw_verify
    elif isinstance(raw_verify, str) and raw_verify.strip().lower() in (
        "true",
        "false",
        "yes",
        "no",
        "1",
        "0",
        "on",
        "off",
    ):
        verify = raw_verify.strip().lower() in ("true", "yes", "1", "on")
    elif isinstance(raw_verify, str) and raw_verify.strip():
        if not os.path.exists(raw_verify):
            problems.append(
                f"redfish_verify_ca must be a boolean or an existing CA file or directory, "
                f"got {raw_verify!r} (no such path)"
            )
        verify = raw_verify
    else:
        problems.append(
            f"redfish_verify_ca must be a boolean or a CA bundle path, got {raw_verify!r}"
        )

    numbers: dict[str, float] = {}
    for key, default in _DEFAULTS.items():
        raw = info.get(key)
        if raw is None:
            numbers[key] = float(default)
            continue
        value = _number(raw)
        if key == "redfish_server_side_retries":
            if value is None or value < 0 or value != int(value):
                problems.append(f"{key} must be a non-negative integer, got {raw!r}")
                value = default
        elif key == "redfish_server_side_retries_delay":
            if value is None or value < 0:
                problems.append(f"{key} must be a non-negative number of seconds, got {raw!r}")
                value = default
        elif value is None or value <= 0:
            problems.append(f"{key} must be a positive number of seconds, got {raw!r}")
            value = default
        numbers[key] = float(value)

    boot_mode = info.get("redfish_boot_mode")
    if boot_mode is not None:
        if not isinstance(boot_mode, str) or boot_mode.strip().lower() not in _BOOT_MODES:
            problems.append(f"redfish_boot_mode must be 'uefi' or 'bios', got {boot_mode!r}")
            boot_mode = None
        else:
            boot_mode = boot_mode.strip().lower()

    isos: dict[str, str | None] = {}
    for key in ("redfish_deploy_iso", "redfish_rescue_iso"):
        iso = info.get(key)
        if iso is not None:
            parsed_iso = urlparse(iso) if isinstance(iso, str) else None
            if (
                parsed_iso is None
                or parsed_iso.scheme not in ("http", "https")
                or not (parsed_iso.hostname)
            ):
                problems.append(f"{key} must be an http(s) URL, got {iso!r}")
                iso = None
        isos[key] = iso
    deploy_iso = isos["redfish_deploy_iso"]

    if problems:
        raise InvalidParameterValue(
            f"Node {node.uuid}: invalid Redfish driver_info: {'; '.join(problems)}",
            node=node.uuid,
            keys=sorted({p.split()[0] for p in problems}),
        )
    return RedfishInfo(
        address=address,
        system_id=system_id,
        username=username,
        password=password,
        verify_ca=verify,
        connect_timeout=numbers["redfish_connect_timeout"],
        read_timeout=numbers["redfish_read_timeout"],
        server_side_retries=int(numbers["redfish_server_side_retries"]),
        server_side_retries_delay=numbers["redfish_server_side_retries_delay"],
        boot_mode=boot_mode,
        deploy_iso=deploy_iso,
        rescue_iso=isos["redfish_rescue_iso"],
        power_timeout=numbers["redfish_power_timeout"],
        task_timeout=numbers["redfish_task_timeout"],
        firmware_update_timeout=numbers["redfish_firmware_update_timeout"],
    )


# -- connections -----------------------------------------------------------------------------------

_CONNECTIONS: dict[tuple[Any, ...], Any] = {}
_CONNECTIONS_LOCK = threading.Lock()


def clear_connection_cache() -> None:
    """Forget every cached sushy connection (they are rebuilt on next use)."""
    with _CONNECTIONS_LOCK:
        _CONNECTIONS.clear()


def _connection(info: RedfishInfo) -> Any:
    """The process-wide sushy connection for this BMC and these credentials.

    Building one costs a root GET (and a SessionService probe), so they are
    shared by every node and call; a connection is dropped on connection
    and authentication errors so that the next call starts afresh.
    """
    key = info.cache_key()
    with _CONNECTIONS_LOCK:
        conn = _CONNECTIONS.get(key)
    if conn is not None:
        return conn
    sushy = _sushy()
    # Built outside the lock: one slow BMC must not hold up the others.
    conn = sushy.Sushy(info.address, **info.sushy_kwargs())
    with _CONNECTIONS_LOCK:
        return _CONNECTIONS.setdefault(key, conn)


def _forget(info: RedfishInfo) -> None:
    with _CONNECTIONS_LOCK:
        _CONNECTIONS.pop(info.cache_key(), None)


def _get_system(info: RedfishInfo) -> Any:
    return _connection(info).get_system(info.system_id)


# -- errors ----------------------------------------------------------------------------------------


def _raised_in_sushy(exc: BaseException) -> bool:
    """Whether sushy's own code is on the traceback (not only ours)."""
    tb = exc.__traceback__
    marker = f"{os.sep}sushy{os.sep}"
    while tb is not None:
        if marker in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False


def _timeout_kind(exc: BaseException) -> str | None:
    """``'connect'``, ``'read'`` or None: why a sushy ConnectionError happened."""
    import requests

    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, requests.exceptions.ConnectTimeout):
        return "connect"
    if isinstance(cause, requests.exceptions.Timeout):
        return "read"
    text = str(exc).lower()
    if "connecttimeout" in text or "connect timeout" in text:
        return "connect"
    if "timed out" in text or "timeout" in text:
        return "read"
    return None


_REQUEST_PATTERNS: Final = (
    re.compile(r"HTTP (?P<method>[A-Z]+) (?P<url>\S+) returned code"),
    re.compile(r"Resource (?P<url>\S+) not found"),
    re.compile(r"Unable to connect to (?P<url>\S+?)\. Error"),
)


def _request_of(exc: BaseException) -> str:
    """``'GET /redfish/v1/Systems/1'`` (or just the path) from a sushy error's text."""
    text = str(exc)
    for pattern in _REQUEST_PATTERNS:
        match = pattern.search(text)
        if match:
            path = urlparse(match.group("url")).path or match.group("url")
            method = match.groupdict().get("method")
            return f"{method} {path}" if method else path
    return "the request"


def _connection_reason(exc: BaseException) -> str:
    """A short reason for a failed connection (the full text stays on ``__cause__``)."""
    text = str(exc)
    for needle, reason in (
        ("Connection refused", "connection refused"),
        ("Name or service not known", "unknown host name"),
        ("nodename nor servname", "unknown host name"),
        ("No route to host", "no route to host"),
        ("Network is unreachable", "network unreachable"),
        ("CERTIFICATE_VERIFY_FAILED", "TLS certificate verification failed"),
        ("SSLError", "TLS error"),
        ("Connection reset", "connection reset"),
        ("RemoteDisconnected", "connection closed by the BMC"),
    ):
        if needle in text:
            return reason
    return text[-200:]


@contextlib.contextmanager
def _bmc(task: Task, info: RedfishInfo, what: str) -> Iterator[None]:
    """Turn sushy's exceptions raised inside the block into ironic_fsm's.

    Messages name the node, the operation and the BMC address; any echo of
    the password is scrubbed. Connection and authentication failures drop
    the cached connection.
    """
    node = task.node.uuid
    secrets = _secrets(info)

    def message(detail: str) -> str:
        return scrub(f"Node {node}: Redfish {what} failed on BMC {info.address}: {detail}", secrets)

    try:
        yield
    except IronicFSMError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        # sushy raises a plain AttributeError where the BMC lacks an action
        # it did not check for (e.g. Manager.Reset on some BMCs), and lets
        # JSON and parsing errors out on malformed answers. Our own bugs
        # (no sushy frame on the traceback) stay what they are.
        if not _raised_in_sushy(exc):
            raise
        detail = (
            f"not supported by this BMC ({exc})"
            if isinstance(exc, AttributeError)
            else f"unexpected answer from the BMC ({type(exc).__name__}: {exc})"
        )
        raise BMCRequestFailed(
            message(detail), node=node, address=info.address, status=None
        ) from exc
    except Exception as exc:
        sushy = _sushy()
        errors = sushy.exceptions
        if not isinstance(exc, errors.SushyError):
            raise
        if isinstance(exc, errors.AccessError):
            _forget(info)
            raise BMCAuthError(
                message(f"the BMC refused the credentials (HTTP {exc.status_code})"),
                node=node,
                address=info.address,
                status=exc.status_code,
            ) from exc
        if isinstance(exc, errors.ConnectionError):
            _forget(info)
            kind = _timeout_kind(exc)
            where = _request_of(exc)
            if kind == "read":
                attempts = max(info.server_side_retries, _MIN_RETRIES)
                raise BMCTimeout(
                    message(
                        f"no answer to {where} within the read timeout of "
                        f"{info.read_timeout:g} s ({attempts} attempt(s))"
                    ),
                    node=node,
                    address=info.address,
                ) from exc
            reason = (
                f"no connection within {info.connect_timeout:g} s"
                if kind == "connect"
                else f"cannot connect ({_connection_reason(exc)})"
            )
            raise BMCUnreachable(
                message(f"{reason} for {where}"), node=node, address=info.address
            ) from exc
        if isinstance(exc, errors.HTTPError):
            detail = f"HTTP {exc.status_code} on {_request_of(exc)}"
            if exc.detail:
                detail += f": {exc.detail}"
            if isinstance(exc, errors.ResourceNotFoundError):
                detail += " (check redfish_system_id and that the BMC offers this resource)"
            raise BMCRequestFailed(
                message(detail), node=node, address=info.address, status=exc.status_code
            ) from exc
        if isinstance(exc, errors.UnknownDefaultError):
            raise InvalidParameterValue(
                message(f"{exc}; set redfish_system_id in driver_info"),
                node=node,
                keys=["redfish_system_id"],
            ) from exc
        if isinstance(
            exc,
            (
                errors.MissingAttributeError,
                errors.MissingActionError,
                errors.InvalidParameterValueError,
            ),
        ):
            raise BMCRequestFailed(
                message(f"not supported by this BMC: {exc}"),
                node=node,
                address=info.address,
                status=None,
            ) from exc
        raise BMCRequestFailed(
            message(str(exc)), node=node, address=info.address, status=None
        ) from exc


def _call(task: Task, info: RedfishInfo, what: str, fn: Callable[[], T]) -> T:
    with _bmc(task, info, what):
        return fn()


def _enum(kind: str, value: str) -> Any:
    return getattr(_sushy(), kind)(value)


def _value(member: Any) -> str | None:
    """The Redfish string of a sushy enum member (or of a plain string)."""
    if member is None:
        return None
    return str(getattr(member, "value", member))


# -- shared helpers --------------------------------------------------------------------------------


def _power_of(task: Task, info: RedfishInfo, system: Any) -> str:
    raw = _value(system.power_state)
    power = _POWER_MAP.get(raw or "")
    if power is None:
        raise BMCRequestFailed(
            f"Node {task.node.uuid}: BMC {info.address} reports an unknown power state {raw!r}",
            node=task.node.uuid,
            address=info.address,
            status=None,
        )
    return power


def _wait_for(
    task: Task,
    info: RedfishInfo,
    what: str,
    timeout: float,
    check: Callable[[], bool],
    describe: Callable[[], str],
) -> None:
    """Poll ``check`` (with a growing pause) until it holds or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    pause = 0.05
    while True:
        if check():
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BMCTimeout(
                f"Node {task.node.uuid}: BMC {info.address} did not {what} within "
                f"{timeout:g} s ({describe()})",
                node=task.node.uuid,
                address=info.address,
            )
        time.sleep(min(pause, remaining))
        pause = min(pause * 2, 1.0)


def _wait_task_monitor(
    task: Task, info: RedfishInfo, what: str, monitor: Any, timeout: float
) -> None:
    """Follow a Redfish task monitor to its end, within ``timeout`` seconds.

    sushy's own ``TaskMonitor.wait`` sleeps for whole ``Retry-After``
    periods and reports a timeout as a connection error; this polls
    quickly at first, backs off to the BMC's hint, and fails with
    BMCTimeout or BMCRequestFailed naming the task's state.
    """
    if monitor is None or not hasattr(monitor, "check_is_processing"):
        return
    deadline = time.monotonic() + timeout
    pause = 0.1
    while _call(task, info, what, lambda: bool(monitor.check_is_processing)):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BMCTimeout(
                f"Node {task.node.uuid}: Redfish {what} on BMC {info.address} did not finish "
                f"within {timeout:g} s (task monitor {monitor.task_monitor_uri})",
                node=task.node.uuid,
                address=info.address,
            )
        try:
            hint = float(monitor.sleep_for)
        except (TypeError, ValueError):
            hint = 1.0
        time.sleep(max(0.01, min(pause, max(hint, 0.1), remaining)))
        pause = min(pause * 2, 2.0)
    response = monitor.response
    status = getattr(response, "status_code", 200)
    body: Any = None
    if getattr(response, "content", b""):
        with contextlib.suppress(ValueError):
            body = response.json()
    task_state = body.get("TaskState") if isinstance(body, dict) else None
    task_status = body.get("TaskStatus") if isinstance(body, dict) else None
    if (
        status >= 400
        or task_state in ("Exception", "Killed", "Cancelled")
        or (task_status == "Critical")
    ):
        messages = []
        if isinstance(body, dict):
            messages = [m.get("Message", "") for m in body.get("Messages") or [] if m]
        raise BMCRequestFailed(
            f"Node {task.node.uuid}: Redfish {what} on BMC {info.address} failed: task "
            f"state {task_state or 'unknown'} (HTTP {status})"
            + (f": {'; '.join(messages)}" if messages else ""),
            node=task.node.uuid,
            address=info.address,
            status=status,
        )


def _capabilities(node: Any) -> dict[str, str]:
    raw = (node.properties or {}).get("capabilities")
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    found: dict[str, str] = {}
    if isinstance(raw, str):
        for item in raw.split(","):
            key, sep, value = item.partition(":")
            if sep and key.strip():
                found[key.strip()] = value.strip()
    return found


def _set_capability(node: Any, key: str, value: str) -> None:
    raw = node.properties.get("capabilities")
    if isinstance(raw, dict):
        raw[key] = value
        return
    caps = _capabilities(node)
    caps[key] = value
    node.properties["capabilities"] = ",".join(f"{k}:{v}" for k, v in caps.items())


def _requested_boot_mode(node: Any, info: RedfishInfo) -> str | None:
    """``'uefi'``/``'bios'`` from driver_info or the node's capabilities, if either says."""
    if info.boot_mode:
        return info.boot_mode
    mode = _capabilities(node).get("boot_mode", "").lower()
    return mode if mode in _BOOT_MODES else None


def _info(task: Task) -> RedfishInfo:
    return parse_driver_info(task.node)


class _RedfishValidation:
    """Shared ``get_properties``/``validate``: every interface reads the same driver_info."""

    def get_properties(self) -> dict[str, str]:
        return dict(DRIVER_INFO)

    def validate(self, task: Task) -> None:
        parse_driver_info(task.node)


# -- power -----------------------------------------------------------------------------------------


#: ComputerSystem.Reset types that do the same as the first, in order of preference, for
#: BMCs whose ``ResetType@Redfish.AllowableValues`` leaves that one out. They are only
#: sent where they fit: ``On`` to a node that is off, ``ForceRestart`` to one that is on.
_RESET_ALTERNATIVES: Final[Mapping[str, tuple[str, ...]]] = {
    "On": ("On", "ForceOn", "PushPowerButton"),
    "ForceRestart": ("ForceRestart", "PowerCycle"),
}

#: The reset types each power state needs (one of each tuple).
_POWER_STATE_RESETS: Final[Mapping[str, tuple[tuple[str, ...], ...]]] = {
    states.POWER_ON: (_RESET_ALTERNATIVES["On"],),
    states.POWER_OFF: (("ForceOff",),),
    states.REBOOT: (_RESET_ALTERNATIVES["On"], _RESET_ALTERNATIVES["ForceRestart"]),
    states.SOFT_POWER_OFF: (("GracefulShutdown",),),
    states.SOFT_REBOOT: (_RESET_ALTERNATIVES["On"], ("GracefulRestart",)),
}


#: The reset types (asked for) after which the node boots.
_BOOTING_RESETS: Final = frozenset({"On", "ForceRestart", "GracefulRestart"})


def _allowed_resets(system: Any) -> set[str]:
    """The reset types the BMC allows (sushy: every type when it publishes no list)."""
    return {str(_value(v)) for v in system.get_allowed_reset_system_values()}


class RedfishPower(_RedfishValidation, PowerInterface):
    """Power state through ``ComputerSystem.Reset``, waiting until the BMC reports it.

    The reset types are those the BMC allows: where it leaves out ``On`` or
    ``ForceRestart``, an equivalent it allows is sent instead, and power
    states it offers no reset type for are not supported.
    """

    def get_supported_power_states(self, task: Task) -> list[str]:
        info = _info(task)
        with _bmc(task, info, "read the allowed reset types"):
            allowed = _allowed_resets(_get_system(info))
        return [
            power
            for power, needs in _POWER_STATE_RESETS.items()
            if all(set(choices) & allowed for choices in needs)
        ]

    def get_power_state(self, task: Task) -> str:
        info = _info(task)
        with _bmc(task, info, "get power state"):
            return _power_of(task, info, _get_system(info))

    def _reset(self, task: Task, info: RedfishInfo, system: Any, reset_type: str) -> None:
        if reset_type in _BOOTING_RESETS:
            _restore_boot_device(task, system)
        allowed = _allowed_resets(system)
        choices = _RESET_ALTERNATIVES.get(reset_type, (reset_type,))
        chosen = next((c for c in choices if c in allowed), None)
        if chosen is None:
            raise BMCRequestFailed(
                f"Node {task.node.uuid}: BMC {info.address} does not allow the reset type "
                f"{' or '.join(choices)}; it allows {', '.join(sorted(allowed)) or 'none'}",
                node=task.node.uuid,
                address=info.address,
                status=None,
            )
        LOG.info("Node %s: Redfish reset %s on BMC %s", task.node.uuid, chosen, info.address)
        system.reset_system(_enum("ResetType", chosen))

    def _wait_power(self, task: Task, info: RedfishInfo, target: str, timeout: float) -> None:
        last: list[str] = []

        def reached() -> bool:
            with _bmc(task, info, "get power state"):
                current = _power_of(task, info, _get_system(info))
            last[:] = [current]
            return current == target

        _wait_for(
            task,
            info,
            f"reach {target!r}",
            timeout,
            reached,
            lambda: f"still {last[0] if last else 'unknown'!r}",
        )

    def set_power_state(self, task: Task, power_state: str, timeout: float | None = None) -> None:
        info = _info(task)
        wait = timeout or info.power_timeout
        if power_state == states.REBOOT:
            self.reboot(task, timeout)
            return
        with _bmc(task, info, f"set power state {power_state!r}"):
            system = _get_system(info)
            current = _power_of(task, info, system)
            if power_state == states.POWER_ON:
                target = states.POWER_ON
                if current != target:
                    self._reset(task, info, system, "On")
            elif power_state in (states.POWER_OFF, states.SOFT_POWER_OFF):
                target = states.POWER_OFF
                if current != target:
                    kind = "ForceOff" if power_state == states.POWER_OFF else "GracefulShutdown"
                    self._reset(task, info, system, kind)
            elif power_state == states.SOFT_REBOOT:
                target = states.POWER_ON
                self._reset(task, info, system, "GracefulRestart" if current == target else "On")
            else:
                raise InvalidParameterValue(
                    f"Node {task.node.uuid}: unsupported power state {power_state!r}",
                    node=task.node.uuid,
                )
        self._wait_power(task, info, target, wait)

    def reboot(self, task: Task, timeout: float | None = None) -> None:
        """ForceRestart when on, On when off; then wait for ``power on``."""
        info = _info(task)
        with _bmc(task, info, "reboot"):
            system = _get_system(info)
            current = _power_of(task, info, system)
            self._reset(task, info, system, "ForceRestart" if current == states.POWER_ON else "On")
        self._wait_power(task, info, states.POWER_ON, timeout or info.power_timeout)


# -- management ------------------------------------------------------------------------------------


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
    return [_BOOT_MODES_REV[m] for m in allowed if m in _BOOT_MODES_REV]


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


class RedfishManagement(_RedfishValidation, ManagementInterface):
    """Boot device and mode through ``Boot.BootSourceOverride*``; BMC reset.

    The boot devices are those the BMC lists in
    ``BootSourceOverrideTarget@Redfish.AllowableValues`` (all of
    :data:`BOOT_DEVICE_MAP` only when it lists none), and a boot mode must
    be among ``BootSourceOverrideMode@Redfish.AllowableValues`` when the
    BMC publishes that: others are refused before anything is sent.
    """

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
                mode=_enum("BootSourceOverrideMode", _BOOT_MODES[mode]) if mode else None,
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
        return _BOOT_MODES_REV.get(mode or "")

    @clean_step(priority=0, argsinfo=_RESET_BMC_ARG, requires_ramdisk=False)
    @service_step(argsinfo=_RESET_BMC_ARG, requires_ramdisk=False)
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
                raise BMCRequestFailed(
                    f"Node {task.node.uuid}: BMC {info.address} lists no manager to reset",
                    node=task.node.uuid,
                    address=info.address,
                    status=None,
                )
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


# -- BIOS ------------------------------------------------------------------------------------------


def _check_bios_settings(task: Task, settings: Any) -> dict[str, Any]:
    if (
        not isinstance(settings, list)
        or not settings
        or not all(
            isinstance(s, dict) and isinstance(s.get("name"), str) and "value" in s
            for s in settings
        )
    ):
        raise InvalidParameterValue(
            f"Node {task.node.uuid}: bios.apply_configuration needs settings as a non-empty "
            f"list of {{'name': str, 'value': ...}} dicts, got {settings!r}",
            node=task.node.uuid,
        )
    return {s["name"]: s["value"] for s in settings}


def _same(a: Any, b: Any) -> bool:
    return bool(a == b or str(a) == str(b))


def _secrets(info: RedfishInfo) -> set[str]:
    return {info.password} if info.password and len(info.password) >= 3 else set()


def _settings_outcome(resource: Any) -> tuple[Any, ...]:
    """What identifies the BMC's last report in ``@Redfish.Settings`` (time and messages).

    A report that was already there before a change belongs to an earlier
    attempt; only a new one is a verdict on this change.
    """
    settings = (resource.json or {}).get("@Redfish.Settings")
    if not isinstance(settings, dict):
        return (None, None)
    return (settings.get("Time"), repr(settings.get("Messages")))


def _failures_read_by_sushy(
    resource: Any, raw: list[dict[str, Any]]
) -> list[tuple[str, str, list[str]]]:
    """(message id, text, related properties) of the failures sushy's ``update_status`` reports."""
    status = resource.update_status
    if status.status != importlib.import_module("sushy.resources.settings").UPDATE_FAILURE:
        return []
    failed = []
    for n, message in enumerate(status.messages or []):
        if _value(message.severity) == "OK":
            continue
        related = raw[n].get("RelatedProperties") if n < len(raw) else None
        failed.append(
            (
                str(message.message_id or ""),
                str(message.message or ""),
                [str(r) for r in related or [] if isinstance(r, str)],
            )
        )
    return failed


def _settings_rejection(
    task: Task,
    info: RedfishInfo,
    resource: Any,
    before: tuple[Any, ...],
    wanted: Mapping[str, Any],
    what: str,
) -> BIOSSettingsRejected | None:
    """The BMC's new verdict on applying settings, when it is a failure; else None.

    With a ``Time`` in ``@Redfish.Settings``, sushy's ``update_status``
    reads the verdict (and fills message texts in from the registries);
    without one, sushy reports nothing, so the raw messages are read
    instead. A message that is not of severity OK is a failure, as in sushy.
    """
    if _settings_outcome(resource) == before:
        return None
    settings = (resource.json or {}).get("@Redfish.Settings") or {}
    raw = [m for m in settings.get("Messages") or [] if isinstance(m, dict)]
    failed: list[tuple[str, str, list[str]]] | None = None
    if settings.get("Time"):
        try:
            failed = _failures_read_by_sushy(resource, raw)
        except _sushy().exceptions.SushyError as exc:
            # e.g. a registry the BMC fails to serve: the raw messages still tell.
            LOG.debug("sushy could not read the settings status: %s", exc)
    if failed is None:
        failed = [
            (
                str(m.get("MessageId") or ""),
                str(m.get("Message") or ""),
                [str(r) for r in m.get("RelatedProperties") or []],
            )
            for m in raw
            if m.get("Severity", "OK") != "OK"
        ]
    if not failed:
        return None
    names: list[str] = []
    for _, _, related in failed:
        names += [r.rsplit("/", 1)[-1] for r in related if r.startswith("#/Attributes/")]
    if not names:  # no RelatedProperties: the names the messages mention
        names = [k for k in wanted if any(k in text for _, text, _ in failed)]
    names = sorted(set(names))
    detail = "; ".join(
        f"{text or 'no message'} ({mid or 'no message id'})" for mid, text, _ in failed
    )
    message = scrub(
        f"Node {task.node.uuid}: BMC {info.address} rejected the {what}"
        + (f" for {', '.join(names)}" if names else "")
        + f": {detail}",
        _secrets(info),
    )
    return BIOSSettingsRejected(
        message,
        node=task.node.uuid,
        address=info.address,
        status=None,
        attributes=names,
    )


class RedfishBIOS(_RedfishValidation, BIOSInterface):
    """BIOS attributes through the Bios resource and its settings object.

    Where a BMC applies BIOS changes only at the next boot (pending
    attributes), the steps reboot the node and wait for the change, then
    restore the power state the node had. A BMC that reports in
    ``@Redfish.Settings`` that it could not apply the settings fails the
    step at once with its message (:class:`BIOSSettingsRejected`), instead
    of after ``redfish_task_timeout``.
    """

    def cache_bios_settings(self, task: Task) -> None:
        info = _info(task)
        with _bmc(task, info, "read BIOS settings"):
            attributes = dict(_get_system(info).bios.attributes or {})
        task.node.driver_internal_info["redfish_bios_settings"] = attributes

    def _apply_with_reboot(
        self,
        task: Task,
        info: RedfishInfo,
        applied: Callable[[], bool],
        what: str,
        describe: Callable[[], str],
    ) -> None:
        if applied():
            return
        power = task.driver.power
        was = power.get_power_state(task)
        LOG.info(
            "Node %s: BMC %s applies BIOS changes at boot; rebooting", task.node.uuid, info.address
        )
        power.reboot(task)
        try:
            _wait_for(task, info, what, info.task_timeout, applied, describe)
        except BIOSSettingsRejected:
            # The node needs no second boot for settings the BMC refused.
            if was == states.POWER_OFF:
                power.set_power_state(task, states.POWER_OFF)
            raise
        if was == states.POWER_OFF:
            power.set_power_state(task, states.POWER_OFF)

    @clean_step(priority=0, argsinfo=_SETTINGS_ARG, requires_ramdisk=False)
    @deploy_step(priority=0, argsinfo=_SETTINGS_ARG)
    def apply_configuration(self, task: Task, settings: list[dict[str, Any]]) -> str | None:
        """Set the attributes, and make sure the BMC really applied them."""
        wanted = _check_bios_settings(task, settings)
        info = _info(task)
        with _bmc(task, info, "apply BIOS settings"):
            bios = _get_system(info).bios
            before = _settings_outcome(bios)
            bios.set_attributes(wanted)
        state: dict[str, Any] = {}

        def applied() -> bool:
            with _bmc(task, info, "read BIOS settings"):
                bios.refresh(force=True)
                current = dict(bios.attributes or {})
                rejected = _settings_rejection(task, info, bios, before, wanted, "BIOS settings")
            if rejected is not None:
                raise rejected
            state["current"] = current
            return all(_same(current.get(k), v) for k, v in wanted.items())

        def describe() -> str:
            current = state.get("current", {})
            pending = sorted(k for k, v in wanted.items() if not _same(current.get(k), v))
            return f"not applied: {', '.join(pending)}"

        self._apply_with_reboot(task, info, applied, "apply the BIOS settings", describe)
        task.node.driver_internal_info["redfish_bios_settings"] = state["current"]
        return None

    @clean_step(priority=0, requires_ramdisk=False)
    @deploy_step(priority=0)
    def factory_reset(self, task: Task) -> str | None:
        """``Bios.ResetBios``; reboot when the BMC holds the reset as pending settings."""
        info = _info(task)
        with _bmc(task, info, "reset BIOS to factory defaults"):
            bios = _get_system(info).bios
            before = _settings_outcome(bios)
            bios.reset_bios()

        def applied() -> bool:
            with _bmc(task, info, "read BIOS settings"):
                bios.refresh(force=True)
                current = dict(bios.attributes or {})
                try:
                    pending = dict(bios.pending_attributes or {})
                except _sushy().exceptions.MissingAttributeError:
                    pending = {}
                rejected = _settings_rejection(
                    task, info, bios, before, pending, "BIOS factory reset"
                )
            if rejected is not None:
                raise rejected
            return all(_same(current.get(k), v) for k, v in pending.items())

        self._apply_with_reboot(
            task, info, applied, "apply the BIOS factory reset", lambda: "settings pending"
        )
        self.cache_bios_settings(task)
        return None


# -- RAID ------------------------------------------------------------------------------------------


def _usable_bytes(level: str, drives: int, smallest: int) -> int:
    if level == "0":
        return drives * smallest
    if level == "1":
        return smallest
    if level == "5":
        return (drives - 1) * smallest
    if level == "6":
        return (drives - 2) * smallest
    if level == "1+0":
        return (drives // 2) * smallest
    if level == "5+0":
        return (drives - 2) * smallest
    return (drives - 4) * smallest  # 6+0


def _volume_drive_ids(volume: Any) -> set[str]:
    links = (getattr(volume, "json", None) or {}).get("Links") or {}
    found = set()
    for ref in links.get("Drives") or []:
        ident = ref.get("@odata.id") if isinstance(ref, dict) else None
        if ident:
            found.add(ident.rstrip("/").rsplit("/", 1)[-1])
    return found


class RedfishRAID(_RedfishValidation, RAIDInterface):
    """Volumes through the Storage resource's Volumes collection.

    ``target_raid_config['logical_disks']`` items take Ironic's keys:
    ``size_gb`` (int or ``'MAX'``), ``raid_level`` (0, 1, 5, 6, 1+0, 5+0,
    6+0), ``is_root_volume``, ``volume_name``, ``controller`` (a Storage
    id), ``physical_disks`` (drive ids) and ``number_of_physical_disks``.
    Drives are picked from those no existing volume uses.
    """

    def validate_raid_config(self, task: Task, raid_config: Mapping[str, Any]) -> None:
        super().validate_raid_config(task, raid_config)
        problems = []
        roots = 0
        for n, disk in enumerate(raid_config["logical_disks"]):
            where = f"logical_disks[{n}]"
            if not isinstance(disk, dict):
                problems.append(f"{where} must be a dict")
                continue
            level = str(disk.get("raid_level", ""))
            if level not in _RAID_LEVELS:
                problems.append(
                    f"{where}.raid_level must be one of {', '.join(_RAID_LEVELS)}, got "
                    f"{disk.get('raid_level')!r}"
                )
            size = disk.get("size_gb")
            if size != "MAX" and (isinstance(size, bool) or not isinstance(size, int) or size <= 0):
                problems.append(
                    f"{where}.size_gb must be a positive integer or 'MAX', got {size!r}"
                )
            if disk.get("is_root_volume"):
                roots += 1
            physical = disk.get("physical_disks")
            if physical is not None and (
                not isinstance(physical, list) or not all(isinstance(p, str) for p in physical)
            ):
                problems.append(f"{where}.physical_disks must be a list of drive ids")
            count = disk.get("number_of_physical_disks")
            minimum = _RAID_LEVELS.get(level, ("", "", 1))[2]
            if count is not None and (
                isinstance(count, bool) or not isinstance(count, int) or count < minimum
            ):
                problems.append(
                    f"{where}.number_of_physical_disks must be an integer of at least the "
                    f"RAID level's minimum, got {count!r}"
                )
        if roots > 1:
            problems.append("only one logical disk may have is_root_volume")
        if problems:
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: invalid target_raid_config: {'; '.join(problems)}",
                node=task.node.uuid,
            )

    def _pick_drives(self, task: Task, disk: Mapping[str, Any], free: list[Any]) -> list[Any]:
        level = str(disk["raid_level"])
        wanted = disk.get("physical_disks")
        if wanted:
            by_id = {d.identity: d for d in free}
            missing = [w for w in wanted if w not in by_id]
            if missing:
                raise InvalidParameterValue(
                    f"Node {task.node.uuid}: physical disk(s) {', '.join(missing)} are not "
                    "free drives of the controller",
                    node=task.node.uuid,
                )
            return [by_id[w] for w in wanted]
        count = int(disk.get("number_of_physical_disks") or _RAID_LEVELS[level][2])
        ordered = sorted(free, key=lambda d: d.capacity_bytes or 0)
        windows = [ordered[i : i + count] for i in range(len(ordered) - count + 1)]
        if not windows:
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: RAID {level} needs {count} free drive(s), only "
                f"{len(free)} left",
                node=task.node.uuid,
            )
        size = int(disk["size_gb"]) if disk.get("size_gb") != "MAX" else None

        def usable(window: list[Any]) -> int:
            return _usable_bytes(level, count, min(d.capacity_bytes or 0 for d in window))

        if size is None:
            return max(windows, key=usable)
        for window in windows:  # the smallest drives that fit
            if usable(window) >= size * _GIB:
                return window
        raise InvalidParameterValue(
            f"Node {task.node.uuid}: no {count} free drive(s) can hold a {size} GiB RAID {level} "
            "volume",
            node=task.node.uuid,
        )

    def _new_volume(
        self, task: Task, info: RedfishInfo, storage: Any, name: str, before: set[str]
    ) -> str:
        """The id of the volume ``name`` that was not there ``before``, once the BMC lists it.

        ``before`` holds member paths; only new members are read (sushy's
        ``get_members`` would answer from its cache).
        """
        found: list[str] = []

        def listed() -> bool:
            with _bmc(task, info, "list RAID volumes"):
                volumes = storage.volumes
                volumes.refresh(force=True)
                new = [volumes.get_member(p) for p in volumes.members_identities if p not in before]
                found[:] = [str(v.identity) for v in new if v.name == name]
            return bool(found)

        _wait_for(
            task,
            info,
            f"list the new RAID volume {name!r}",
            info.task_timeout,
            listed,
            lambda: "not in the Volumes collection",
        )
        return str(found[0])

    @clean_step(priority=0, argsinfo=_RAID_ARGS, requires_ramdisk=False)
    @deploy_step(priority=0, argsinfo=_RAID_ARGS)
    def create_configuration(
        self, task: Task, create_root_volume: bool = True, create_nonroot_volumes: bool = True
    ) -> str | None:
        node = task.node
        target = node.target_raid_config or {}
        self.validate_raid_config(task, target)
        disks = [
            dict(d)
            for d in target["logical_disks"]
            if (create_root_volume if d.get("is_root_volume") else create_nonroot_volumes)
        ]
        # Root first, then fixed sizes, then MAX: what Ironic does, so MAX
        # takes what is left.
        disks.sort(key=lambda d: (not d.get("is_root_volume"), d.get("size_gb") == "MAX"))
        info = _info(task)
        created: list[dict[str, Any]] = []
        with _bmc(task, info, "create RAID configuration"):
            system = _get_system(info)
            storages = [s for s in system.storage.get_members() if s.drives_identities]
            if not storages:
                raise BMCRequestFailed(
                    f"Node {node.uuid}: BMC {info.address} reports no storage with drives",
                    node=node.uuid,
                    address=info.address,
                    status=None,
                )
            used: dict[str, set[str]] = {}
            for storage in storages:
                used[storage.identity] = set()
                for volume in storage.volumes.get_members():
                    used[storage.identity] |= _volume_drive_ids(volume)
            for disk in disks:
                wanted_controller = disk.get("controller")
                storage = next(
                    (s for s in storages if wanted_controller in (None, s.identity)), None
                )
                if storage is None:
                    raise InvalidParameterValue(
                        f"Node {node.uuid}: no storage controller {wanted_controller!r}; "
                        f"the BMC has {', '.join(s.identity for s in storages)}",
                        node=node.uuid,
                    )
                free = [d for d in storage.drives if d.identity not in used[storage.identity]]
                chosen = self._pick_drives(task, disk, free)
                level = str(disk["raid_level"])
                raid_type, volume_type, _ = _RAID_LEVELS[level]
                capacity = (
                    _usable_bytes(level, len(chosen), min(d.capacity_bytes or 0 for d in chosen))
                    if disk["size_gb"] == "MAX"
                    else int(disk["size_gb"]) * _GIB
                )
                payload: dict[str, Any] = {
                    "Name": disk.get("volume_name") or f"{raid_type}-{len(created)}",
                    "RAIDType": raid_type,
                    "CapacityBytes": capacity,
                    "Links": {"Drives": [{"@odata.id": d.path} for d in chosen]},
                }
                supported = {
                    _value(t) for c in storage.storage_controllers for t in (c.raid_types or [])
                }
                if not supported:
                    payload["VolumeType"] = volume_type  # older BMCs know only VolumeType
                elif raid_type not in supported:
                    raise BMCRequestFailed(
                        f"Node {node.uuid}: storage {storage.identity} on BMC {info.address} "
                        f"does not support {raid_type}; it supports "
                        f"{', '.join(sorted(str(s) for s in supported))}",
                        node=node.uuid,
                        address=info.address,
                        status=None,
                    )
                before = set(storage.volumes.members_identities)
                try:
                    result = storage.volumes.create(payload)
                except _sushy().exceptions.MissingHeaderError:
                    result = None  # 202 with no task monitor: the volume will show
                volume_id = getattr(result, "identity", None)
                if volume_id is None:
                    # A task to follow, or an answer (200, 204, 201 or 202 without
                    # Location) that names no volume: find it in the collection.
                    _wait_task_monitor(
                        task, info, "RAID volume creation", result, info.task_timeout
                    )
                    volume_id = self._new_volume(task, info, storage, payload["Name"], before)
                used[storage.identity] |= {d.identity for d in chosen}
                record = dict(disk)
                record.update(
                    size_gb=capacity // _GIB,
                    controller=storage.identity,
                    physical_disks=[d.identity for d in chosen],
                    volume_id=volume_id,
                )
                created.append(record)
                LOG.info(
                    "Node %s: created RAID %s volume %s (%d GiB) on BMC %s",
                    node.uuid,
                    level,
                    volume_id,
                    capacity // _GIB,
                    info.address,
                )
        node.raid_config = {"logical_disks": created}
        return None

    @clean_step(priority=0, requires_ramdisk=False)
    @deploy_step(priority=0)
    def delete_configuration(self, task: Task) -> str | None:
        """Delete every volume of every storage subsystem."""
        info = _info(task)
        with _bmc(task, info, "delete RAID configuration"):
            system = _get_system(info)
            for storage in system.storage.get_members():
                for volume in storage.volumes.get_members():
                    result = volume.delete()
                    _wait_task_monitor(
                        task, info, "RAID volume deletion", result, info.task_timeout
                    )
        task.node.raid_config = {}
        return None


# -- inspection ------------------------------------------------------------------------------------


def _optional(task: Task, info: RedfishInfo, what: str, fn: Callable[[], T], default: T) -> T:
    """``fn()``, or ``default`` when the BMC does not offer (or fails to serve) that part.

    Inspection takes what the BMC reports: a missing link, a 404, or an
    error answer for one optional sub-resource costs that property, not
    the whole inspection. Authentication and connection errors still fail.
    """
    errors = _sushy().exceptions
    try:
        return fn()
    except (errors.MissingAttributeError, errors.ResourceNotFoundError):
        return default
    except errors.HTTPError as exc:
        if isinstance(exc, errors.AccessError):
            raise
        LOG.warning(
            "Node %s: BMC %s did not report the %s: HTTP %s",
            task.node.uuid,
            info.address,
            what,
            exc.status_code,
        )
        return default


def _enabled(resource: Any) -> bool:
    """Whether the BMC reports the resource enabled (or says nothing about its state).

    ``Status.State`` may be ``Disabled``, ``StandbyOffline``, ``Absent`` and
    more; Ironic takes only ``Enabled`` ones.
    """
    status = getattr(resource, "status", None)
    state = _value(getattr(status, "state", None)) if status is not None else None
    return state in (None, "Enabled")


#: Ids BMCs give the system-side NIC of the host interface, the USB LAN link to the BMC
#: itself (Lenovo XCC: ``ToManager``): never a NIC the node boots or is reached through.
_HOST_INTERFACE_IDS: Final = frozenset({"tomanager"})


def _host_interface_nics(system: Any) -> set[str]:
    """Paths of the system NICs its managers list as their host interfaces' (Redfish's way).

    sushy has no HostInterface resource: the three small documents are
    read through the system's own sushy connector, so sushy's errors,
    retries and timeouts apply.
    """
    conn = system._conn

    def get(path: Any) -> dict[str, Any]:
        doc = None
        if isinstance(path, str):
            with contextlib.suppress(ValueError):  # not JSON: nothing listed
                doc = conn.get(path).json()
        return doc if isinstance(doc, dict) else {}

    def links(doc: dict[str, Any]) -> list[Any]:
        return [m.get("@odata.id") for m in doc.get("Members") or [] if isinstance(m, dict)]

    found: set[str] = set()
    for manager in system.managers:
        collection = ((manager.json or {}).get("HostInterfaces") or {}).get("@odata.id")
        for member in links(get(collection)) if collection else []:
            nics = (get(member).get("HostEthernetInterfaces") or {}).get("@odata.id")
            found |= {str(p).rstrip("/") for p in links(get(nics)) if p} if nics else set()
    return found


def _node_nic(eth: Any, host_interface_nics: set[str]) -> bool:
    """Whether an EthernetInterface is one of the node's own, usable NICs."""
    if not eth.mac_address or not _enabled(eth):
        return False
    if str(eth.path).rstrip("/") in host_interface_nics:
        return False
    return str(eth.identity or "").lower() not in _HOST_INTERFACE_IDS


class RedfishInspect(_RedfishValidation, InspectInterface):
    """Properties from the system's inventory, synchronously (out-of-band).

    Sets ``memory_mb``, ``cpus``, ``cpu_arch`` and ``local_gb`` where the
    BMC reports them, ``macs`` (NIC MAC addresses, lower case, sorted) and
    the ``boot_mode`` capability; leaves other properties alone.
    """

    def _cpus(self, task: Task, info: RedfishInfo, system: Any) -> tuple[int | None, str | None]:
        def from_processors() -> tuple[int | None, str | None]:
            # Not sushy's ``summary``: it adds up every member, and real BMCs
            # list GPUs and accelerators as Processors too, and sockets that
            # are empty or disabled.
            count = 0
            arch = None
            for proc in system.processors.get_members():
                kind = _value(proc.processor_type)
                if kind not in (None, "CPU") or not _enabled(proc):
                    continue
                count += proc.total_threads or proc.total_cores or 0
                arch = arch or _ARCH_BY_INSTRUCTION_SET.get(_value(proc.instruction_set) or "")
                arch = arch or _ARCH_BY_ARCHITECTURE.get(_value(proc.processor_architecture) or "")
            return (count or None), arch

        unknown: tuple[int | None, str | None] = (None, None)
        count, arch = _optional(task, info, "processors", from_processors, unknown)
        if count is None:
            # Some BMCs give only the summary on the system itself.
            summary_count = (system.json.get("ProcessorSummary") or {}).get("Count")
            if isinstance(summary_count, int) and summary_count > 0:
                count = summary_count
        return count, arch

    def _disk_bytes(self, task: Task, info: RedfishInfo, system: Any) -> list[int]:
        def from_storage() -> list[int]:
            sizes: list[int] = []
            for storage in system.storage.get_members():
                volumes = [v.capacity_bytes for v in storage.volumes.get_members()]
                sizes += [v for v in volumes if v] or [
                    d.capacity_bytes for d in storage.drives if d.capacity_bytes
                ]
            return sizes

        def from_simple_storage() -> list[int]:
            return [
                dev.capacity_bytes
                for ss in system.simple_storage.get_members()
                for dev in ss.devices or []
                if dev.capacity_bytes
            ]

        return _optional(task, info, "storage", from_storage, []) or _optional(
            task, info, "simple storage", from_simple_storage, []
        )

    def inspect_hardware(self, task: Task) -> str:
        info = _info(task)
        node = task.node
        found: dict[str, Any] = {}
        with _bmc(task, info, "inspect hardware"):
            system = _get_system(info)
            memory = system.memory_summary
            if memory is not None and memory.size_gib:
                found["memory_mb"] = int(memory.size_gib) * 1024
            cpus, arch = self._cpus(task, info, system)
            if cpus:
                found["cpus"] = cpus
            if arch:
                found["cpu_arch"] = arch
            sizes = self._disk_bytes(task, info, system)
            if sizes:
                # Ironic's convention: the largest disk, minus 1 GiB for partitioning.
                found["local_gb"] = max(0, max(sizes) // _GIB - 1)
            no_macs: list[str] = []
            host_nics = _optional(
                task, info, "host interfaces", lambda: _host_interface_nics(system), set[str]()
            )
            macs = _optional(
                task,
                info,
                "network interfaces",
                lambda: sorted(
                    {
                        str(eth.mac_address).lower()
                        for eth in system.ethernet_interfaces.get_members()
                        if _node_nic(eth, host_nics)
                    }
                ),
                no_macs,
            )
            mode = _BOOT_MODES_REV.get(_value(system.boot.mode) or "")
        node.properties.update(found)
        if macs:
            node.properties["macs"] = macs
        if mode:
            _set_capability(node, "boot_mode", mode)
        LOG.info(
            "Node %s: inspected through BMC %s: %s, %d MAC(s)",
            node.uuid,
            info.address,
            found,
            len(macs),
        )
        return states.MANAGEABLE

    def abort(self, task: Task) -> None:
        """Nothing to abort: inspection is synchronous."""


# -- boot (virtual media) --------------------------------------------------------------------------


def _cd_devices(system: Any) -> list[Any]:
    """The BMC's virtual media devices that take CD/DVD images (the system's, else a manager's)."""
    errors = _sushy().exceptions
    absent = (errors.MissingAttributeError, errors.ResourceNotFoundError)

    def cds(owner: Any) -> list[Any]:
        try:
            devices = owner.virtual_media.get_members()
        except absent:
            return []
        return [d for d in devices if {_value(t) for t in d.media_types or []} & {"CD", "DVD"}]

    found = cds(system)
    if not found:
        try:
            managers = system.managers
        except absent:
            managers = []
        for manager in managers:
            found = cds(manager)
            if found:
                break
    return found


_VMEDIA_ACTIONS: Final = ("#VirtualMedia.InsertMedia", "#VirtualMedia.EjectMedia")


def _vmedia_lacks(device: Any) -> str | None:
    """What a virtual media slot lacks for inserting and ejecting; None when it has it.

    The schema gives every slot the two actions, but real BMCs may leave
    them out and take a PATCH of the slot instead (saying so in the
    ``Allow`` header of its GET), or offer neither. sushy needs, for each
    of insert and eject, the action or PATCH.
    """
    actions = (device.json or {}).get("Actions") or {}
    missing = [a.lstrip("#") for a in _VMEDIA_ACTIONS if not isinstance(actions.get(a), dict)]
    if not missing or device._allow_patch():  # sushy's own test of the Allow header
        return None
    return f"{device.path} has no {' or '.join(missing)} action and does not allow PATCH"


def _usable_cd_devices(system: Any) -> tuple[list[Any], list[str]]:
    """The CD/DVD slots the driver can insert into and eject from, and what the others lack."""
    usable: list[Any] = []
    problems: list[str] = []
    for device in _cd_devices(system):
        lacks = _vmedia_lacks(device)
        if lacks is None:
            usable.append(device)
        else:
            problems.append(lacks)
    return usable, problems


def _check_virtual_media(task: Task, key: str) -> None:
    """Refuse an ISO the BMC offers slots for but cannot insert (before anything is done).

    Without any CD/DVD slot the node boots from the network instead (as
    documented for the ISO keys); a slot that is there but lacks both the
    actions and PATCH would fail halfway through a deploy.
    """
    info = _info(task)
    if not getattr(info, key.removeprefix("redfish_")) or not isinstance(
        task.driver.boot, RedfishBoot
    ):
        return
    with _bmc(task, info, "list virtual media"):
        usable, problems = _usable_cd_devices(_get_system(info))
    if not usable and problems:
        raise InvalidParameterValue(
            scrub(
                f"Node {task.node.uuid}: {key} is set, but BMC {info.address} cannot insert "
                f"media into its virtual CD/DVD: {'; '.join(problems)}",
                _secrets(info),
            ),
            node=task.node.uuid,
            keys=[key],
        )


class RedfishBoot(_RedfishValidation, BootInterface):
    """Boots the deploy ISO (``redfish_deploy_iso``) from virtual media, else the network.

    Without a deploy ISO the ramdisk methods do nothing: the node boots
    from the network (PXE), which the deploy interface selects.
    """

    def validate(self, task: Task) -> None:
        """driver_info, and with a deploy ISO, a virtual CD/DVD the BMC can really drive."""
        super().validate(task)
        _check_virtual_media(task, "redfish_deploy_iso")

    def prepare_ramdisk(self, task: Task, ramdisk_params: Mapping[str, Any]) -> None:
        info = _info(task)
        if info.deploy_iso:
            self.boot_iso(task, info.deploy_iso, "redfish_deploy_iso")

    def boot_iso(self, task: Task, url: str, key: str) -> None:
        """Insert the ISO at ``url`` as virtual media and boot from it once."""
        info = _info(task)
        with _bmc(task, info, "insert virtual media"):
            devices, problems = _usable_cd_devices(_get_system(info))
            if not devices:
                raise BMCRequestFailed(
                    f"Node {task.node.uuid}: BMC {info.address} offers no usable virtual CD/DVD "
                    f"for {key}" + (f": {'; '.join(problems)}" if problems else ""),
                    node=task.node.uuid,
                    address=info.address,
                    status=None,
                )
            device = devices[0]
            if device.inserted:
                device.eject_media()
            device.insert_media(url, inserted=True, write_protected=True)
        LOG.info(
            "Node %s: %s inserted as virtual media on BMC %s", task.node.uuid, key, info.address
        )
        task.driver.management.set_boot_device(task, "cdrom", persistent=False)

    def clean_up_ramdisk(self, task: Task) -> None:
        """Eject every inserted virtual CD/DVD (that the BMC lets the driver eject)."""
        info = _info(task)
        with _bmc(task, info, "eject virtual media"):
            for device in _usable_cd_devices(_get_system(info))[0]:
                if device.inserted:
                    device.eject_media()

    def prepare_instance(self, task: Task) -> None:
        """The instance boots from the local disk, persistently."""
        task.driver.management.set_boot_device(task, "disk", persistent=True)

    def supports_virtual_media(self, task: Task) -> bool:
        """Whether the BMC has a virtual CD/DVD it lets the driver insert into and eject from."""
        info = _info(task)
        with _bmc(task, info, "list virtual media"):
            return bool(_usable_cd_devices(_get_system(info))[0])


# -- deploy ----------------------------------------------------------------------------------------


class RedfishDeploy(_RedfishValidation, DeployInterface):
    """Boots the node for its instance through the BMC.

    The core deploy step boots the deploy ramdisk once (virtual media when
    ``redfish_deploy_iso`` is set and the BMC offers it, otherwise PXE),
    powers the node on, and sets the local disk as the persistent boot
    device for the instance. Writing the image is the ramdisk's business,
    outside this library.
    """

    def validate(self, task: Task) -> None:
        """driver_info, and with a deploy ISO, a virtual CD/DVD the BMC can really drive."""
        super().validate(task)
        _check_virtual_media(task, "redfish_deploy_iso")

    @deploy_step(priority=100)
    def deploy(self, task: Task) -> str | None:
        node = task.node
        info = _info(task)
        boot = task.driver.boot
        ramdisk = "pxe"
        if info.deploy_iso and isinstance(boot, RedfishBoot) and boot.supports_virtual_media(task):
            boot.prepare_ramdisk(task, {})
            ramdisk = "cdrom"
        else:
            if info.deploy_iso:
                LOG.warning(
                    "Node %s: BMC %s offers no virtual media; booting the network instead",
                    node.uuid,
                    info.address,
                )
            task.driver.management.set_boot_device(task, "pxe", persistent=False)
        power = task.driver.power
        if power.get_power_state(task) == states.POWER_ON:
            power.reboot(task)
        else:
            power.set_power_state(task, states.POWER_ON)
        boot.prepare_instance(task)
        node.power_state = states.POWER_ON
        node.driver_internal_info["redfish_deploy"] = {"ramdisk_boot": ramdisk}
        return None

    def tear_down(self, task: Task) -> str | None:
        """Power off (if still on) and eject virtual media."""
        power = task.driver.power
        if power.get_power_state(task) != states.POWER_OFF:
            power.set_power_state(task, states.POWER_OFF)
        task.node.power_state = states.POWER_OFF
        task.driver.boot.clean_up_ramdisk(task)
        task.driver.boot.clean_up_instance(task)
        task.node.driver_internal_info.pop("redfish_deploy", None)
        return None


# -- rescue ----------------------------------------------------------------------------------------


class RedfishRescue(_RedfishValidation, RescueInterface):
    """Boots a rescue environment through the BMC, and the instance again afterwards.

    With ``redfish_rescue_iso`` and a BMC that offers virtual media, the ISO
    is inserted and booted once; otherwise the node boots from the network,
    where the operator's rescue service answers. The rescue ramdisk has no
    call-back here, so rescuing completes when the node has been booted.
    """

    def validate(self, task: Task) -> None:
        """driver_info, and with a rescue ISO, a virtual CD/DVD the BMC can really drive."""
        super().validate(task)
        _check_virtual_media(task, "redfish_rescue_iso")

    def rescue(self, task: Task) -> str:
        info = _info(task)
        boot = task.driver.boot
        if info.rescue_iso and isinstance(boot, RedfishBoot) and boot.supports_virtual_media(task):
            boot.boot_iso(task, info.rescue_iso, "redfish_rescue_iso")
            how = "cdrom"
        else:
            task.driver.management.set_boot_device(task, "pxe", persistent=False)
            how = "pxe"
        _power_cycle(task)
        task.node.driver_internal_info["redfish_rescue"] = {"boot": how}
        return states.RESCUE

    def unrescue(self, task: Task) -> str:
        self.clean_up(task)
        task.driver.management.set_boot_device(task, "disk", persistent=True)
        _power_cycle(task)
        return states.ACTIVE

    def clean_up(self, task: Task) -> None:
        """Eject the rescue ISO, if any."""
        task.driver.boot.clean_up_ramdisk(task)
        task.node.driver_internal_info.pop("redfish_rescue", None)


def _power_cycle(task: Task) -> None:
    """Reboot the node if it is on, power it on if not."""
    power = task.driver.power
    if power.get_power_state(task) == states.POWER_ON:
        power.reboot(task)
    else:
        power.set_power_state(task, states.POWER_ON)
    task.node.power_state = states.POWER_ON


# -- firmware --------------------------------------------------------------------------------------


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
        if wait is not None and (_number(wait) is None or (_number(wait) or 0) < 0):
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

    @clean_step(priority=0, argsinfo=_FIRMWARE_ARG, requires_ramdisk=False)
    @service_step(argsinfo=_FIRMWARE_ARG, requires_ramdisk=False)
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
            raise BMCRequestFailed(
                f"Node {task.node.uuid}: Redfish {what} on BMC {info.address} answered as done "
                f"(no task to follow), but the BMC still reports version {old}",
                node=task.node.uuid,
                address=info.address,
                status=None,
            )
        LOG.info(
            "Node %s: BMC %s completed the %s at once: version %s -> %s",
            task.node.uuid,
            info.address,
            what,
            old or "unknown",
            new or "unknown",
        )


# -- the hardware type -----------------------------------------------------------------------------


def redfish_hardware() -> HardwareType:
    """The ``redfish`` hardware type (entry point factory).

    Raises:
        MissingDependency: sushy is not installed (``pip install
            ironic_fsm[redfish]``).
    """
    _sushy()
    return HardwareType(
        power=RedfishPower(),
        management=RedfishManagement(),
        deploy=RedfishDeploy(),
        boot=RedfishBoot(),
        bios=RedfishBIOS(),
        raid=RedfishRAID(),
        inspect=RedfishInspect(),
        firmware=RedfishFirmware(),
        rescue=RedfishRescue(),
        supported={kind: ["fake"] for kind in INTERFACE_KINDS},
        description="Redfish BMCs through sushy: power, boot device, BIOS, RAID, inspection, "
        "virtual media (deploy and rescue) and firmware updates.",
    )
