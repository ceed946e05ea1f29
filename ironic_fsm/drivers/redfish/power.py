"""``redfish`` power: ``ComputerSystem.Reset``, then wait until the BMC reports the state."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from ironic_fsm import states
from ironic_fsm.drivers.redfish.driver_info import RedfishInfo, _info, _RedfishValidation
from ironic_fsm.drivers.redfish.management import _restore_boot_device
from ironic_fsm.drivers.redfish.session import _bmc, _enum, _get_system, _refusal, _value, _wait_for
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.interfaces import PowerInterface
from ironic_fsm.task import Task

__all__ = ["RedfishPower"]

LOG = logging.getLogger(__name__)

_POWER_MAP: Final[Mapping[str, str]] = {
    "On": states.POWER_ON,
    "PoweringOn": states.POWER_ON,
    "Off": states.POWER_OFF,
    "PoweringOff": states.POWER_OFF,
}


def _power_of(task: Task, info: RedfishInfo, system: Any) -> str:
    raw = _value(system.power_state)
    power = _POWER_MAP.get(raw or "")
    if power is None:
        raise _refusal(task, info, f"BMC {info.address} reports an unknown power state {raw!r}")
    return power


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
            raise _refusal(
                task,
                info,
                f"BMC {info.address} does not allow the reset type "
                f"{' or '.join(choices)}; it allows {', '.join(sorted(allowed)) or 'none'}",
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
