"""``ipmi`` power: chassis control, every change confirmed by reading it back."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from ironic_fsm import states
from ironic_fsm.drivers.common import SETTABLE_POWER_STATES, poll
from ironic_fsm.drivers.ipmi.driver_info import IPMIInfo, parse_driver_info
from ironic_fsm.drivers.ipmi.session import _check_reply, _Connection, _IPMIInterface
from ironic_fsm.exceptions import BMCRequestFailed, BMCTimeout, InvalidParameterValue
from ironic_fsm.interfaces import PowerInterface
from ironic_fsm.task import Task

if TYPE_CHECKING:
    from ironic_fsm.node import Node

__all__ = ["IPMIPower"]

LOG = logging.getLogger(__name__)

_PYGHMI_POWER: Final[Mapping[str, str]] = {"on": states.POWER_ON, "off": states.POWER_OFF}


class IPMIPower(_IPMIInterface, PowerInterface):
    """Power over IPMI chassis control; every change is confirmed by reading it back."""

    def get_power_state(self, task: Task) -> str:
        info = parse_driver_info(task.node)
        with _Connection(task.node, info) as bmc:
            return self._read(task.node, info, bmc)

    @staticmethod
    def _read(node: Node, info: IPMIInfo, bmc: _Connection) -> str:
        reply = _check_reply(
            node, info, "get power", bmc.call("get power", lambda c: c.get_power())
        )
        state = _PYGHMI_POWER.get(reply.get("powerstate"))
        if state is None:
            raise BMCRequestFailed(
                f"Node {node.uuid}: the BMC at {info.endpoint} reported an unknown power "
                f"state {reply.get('powerstate')!r}",
                node=node.uuid,
                address=info.endpoint,
            )
        return state

    def get_supported_power_states(self, task: Task) -> list[str]:
        return list(SETTABLE_POWER_STATES)

    def set_power_state(self, task: Task, power_state: str, timeout: float | None = None) -> None:
        """Ask for ``power_state`` and wait until the BMC reports it.

        ``timeout`` (or ``ipmi_power_wait``) bounds the wait for the change
        to be seen; each call to the BMC has its own ``ipmi_timeout``.
        Rebooting resets a node that is on and powers on one that is off.
        """
        node = task.node
        if power_state not in self.get_supported_power_states(task):
            raise InvalidParameterValue(
                f"Node {node.uuid}: the ipmi power interface cannot set power state "
                f"{power_state!r}",
                node=node.uuid,
            )
        info = parse_driver_info(node)
        wait = info.power_wait if timeout is None else float(timeout)
        with _Connection(node, info) as bmc:
            current = self._read(node, info, bmc)
            if power_state == states.POWER_ON:
                self._change(node, info, bmc, "on", states.POWER_ON, wait)
            elif power_state == states.POWER_OFF:
                self._change(node, info, bmc, "off", states.POWER_OFF, wait)
            elif power_state == states.SOFT_POWER_OFF:
                if current != states.POWER_OFF:
                    self._change(node, info, bmc, "shutdown", states.POWER_OFF, wait)
            elif power_state == states.REBOOT:
                action = "reset" if current == states.POWER_ON else "on"
                self._change(node, info, bmc, action, states.POWER_ON, wait)
            else:  # soft reboot: an orderly shutdown, then on again
                if current != states.POWER_OFF:
                    self._change(node, info, bmc, "shutdown", states.POWER_OFF, wait)
                self._change(node, info, bmc, "on", states.POWER_ON, wait)
        off = power_state in (states.POWER_OFF, states.SOFT_POWER_OFF)
        node.power_state = states.POWER_OFF if off else states.POWER_ON
        LOG.info("Node %s: %s done through the BMC at %s", node.uuid, power_state, info.endpoint)

    def _change(
        self, node: Node, info: IPMIInfo, bmc: _Connection, action: str, target: str, wait: float
    ) -> None:
        what = f"power {action}"
        # wait=False: pyghmi's own wait polls once a second; ours polls faster.
        bmc.call(what, lambda c: _check_reply(node, info, what, c.set_power(action, wait=False)))
        seen: list[str] = []

        def reached() -> bool:
            seen[:] = [self._read(node, info, bmc)]
            return seen[0] == target

        if not poll(reached, wait, first=0.02, most=0.5):
            raise BMCTimeout(
                f"Node {node.uuid}: the BMC at {info.endpoint} still reports {seen[0]!r} "
                f"{wait:g} s after {what} (waiting for {target!r}; ipmi_power_wait)",
                node=node.uuid,
                address=info.endpoint,
            )

    def reboot(self, task: Task, timeout: float | None = None) -> None:
        self.set_power_state(task, states.REBOOT, timeout)
