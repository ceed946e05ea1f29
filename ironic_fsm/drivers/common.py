"""What the built-in BMC drivers share: ``driver_info`` checking, value parsing, secrets.

The ``ipmi`` and ``redfish`` hardware types read their settings the same
way: a table maps each ``driver_info`` key to a check that parses its value
or says what is wrong with it. The table, not the message text, knows which
key a problem belongs to, so an :class:`~ironic_fsm.exceptions.InvalidParameterValue`
can list the keys exactly.
"""

from __future__ import annotations

import importlib.util
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeVar

from ironic_fsm import states
from ironic_fsm.exceptions import MissingDependency
from ironic_fsm.hardware import HardwareType
from ironic_fsm.interfaces import INTERFACE_KINDS, BaseInterface
from ironic_fsm.masking import MASK, is_secret_key, scrub
from ironic_fsm.steps import clean_step, deploy_step, service_step

if TYPE_CHECKING:
    from ironic_fsm.node import Node
    from ironic_fsm.task import Task

__all__ = [
    "GENERIC_CHOICES",
    "GIB",
    "SETTABLE_POWER_STATES",
    "BadValue",
    "Check",
    "CheckedInfo",
    "DriverInfoValidation",
    "Library",
    "installed",
    "capabilities",
    "check_driver_info",
    "Choices",
    "bmc_hardware",
    "hardware",
    "bmc_step",
    "boot_persistently",
    "number",
    "parse_bool",
    "poll",
    "power_on_or_reboot",
    "positive_seconds",
    "power_off",
    "scrubbed",
    "secrets_of",
]

#: Every power state a BMC driver can be asked for, in Ironic's order.
SETTABLE_POWER_STATES: Final = (
    states.POWER_ON,
    states.POWER_OFF,
    states.REBOOT,
    states.SOFT_POWER_OFF,
    states.SOFT_REBOOT,
)

_F = TypeVar("_F", bound=Callable[..., Any])

#: Bytes in a GiB (Redfish reports capacities in bytes, Ironic in GiB).
GIB: Final = 1024**3

_TRUE: Final = frozenset({"true", "yes", "1", "on"})
_FALSE: Final = frozenset({"false", "no", "0", "off"})


# -- values ---------------------------------------------------------------------------------


def number(value: object) -> float | None:
    """A finite number from an int, float or numeric string (JSON and CLI input); else None.

    ``True`` is not 1 here: a Boolean where a number belongs is a mistake.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        result = float(value)
    elif isinstance(value, str):
        try:
            result = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return result if math.isfinite(result) else None


def parse_bool(value: object) -> bool | None:
    """A Boolean, or its usual spellings as a string (``'yes'``, ``'off'``, ...); else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    return None


def capabilities(node: Node) -> dict[str, str]:
    """``node.properties['capabilities']`` as a dict, whether stored as one or as ``'k:v,k:v'``."""
    raw = (node.properties or {}).get("capabilities")
    if isinstance(raw, Mapping):
        return {str(k): str(v) for k, v in raw.items()}
    found: dict[str, str] = {}
    if isinstance(raw, str):
        for item in raw.split(","):
            key, sep, value = item.partition(":")
            if sep and key.strip():
                found[key.strip()] = value.strip()
    return found


def bmc_step(
    also: Literal["deploy", "service"], argsinfo: dict[str, dict[str, Any]] | None = None
) -> Callable[[_F], _F]:
    """A step the BMC runs alone, no ramdisk needed: a manual clean step (priority 0).

    It is also a deploy step (priority 0: run by a template or on request)
    or a service step, with the same arguments, as Ironic's out-of-band steps are.
    """
    clean = clean_step(priority=0, argsinfo=argsinfo, requires_ramdisk=False)
    other = (
        deploy_step(priority=0, argsinfo=argsinfo)
        if also == "deploy"
        else service_step(argsinfo=argsinfo, requires_ramdisk=False)
    )

    def mark(method: _F) -> _F:
        return clean(other(method))

    return mark


#: Ironic's generic hardware's implementations, preferred first (``direct`` is the ramdisk
#: agent's, :mod:`ironic_fsm.drivers.agent`; its ``agent`` ones are still placeholders,
#: :mod:`ironic_fsm.drivers.pending`).
GENERIC_CHOICES: Final[Mapping[str, tuple[str, ...]]] = {
    "boot": ("ipxe", "pxe"),
    "deploy": ("direct", "ramdisk"),
    "inspect": ("agent", "no-inspect"),
    "network": ("flat", "noop"),
    "raid": ("no-raid", "agent"),
    "rescue": ("no-rescue", "agent"),
    "storage": ("noop",),
    "firmware": ("no-firmware",),
    "console": ("no-console",),
    "bios": ("no-bios",),
    "vendor": ("no-vendor",),
}


#: One kind's implementations, preferred first: a name (an installed plugin, loaded
#: when a node picks it) or a name and the instance the hardware type holds.
Choices = Sequence["str | tuple[str, BaseInterface]"]


def hardware(
    description: str, kinds: Mapping[str, Choices], *, any_interface: bool = False
) -> HardwareType:
    """A hardware type from each kind's implementations in order of preference.

    ``hardware('...', {'boot': [('ipxe', IPXEBoot()), ('pxe', PXEBoot())], 'raid':
    ['no-raid', 'agent']})``: the first instance of a kind is its default instance (kinds
    without one get the no-op), and the order is Ironic's
    ``supported_<kind>_interfaces``.
    """
    primary: dict[str, Any] = {}  # each checked against its kind by HardwareType
    alternatives: dict[str, dict[str, BaseInterface]] = {}
    supported: dict[str, list[str]] = {}
    for kind, choices in kinds.items():
        for choice in choices:
            if isinstance(choice, str):
                supported.setdefault(kind, []).append(choice)
                continue
            name, iface = choice
            supported.setdefault(kind, []).append(name)
            alternatives.setdefault(kind, {})[name] = iface
            primary.setdefault(kind, iface)
    return HardwareType(
        **primary,
        alternatives=alternatives,
        supported=supported,
        description=description,
        any_interface=any_interface,
    )


def bmc_hardware(description: str, **kinds: Choices) -> HardwareType:
    """A BMC driver's hardware type: :func:`hardware`, and any kind swappable for its fake.

    The kinds not given take Ironic's generic choices (``no-raid``, ``flat``...).
    """
    merged: dict[str, list[str | tuple[str, BaseInterface]]] = {
        kind: list(GENERIC_CHOICES.get(kind, ())) for kind in INTERFACE_KINDS
    }
    merged.update({kind: list(choices) for kind, choices in kinds.items()})
    for choices in merged.values():
        names = {c if isinstance(c, str) else c[0] for c in choices}
        if "fake" not in names:
            choices.append("fake")
    return hardware(description, merged)


# -- secrets --------------------------------------------------------------------------------


def secrets_of(password: str | None) -> set[str]:
    """The values to scrub from messages (too short a password would mask ordinary words)."""
    return {password} if password and len(password) >= 3 else set()


def scrubbed(text: str, password: str | None) -> str:
    """``text`` with any echo of ``password`` masked: BMC libraries' messages may repeat it."""
    return scrub(text, secrets_of(password))


# -- driver_info, checked by a table ------------------------------------------------------------


class BadValue(ValueError):
    """A check's verdict on one ``driver_info`` value: what is wrong, after the key's name."""


@dataclass(frozen=True)
class Check:
    """How to read one ``driver_info`` key.

    ``parse(value, driver_info)`` returns the parsed value or raises
    :class:`BadValue`; it sees the whole ``driver_info`` for checks that
    involve another key. An absent key (or ``None``, unless ``none_is_set``)
    takes ``default``, or is reported missing when ``required``.
    """

    parse: Callable[[Any, Mapping[str, Any]], Any]
    default: Any = None
    required: bool = False
    none_is_set: bool = False


@dataclass
class CheckedInfo:
    """What :func:`check_driver_info` found: values (defaults where unset) and problems.

    ``problems`` maps each bad or missing key to its message, in table order.
    """

    values: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)

    @property
    def invalid(self) -> list[str]:
        """The keys that are set but malformed (missing ones are not), sorted."""
        return sorted(k for k in self.problems if k not in self.missing)


def check_driver_info(info: Mapping[str, Any], checks: Mapping[str, Check]) -> CheckedInfo:
    """Run every check of the table on ``info``, collecting all problems at once.

    A secret key's value never shows in a message, whatever its check wrote.
    """
    result = CheckedInfo()
    for key, check in checks.items():
        raw = info.get(key, None)
        if raw is None and not (check.none_is_set and key in info):
            if check.required:
                result.missing.append(key)
                result.problems[key] = f"{key} is missing"
            result.values[key] = check.default
            continue
        try:
            result.values[key] = check.parse(raw, info)
        except BadValue as bad:
            message = f"{key} {bad}"
            if is_secret_key(key) and isinstance(raw, str) and len(raw) >= 3:
                message = message.replace(raw, MASK)
            result.problems[key] = message
            result.values[key] = check.default
    return result


def positive_seconds(value: Any, info: Mapping[str, Any]) -> float:
    """A ``driver_info`` check: a positive number of seconds."""
    seconds = number(value)
    if seconds is None or seconds <= 0:
        raise BadValue(f"must be a positive number of seconds, got {value!r}")
    return seconds


def installed(module: str) -> bool:
    """Whether ``module`` (a driver's BMC library) is installed: looked for, not imported,
    as importing it costs what a conductor that never uses the driver should not pay."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class Library:
    """A BMC library a driver needs (an optional extra): its module, and the error naming
    the extra that installs it, kept together so that neither is set without the other."""

    module: str
    missing: Callable[[], MissingDependency]


class DriverInfoValidation:
    """``get_properties`` and ``validate`` for interfaces that all read one ``driver_info``.

    Subclasses set ``driver_info_keys`` and implement ``check_driver_info``
    (which raises :class:`~ironic_fsm.exceptions.InvalidParameterValue`).
    Validation never contacts the BMC.
    """

    driver_info_keys: ClassVar[Mapping[str, str]] = {}
    #: The BMC library the interfaces need (pyghmi): looked for when a node picks one.
    library: ClassVar[Library | None] = None

    @classmethod
    def check_loadable(cls) -> None:
        """The :attr:`library`'s error unless it is installed."""
        if cls.library is not None and not installed(cls.library.module):
            raise cls.library.missing()

    def get_properties(self) -> dict[str, str]:
        return dict(self.driver_info_keys)

    def validate(self, task: Task) -> None:
        self.check_driver_info(task.node)

    def check_driver_info(self, node: Node) -> None:
        raise NotImplementedError


# -- waiting --------------------------------------------------------------------------------


def poll(check: Callable[[], bool], timeout: float, first: float, most: float) -> bool:
    """Call ``check`` until it holds (True) or ``timeout`` seconds pass (False).

    The pause between calls starts at ``first`` and doubles up to ``most``:
    quick answers are seen at once, slow ones cost the BMC few requests.
    ``check`` is called at least once, and once more at the deadline.
    """
    deadline = time.monotonic() + timeout
    pause = first
    while True:
        if check():
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(pause * 2, most)


def power_on_or_reboot(task: Task) -> None:
    """Boot the node now: reboot it if it is on, power it on if it is off."""
    power = task.driver.power
    if power.get_power_state(task) == states.POWER_ON:
        power.reboot(task)
    else:
        power.set_power_state(task, states.POWER_ON)


def boot_persistently(task: Task, device: str) -> None:
    """Make ``device`` the node's boot device for good and boot it now (on, or reset)."""
    task.driver.management.set_boot_device(task, device, persistent=True)
    power_on_or_reboot(task)
    task.node.power_state = states.POWER_ON


def power_off(task: Task) -> None:
    """Power the node off and record it."""
    task.driver.power.set_power_state(task, states.POWER_OFF)
    task.node.power_state = states.POWER_OFF
