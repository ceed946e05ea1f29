"""The in-band half of provisioning: steps the ramdisk agent (IPA) runs on the machine.

:class:`AgentDeploy` is the deploy interface Ironic calls ``direct`` (the
name nodes choose it by).

**Cleaning.** The agent's clean steps (``erase_devices_metadata`` at 99,
``erase_devices`` at 10, and the rest at 0) join the node's plan like any
interface's, with the operator's overrides by the same ``deploy.<step>``
names, and the two erase steps also by Ironic's ``erase_devices_priority``
and ``erase_devices_metadata_priority``. They are learnt from the agent
itself, so before the ramdisk has ever answered they are not available
(:class:`StepsNotAvailable`): the conductor boots the ramdisk
(:meth:`AgentDeploy.prepare_cleaning`), waits in ``clean wait``, and plans
when the agent's first heartbeat has told them. They stay cached on the
node (``driver_internal_info.agent_cached_clean_steps``) for the next clean.

**Deployment**, Ironic's deploy steps at Ironic's priorities: ``deploy``
(100) boots the ramdisk and waits in ``wait call-back`` for the agent;
``write_image`` (80) has the agent download the image and write it to
its disk; ``prepare_instance_boot`` (60) reads the partition UUIDs and sets
the instance's boot; ``tear_down_agent`` (40) asks the agent to power the
machine off (forced after a while); ``switch_to_tenant_network`` (30) and
``boot_instance`` (20) power it on into the instance. The agent's own
deploy steps (``driver_internal_info.agent_cached_deploy_steps``) can be
asked for by name; an out-of-band step of the same name wins.

A step of the agent is sent with ``wait=false`` and the node waits; the
agent's next heartbeat says how it ended (:meth:`AgentDeploy.heartbeat`):
the conductor then goes on, or fails the phase with Ironic's words. Booting
the ramdisk is a reboot (or power on) through the node's power interface
after its boot interface prepared it; the token and agent URL are wiped
first, as the agent that held them is gone. With ``Config.fast_track`` an
agent that heartbeated within ``fast_track_timeout`` is used as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Final

import attrs
import tenacity

from ironic_fsm import states
from ironic_fsm.agent import configdrive, image
from ironic_fsm.agent import token as tokens
from ironic_fsm.agent.client import FAILED, RUNNING, SUCCEEDED, AgentClient, AgentEndpoint
from ironic_fsm.drivers.common import capabilities
from ironic_fsm.exceptions import AgentError, StepFailed, StepsNotAvailable
from ironic_fsm.interfaces import DeployInterface
from ironic_fsm.steps import deploy_step, step_id
from ironic_fsm.task import Task

if TYPE_CHECKING:
    from ironic_fsm.node import Node

__all__ = [
    "CACHED_CLEAN_STEPS",
    "CACHED_DEPLOY_STEPS",
    "AgentDeploy",
    "boot_ramdisk",
    "power_action",
]

LOG = logging.getLogger(__name__)

#: Where the agent's clean and deploy steps are cached between runs (Ironic's keys).
CACHED_CLEAN_STEPS: Final = "agent_cached_clean_steps"
CACHED_DEPLOY_STEPS: Final = "agent_cached_deploy_steps"
#: Where the root partition's UUID (or the disk's identifier) is kept after a deploy.
ROOT_UUID: Final = "root_uuid_or_disk_id"
#: Whether the image written was a whole-disk one (Ironic's key; a partition image's is not).
WHOLE_DISK: Final = "is_whole_disk_image"
#: The versions of the agent's hardware managers the cached steps came from.
_MANAGER_VERSIONS: Final = "hardware_manager_version"
#: A step asked for a reboot and the ramdisk was rebooted: its next agent goes on.
_STEP_REBOOTED: Final = "agent_step_rebooted"
#: IPA's answer when the steps were planned against other hardware manager versions.
_VERSION_MISMATCH: Final = frozenset({"CLEAN_VERSION_MISMATCH", "VERSION_MISMATCH"})
#: The node's fields the agent is sent with each command (what IPA reads of them).
_NODE_FIELDS: Final = ("uuid", "properties", "instance_info", "driver_info", "target_raid_config")


@attrs.frozen
class _Kind:
    """What differs between the agent's clean and deploy steps (IPA's names)."""

    name: str  # "clean" / "deploy": IPA's extension and the words of its commands
    wait: str  # the node's wait state while a step runs
    step_field: str  # the node field showing the current step
    cache_key: str  # where the agent's steps are cached

    @property
    def label(self) -> str:
        return self.name.capitalize()


_CLEAN: Final = _Kind("clean", states.CLEANWAIT, "clean_step", CACHED_CLEAN_STEPS)
_DEPLOY: Final = _Kind("deploy", states.DEPLOYWAIT, "deploy_step", CACHED_DEPLOY_STEPS)
_KIND_BY_WAIT: Final = {kind.wait: kind for kind in (_CLEAN, _DEPLOY)}


def _agent_node(task: Task) -> dict[str, Any]:
    """The node as the agent's step methods receive it: no secret of ours goes along."""
    node = task.node
    shown: dict[str, Any] = {name: getattr(node, name) for name in _NODE_FIELDS}
    shown["driver_info"] = {}  # BMC credentials are not the ramdisk's business
    shown["instance_info"] = {
        key: value for key, value in node.instance_info.items() if "password" not in key
    }
    shown["driver_internal_info"] = {
        key: value
        for key, value in node.driver_internal_info.items()
        if key not in (tokens.TOKEN_KEY, tokens.CA_KEY)
    }
    return shown


def _error_text(answer: Mapping[str, Any]) -> str:
    """The agent's error as Ironic shows it: its details, else its message."""
    error = answer.get("command_error")
    if isinstance(error, dict):
        return str(error.get("details") or error.get("message") or error)
    return str(error or "Invalid agent response")


def boot_mode(node: Node) -> str:
    """The boot mode the instance is deployed for, where Ironic looks: ``instance_info``'s
    ``deploy_boot_mode``, then the ``boot_mode`` capability, else Ironic's default (UEFI)."""
    asked = node.instance_info.get("deploy_boot_mode") or capabilities(node).get("boot_mode")
    mode = str(asked or "uefi").lower()
    return mode if mode in ("bios", "uefi") else "uefi"


def power_action(task: Task, wanted: str) -> None:
    """A power action through the node's power interface, recorded on the node.

    A power off or reboot ends the agent: its token and URL are wiped.
    """
    node = task.node
    power = task.driver.power
    if wanted == states.REBOOT:
        power.reboot(task)
    else:
        power.set_power_state(task, wanted)
    node.power_state = states.POWER_OFF if wanted == states.POWER_OFF else states.POWER_ON
    if wanted != states.POWER_ON:
        tokens.wipe(node.driver_internal_info)  # no agent survives its machine's power off


def boot_ramdisk(task: Task) -> None:
    """Reboot (or power on) into the ramdisk the boot interface prepared; a new agent comes."""
    tokens.wipe(task.node.driver_internal_info)
    if task.driver.power.get_power_state(task) == states.POWER_ON:
        power_action(task, states.REBOOT)
    else:
        power_action(task, states.POWER_ON)


@contextmanager
def _worded(node: str, words: str, *, with_type: bool = True) -> Iterator[None]:
    """A failure inside as :class:`StepFailed` in Ironic's words: ``words``, then the cause."""
    try:
        yield
    except Exception as exc:
        cause = f"{type(exc).__name__}: {exc}" if with_type else str(exc)
        raise StepFailed(f"{words} {cause}", node=node) from exc


class AgentDeploy(DeployInterface):
    """Cleaning and deployment through the ramdisk agent (Ironic's ``direct`` deploy).

    Args:
        client: How to reach agents (one client serves every node); by default
            an :class:`~ironic_fsm.agent.client.AgentClient` with Ironic's 60 s deadline.
        step_poll_window: Seconds to watch a step just started on the agent
            (every ``step_poll_interval``) before leaving it to the heartbeats;
            0 leaves every step to them, as Ironic does. IPA heartbeats at
            least 5 s apart, so a step that takes a second would otherwise
            cost five; while watched, the node stays in its working state
            (an abort waits for the window's end).
        stream_raw_images: Whether the agent writes a raw image to the disk
            as it downloads it (Ironic's ``[agent]stream_raw_images``).
    """

    def __init__(
        self,
        client: AgentClient | None = None,
        *,
        step_poll_window: float = 5.0,
        step_poll_interval: float = 0.2,
        stream_raw_images: bool = True,
    ) -> None:
        super().__init__()
        self._client = client if client is not None else AgentClient()
        self.step_poll_window = step_poll_window
        self.step_poll_interval = step_poll_interval
        self.stream_raw_images = stream_raw_images

    # -- deployment: preparing, and the out-of-band deploy steps --------------------------------

    def validate(self, task: Task) -> None:
        """What a deploy needs in ``instance_info``: an HTTP(S) image and its checksum."""
        image.check_request(task.node.uuid, task.node.instance_info)

    def prepare(self, task: Task) -> None:
        """Before the deploy steps: the image checked, the machine off, the ramdisk set to boot.

        With fast track and a live agent, the machine is left as it is.
        """
        node = task.node
        image.check_request(node.uuid, node.instance_info)
        image.check_reachable(str(node.instance_info["image_source"]))
        node.instance_info["image_url"] = node.instance_info["image_source"]
        whole = not image.is_partition_image(node.instance_info)
        node.driver_internal_info[WHOLE_DISK] = whole
        if self._fast_track(task):
            LOG.info("Node %s: fast track, its agent is up; the power stays as it is", node.uuid)
            return
        if not node.disable_power_off:
            power_action(task, states.POWER_OFF)
        task.driver.boot.prepare_ramdisk(task, {})

    def clean_up(self, task: Task) -> None:
        """Undo :meth:`prepare` (after a failure, an abort, or an undeploy)."""
        task.driver.boot.clean_up_ramdisk(task)
        task.driver.boot.clean_up_instance(task)
        task.node.instance_info.pop("image_url", None)

    def tear_down(self, task: Task) -> str | None:
        """Undeploy: the machine is off (the conductor saw to it); networks put back."""
        network = task.driver.network
        network.unconfigure_tenant_networks(task)
        network.remove_provisioning_network(task)
        task.node.driver_internal_info.pop(ROOT_UUID, None)
        return None

    @deploy_step(priority=100)
    def deploy(self, task: Task) -> str | None:
        """Boot the ramdisk and wait for its agent (fast track: use the one that is up)."""
        if self._fast_track(task):
            LOG.info("Node %s: a fast track deployment, through the agent already up",
                     task.node.uuid)  # fmt: skip
            self.refresh_steps(task, _DEPLOY)
            return None
        boot_ramdisk(task)
        return states.DEPLOYWAIT

    @deploy_step(priority=80)
    def write_image(self, task: Task) -> str | None:
        """Have the agent write the image of ``instance_info`` to its disk."""
        node = task.node
        info = image.image_info(
            node.uuid, node.instance_info, stream_raw_images=self.stream_raw_images,
            boot_mode=boot_mode(node), disk_label=capabilities(node).get("disk_label"),
        )  # fmt: skip
        drive = node.instance_info.get("configdrive")
        if isinstance(drive, dict):  # the JSON form (API 1.56): made into the image now
            info["configdrive"] = configdrive.build(node.uuid, node.name, drive)
        step = {
            "interface": "deploy",
            "step": "write_image",
            "args": {"image_info": info, "configdrive": info.get("configdrive")},
        }
        LOG.info("Node %s: the agent writes image %s", node.uuid, info["id"])
        return self._start(task, step, _DEPLOY)

    @deploy_step(priority=60)
    def prepare_instance_boot(self, task: Task) -> str | None:
        """The root partition's UUID recorded, the bootloader of a partition image installed
        by the agent, the boot set to the instance (the disk)."""
        node = task.node
        answer = self._client.execute(
            self._endpoint(task), "standby.get_partition_uuids", {}, wait=True
        )
        uuids = answer.get("command_result") or {}
        uuids = uuids if isinstance(uuids, dict) else {}
        root = uuids.get("root uuid")
        if root:
            node.driver_internal_info[ROOT_UUID] = root
        LOG.info("Node %s: image written (root %s)", node.uuid, root or "unknown")
        if image.is_partition_image(node.instance_info):
            self._install_bootloader(task, uuids)
        with _worded(node.uuid, "Failed to prepare instance for booting:", with_type=False):
            task.driver.boot.prepare_instance(task)
        return None

    def _install_bootloader(self, task: Task, uuids: Mapping[str, Any]) -> None:
        """The agent installs the bootloader of the partition image it wrote (Ironic's
        ``install_bootloader``: the root and EFI system partitions it reported)."""
        node = task.node
        if not uuids.get("root uuid"):
            LOG.error("Node %s: the agent reported no root partition UUID (%s); installing "
                      "the bootloader will likely fail", node.uuid, uuids)  # fmt: skip
        mode = boot_mode(node)
        params = {
            "root_uuid": uuids.get("root uuid"),
            "efi_system_part_uuid": (
                uuids.get("efi system partition uuid") if mode == "uefi" else None
            ),
            "prep_boot_part_uuid": uuids.get("PReP Boot partition uuid"),
            "target_boot_mode": mode,
        }
        answer = self._client.execute(
            self._endpoint(task), "image.install_bootloader", params, wait=True
        )
        if answer.get("command_status") == FAILED:
            raise StepFailed(
                f"Failed to install a bootloader when deploying node {node.uuid}: "
                f"{_error_text(answer)}",
                node=node.uuid,
            )

    @deploy_step(priority=40)
    def tear_down_agent(self, task: Task) -> str | None:
        """The agent powers the machine off (soft); forced off if it is not off in time."""
        node = task.node
        with _worded(node.uuid, f"Error rebooting node {node.uuid} after deploy."):
            if node.disable_power_off:
                self._client.execute(self._endpoint(task), "standby.sync", {}, wait=True)
            else:
                self._soft_power_off(task)
        return None

    @deploy_step(priority=30)
    def switch_to_tenant_network(self, task: Task) -> str | None:
        """From the provisioning network to the tenant's (nothing to do on a flat one)."""
        network = task.driver.network
        network.remove_provisioning_network(task)
        network.configure_tenant_networks(task)
        return None

    @deploy_step(priority=20)
    def boot_instance(self, task: Task) -> str | None:
        """Power the machine on: it boots the image just written (reset, if it stayed on)."""
        node = task.node
        with _worded(node.uuid, f"Error booting node {node.uuid} after deploy."):
            power_action(task, states.REBOOT if node.disable_power_off else states.POWER_ON)
        return None

    def _soft_power_off(self, task: Task) -> None:
        """``standby.power_off`` and a watch on the power state; a hard power off after it."""
        node = task.node
        config = task.config
        try:
            self._client.execute(self._endpoint(task), "standby.power_off", {}, wait=False)
        except AgentError as exc:
            LOG.warning("Node %s: the agent could not power it off: %s", node.uuid, exc)
        watching = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(config.post_deploy_get_power_state_retries + 1),
            wait=tenacity.wait_fixed(config.post_deploy_get_power_state_retry_interval),
            retry=tenacity.retry_if_result(lambda power: power != states.POWER_OFF)
            | tenacity.retry_if_exception_type(Exception),
            retry_error_callback=lambda state: None,
        )
        if watching(lambda: task.driver.power.get_power_state(task)) == states.POWER_OFF:
            node.power_state = states.POWER_OFF
            tokens.wipe(node.driver_internal_info)
            return
        LOG.warning("Node %s did not power off through its agent; forcing it off", node.uuid)
        power_action(task, states.POWER_OFF)

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

    def get_deploy_steps(self, task: Task) -> list[dict[str, Any]]:
        """The out-of-band deploy steps, and the agent's as last cached (shadowed by ours)."""
        steps = super().get_deploy_steps(task)
        ours = {step["step"] for step in steps}
        for step in task.node.driver_internal_info.get(CACHED_DEPLOY_STEPS) or ():
            if step["step"] not in ours:
                steps.append(dict(step, argsinfo=dict(step.get("argsinfo") or {})))
        return steps

    def refresh_clean_steps(self, task: Task) -> list[dict[str, Any]]:
        """Ask the running agent for its clean steps and cache the ``deploy`` ones on the node."""
        return self.refresh_steps(task, _CLEAN)

    def refresh_steps(self, task: Task, kind: _Kind) -> list[dict[str, Any]]:
        """Ask the running agent for its ``kind`` steps; cache this interface's on the node."""
        node = task.node
        command = f"{kind.name}.get_{kind.name}_steps"
        answer = self._client.execute(
            self._endpoint(task), command, {"node": _agent_node(task), "ports": []}, wait=True
        )
        result = self._client.result_of(self._endpoint(task), command, answer)
        steps = []
        for manager_steps in (result.get(f"{kind.name}_steps") or {}).values():
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
        node.driver_internal_info[kind.cache_key] = steps
        node.driver_internal_info[_MANAGER_VERSIONS] = result.get("hardware_manager_version") or {}
        LOG.info("Node %s: the agent offers %d %s steps", node.uuid, len(steps), kind.name)
        return steps

    def execute_clean_step(self, task: Task, step: Mapping[str, Any]) -> str | None:
        """Start the step on the agent (``wait=false``); the node waits for its end."""
        return self._start(task, step, _CLEAN)

    def execute_deploy_step(self, task: Task, step: Mapping[str, Any]) -> str | None:
        """Ours when we have a step of that name; else the agent's, which must be up."""
        if step["step"] in self._step_names["deploy"]:
            return super().execute_deploy_step(task, step)
        if not task.node.driver_internal_info.get(CACHED_DEPLOY_STEPS):
            raise StepFailed(
                f"Deploy step {step_id(step)} has not been found. Available out-of-band steps: "
                f"{sorted(self._step_names['deploy'])}. Agent is not running.",
                node=task.node.uuid,
                step=step["step"],
            )
        return self._start(task, step, _DEPLOY)

    def _start(self, task: Task, step: Mapping[str, Any], kind: _Kind) -> str | None:
        node = task.node
        endpoint = self._endpoint(task)
        params: dict[str, Any] = {
            "step": {
                "interface": step["interface"],
                "step": step["step"],
                "priority": step.get("priority", 0),
                "abortable": step.get("abortable", False),
                "reboot_requested": self._asks_reboot(task, step, kind),
                "args": dict(step.get("args") or {}),
            },
            "node": _agent_node(task),
            "ports": [],
            f"{kind.name}_version": node.driver_internal_info.get(_MANAGER_VERSIONS) or {},
        }
        command = f"{kind.name}.execute_{kind.name}_step"
        answer = self._client.execute(endpoint, command, params, wait=False)
        if answer.get("command_status") == FAILED:
            raise StepFailed(
                f"{kind.label} step {step_id(step)} failed on node {node.uuid}. "
                f"{_error_text(answer)}",
                node=node.uuid,
                step=step["step"],
            )
        if self.step_poll_window > 0 and self._watch(task, endpoint, step, kind):
            return None
        return kind.wait

    def _watch(
        self, task: Task, endpoint: AgentEndpoint, step: Mapping[str, Any], kind: _Kind
    ) -> bool:
        """Whether the step ended well within the poll window (StepFailed if it failed)."""
        watching = tenacity.Retrying(
            stop=tenacity.stop_after_delay(self.step_poll_window),
            wait=tenacity.wait_fixed(self.step_poll_interval),
            retry=tenacity.retry_if_result(lambda ended: ended is None),
            retry_error_callback=lambda state: False,
            reraise=True,
        )
        try:
            ended = watching(lambda: self._step_outcome(task, endpoint, step, kind))
        except AgentError as exc:  # a hiccup: the heartbeats will tell
            LOG.warning("Node %s: stopped watching step %s: %s", task.node.uuid, step["step"], exc)
            return False
        if ended and self._asks_reboot(task, step, kind):
            return False  # the reboot is the heartbeat's business: the node waits for it
        return bool(ended)

    @staticmethod
    def _asks_reboot(task: Task, step: Mapping[str, Any], kind: _Kind) -> bool:
        """Whether the agent said the step needs a reboot after it (plans keep no such flag)."""
        if step.get("reboot_requested"):
            return True
        cached = task.node.driver_internal_info.get(kind.cache_key) or ()
        return any(
            known["step"] == step["step"] and known.get("reboot_requested") for known in cached
        )

    def _step_outcome(
        self, task: Task, endpoint: AgentEndpoint, step: Mapping[str, Any], kind: _Kind
    ) -> bool | None:
        """The agent's word on ``step``: True ended well, None still running (or another
        command is last); StepFailed (Ironic's words) when it failed."""
        last = self._client.last_command(endpoint)
        if last is None or last.get("command_name") != f"execute_{kind.name}_step":
            return None
        status = last.get("command_status")
        if status == RUNNING:
            return None
        node = task.node
        if status == SUCCEEDED:
            ended = (last.get("command_result") or {}).get(f"{kind.name}_step") or {}
            return True if ended.get("step", step["step"]) == step["step"] else None
        if status in _VERSION_MISMATCH:
            self.refresh_steps(task, kind)
            raise StepFailed(
                f"The agent's hardware managers changed since {kind.name} step "
                f"{step_id(step)} was planned; its steps were refreshed: start again",
                node=node.uuid,
                step=step["step"],
            )
        if status == FAILED:
            raise StepFailed(
                f"{kind.label} step {step_id(step)} failed on node {node.uuid}. "
                f"{_error_text(last)}",
                node=node.uuid,
                step=step["step"],
            )
        raise StepFailed(
            f"Agent returned unknown status for {kind.name} step {dict(step)} on node "
            f"{node.uuid} : {status}.",
            node=node.uuid,
            step=step["step"],
        )

    # -- the ramdisk ------------------------------------------------------------------------

    def prepare_cleaning(self, task: Task) -> str | None:
        """Boot the ramdisk: its agent looks the node up and heartbeats; wait for it.

        With fast track and a live agent, nothing is booted: its next heartbeat goes on.
        """
        if not self._fast_track(task):
            task.driver.boot.prepare_ramdisk(task, {})
            boot_ramdisk(task)
        return states.CLEANWAIT

    def tear_down_cleaning(self, task: Task) -> None:
        """Power the node off (ending the agent) and undo the ramdisk's boot set-up.

        With fast track the agent is left running, for the deploy that may follow.
        """
        if not task.config.fast_track:
            power_action(task, states.POWER_OFF)
        task.driver.boot.clean_up_ramdisk(task)

    def _fast_track(self, task: Task) -> bool:
        """Ironic's ``is_fast_track``: enabled, an agent that heartbeated lately, power on."""
        config = task.config
        info = task.node.driver_internal_info
        last = info.get(tokens.LAST_HEARTBEAT_KEY)
        if not config.fast_track or not info.get(tokens.URL_KEY) or not last:
            return False
        try:
            seen = datetime.fromisoformat(str(last))
        except ValueError:
            return False
        if datetime.now(timezone.utc) - seen > timedelta(seconds=config.fast_track_timeout):
            return False
        return task.driver.power.get_power_state(task) == states.POWER_ON

    def _endpoint(self, task: Task) -> AgentEndpoint:
        return AgentEndpoint.of(task.node.uuid, task.node.driver_internal_info)

    # -- heartbeats ---------------------------------------------------------------------------

    def heartbeat(self, task: Task) -> bool:
        """An agent heartbeated while the node waits for it: whether the conductor goes on.

        Just booted (no step yet in ``clean wait``; the ``deploy`` step in
        ``wait call-back``; or after a step's reboot): its steps are fetched
        and cached, and the conductor goes on. While one of its steps runs:
        not yet; once it succeeded: go on (a step asking for a reboot first
        reboots the ramdisk); once it failed: :class:`StepFailed` with Ironic's words.
        """
        node = task.node
        kind = _KIND_BY_WAIT.get(node.provision_state)
        if kind is None:
            return False
        step = getattr(node, kind.step_field) or {}
        if node.driver_internal_info.pop(_STEP_REBOOTED, None):
            self.refresh_steps(task, kind)
            return True
        if not step or (kind is _DEPLOY and step_id(step) == "deploy.deploy"):
            self.refresh_steps(task, kind)
            return True
        if step.get("interface") != self.interface_type:
            return False  # a step of another interface (or a reserved one) is waiting
        if not self._step_outcome(task, self._endpoint(task), step, kind):
            return False
        if self._asks_reboot(task, step, kind):
            LOG.info("Node %s: step %s asks for a reboot", node.uuid, step_id(step))
            boot_ramdisk(task)
            node.driver_internal_info[_STEP_REBOOTED] = step_id(step)
            return False
        return True
