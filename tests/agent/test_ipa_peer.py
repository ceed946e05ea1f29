"""The real ironic-python-agent 13.0.0 as the peer, in its sandbox, against our real API.

Each test boots the agent on a node whose port carries the sandbox NIC's MAC:
IPA looks the node up over HTTP (without API credentials, on an API that
requires them elsewhere), gets its token, heartbeats, and runs commands
sent by the conductor's agent client. The loop device is the only disk it
can see; what is on it afterwards is part of each assertion.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import ipa_harness
import pytest
from api_helpers import error_text
from ipa_harness import HEARTBEAT_TIMEOUT, MAC, V168, Peer, running_peer
from ipa_sandbox import Sandbox, SandboxPower

from ironic_fsm import HardwareType
from ironic_fsm.agent.client import AgentClient, AgentEndpoint
from ironic_fsm.api import start_api
from ironic_fsm.conductor.common import utcnow
from ironic_fsm.events import STEP_END, Event
from ironic_fsm.exceptions import AgentBusy, AgentTokenRejected, AgentUnreachable
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore


@pytest.fixture
def peer(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    make_sandbox: Callable[..., Sandbox],
    ipa: Path,
) -> Iterator[Peer]:
    """Our conductor and API (http_basic) on the host's end of a sandbox's link."""
    # Steps left to the heartbeats (Ironic's way) unless a test asks for the watch window.
    window = getattr(request, "param", 0.0)
    with running_peer(tmp_path, make_sandbox(MAC, seed=True), ipa, window=window) as peer:
        yield peer


def _agent_up(node: Node) -> bool:
    return bool(node.driver_internal_info.get("agent_url"))


def test_real_ipa_looks_up_once_heartbeats_with_its_token_and_loses_it(
    peer: Peer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="ironic_fsm")
    # A node that waits for an agent and whose deploy interface does nothing with it.
    peer.conductor.register_hardware_type("lookup-only", HardwareType(power=peer.power))
    node = peer.node(driver="lookup-only", provision_state="clean wait", clean_step={})
    peer.sandbox.start(peer.api_url, peer.ipa)
    up = peer.wait_for(node.uuid, _agent_up)
    info = up.driver_internal_info
    token = info["agent_secret_token"]
    assert len(token) == 43
    assert info["agent_url"] == f"https://{peer.sandbox.agent_url}"  # IPA made its certificate
    assert info["agent_version"] == "13.0.0"
    assert info["agent_verify_ca"].startswith("-----BEGIN CERTIFICATE-----")
    first_beat = info["agent_last_heartbeat"]
    peer.wait_for(node.uuid, lambda n: n.driver_internal_info["agent_last_heartbeat"] != first_beat,
                  timeout=HEARTBEAT_TIMEOUT * 3)  # fmt: skip
    assert peer.sandbox.ipa_log().count("Lookup succeeded") == 1

    # A second lookup (another agent, or this one restarted) gets the mask, never the token.
    again = peer.client.get("/v1/lookup", params={"addresses": MAC}, headers=V168, auth=None)
    assert again.status_code == 200
    assert again.json()["config"]["agent_token"] == "******"
    assert again.json()["node"]["uuid"] == node.uuid

    # Heartbeats that are not the agent's: refused, and the agent's record stays as it is.
    kept = ("agent_secret_token", "agent_url", "agent_verify_ca", "agent_version")
    before = {key: info[key] for key in kept}
    for body, text in [
        ({"agent_version": "13.0.0"}, "Agent token is required for heartbeat processing."),
        ({"agent_version": "13.0.0", "agent_token": "x" * 43},
         "Invalid or missing agent token received."),
        ({"agent_version": "13.0.0", "agent_token": token},
         'Detected change in ramdisk provided "callback_url"'),
    ]:  # fmt: skip
        url = "https://192.0.2.1:9999" if body.get("agent_token") == token else info["agent_url"]
        answer = peer.client.post(
            f"/v1/heartbeat/{node.uuid}", json={"callback_url": url, **body}, headers=V168,
            auth=None,
        )  # fmt: skip
        assert answer.status_code == 400
        assert error_text(answer) == text
        now = peer.conductor.get_node(node.uuid).driver_internal_info
        assert {key: now[key] for key in kept} == before

    # The token is nowhere we show or write.
    shown = peer.client.get(f"/v1/nodes/{node.uuid}", headers=V168)
    assert shown.json()["driver_internal_info"]["agent_secret_token"] == "******"
    history = peer.client.get(
        f"/v1/nodes/{node.uuid}/history", headers={"X-OpenStack-Ironic-API-Version": "1.78"}
    )
    for text in (shown.text, history.text, caplog.text, repr(peer.events),
                 repr(peer.conductor.get_node(node.uuid))):  # fmt: skip
        assert token not in text

    # A flow that fails (here: abort in clean wait) ends the agent's part; its next
    # heartbeat is refused, as the token is gone.
    peer.conductor.do_provisioning_action(node.uuid, "abort")
    failed = peer.conductor.get_node(node.uuid)
    assert failed.provision_state == "clean failed"
    assert not {"agent_secret_token", "agent_url"} & set(failed.driver_internal_info)
    deadline = time.monotonic() + HEARTBEAT_TIMEOUT * 3
    while "Invalid or missing agent token received" not in peer.sandbox.ipa_log():
        assert time.monotonic() < deadline, peer.sandbox.ipa_log()[-3000:]
        time.sleep(0.2)


def test_agent_client_against_the_real_ipa(peer: Peer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, httpx's request lines included
    peer.conductor.register_hardware_type("lookup-only", HardwareType(power=peer.power))
    node = peer.node(driver="lookup-only", provision_state="clean wait", clean_step={})
    peer.sandbox.start(peer.api_url, peer.ipa)
    up = peer.wait_for(node.uuid, _agent_up)
    endpoint = AgentEndpoint.of(up.uuid, up.driver_internal_info)
    client = AgentClient(timeout=60)
    answer = client.get_clean_steps(endpoint, {"uuid": up.uuid}, [])
    (manager,) = answer["clean_steps"]
    assert manager == "SandboxHardwareManager"  # the only manager IPA loaded
    steps = {step["step"]: step for step in answer["clean_steps"][manager]}
    assert steps["erase_devices_metadata"]["priority"] == 99
    assert steps["erase_devices"]["priority"] == 10
    assert steps["erase_devices"]["interface"] == "deploy"
    last = client.last_command(endpoint)
    assert last is not None
    assert last["command_name"] == "get_clean_steps"
    assert last["command_status"] == "SUCCEEDED"

    wrong = AgentEndpoint(endpoint.node, endpoint.url, "w" * 43, endpoint.certificate)
    with pytest.raises(AgentTokenRejected) as refused:
        client.get_clean_steps(wrong, {"uuid": up.uuid}, [])
    assert "w" * 43 not in str(refused.value)
    assert endpoint.token not in str(refused.value)

    # A step started without waiting keeps the agent busy: another command is a 409.
    step = {"interface": "deploy", "step": "erase_devices", "priority": 10, "args": {}}
    started = client.execute(
        endpoint, "clean.execute_clean_step",
        {"step": step, "node": {"uuid": up.uuid, "driver_internal_info": {}}, "ports": [],
         "clean_version": answer["hardware_manager_version"]},
        wait=False,
    )  # fmt: skip
    assert started["command_status"] == "RUNNING"
    with pytest.raises(AgentBusy, match=r"is busy with another command"):
        client.get_clean_steps(endpoint, {"uuid": up.uuid}, [])

    peer.sandbox.stop()  # the machine is off: nothing answers at the agent's address
    started = time.monotonic()
    with pytest.raises(AgentUnreachable, match=r"cannot reach the agent"):
        client.get_clean_steps(endpoint, {"uuid": up.uuid}, [])
    assert time.monotonic() - started < 15
    assert "agent_token=******" in caplog.text  # httpx logged the requests, masked
    assert endpoint.token not in caplog.text


@pytest.mark.parametrize("peer", [0.0, 5.0], ids=["heartbeats", "watched"], indirect=True)
def test_automated_clean_erases_the_disk_with_the_real_ipa(peer: Peer) -> None:
    with open(peer.sandbox.disk, "rb") as disk:
        assert disk.read(1 << 20).count(0) < 1 << 16  # seeded with random bytes
    node = peer.node(provision_state="manageable", power_state="power off")
    peer.conductor.do_provisioning_action(node.uuid, "provide")
    done = peer.wait_for(
        node.uuid, lambda n: n.provision_state in ("available", "clean failed"), heard=True
    )
    assert done.provision_state == "available", done.last_error
    assert done.last_error is None
    ran = [e.step["step"] for e in peer.events if e.name == STEP_END and e.node == node.uuid]
    assert ran == ["erase_devices_metadata", "erase_devices"]
    with open(peer.sandbox.disk, "rb") as disk:
        data = disk.read()
    assert len(data) == 64 << 20
    assert data.count(0) == len(data)  # every byte zeroed
    # Cleaning ended with a power off: the agent is gone, and so are its token and URL.
    assert not peer.sandbox.running()
    assert done.power_state == "power off"
    assert not {"agent_secret_token", "agent_url"} & set(done.driver_internal_info)
    assert peer.power.boots[node.uuid] == 1
    cached = done.driver_internal_info["agent_cached_clean_steps"]
    assert {s["step"]: s["priority"] for s in cached}["erase_devices_metadata"] == 99
    waited = [e for e in peer.events if e.node == node.uuid and e.state == "clean wait"]
    if peer.window:  # each step ended within the window: the node never waited for one
        assert all(not e.step for e in waited)


def test_clean_callback_timeout_fails_a_clean_whose_agent_died(peer: Peer) -> None:
    node = peer.node(provision_state="manageable", power_state="power off")
    peer.conductor.do_provisioning_action(node.uuid, "provide")
    waiting = peer.wait_for(
        node.uuid, lambda n: n.provision_state == "clean wait" and bool(n.clean_step)
    )
    peer.sandbox.stop()  # the agent dies mid-step
    later = utcnow() + timedelta(seconds=peer.conductor.config.clean_callback_timeout + 1)
    assert peer.conductor.check_timeouts(now=later) == [node.uuid]
    failed = peer.wait_for(node.uuid, lambda n: n.provision_state != "clean wait")
    assert failed.provision_state == "clean failed"
    assert failed.last_error is not None
    assert failed.last_error.startswith("Timeout reached while cleaning the node.")
    assert waiting.clean_step["step"] in failed.last_error
    assert failed.maintenance
    assert not {"agent_secret_token", "agent_url"} & set(failed.driver_internal_info)


def test_abort_in_clean_wait_stops_the_agent(peer: Peer) -> None:
    node = peer.node(provision_state="manageable", power_state="power off")
    peer.conductor.do_provisioning_action(node.uuid, "provide")
    peer.wait_for(node.uuid, lambda n: n.provision_state == "clean wait" and bool(n.clean_step))
    peer.conductor.do_provisioning_action(node.uuid, "abort")  # IPA's steps are abortable
    aborted = peer.wait_for(node.uuid, lambda n: n.provision_state != "clean wait")
    assert aborted.provision_state == "clean failed"
    assert aborted.last_error is not None
    assert aborted.last_error.startswith("By request, the clean operation was aborted")
    assert not peer.sandbox.running()  # tear-down powered the machine off
    assert not {"agent_secret_token", "agent_url"} & set(aborted.driver_internal_info)


def test_manual_clean_runs_only_the_metadata_erase(peer: Peer) -> None:
    with open(peer.sandbox.disk, "rb") as disk:
        before = disk.read()
    node = peer.node(provision_state="manageable", power_state="power off")
    # The agent's steps are not known yet: the request is checked once the agent told them.
    peer.conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[{"interface": "deploy", "step": "erase_devices_metadata"}]
    )
    done = peer.wait_for(
        node.uuid, lambda n: n.provision_state in ("manageable", "clean failed"), heard=True
    )
    assert done.provision_state == "manageable", done.last_error
    ran = [e.step["step"] for e in peer.events if e.name == STEP_END and e.node == node.uuid]
    assert ran == ["erase_devices_metadata"]
    with open(peer.sandbox.disk, "rb") as disk:
        after = disk.read()
    # Metadata only: the start of the disk wiped, most of it as it was (random bytes).
    assert after[:512] == bytes(512)
    middle = slice(32 << 20, (32 << 20) + (1 << 20))
    assert after[middle] == before[middle]
    assert after[middle].count(0) < 1 << 16


def test_two_nodes_two_agents_two_disks_at_once(
    tmp_path: Path, make_sandbox: Callable[..., Sandbox], ipa: Path
) -> None:
    macs = ["52:54:00:1f:5a:11", "52:54:00:1f:5a:12"]
    sandboxes = [make_sandbox(mac, seed=True) for mac in macs]
    users = ipa_harness.users(tmp_path)
    store = SQLStore(f"sqlite:///{tmp_path / 'nodes.sqlite'}")
    events: list[Event] = []
    power = SandboxPower()
    with ThreadPoolExecutor(8) as executor:
        conductor = ipa_harness.conductor(store, power, executor, events)
        # One API listener per machine's link (each sandbox sees only its own).
        servers = [
            start_api(conductor, host=sb.host_ip, port=0, auth="http_basic", htpasswd=str(users))
            for sb in sandboxes
        ]
        try:
            nodes = []
            for mac, sandbox, server in zip(macs, sandboxes, servers, strict=True):
                node = conductor.create_node(driver="agent-sandbox", provision_state="manageable")
                conductor.create_port(mac, node.uuid)
                power.attach(node.uuid, sandbox, f"http://{sandbox.host_ip}:{server.port}", ipa)
                nodes.append(node.uuid)
            for uuid in nodes:
                conductor.do_provisioning_action(uuid, "provide")
            deadline = time.monotonic() + 180
            while any(
                conductor.get_node(u).provision_state not in ("available", "clean failed")
                for u in nodes
            ):
                assert time.monotonic() < deadline, [conductor.get_node(u) for u in nodes]
                time.sleep(0.1)
            for uuid, sandbox in zip(nodes, sandboxes, strict=True):
                done = conductor.get_node(uuid)
                assert done.provision_state == "available", done.last_error
                ran = [e.step["step"] for e in events if e.name == STEP_END and e.node == uuid]
                assert ran == ["erase_devices_metadata", "erase_devices"]
                with open(sandbox.disk, "rb") as disk:
                    data = disk.read()
                assert data.count(0) == len(data)
                assert power.boots[uuid] == 1
                assert sandbox.ipa_log().count("Lookup succeeded, node UUID is " + uuid) == 1
        finally:
            for server in servers:
                server.stop()
            store.close()


def test_a_clean_step_that_asks_for_a_reboot_gets_one(peer: Peer) -> None:
    node = peer.node(provision_state="manageable", power_state="power off")
    steps = [{"interface": "deploy", "step": "ifsm_mark_and_reboot"},
             {"interface": "deploy", "step": "erase_devices_metadata"}]  # fmt: skip
    peer.conductor.do_provisioning_action(node.uuid, "clean", clean_steps=steps)
    done = peer.wait_for(
        node.uuid, lambda n: n.provision_state in ("manageable", "clean failed"), heard=True
    )
    assert done.provision_state == "manageable", done.last_error
    ran = [e.step["step"] for e in peer.events if e.name == STEP_END and e.node == node.uuid]
    assert ran == ["ifsm_mark_and_reboot", "erase_devices_metadata"]
    assert (peer.sandbox.work / "marks.log").read_text() == "ifsm_mark_and_reboot\n"
    # The step's reboot: a second ramdisk boot, whose agent ran the next step.
    assert peer.power.boots[node.uuid] == 2
    assert peer.sandbox.ipa_log().count("Lookup succeeded") == 2
    with open(peer.sandbox.disk, "rb") as disk:
        assert disk.read(512) == bytes(512)
