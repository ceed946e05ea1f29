"""The in-band half of provisioning: steps the ramdisk agent (IPA) runs on the machine.

:class:`AgentDeploy` is the deploy interface Ironic calls ``direct`` (the
name nodes choose it by), for now its cleaning part (its core deploy step
says that writing the image is not there yet): the agent's clean steps (``erase_devices_metadata``
at 99, ``erase_devices`` at 10, and the rest at 0) join the node's plan
like any interface's, with the operator's overrides by the same
``deploy.<step>`` names, and the two erase steps also by Ironic's
``erase_devices_priority`` and ``erase_devices_metadata_priority``.

The steps are learnt from the agent itself, so before the ramdisk has ever
answered they are not available (:class:`StepsNotAvailable`): the conductor
boots the ramdisk (:meth:`AgentDeploy.prepare_cleaning`), waits in ``clean
wait``, and plans when the agent's first heartbeat has told them
(:meth:`AgentDeploy.heartbeat`). They stay cached on the node
(``driver_internal_info.agent_cached_clean_steps``) for the next clean.

A step is sent with ``wait=false`` and the node waits in ``clean wait``;
the agent's next heartbeat says how it ended: the conductor then goes on,
or fails the step with the agent's error. Booting the ramdisk is a reboot
(or power on) through the node's power interface after its boot interface
prepared it; the token and agent URL are wiped first, as the agent that
held them is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

import tenacity

from ironic_fsm import states
from ironic_fsm.agent import token as tokens
from ironic_fsm.agent.client import FAILED, RUNNING, SUCCEEDED, AgentClient, AgentEndpoint
from ironic_fsm.exceptions import AgentError, StepFailed, StepsNotAvailable, UnsupportedOperation
from ironic_fsm.interfaces import DeployInterface
from ironic_fsm.steps import deploy_step
from ironic_fsm.task import Task

__all__ = ["CACHED_CLEAN_STEPS", "AgentDeploy"]

LOG = logging.getLogger(__name__)

#: Where the agent's clean steps are cached between runs (Ironic's key).
CACHED_CLEAN_STEPS: Final = "agent_cached_clean_steps"
#: The versions of the agent's hardware managers the cached steps came from.
_MANAGER_VERSIONS: Final = "hardware_manager_version"
#: IPA's answer when the steps were planned against other hardware manager versions.
_VERSION_MISMATCH: Final = "CLEAN_VERSION_MISMATCH"
#: The node's fields the agent is sent with each command (what IPA reads of them).
_NODE_FIELDS: Final = ("uuid", "properties", "instance_info", "driver_info", "target_raid_config")


def _agent_node(task: Task) -> dict[str, Any]:
    """The node as the agent's step methods receive it: no secret of ours goes along."""
    node = task.node
    shown: dict[str, Any] = {name: getattr(node, name) for name in _NODE_FIELDS}
    shown["driver_info"] = {}  # BMC credentials are not the ramdisk's business
    shown["driver_internal_info"] = {
        key: value
        for key, value in node.driver_internal_info.items()
        if key not in (tokens.TOKEN_KEY, tokens.CA_KEY)
    }
    return shown


class AgentDeploy(DeployInterface):
    """Clean steps run by the ramdisk agent (Ironic's ``direct`` deploy interface, cleaning).

    Args:
        client: How to reach agents (one client serves every node); by default
            an :class:`~ironic_fsm.agent.client.AgentClient` with Ironic's 60 s deadline.
        step_poll_window: Seconds to watch a step just started on the agent
            (every ``step_poll_interval``) before leaving it to the heartbeats;
            0 leaves every step to them, as Ironic does. IPA heartbeats at
            least 5 s apart, so a step that takes a second would otherwise
            cost five; while watched, the node stays ``cleaning`` (an abort
            waits for the window's end).
    """

    def __init__(
        self,
        client: AgentClient | None = None,
        *,
        step_poll_window: float = 5.0,
        step_poll_interval: float = 0.2,
    ) -> None:
        super().__init__()
        self._client = client if client is not None else AgentClient()
        self.step_poll_window = step_poll_window
        self.step_poll_interval = step_poll_interval

    # -- deployment (to come) ----------------------------------------------------------------

    @deploy_step(priority=100)
    def deploy(self, task: Task) -> str | None:
        """The core deploy step: the image written by the agent (``write_image``), to come."""
        raise UnsupportedOperation(
            f"Node {task.node.uuid}: the 'direct' deploy interface cleans through the ramdisk "
            "agent; writing an image through it is not implemented yet",
            interface="deploy",
            operation="deploy",
        )

    # -- the agent's steps ------------------------------------------------------------------

    def get_clean_steps(self, task: Task) -> list[dict[str, Any]]:
        """The agent's ``deploy`` clean steps as last cached; not available before its first."""
        cached = task.node.driver_internal_info.get(CACHED_CLEAN_STEPS)
        if cached is None:
            raise StepsNotAvailable(
                f"Node {task.node.uuid}: the agent's clean steps are known once its ramdisk "
                "is up and has heartbeated",
                retry_after=-1,
                node=task.node.uuid,
            )
        config = task.config
        overrides = {
            "erase_devices": config.erase_devices_priority,
            "erase_devices_metadata": config.erase_devices_metadata_priority,
        }
        steps = []
        for step in cached:
            override = overrides.get(step["step"])
            priority = step["priority"] if override is None else override
            steps.append(dict(step, priority=priority, argsinfo=dict(step.get("argsinfo") or {})))
        return steps

    def refresh_clean_steps(self, task: Task) -> list[dict[str, Any]]:
        """Ask the running agent for its clean steps and cache the ``deploy`` ones on the node."""
        node = task.node
        endpoint = AgentEndpoint.of(node.uuid, node.driver_internal_info)
        answer = self._client.get_clean_steps(endpoint, _agent_node(task), [])
        steps = []
        for manager_steps in (answer.get("clean_steps") or {}).values():
            for step in manager_steps:
                if step.get("interface") != self.interface_type:
                    continue  # the agent's RAID steps are an agent RAID interface's
                steps.append(
                    {
                        "interface": self.interface_type,
                        "step": step["step"],
                        "priority": int(step.get("priority") or 0),
                        "abortable": bool(step.get("abortable", False)),
                        "argsinfo": dict(step.get("argsinfo") or {}),
                        "requires_ramdisk": True,
                        "reboot_requested": bool(step.get("reboot_requested", False)),
                    }
                )
        steps.sort(key=lambda step: (-step["priority"], step["step"]))
        node.driver_internal_info[CACHED_CLEAN_STEPS] = steps
        node.driver_internal_info[_MANAGER_VERSIONS] = answer.get("hardware_manager_version") or {}
        LOG.info("Node %s: the agent offers %d clean steps", node.uuid, len(steps))
        return steps

    def execute_clean_step(self, task: Task, step: Mapping[str, Any]) -> str | None:
        """Start the step on the agent (``wait=false``); the node waits for its end."""
        node = task.node
        endpoint = AgentEndpoint.of(node.uuid, node.driver_internal_info)
        params: dict[str, Any] = {
            "step": {
                "interface": step["interface"],
                "step": step["step"],
                "priority": step.get("priority", 0),
                "abortable": step.get("abortable", False),
                "args": dict(step.get("args") or {}),
            },
            "node": _agent_node(task),
            "ports": [],
            "clean_version": node.driver_internal_info.get(_MANAGER_VERSIONS) or {},
        }
        answer = self._client.execute(endpoint, "clean.execute_clean_step", params, wait=False)
        if answer.get("command_status") == FAILED:
            raise StepFailed(
                f"The agent could not start clean step {step['step']}: {_error_text(answer)}",
                node=node.uuid,
                step=step["step"],
            )
        if self.step_poll_window > 0 and self._watch(task, endpoint, step):
            return None
        return states.CLEANWAIT

    def _watch(self, task: Task, endpoint: AgentEndpoint, step: Mapping[str, Any]) -> bool:
        """Whether the step ended well within the poll window (StepFailed if it failed)."""
        watching = tenacity.Retrying(
            stop=tenacity.stop_after_delay(self.step_poll_window),
            wait=tenacity.wait_fixed(self.step_poll_interval),
            retry=tenacity.retry_if_result(lambda ended: ended is None),
            retry_error_callback=lambda state: False,
            reraise=True,
        )
        try:
            return bool(watching(lambda: self._step_outcome(task, endpoint, step)))
        except AgentError as exc:  # a hiccup: the heartbeats will tell
            LOG.warning("Node %s: stopped watching step %s: %s", task.node.uuid, step["step"], exc)
            return False

    def _step_outcome(
        self, task: Task, endpoint: AgentEndpoint, step: Mapping[str, Any]
    ) -> bool | None:
        """The agent's word on ``step``: True ended well, None still running (or another
        command is last); StepFailed when it failed."""
        last = self._client.last_command(endpoint)
        if last is None or last.get("command_name") != "execute_clean_step":
            return None
        status = last.get("command_status")
        if status == RUNNING:
            return None
        if status == SUCCEEDED:
            ended = (last.get("command_result") or {}).get("clean_step") or {}
            return True if ended.get("step", step["step"]) == step["step"] else None
        node = task.node
        if status == _VERSION_MISMATCH:
            self.refresh_clean_steps(task)
            raise StepFailed(
                f"The agent's hardware managers changed since clean step {step['step']} was "
                "planned; its steps were refreshed: clean the node again",
                node=node.uuid,
                step=step["step"],
            )
        raise StepFailed(
            f"Agent returned error for clean step {step['step']}: {_error_text(last)}",
            node=node.uuid,
            step=step["step"],
        )

    # -- the ramdisk ------------------------------------------------------------------------

    def prepare_cleaning(self, task: Task) -> str | None:
        """Boot the ramdisk: its agent looks the node up and heartbeats; wait for it."""
        tokens.wipe(task.node.driver_internal_info)
        task.driver.boot.prepare_ramdisk(task, {})
        power = task.driver.power
        if power.get_power_state(task) == states.POWER_ON:
            power.reboot(task)
        else:
            power.set_power_state(task, states.POWER_ON)
        task.node.power_state = states.POWER_ON
        return states.CLEANWAIT

    def tear_down_cleaning(self, task: Task) -> None:
        """Power the node off (ending the agent) and undo the ramdisk's boot set-up."""
        task.driver.power.set_power_state(task, states.POWER_OFF)
        task.node.power_state = states.POWER_OFF
        tokens.wipe(task.node.driver_internal_info)
        task.driver.boot.clean_up_ramdisk(task)

    # -- heartbeats ---------------------------------------------------------------------------

    def heartbeat(self, task: Task) -> bool:
        """An agent heartbeated while the node waits in ``clean wait``: whether to go on.

        Before any step ran, its steps are fetched (and cached) and the
        conductor goes on to plan and run them. While one of its steps
        runs: not yet; once it succeeded: go on; once it failed:
        :class:`StepFailed` with the agent's error.
        """
        node = task.node
        if node.provision_state != states.CLEANWAIT:
            return False
        step = node.clean_step or {}
        if not step:
            self.refresh_clean_steps(task)
            return True
        if step.get("interface") != self.interface_type:
            return False  # a step of another interface (or a reserved one) is waiting
        endpoint = AgentEndpoint.of(node.uuid, node.driver_internal_info)
        return bool(self._step_outcome(task, endpoint, step))


def _error_text(answer: Mapping[str, Any]) -> str:
    error = answer.get("command_error")
    if isinstance(error, dict):
        return str(error.get("details") or error.get("message") or error)
    return str(error or answer.get("command_status"))
