"""The ``ipmi`` hardware type's ``driver_info``: its keys, their checks, the parsed result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ironic_fsm.drivers.common import (
    BadValue,
    Check,
    capabilities,
    check_driver_info,
    number,
    positive_seconds,
)
from ironic_fsm.exceptions import InvalidParameterValue

if TYPE_CHECKING:
    from ironic_fsm.node import Node

__all__ = ["COMMON_PROPERTIES", "IPMIInfo", "parse_driver_info"]

DEFAULT_PORT: Final = 623
DEFAULT_TIMEOUT: Final = 10.0
DEFAULT_POWER_WAIT: Final = 30.0
DEFAULT_RESET_WAIT: Final = 60.0

#: IPMI limits: user names are 16 bytes, RMCP+ passwords 20 bytes.
MAX_USERNAME_BYTES: Final = 16
MAX_PASSWORD_BYTES: Final = 20

#: Cipher suites the driver can be told to use (``ipmi_cipher_suite``):
#: 3 is HMAC-SHA1 / HMAC-SHA1-96 / AES-CBC-128, 17 the same with SHA-256.
CIPHER_SUITES: Final = (3, 17)

COMMON_PROPERTIES: Final[Mapping[str, str]] = {
    "ipmi_address": "IP address or host name of the BMC. Required.",
    "ipmi_username": f"User name on the BMC (at most {MAX_USERNAME_BYTES} bytes). Required.",
    "ipmi_password": f"Password of that user (at most {MAX_PASSWORD_BYTES} bytes). Required.",
    "ipmi_port": f"UDP port of the BMC. Optional, default {DEFAULT_PORT}.",
    "ipmi_timeout": (
        "Deadline in seconds of every call to the BMC, login included (pyghmi has "
        f"none of its own). Optional, default {DEFAULT_TIMEOUT:g}."
    ),
    "ipmi_power_wait": (
        "Seconds to wait for the BMC to report a requested power state. "
        f"Optional, default {DEFAULT_POWER_WAIT:g}."
    ),
    "ipmi_reset_wait": (
        "Seconds to wait for the BMC to answer again after vendor.bmc_reset. "
        f"Optional, default {DEFAULT_RESET_WAIT:g}."
    ),
    "ipmi_boot_mode": (
        "'uefi' or 'bios': the boot mode requested along with a boot device. Optional; "
        "when unset, boot_mode in node.properties['capabilities'] is used (default bios)."
    ),
    "ipmi_cipher_suite": (
        "IPMI 2.0 cipher suite to log in with: 3 (SHA-1) or 17 (SHA-256), and no other. "
        "Optional; when unset, 17 is proposed and 3 used if the BMC refuses it."
    ),
}


@dataclass(frozen=True)
class IPMIInfo:
    """A node's validated ``driver_info`` (the password never shows in ``repr``)."""

    address: str
    username: str
    password: str = field(repr=False)
    port: int = DEFAULT_PORT
    timeout: float = DEFAULT_TIMEOUT
    power_wait: float = DEFAULT_POWER_WAIT
    reset_wait: float = DEFAULT_RESET_WAIT
    uefi: bool = False
    cipher_suite: int | None = None

    @property
    def endpoint(self) -> str:
        """``address:port`` as messages show it (IPv6 in brackets)."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{host}:{self.port}"


# -- the checks, one a key ------------------------------------------------------------------


def _address(value: Any, info: Mapping[str, Any]) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadValue(f"must be a non-empty string, got {value!r}")
    return value.strip()


def _username(value: Any, info: Mapping[str, Any]) -> str:
    if not isinstance(value, str) or not value or len(value.encode()) > MAX_USERNAME_BYTES:
        raise BadValue(f"must be a string of 1 to {MAX_USERNAME_BYTES} bytes, got {value!r}")
    return value


def _password(value: Any, info: Mapping[str, Any]) -> str:
    if not isinstance(value, str) or len(value.encode()) > MAX_PASSWORD_BYTES:
        raise BadValue(f"must be a string of at most {MAX_PASSWORD_BYTES} bytes")
    return value


def _port(value: Any, info: Mapping[str, Any]) -> int:
    port = number(value)
    if port is None or port != int(port) or not 0 < port < 65536:
        raise BadValue(f"must be an integer between 1 and 65535, got {value!r}")
    return int(port)


def _boot_mode(value: Any, info: Mapping[str, Any]) -> str:
    if value not in ("uefi", "bios"):
        raise BadValue(f"must be 'uefi' or 'bios', got {value!r}")
    return str(value)


def _cipher_suite(value: Any, info: Mapping[str, Any]) -> int:
    suite = number(value)
    if suite is None or suite not in CIPHER_SUITES:
        raise BadValue(f"must be one of {', '.join(map(str, CIPHER_SUITES))}, got {value!r}")
    return int(suite)


_CHECKS: Final[Mapping[str, Check]] = {
    "ipmi_address": Check(_address, required=True),
    "ipmi_username": Check(_username, required=True),
    "ipmi_password": Check(_password, required=True),
    "ipmi_port": Check(_port, DEFAULT_PORT),
    "ipmi_timeout": Check(positive_seconds, DEFAULT_TIMEOUT),
    "ipmi_power_wait": Check(positive_seconds, DEFAULT_POWER_WAIT),
    "ipmi_reset_wait": Check(positive_seconds, DEFAULT_RESET_WAIT),
    "ipmi_boot_mode": Check(_boot_mode),
    "ipmi_cipher_suite": Check(_cipher_suite),
}


def parse_driver_info(node: Node) -> IPMIInfo:
    """The node's IPMI settings, checked.

    Raises:
        InvalidParameterValue: naming every missing or malformed key at once
            (``.missing`` and ``.invalid`` list them); a secret's value is
            never shown.
    """
    checked = check_driver_info(node.driver_info or {}, _CHECKS)
    if checked.problems:
        parts = [f"missing required keys: {', '.join(checked.missing)}"] if checked.missing else []
        parts += [text for key, text in checked.problems.items() if key not in checked.missing]
        raise InvalidParameterValue(
            f"Node {node.uuid}: invalid IPMI driver_info: {'; '.join(parts)}",
            node=node.uuid,
            missing=checked.missing,
            invalid=checked.invalid,
        )
    values = checked.values
    boot_mode = values["ipmi_boot_mode"] or capabilities(node).get("boot_mode", "bios")
    return IPMIInfo(
        address=values["ipmi_address"],
        username=values["ipmi_username"],
        password=values["ipmi_password"],
        port=values["ipmi_port"],
        timeout=values["ipmi_timeout"],
        power_wait=values["ipmi_power_wait"],
        reset_wait=values["ipmi_reset_wait"],
        uefi=boot_mode == "uefi",
        cipher_suite=values["ipmi_cipher_suite"],
    )
