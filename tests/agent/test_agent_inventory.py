"""``agent`` inspection's processing over HTTP (no IPA here): properties, ports, refusals.

The real IPA posts in test_ipa_inspect.py; here the inventories are
Ironic-shaped documents posted to ``/v1/continue_inspection`` for nodes of
a fake-powered hardware type with the ``agent`` inspect interface waiting in
``inspect wait``: each ``add_ports`` choice, Ironic's properties, the 1.84
answer with the token, refusals that change nothing, and the same
inventory through the library, the API and the CLI.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bcrypt
import httpx
import pytest
from api_helpers import cli_env, error_text, openstack
from cli_harness import isolate_cli_env, runner

from ironic_fsm import Conductor, Config, HardwareType, states
from ironic_fsm.api import start_api
from ironic_fsm.drivers.agent_inspect import AgentInspect
from ironic_fsm.drivers.fake import FakeBoot, FakePower
from ironic_fsm.exceptions import InvalidParameterValue, ResourceNotFound
from ironic_fsm.stores import SQLStore

PXE = "52:54:00:aa:00:01"
ACTIVE = "52:54:00:aa:00:02"
IDLE = "52:54:00:aa:00:03"
GIB = 1024**3
INVENTORY: dict[str, Any] = {
    "cpu": {"count": 16, "architecture": "aarch64", "model_name": "ARM", "flags": []},
    "memory": {"total": 64 * GIB, "physical_mb": 65536},
    "disks": [
        {"name": "/dev/sda", "size": 500 * GIB, "rotational": True},
        {"name": "/dev/sdb", "size": 2 * GIB, "rotational": False},
        {"name": "/dev/nvme0n1", "size": 100 * GIB, "rotational": False},
    ],
    "interfaces": [
        {"name": "eth0", "mac_address": PXE.upper(), "ipv4_address": "192.0.2.10"},
        {"name": "eth1", "mac_address": ACTIVE, "ipv6_address": "2001:db8::5%eth1",
         "client_id": "ff:00:01"},
        {"name": "eth2", "mac_address": IDLE},
        {"name": "lo", "mac_address": "00:00:00:00:00:00", "ipv4_address": "127.0.0.1"},
        {"name": "bad", "mac_address": "not-a-mac"},
    ],
    "boot": {"current_boot_mode": "uefi", "pxe_interface": f"01-{PXE.replace(':', '-')}"},
    "bmc_address": "0.0.0.0",
}  # fmt: skip
OTHER = "52:54:00:bb:00:01"


def _booted_from(mac: str) -> dict[str, Any]:
    """INVENTORY of another machine: its first NIC (the one it booted from) is ``mac``."""
    inventory = copy.deepcopy(INVENTORY)
    inventory["interfaces"] = [dict(inventory["interfaces"][0], mac_address=mac)]
    inventory["boot"]["pxe_interface"] = mac
    return inventory


V181 = {"X-OpenStack-Ironic-API-Version": "1.81"}
V184 = {"X-OpenStack-Ironic-API-Version": "1.84"}


class Served:
    def __init__(self, conductor: Conductor, client: httpx.Client, db: Path) -> None:
        self.conductor, self.client, self.db = conductor, client, db

    def waiting(self, mac: str = PXE, **fields: Any) -> str:
        """A node inspecting through the agent, waiting for its inventory, with its PXE port."""
        node = self.conductor.create_node(
            driver="agent-fake", provision_state=states.INSPECTWAIT, power_state="power on",
            **fields,
        )  # fmt: skip
        self.conductor.create_port(mac, node.uuid)
        return node.uuid

    def post(self, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
        return self.client.post("/v1/continue_inspection", json=body, headers=headers or {})

    def ports(self, uuid: str) -> dict[str, Any]:
        return {p.address: p for p in self.conductor.list_ports(node=uuid)}


def _served(tmp_path: Path, add_ports: str, **options: Any) -> Iterator[Served]:
    users = tmp_path / "htpasswd"
    users.write_text(f"admin:{bcrypt.hashpw(b'pw', bcrypt.gensalt(rounds=4)).decode()}\n")
    db = tmp_path / "nodes.sqlite"
    store = SQLStore(f"sqlite:///{db}")
    config = Config(api_url="http://192.0.2.1:6385", inspector_add_ports=add_ports, **options)
    conductor = Conductor(store, config)
    conductor.register_hardware_type(
        "agent-fake", HardwareType(power=FakePower(), boot=FakeBoot(), inspect=AgentInspect())
    )
    server = start_api(conductor, host="127.0.0.1", port=0, auth="http_basic", htpasswd=str(users))
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as client:
            yield Served(conductor, client, db)
    finally:
        server.stop()
        store.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from _served(tmp_path, "pxe")


@pytest.mark.parametrize(
    ("add_ports", "made"),
    [("all", {ACTIVE, IDLE}), ("active", {ACTIVE}), ("pxe", set()), ("disabled", set())],
)
def test_ports_are_made_as_add_ports_asks(tmp_path: Path, add_ports: str, made: set[str]) -> None:
    for served in _served(tmp_path, add_ports):
        uuid = served.waiting()
        answer = served.post({"inventory": INVENTORY})  # IPA: no version header, no credentials
        assert answer.status_code == 202
        assert answer.json() == {"uuid": uuid}
        ports = served.ports(uuid)
        assert set(ports) == {PXE, *made}
        if ACTIVE in made:
            assert ports[ACTIVE].pxe_enabled is False
            assert ports[ACTIVE].extra == {"client-id": "ff:00:01"}


@pytest.mark.parametrize(
    ("keep_ports", "add_ports", "kept"),
    [
        ("all", "pxe", {PXE, ACTIVE, OTHER}),
        ("present", "pxe", {PXE, ACTIVE}),  # OTHER is in no interface of the inventory
        ("added", "pxe", {PXE}),  # add_ports pxe would have made only the PXE one
        ("added", "active", {PXE, ACTIVE}),
    ],
)
def test_the_nodes_ports_are_kept_as_keep_ports_asks(
    tmp_path: Path, keep_ports: str, add_ports: str, kept: set[str]
) -> None:
    """Ports the node had: deleted or kept as ``[inspector]keep_ports`` says; a kept one's
    pxe_enabled follows the interface the ramdisk booted from, its client-id the inventory's."""
    for served in _served(tmp_path, add_ports, inspector_keep_ports=keep_ports):
        uuid = served.waiting()
        served.conductor.update_port(served.ports(uuid)[PXE].uuid, pxe_enabled=False)
        served.conductor.create_port(ACTIVE, uuid, pxe_enabled=True, extra={"client-id": "x"})
        served.conductor.create_port(OTHER, uuid)
        assert served.post({"inventory": INVENTORY}).status_code == 202
        ports = served.ports(uuid)
        assert set(ports) == kept
        assert ports[PXE].pxe_enabled is True
        if ACTIVE in kept:
            assert ports[ACTIVE].pxe_enabled is False
            assert ports[ACTIVE].extra == {"client-id": "ff:00:01"}
        if OTHER in kept:
            assert ports[OTHER].pxe_enabled is False


def test_pxe_enabled_is_left_alone_without_update_pxe_enabled(tmp_path: Path) -> None:
    for served in _served(tmp_path, "all", inspector_update_pxe_enabled=False):
        uuid = served.waiting()
        served.conductor.update_port(served.ports(uuid)[PXE].uuid, pxe_enabled=False)
        served.conductor.create_port(OTHER, uuid, pxe_enabled=True)
        assert served.post({"inventory": INVENTORY}).status_code == 202
        ports = served.ports(uuid)
        assert (ports[PXE].pxe_enabled, ports[OTHER].pxe_enabled) == (False, True)
        assert ports[IDLE].pxe_enabled is False  # a port made now: from the inventory


def test_properties_are_set_as_ironic_sets_them_and_the_inventory_is_kept(
    served: Served,
) -> None:
    uuid = served.waiting(properties={"capabilities": "boot_mode:uefi"})
    plugin = {"root_disk": INVENTORY["disks"][2], "error": None, "configuration": {}}
    answer = served.post({"inventory": INVENTORY, **plugin})
    assert answer.status_code == 202
    node = served.conductor.get_node(uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.power_state == states.POWER_OFF
    assert node.properties == {
        "capabilities": "boot_mode:uefi", "cpus": 16, "memory_mb": 65536,
        "cpu_arch": "aarch64", "local_gb": 99,
    }  # fmt: skip
    kept = served.conductor.get_node_inventory(uuid)
    assert kept.inventory == INVENTORY
    assert kept.plugin_data == plugin
    # Without the agent's choice: the smallest disk of 4 GiB or more, as IPA guesses.
    again = served.waiting(OTHER)
    served.post({"inventory": _booted_from(OTHER)})
    assert served.conductor.get_node(again).properties["local_gb"] == 99


def test_the_library_the_api_and_the_cli_show_the_same_inventory(
    served: Served, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    uuid = served.waiting(name="inspected")
    served.post({"inventory": INVENTORY, "error": None})
    kept = served.conductor.get_node_inventory("inspected")
    expected = {"inventory": kept.inventory, "plugin_data": kept.plugin_data}
    api = served.client.get(f"/v1/nodes/{uuid}/inventory", headers=V181, auth=("admin", "pw"))
    assert api.status_code == 200
    assert api.json() == expected
    isolate_cli_env(tmp_path, monkeypatch)
    run = runner(str(served.db), capsys)
    result = run("node", "inventory", "inspected")
    assert result.code == 0, result.err
    assert json.loads(result.out) == expected
    saved = tmp_path / "inventory.json"
    assert run("node", "inventory", uuid, "--file", str(saved)).code == 0
    assert json.loads(saved.read_text()) == expected

    # openstack baremetal's own command reads the same document from the API.
    env = cli_env(str(served.client.base_url))
    env.update(OS_AUTH_TYPE="http_basic", OS_USERNAME="admin", OS_PASSWORD="pw")
    openstack_saved = tmp_path / "openstack.json"
    openstack("", "node", "inventory", "save", "--file", str(openstack_saved), uuid, env=env)
    assert json.loads(openstack_saved.read_text()) == expected

    # A node never inspected: the same refusal everywhere.
    other = served.conductor.create_node(driver="agent-fake").uuid
    with pytest.raises(ResourceNotFound, match=f"Inventory not found for node {other}"):
        served.conductor.get_node_inventory(other)
    missing = served.client.get(f"/v1/nodes/{other}/inventory", headers=V181,
                                auth=("admin", "pw"))  # fmt: skip
    assert missing.status_code == 404
    assert error_text(missing) == f"Inventory not found for node {other}."
    refused = run("node", "inventory", other)
    assert refused.code != 0
    assert f"Inventory not found for node {other}." in refused.err
    # Before 1.81 the endpoint does not exist.
    old = served.client.get(f"/v1/nodes/{uuid}/inventory", auth=("admin", "pw"))
    assert old.status_code == 404


def test_from_1_84_the_answer_is_a_lookup_with_the_token_given_once(served: Served) -> None:
    uuid = served.waiting()
    answer = served.post({"inventory": INVENTORY}, V184)
    assert answer.status_code == 202
    body = answer.json()
    assert body["node"]["uuid"] == uuid
    token = body["config"]["agent_token"]
    assert len(token) == 43
    # The inspection powered the machine off: the token went with its agent.
    node = served.conductor.get_node(uuid)
    assert "agent_secret_token" not in node.driver_internal_info
    assert token not in json.dumps(node.driver_internal_info)
    # The node no longer waits: a second post is the lookup's 404, and nothing changes.
    before = served.conductor.get_node(uuid)
    assert served.post({"inventory": INVENTORY}, V184).status_code == 404
    assert served.conductor.get_node(uuid) == before
    # node_uuid only from 1.84; other versions than 1.1 and 1.84+ do not have the endpoint.
    waiting = served.waiting(OTHER)
    by_uuid = {"inventory": {"interfaces": [{"mac_address": "52:54:00:ff:ff:ff"}]}}
    old = served.client.post("/v1/continue_inspection", params={"node_uuid": waiting},
                             json=by_uuid)  # fmt: skip
    assert old.status_code == 404
    v180 = {"X-OpenStack-Ironic-API-Version": "1.80"}
    assert served.post({"inventory": _booted_from(OTHER)}, v180).status_code == 404
    assert served.conductor.get_node(waiting).provision_state == states.INSPECTWAIT


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"inventory": []},
        {"inventory": {"interfaces": []}},
        {"inventory": {"interfaces": [{"name": "eth0"}]}},
        {"inventory": {"interfaces": [{"name": "eth0", "mac_address": "nope"}]}},
    ],
)
def test_an_unusable_inventory_is_refused_and_nothing_changes(
    served: Served, body: dict[str, Any]
) -> None:
    uuid = served.waiting()
    before = served.conductor.get_node(uuid)
    answer = served.post(body)
    assert answer.status_code == 400
    assert served.conductor.get_node(uuid) == before
    with pytest.raises(ResourceNotFound):
        served.conductor.get_node_inventory(uuid)


def test_an_inventory_without_memory_fails_the_inspection_and_keeps_nothing(
    served: Served,
) -> None:
    uuid = served.waiting()
    broken = copy.deepcopy(INVENTORY)
    del broken["memory"]
    assert served.post({"inventory": broken}).status_code == 202
    node = served.conductor.get_node(uuid)
    assert node.provision_state == states.INSPECTFAIL
    assert node.last_error == (
        f"Failed to process inspection data of node {uuid}: Inventory has malformed or "
        "missing memory information: None."
    )
    assert "memory_mb" not in node.properties
    assert set(served.ports(uuid)) == {PXE}
    with pytest.raises(ResourceNotFound):
        served.conductor.get_node_inventory(uuid)


def test_inspection_needs_the_api_url(tmp_path: Path) -> None:
    conductor = Conductor(SQLStore(f"sqlite:///{tmp_path / 'n.sqlite'}"))
    conductor.register_hardware_type(
        "agent-fake", HardwareType(power=FakePower(), inspect=AgentInspect())
    )
    node = conductor.create_node(driver="agent-fake", provision_state=states.MANAGEABLE)
    before = conductor.get_node(node.uuid)
    with pytest.raises(Exception, match=r"agent inspection needs Config\.api_url"):
        conductor.do_provisioning_action(node.uuid, "inspect")
    after = conductor.get_node(node.uuid)
    assert after.provision_state == states.MANAGEABLE
    assert after.reservation is None
    assert after == before


@pytest.mark.parametrize(
    ("option", "value"),
    [("api_url", "ftp://192.0.2.1/"), ("api_url", "192.0.2.1:6385"),
     ("inspector_add_ports", "some"), ("inspector_keep_ports", "some")],
)  # fmt: skip
def test_the_inspection_options_are_checked(option: str, value: str) -> None:
    with pytest.raises(InvalidParameterValue, match=option):
        Config(**{option: value})


def test_an_error_the_ramdisk_reported_fails_the_inspection(served: Served) -> None:
    uuid = served.waiting()
    answer = served.post({"inventory": INVENTORY, "error": "collector logs failed: boom"})
    assert answer.status_code == 202
    node = served.conductor.get_node(uuid)
    assert node.provision_state == states.INSPECTFAIL
    assert node.last_error == (
        f"Failed to process inspection data of node {uuid}: "
        "Ramdisk reported error: collector logs failed: boom"
    )
    assert "cpus" not in node.properties
    assert node.power_state == states.POWER_OFF  # the agent ended
    with pytest.raises(ResourceNotFound):
        served.conductor.get_node_inventory(uuid)
