"""``agent`` inspection with the real ironic-python-agent 13.0.0 in its sandbox.

Inspecting boots the ramdisk with ``ipa-inspection-callback-url`` on its
command line (:class:`ipa_sandbox.SandboxBoot` hands it to the sandbox's
IPA); IPA posts its inventory to ``/v1/continue_inspection`` before its
lookup, without API credentials; the node ends ``manageable``, powered off
(the agent gone), with its inventory kept as the agent sent it (the loop
device its only disk), its properties set and its ports made.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ipa_harness import MAC, Peer, running_peer
from ipa_sandbox import Sandbox, SandboxBoot, SandboxPower

from ironic_fsm import Config, HardwareType, states
from ironic_fsm.drivers.agent_inspect import AgentInspect
from ironic_fsm.exceptions import ResourceNotFound

EXTRA_MAC = "52:54:00:1f:5a:7e"
V181 = {"X-OpenStack-Ironic-API-Version": "1.81"}
V184 = {"X-OpenStack-Ironic-API-Version": "1.84"}


def _inspecting(power: SandboxPower) -> dict[str, Any]:
    return {"boot": SandboxBoot(power), "inspect": AgentInspect()}


@pytest.fixture
def peer(tmp_path: Path, make_sandbox: Callable[..., Sandbox], ipa: Path) -> Iterator[Peer]:
    sandbox = make_sandbox(MAC)
    sandbox.extra_macs = [EXTRA_MAC]
    config = Config(ramdisk_heartbeat_timeout=6, inspector_add_ports="all")
    with running_peer(tmp_path, sandbox, ipa, config=config, kinds=_inspecting) as peer:
        yield peer


def test_inspection_stores_the_agents_inventory_sets_properties_and_makes_ports(
    peer: Peer,
) -> None:
    node = peer.node(provision_state=states.MANAGEABLE)
    assert peer.sandbox.extra_macs == [EXTRA_MAC]
    peer.conductor.do_provisioning_action(node.uuid, "inspect")
    assert peer.sandbox.wait_checked() == "checked"  # only the loop device is visible
    done = peer.wait_for(node.uuid, lambda n: n.provision_state != states.INSPECTWAIT)
    assert done.provision_state == states.MANAGEABLE, done.last_error
    assert done.last_error is None
    assert done.power_state == states.POWER_OFF
    assert not peer.sandbox.running()  # powering off ended the agent
    assert "agent_secret_token" not in done.driver_internal_info
    assert peer.power.boots[node.uuid] == 1
    assert "Posting collected data to" in peer.sandbox.ipa_log()

    # The inventory as the agent sent it: its disk is the loop device, its NICs both.
    kept = peer.conductor.get_node_inventory(node.uuid)
    inventory = kept.inventory
    [disk] = inventory["disks"]
    assert disk["name"] == peer.sandbox.disk
    assert disk["size"] == 64 * 1024 * 1024
    assert [i["mac_address"] for i in inventory["interfaces"]] == [MAC, EXTRA_MAC]
    assert inventory["cpu"]["architecture"] == "x86_64"
    assert inventory["boot"]["pxe_interface"] == MAC
    assert kept.plugin_data["configuration"]["collectors"] == ["default"]
    assert kept.plugin_data["error"] is None

    # Properties as Ironic's hooks set them (a 64 MiB disk is no root disk: 0 GiB).
    assert done.properties["cpus"] == 2
    assert done.properties["memory_mb"] == 4096
    assert done.properties["cpu_arch"] == "x86_64"
    assert done.properties["local_gb"] == 0

    # add_ports=all: the second NIC got a port, not booted from; the first kept its own.
    ports = {p.address: p for p in peer.conductor.list_ports(node=node.uuid)}
    assert sorted(ports) == sorted([MAC, EXTRA_MAC])
    assert ports[EXTRA_MAC].pxe_enabled is False

    # Served at /v1/nodes/{node}/inventory from 1.81, with credentials, as stored.
    answer = peer.client.get(f"/v1/nodes/{node.uuid}/inventory", headers=V181)
    assert answer.status_code == 200
    assert answer.json() == {"inventory": inventory, "plugin_data": kept.plugin_data}
    assert peer.client.get(f"/v1/nodes/{node.uuid}/inventory").status_code == 404
    anonymous = peer.client.get(f"/v1/nodes/{node.uuid}/inventory", headers=V181, auth=None)
    assert anonymous.status_code == 401


def test_an_inventory_for_a_node_not_inspecting_is_refused_and_nothing_changes(
    peer: Peer,
) -> None:
    node = peer.node(provision_state=states.MANAGEABLE)
    before = peer.conductor.get_node(node.uuid)
    body = {"inventory": {"interfaces": [{"name": "eth0", "mac_address": MAC}]}}
    answer = peer.client.post("/v1/continue_inspection", json=body, auth=None)
    assert answer.status_code == 404
    assert peer.conductor.get_node(node.uuid) == before
    with pytest.raises(ResourceNotFound, match="Inventory not found"):
        peer.conductor.get_node_inventory(node.uuid)
    # No address to find a node by: 400.
    empty = peer.client.post("/v1/continue_inspection", json={"inventory": {}}, auth=None)
    assert empty.status_code == 400


def test_abort_in_inspect_wait_powers_off_and_a_wrong_token_is_refused(peer: Peer) -> None:
    """The agent here never posts (its boot interface puts no callback URL on its command
    line): it looks the node up and heartbeats while the node waits."""
    peer.conductor.register_hardware_type(
        "wait-only", HardwareType(power=peer.power, inspect=AgentInspect())
    )
    node = peer.node(driver="wait-only", provision_state=states.MANAGEABLE)
    peer.conductor.do_provisioning_action(node.uuid, "inspect")
    peer.wait_for(node.uuid, lambda n: n.provision_state == states.INSPECTWAIT)
    # Lookup and heartbeats go on in inspect wait; a heartbeat with another token: 400.
    up = peer.wait_for(node.uuid, lambda n: bool(n.driver_internal_info.get("agent_url")))
    forged = peer.client.post(
        f"/v1/heartbeat/{node.uuid}",
        json={"callback_url": up.driver_internal_info["agent_url"], "agent_version": "13.0.0",
              "agent_token": "x" * 43},
        headers={"X-OpenStack-Ironic-API-Version": "1.68"}, auth=None,
    )  # fmt: skip
    assert forged.status_code == 400
    assert peer.conductor.get_node(node.uuid).driver_internal_info == up.driver_internal_info
    peer.conductor.do_provisioning_action(node.uuid, "abort")
    failed = peer.wait_for(node.uuid, lambda n: n.provision_state == states.INSPECTFAIL)
    assert failed.last_error == "Inspection was aborted by request."
    assert failed.power_state == states.POWER_OFF
    assert "agent_secret_token" not in failed.driver_internal_info
    deadline = time.monotonic() + 30
    while peer.sandbox.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not peer.sandbox.running()
