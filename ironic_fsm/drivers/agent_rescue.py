"""Rescue through the ramdisk agent: Ironic's ``agent`` rescue interface.

``rescue`` powers the instance off, boots the ramdisk and waits in
``rescue wait``; the agent's first heartbeat there is answered with
``rescue.finalize_rescue``, which hands the agent the rescue password (the
agent stores its hash for the rescue user and stops serving its API, as the
machine now belongs to whoever rescues it), and the node is ``rescue``.
``unrescue`` powers the machine off and boots the instance again.

The password the user gave (``instance_info.rescue_password``, masked like
every ``password`` key) is replaced by its bcrypt hash as the rescue starts
(``instance_info.hashed_rescue_password``); only the hash goes to the agent
(``hashed: true``, written as is for the rescue user), so the password
itself is in no log of the ramdisk's. The hash is removed from the node
once the agent has it.
"""

from __future__ import annotations

import logging
from typing import Final

from ironic_fsm import states
from ironic_fsm.agent.client import SUCCEEDED, AgentClient, AgentEndpoint
from ironic_fsm.drivers.agent import boot_ramdisk, power_action
from ironic_fsm.exceptions import (
    AgentCommandFailed,
    InvalidParameterValue,
    MissingDependency,
    StepFailed,
)
from ironic_fsm.interfaces import RescueInterface
from ironic_fsm.task import Task

__all__ = ["AgentRescue"]

LOG = logging.getLogger(__name__)

#: Where the user's rescue password is put, and its hash kept for the agent (Ironic's keys).
PASSWORD_KEY: Final = "rescue_password"
HASHED_KEY: Final = "hashed_rescue_password"


def _hashed(password: str) -> str:
    """A crypt(3) hash of ``password`` (bcrypt, ``$2b$``), as ``/etc/shadow`` takes it."""
    try:
        import bcrypt
    except ImportError:  # pragma: no cover - the extra is part of the test set
        raise MissingDependency(
            "Rescue through the agent hashes the password with bcrypt: "
            "pip install 'ironic_fsm[agent]'",
            extra="agent",
        ) from None
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()


class AgentRescue(RescueInterface):
    """``agent`` rescue: the ramdisk agent is the rescue system.

    Args:
        client: How to reach agents; by default an
            :class:`~ironic_fsm.agent.client.AgentClient` with Ironic's 60 s deadline.
    """

    def __init__(self, client: AgentClient | None = None) -> None:
        super().__init__()
        self._client = client if client is not None else AgentClient()

    def rescue(self, task: Task) -> str:
        """Off, the instance's boot undone, the ramdisk booted; wait for its agent."""
        info = task.node.instance_info
        password = info.pop(PASSWORD_KEY, None)
        if password:
            info[HASHED_KEY] = _hashed(str(password))
        if not info.get(HASHED_KEY):
            raise InvalidParameterValue(
                f"Node {task.node.uuid}: rescuing through the agent needs a rescue_password",
                node=task.node.uuid,
            )
        power_action(task, states.POWER_OFF)
        task.driver.boot.clean_up_instance(task)
        task.driver.network.unconfigure_tenant_networks(task)
        task.driver.boot.prepare_ramdisk(task, {})
        boot_ramdisk(task)
        return states.RESCUEWAIT

    def unrescue(self, task: Task) -> str:
        """Off, the rescue undone, the instance booted again."""
        power_action(task, states.POWER_OFF)
        self.clean_up(task)
        task.driver.network.configure_tenant_networks(task)
        task.driver.boot.prepare_instance(task)
        power_action(task, states.POWER_ON)
        return states.ACTIVE

    def clean_up(self, task: Task) -> None:
        """The password (and its hash) gone from the node, the ramdisk's boot undone."""
        task.node.instance_info.pop(PASSWORD_KEY, None)
        task.node.instance_info.pop(HASHED_KEY, None)
        task.driver.boot.clean_up_ramdisk(task)

    def heartbeat(self, task: Task) -> bool:
        """The agent is up in ``rescue wait``: give it the password; rescued when it took it.

        Raises:
            StepFailed: the agent refused (Ironic's words); the node's rescue fails.
        """
        node = task.node
        if node.provision_state != states.RESCUEWAIT:
            return False
        endpoint = AgentEndpoint.of(node.uuid, node.driver_internal_info)
        params = {"rescue_password": str(node.instance_info.get(HASHED_KEY) or ""),
                  "hashed": True}  # fmt: skip
        try:
            answer = self._client.execute(endpoint, "rescue.finalize_rescue", params, wait=True)
        except AgentCommandFailed as exc:  # it answered, with an error: no use asking again
            raise StepFailed(
                f"Node failed to perform rescue operation: {exc}", node=node.uuid
            ) from exc
        if answer.get("command_status") != SUCCEEDED:
            error = answer.get("command_error")
            detail = (
                (error.get("details") or error.get("message")) if isinstance(error, dict) else error
            )
            raise StepFailed(
                "Node failed to perform rescue operation: Agent returned bad result for command "
                f"finalize_rescue: {detail}",
                node=node.uuid,
            )
        LOG.info("Node %s: its agent took the rescue password; the node is rescued", node.uuid)
        self.clean_up(task)
        task.driver.network.configure_tenant_networks(task)
        return True
