"""``direct`` deployment through the real ironic-python-agent 13.0.0, in its sandbox.

The image is served over HTTP on the host's end of the sandbox's link (the
agent downloads it; the conductor checks it with a HEAD first, as Ironic
does). After a deploy the loop device must hold the image byte for byte.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import attrs
import bcrypt
import pytest
from api_helpers import cli_env, openstack
from ipa_harness import HEARTBEAT_TIMEOUT, MAC, Peer, image_server, running_peer
from ipa_sandbox import Sandbox, SandboxManagement, SandboxPower

from ironic_fsm import Config
from ironic_fsm.agent.client import AgentClient
from ironic_fsm.api import start_api
from ironic_fsm.conductor.common import utcnow
from ironic_fsm.drivers.agent_rescue import AgentRescue
from ironic_fsm.drivers.generic import PXEBoot
from ironic_fsm.events import STEP_END
from ironic_fsm.node import Node

IMAGE_MIB = 8
DEPLOY_STEPS = [
    "deploy", "write_image", "prepare_instance_boot", "tear_down_agent",
    "switch_to_tenant_network", "boot_instance",
]  # fmt: skip


def _images(folder: Path) -> dict[str, Path]:
    """An 8 MiB whole-disk image (an MBR, random bytes in its partition), raw and qcow2.

    An MBR, not a GPT: after writing a GPT image IPA moves its backup header
    to the end of the (larger) disk, so the disk would no longer equal the image.
    """
    raw = folder / "disk.raw"
    with raw.open("wb") as out:
        out.write(os.urandom(IMAGE_MIB << 20))
    subprocess.run(["parted", "-s", str(raw), "mklabel", "msdos", "mkpart", "primary", "1MiB",
                    "100%"], check=True)  # fmt: skip
    qcow2 = folder / "disk.qcow2"
    subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", str(raw), str(qcow2)],
                   check=True)  # fmt: skip
    return {"raw": raw, "qcow2": qcow2}


@attrs.define
class Deployer(Peer):
    """A peer whose machines boot from PXE or disk, with an image server beside the API."""

    images: dict[str, Path] = attrs.Factory(dict)
    image_url: str = ""

    def instance(self, disk_format: str, **changes: Any) -> dict[str, Any]:
        path = self.images[disk_format]
        info = {
            "image_source": f"{self.image_url}/{path.name}",
            "image_os_hash_algo": "sha256",
            "image_os_hash_value": hashlib.sha256(path.read_bytes()).hexdigest(),
            "image_disk_format": disk_format,
        }
        info.update(changes)
        return {key: value for key, value in info.items() if value is not None}

    def deployable(self, disk_format: str = "raw", **changes: Any) -> Node:
        """An ``available`` node, off, whose ``instance_info`` names the image."""
        return self.node(provision_state="available", power_state="power off",
                         instance_info=self.instance(disk_format, **changes))  # fmt: skip

    def waiting_for_its_agent(self) -> Node:
        """A node just sent to deploy, waiting in ``wait call-back`` for its agent."""
        node = self.deployable()
        self.conductor.do_provisioning_action(node.uuid, "deploy")
        return self.wait_for(node.uuid, lambda n: n.provision_state == "wait call-back")


@pytest.fixture
def deployer(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    make_sandbox: Callable[..., Sandbox],
    ipa: Path,
) -> Iterator[Deployer]:
    """A peer whose machines boot from PXE or disk; ``Config`` options by indirect param."""
    sandbox = make_sandbox(MAC, seed=True)
    served = tmp_path / "images"
    served.mkdir()
    config = Config(
        ramdisk_heartbeat_timeout=HEARTBEAT_TIMEOUT,
        post_deploy_get_power_state_retry_interval=0.5,
        **getattr(request, "param", {}),
    )

    def kinds(power: SandboxPower) -> dict[str, Any]:
        return {
            "management": SandboxManagement(power), "boot": PXEBoot(),
            "rescue": AgentRescue(AgentClient(60)),
        }  # fmt: skip

    with (
        image_server(served, sandbox.host_ip) as url,
        running_peer(tmp_path, sandbox, ipa, config=config, kinds=kinds) as peer,
    ):
        yield Deployer(*attrs.astuple(peer, recurse=False), _images(served), url)


def _settled(node: Node) -> bool:
    return node.provision_state in ("active", "deploy failed")


def _disk(peer: Peer) -> bytes:
    with open(peer.sandbox.disk, "rb") as disk:
        return disk.read()


def _ran(peer: Peer, uuid: str) -> list[str]:
    return [e.step["step"] for e in peer.events if e.name == STEP_END and e.node == uuid
            and e.state in ("deploying", "wait call-back")]  # fmt: skip


@pytest.mark.parametrize("disk_format", ["raw", "qcow2"])
def test_direct_deploy_writes_the_image_byte_for_byte(deployer: Deployer, disk_format: str) -> None:
    raw = deployer.images["raw"].read_bytes()
    node = deployer.deployable(disk_format)
    started = time.monotonic()
    deployer.conductor.do_provisioning_action(node.uuid, "deploy")
    done = deployer.wait_for(node.uuid, _settled, heard=True)
    took = time.monotonic() - started
    assert done.provision_state == "active", done.last_error
    assert done.last_error is None
    assert _disk(deployer)[: len(raw)] == raw
    assert [s for s in DEPLOY_STEPS if s in _ran(deployer, node.uuid)] == DEPLOY_STEPS
    info = done.driver_internal_info
    # A whole-disk image: the disk's identifier (MBR bytes 440-443) stands for the root.
    assert info["root_uuid_or_disk_id"] == f"0x{int.from_bytes(raw[440:444], 'little'):08x}"
    assert info["is_whole_disk_image"] is True
    assert {s["step"] for s in info["agent_cached_deploy_steps"]} >= {"write_image"}
    # The agent powered the machine off, and the instance was booted from its disk.
    assert "poweroff" in (deployer.sandbox.work / "power.log").read_text()
    assert not deployer.sandbox.running()
    assert done.power_state == "power on"
    assert deployer.power.boot_device[node.uuid] == "disk"
    assert deployer.power.boots[node.uuid] == 1
    assert deployer.power.instance_boots[node.uuid] == 1
    assert not {"agent_secret_token", "agent_url"} & set(info)
    print(f"\n{disk_format} deploy: active {took:.1f} s after the request")


def test_a_wrong_checksum_fails_the_deploy_in_ironics_words(deployer: Deployer) -> None:
    node = deployer.deployable("raw", image_os_hash_value="0" * 64)
    deployer.conductor.do_provisioning_action(node.uuid, "deploy")
    failed = deployer.wait_for(node.uuid, _settled)
    assert failed.provision_state == "deploy failed"
    error = failed.last_error or ""
    assert error.startswith(f"Deploy step deploy.write_image failed on node {node.uuid}. ")
    assert "ImageChecksumError" in error or "checksum" in error.lower(), error
    assert failed.deploy_step["step"] == "write_image"  # the failed step stays shown
    assert not {"agent_secret_token", "agent_url"} & set(failed.driver_internal_info)
    # The same words through the API.
    shown = deployer.client.get(f"/v1/nodes/{node.uuid}").json()
    assert shown["last_error"] == error
    assert shown["provision_state"] == "deploy failed"


def test_an_unreachable_image_fails_before_the_ramdisk_boots(deployer: Deployer) -> None:
    missing = f"{deployer.image_url}/no-such.raw"
    node = deployer.deployable("raw", image_source=missing)
    deployer.conductor.do_provisioning_action(node.uuid, "deploy")
    failed = deployer.wait_for(node.uuid, _settled)
    assert failed.provision_state == "deploy failed"
    assert failed.last_error == (
        f"Failed to prepare to deploy: Validation of image href {missing} failed, reason: "
        "Got HTTP code 404 instead of 200 in response to HEAD request."
    )
    assert node.uuid not in deployer.power.boots  # no ramdisk was booted


def test_abort_in_wait_call_back_then_undeploy_cleans(deployer: Deployer) -> None:
    node = deployer.waiting_for_its_agent()
    deployer.conductor.do_provisioning_action(node.uuid, "abort")
    aborted = deployer.wait_for(node.uuid, lambda n: n.provision_state != "wait call-back")
    assert aborted.provision_state == "deploy failed"
    assert aborted.last_error == (
        "By request, the deploy operation was aborted during or after the completion of step "
        '"deploy.deploy"'
    )
    assert not {"agent_secret_token", "agent_url"} & set(aborted.driver_internal_info)

    # Undeploy from deploy failed: off, torn down, then an automated clean through the agent.
    deployer.conductor.do_provisioning_action(node.uuid, "deleted")
    done = deployer.wait_for(
        node.uuid, lambda n: n.provision_state in ("available", "clean failed"), timeout=180
    )
    assert done.provision_state == "available", done.last_error
    assert done.instance_info == {}
    data = _disk(deployer)
    assert data.count(0) == len(data)  # erased by the agent's erase_devices


def test_deploy_and_undeploy_with_the_openstack_cli(deployer: Deployer, tmp_path: Path) -> None:
    """``openstack baremetal node deploy``/``undeploy`` against our API, the real IPA behind."""
    raw = deployer.images["raw"].read_bytes()
    node = deployer.node(provision_state="available", power_state="power off", name="ipa-cli")
    cli = start_api(deployer.conductor, host="127.0.0.1", port=0)
    url = f"http://127.0.0.1:{cli.port}"
    env = cli_env(url, OS_BAREMETAL_API_VERSION="1.68")
    try:
        sets = [f"instance_info/{k}={v}" for k, v in deployer.instance("raw").items()]
        for item in sets:
            openstack(url, "node", "set", "ipa-cli", "--instance-info", item.split("/", 1)[1],
                      env=env)  # fmt: skip
        openstack(url, "node", "deploy", "ipa-cli", "--wait", "240", env=env)
        shown = openstack(url, "node", "show", "ipa-cli", "-f", "json", env=env)
        assert shown["provision_state"] == "active", shown["last_error"]
        assert _disk(deployer)[: len(raw)] == raw
        openstack(url, "node", "undeploy", "ipa-cli", "--wait", "240", env=env)
        shown = openstack(url, "node", "show", "ipa-cli", "-f", "json", env=env)
        assert shown["provision_state"] == "available", shown["last_error"]
        data = _disk(deployer)
        assert data.count(0) == len(data)
    finally:
        cli.stop()
    assert deployer.conductor.get_node(node.uuid).provision_state == "available"


def test_deploy_callback_timeout_fails_a_deploy_whose_agent_died(deployer: Deployer) -> None:
    node = deployer.waiting_for_its_agent()
    deployer.sandbox.stop()  # the machine died before its agent came up
    later = utcnow() + timedelta(seconds=deployer.conductor.config.deploy_callback_timeout + 1)
    assert deployer.conductor.check_timeouts(now=later) == [node.uuid]
    failed = deployer.wait_for(node.uuid, lambda n: n.provision_state != "wait call-back")
    assert failed.provision_state == "deploy failed"
    assert failed.last_error == f"Timeout reached while waiting for callback for node {node.uuid}"
    assert failed.deploy_step["step"] == "deploy"


@pytest.mark.parametrize("deployer", [{"fast_track": True}], indirect=True)
def test_fast_track_deploys_through_the_agent_left_up_by_cleaning(deployer: Deployer) -> None:
    raw = deployer.images["raw"].read_bytes()
    node = deployer.node(provision_state="manageable", power_state="power off",
                         instance_info=deployer.instance("raw"))  # fmt: skip
    deployer.conductor.do_provisioning_action(node.uuid, "provide")
    cleaned = deployer.wait_for(node.uuid, lambda n: n.provision_state != "clean wait"
                                and n.provision_state != "cleaning")  # fmt: skip
    assert cleaned.provision_state == "available", cleaned.last_error
    assert deployer.sandbox.running()  # fast track: the agent stays up, still heartbeating
    assert cleaned.driver_internal_info["agent_url"]
    deployer.conductor.do_provisioning_action(node.uuid, "deploy")
    done = deployer.wait_for(node.uuid, _settled, heard=True)
    assert done.provision_state == "active", done.last_error
    assert _disk(deployer)[: len(raw)] == raw
    assert deployer.power.boots[node.uuid] == 1  # one ramdisk boot for the clean and the deploy
    waited = [e for e in deployer.events if e.node == node.uuid and e.state == "wait call-back"]
    assert all(e.step.get("step") != "deploy" for e in waited if e.step)


def _rescued(deployer: Deployer) -> Node:
    """A node deployed, then sent to rescue: as it is once the rescue ended, well or not."""
    node = deployer.deployable()
    deployer.conductor.do_provisioning_action(node.uuid, "deploy")
    assert deployer.wait_for(node.uuid, _settled).provision_state == "active"
    deployer.conductor.do_provisioning_action(node.uuid, "rescue", rescue_password="p4ss-w0rd!")
    return deployer.wait_for(node.uuid, lambda n: n.provision_state != "rescue wait"
                             and n.provision_state != "rescuing")  # fmt: skip


def test_rescue_through_the_agent_then_unrescue(deployer: Deployer) -> None:
    rescued = _rescued(deployer)
    node = rescued
    assert rescued.provision_state == "rescue", rescued.last_error
    # The agent has the password's hash (for its rescue user); the node keeps neither.
    assert not {"rescue_password", "hashed_rescue_password"} & set(rescued.instance_info)
    assert deployer.power.boots[node.uuid] == 2  # the deploy's ramdisk, then the rescue's
    hashed = (deployer.sandbox.work / "ipa-rescue-password").read_text()
    assert hashed.startswith("$2b$")
    assert bcrypt.checkpw(b"p4ss-w0rd!", hashed.encode())
    assert "p4ss-w0rd!" not in deployer.sandbox.ipa_log()  # only the hash travelled

    deployer.conductor.do_provisioning_action(node.uuid, "unrescue")
    back = deployer.wait_for(node.uuid, lambda n: n.provision_state != "unrescuing")
    assert back.provision_state == "active", back.last_error
    assert deployer.power.boot_device[node.uuid] == "disk"
    assert deployer.power.instance_boots[node.uuid] == 2
    assert back.power_state == "power on"


def test_a_rescue_the_agent_cannot_finish_fails(deployer: Deployer) -> None:
    # A folder where IPA writes the password's hash: its finalize_rescue fails.
    (deployer.sandbox.work / "ipa-rescue-password").mkdir()
    failed = _rescued(deployer)
    assert failed.provision_state == "rescue failed"
    assert (failed.last_error or "").startswith("Node failed to perform rescue operation: ")
    assert "finalize_rescue" in (failed.last_error or "")
    assert not {"agent_secret_token", "agent_url"} & set(failed.driver_internal_info)
