"""A place for the ramdisk agent's implementation until it lands: ``agent`` RAID.

Ironic's generic hardware types list ``direct`` deploy and ``agent``
inspect, RAID and rescue, and clients create nodes naming them
(gophercloud's test: ``raid_interface: agent``). The RAID name exists here so
that such nodes are accepted; using it raises
:class:`~ironic_fsm.exceptions.UnsupportedOperation` saying the agent is
not available yet. The ramdisk agent's own classes replace these entry
points (``direct`` deploy is :class:`ironic_fsm.drivers.agent.AgentDeploy`, ``agent``
rescue :class:`ironic_fsm.drivers.agent_rescue.AgentRescue`, ``agent`` inspect
:class:`ironic_fsm.drivers.agent_inspect.AgentInspect`).
"""

from __future__ import annotations

from typing import Any

from ironic_fsm.exceptions import UnsupportedOperation
from ironic_fsm.interfaces import RAIDInterface
from ironic_fsm.task import Task

__all__ = ["PendingAgentRAID"]


def _pending(kind: str, name: str, operation: str) -> UnsupportedOperation:
    return UnsupportedOperation(
        f"The {name!r} {kind} interface needs the ramdisk agent, which this installation "
        f"does not have yet: {operation} cannot run",
        interface=kind,
        operation=operation,
    )


class PendingAgentRAID(RAIDInterface):
    """``agent`` RAID: built by the ramdisk agent (not available yet)."""

    def create_configuration(self, task: Task, *args: Any, **kwargs: Any) -> str | None:
        raise _pending("raid", "agent", "create_configuration")

    def delete_configuration(self, task: Task) -> str | None:
        raise _pending("raid", "agent", "delete_configuration")
