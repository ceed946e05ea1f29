"""Step decorators and the step vocabulary shared by interfaces and the planner.

A step is a method of a hardware interface that the conductor runs during
cleaning, deployment, servicing or verification. Decorating the method
declares it; the declaration is checked when the class body executes, so a
bad priority or ``argsinfo`` is found at import time, not in production.

One method may carry several decorators (e.g. a clean step that is also a
service step); each phase keeps its own attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal, TypeVar

import attrs

from ironic_fsm.exceptions import InvalidParameterValue

__all__ = [
    "CLEAN",
    "DEPLOY",
    "INTERFACE_ORDER",
    "PHASES",
    "RESERVED_STEPS",
    "SERVICE",
    "VERIFY",
    "Phase",
    "StepInfo",
    "clean_step",
    "deploy_step",
    "service_step",
    "step_id",
    "step_infos",
    "verify_step",
]

Phase = Literal["clean", "deploy", "service", "verify"]

CLEAN: Final = "clean"
DEPLOY: Final = "deploy"
SERVICE: Final = "service"
VERIFY: Final = "verify"
PHASES: Final[tuple[Phase, ...]] = ("clean", "deploy", "service", "verify")

#: Step names the conductor handles itself, whatever interface they name.
RESERVED_STEPS: Final = frozenset({"hold", "wait", "power_on", "power_off", "reboot"})

_STEP_PHASE_ORDER: Final[Mapping[str, int]] = {
    "vendor": 7, "power": 6, "management": 5, "firmware": 4, "deploy": 3, "bios": 2, "raid": 1,
}  # fmt: skip

#: Tie-break between steps of equal priority: a higher rank runs first.
#: Also the set of interfaces whose steps each phase collects.
INTERFACE_ORDER: Final[Mapping[Phase, Mapping[str, int]]] = {
    "clean": _STEP_PHASE_ORDER,
    "deploy": _STEP_PHASE_ORDER,
    "service": _STEP_PHASE_ORDER,
    "verify": {
        "power": 13, "management": 12, "firmware": 11, "inspect": 10, "deploy": 9, "boot": 8,
        "bios": 7, "raid": 6, "vendor": 5, "rescue": 1,
    },
}  # fmt: skip

_ATTR: Final = "_ironic_fsm_steps"

F = TypeVar("F", bound=Callable[..., Any])


@attrs.frozen
class StepInfo:
    """What a decorator declared about one method for one phase."""

    phase: Phase
    name: str
    priority: int
    abortable: bool = False
    argsinfo: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    requires_ramdisk: bool = True

    def as_dict(self, interface: str) -> dict[str, Any]:
        """The step as Ironic describes it to users (a fresh dict)."""
        step: dict[str, Any] = {
            "interface": interface,
            "step": self.name,
            "priority": self.priority,
            "abortable": self.abortable,
            "argsinfo": {k: dict(v) for k, v in self.argsinfo.items()},
        }
        if self.phase in (CLEAN, SERVICE):
            step["requires_ramdisk"] = self.requires_ramdisk
        elif self.phase == VERIFY:
            del step["abortable"], step["argsinfo"]
        return step


def step_id(step: Mapping[str, Any]) -> str:
    """``"<interface>.<step>"``: how operators name a step in configuration."""
    return f"{step.get('interface')}.{step.get('step')}"


def step_infos(func: Callable[..., Any]) -> Mapping[Phase, StepInfo]:
    """The phases a method is a step of, with what each declared."""
    return getattr(func, _ATTR, {})


def _check_priority(priority: object, what: str) -> int:
    if isinstance(priority, bool) or not isinstance(priority, int) or priority < 0:
        raise InvalidParameterValue(
            f'{what}: "priority" must be an integer value >= 0, instead of "{priority!r}"',
            priority=priority,
        )
    return priority


def _check_abortable(abortable: object, what: str) -> bool:
    if not isinstance(abortable, bool):
        raise InvalidParameterValue(
            f'{what}: "abortable" must be a Boolean value instead of "{abortable!r}"',
            abortable=abortable,
        )
    return abortable


def _check_argsinfo(argsinfo: object, what: str) -> dict[str, dict[str, Any]]:
    if argsinfo is None:
        return {}
    if not isinstance(argsinfo, dict):
        raise InvalidParameterValue(
            f'{what}: "argsinfo" must be a dictionary instead of "{argsinfo!r}"'
        )
    checked: dict[str, dict[str, Any]] = {}
    for arg, info in argsinfo.items():
        if not isinstance(info, dict):
            raise InvalidParameterValue(
                f'{what}: argument "{arg}" must be a dictionary instead of "{info!r}"',
                argument=arg,
            )
        for key in info:
            if key not in ("description", "required"):
                raise InvalidParameterValue(
                    f'{what}: argument "{arg}" has an invalid key named "{key}"; '
                    'it must be "description" or "required"',
                    argument=arg,
                )
        if "description" not in info:
            raise InvalidParameterValue(
                f'{what}: argument "{arg}" is missing a "description"', argument=arg
            )
        if not isinstance(info["description"], str):
            raise InvalidParameterValue(
                f'{what}: for argument "{arg}", "description" must be a string value '
                f'instead of "{info["description"]!r}"',
                argument=arg,
            )
        if "required" in info and not isinstance(info["required"], bool):
            raise InvalidParameterValue(
                f'{what}: for argument "{arg}", "required" must be a Boolean value '
                f'instead of "{info["required"]!r}"',
                argument=arg,
            )
        checked[arg] = dict(info)
    return checked


def _check_bool(value: object, name: str, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidParameterValue(
            f'{what}: "{name}" must be a Boolean value instead of "{value!r}"'
        )
    return value


def _declare(phase: Phase, **kwargs: Any) -> Callable[[F], F]:
    def decorator(func: F) -> F:
        existing: dict[Phase, StepInfo] = dict(step_infos(func))
        existing[phase] = StepInfo(phase=phase, name=func.__name__, **kwargs)
        setattr(func, _ATTR, existing)
        return func

    return decorator


def _phase_step(
    phase: Phase, priority: object, abortable: object, argsinfo: object, **flags: object
) -> Callable[[F], F]:
    """The checks every step-running phase makes; ``flags`` are its extra Boolean options."""
    what = f"{phase}_step"
    checked: dict[str, Any] = {
        "priority": _check_priority(priority, what),
        "abortable": _check_abortable(abortable, what),
        "argsinfo": _check_argsinfo(argsinfo, what),
    }
    checked.update((name, _check_bool(value, name, what)) for name, value in flags.items())
    return _declare(phase, **checked)


def clean_step(
    priority: int,
    abortable: bool = False,
    argsinfo: dict[str, dict[str, Any]] | None = None,
    requires_ramdisk: bool = True,
) -> Callable[[F], F]:
    """Declare a clean step.

    Args:
        priority: Order in automated cleaning (higher first); 0 means the
            step runs only when asked for (manual cleaning, runbooks).
        abortable: Whether an abort may interrupt the step while it waits.
        argsinfo: ``{arg: {'description': str, 'required': bool}}``.
        requires_ramdisk: Whether the step needs the deploy ramdisk booted.

    Raises:
        InvalidParameterValue: an argument is malformed (at class definition).
    """
    return _phase_step(CLEAN, priority, abortable, argsinfo, requires_ramdisk=requires_ramdisk)


def deploy_step(
    priority: int,
    abortable: bool = True,
    argsinfo: dict[str, dict[str, Any]] | None = None,
) -> Callable[[F], F]:
    """Declare a deploy step (``priority`` 0: only by template or user request)."""
    return _phase_step(DEPLOY, priority, abortable, argsinfo)


def service_step(
    priority: int = 0,
    abortable: bool = False,
    argsinfo: dict[str, dict[str, Any]] | None = None,
    requires_ramdisk: bool = True,
) -> Callable[[F], F]:
    """Declare a service step, run on an active node when a user asks for it."""
    return _phase_step(SERVICE, priority, abortable, argsinfo, requires_ramdisk=requires_ramdisk)


def verify_step(priority: int) -> Callable[[F], F]:
    """Declare a verify step, run while an enrolled node is verified."""
    return _declare(VERIFY, priority=_check_priority(priority, "verify_step"))
