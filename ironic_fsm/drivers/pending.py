"""Places for the ramdisk agent's implementations until they land: ``agent`` inspect and RAID.

Ironic's generic hardware types list ``direct`` deploy and ``agent``
inspect, RAID and rescue, and clients create nodes naming them
(gophercloud's test: ``raid_interface: agent``). The names exist here so
that such nodes are accepted; using one raises
:class:`~ironic_fsm.exceptions.UnsupportedOperation` saying the agent is
not available yet. The ramdisk agent's own classes replace these entry
points (``direct`` deploy is :class:`ironic_fsm.drivers.agent.AgentDeploy`, ``agent``
rescue :class:`ironic_fsm.drivers.agent_rescue.AgentRescue`).
"""

from __future__ import annotations

from typing import Any

from ironic_fsm.exceptions import UnsupportedOperation
from ironic_fsm.interfaces import InspectInterface, RAIDInterface
from ironic_fsm.task import Task

__all__ = ["PendingAgentInspect", "PendingAgentRAID"]


def _pending(kind: str, name: str, operation: str) -> UnsupportedOperation:
    return UnsupportedOperation(
        f"The {name!r} {kind} interface needs the ramdisk agent, which this installation "
        f"does not have yet: {operation} cannot run",
        interface=kind,
        operation=operation,
    )


class PendingAgentInspect(InspectInterface):
    """``agent`` inspection: the ramdisk agent reports the inventory (not available yet)."""

    def inspect_hardware(self, task: Task) -> str:
        raise _pending("inspect", "agent", "inspect_hardware")

    def abort(self, task: Task) -> None:
        return None


class PendingAgentRAID(RAIDInterface):
    """``agent`` RAID: built by the ramdisk agent (not available yet)."""

    def create_configuration(self, task: Task, *args: Any, **kwargs: Any) -> str | None:
        raise _pending("raid", "agent", "create_configuration")

    def delete_configuration(self, task: Task) -> str | None:
        raise _pending("raid", "agent", "delete_configuration")
