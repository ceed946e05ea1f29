"""Interfaces chosen per node over HTTP: openstacksdk and ``openstack baremetal`` as clients.

The cases of issue 20: ``deploy_interface: fake`` and ``raid_interface:
no-raid`` on fake-hardware, gophercloud's ``ipmi`` node with ``ipxe`` boot
and ``agent`` RAID, ``reset_interfaces``, the drivers' ``default_*`` and
``enabled_*`` fields (1.30), and an ``ipmi`` node without pyghmi (400, not 500).
"""

from __future__ import annotations

import select
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openstack
import pytest
from api_helpers import LATEST, api_in_process, cli_env, error_text
from api_helpers import openstack as baremetal
from procs import stop_processes

from ironic_fsm import Conductor
from ironic_fsm.interfaces import INTERFACE_KINDS

IPMI_INFO = {"ipmi_address": "192.0.2.1", "ipmi_username": "u", "ipmi_password": "p"}


@pytest.fixture(name="served")
def served_fixture(tmp_path: Path) -> Iterator[tuple[Conductor, str]]:
    with api_in_process(tmp_path / "ifaces.sqlite") as (conductor, _, url):
        yield conductor, url


@pytest.fixture(name="client")
def client_fixture(served: tuple[Conductor, str]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served[1], headers=LATEST, timeout=60) as client:
        yield client


@pytest.fixture(name="sdk")
def sdk_fixture(served: tuple[Conductor, str]) -> Iterator[Any]:
    conn = openstack.connection.Connection(auth_type="none", baremetal_endpoint_override=served[1])
    try:
        yield conn
    finally:
        conn.close()


def test_sdk_creates_nodes_with_the_issues_interfaces(
    served: tuple[Conductor, str], sdk: Any
) -> None:
    conductor, _ = served
    node = sdk.baremetal.create_node(driver="fake-hardware", deploy_interface="fake")
    assert node.deploy_interface == "fake"
    node = sdk.baremetal.update_node(node, raid_interface="no-raid")
    assert node.raid_interface == "no-raid"
    assert conductor.get_node(node.id).raid_interface == "no-raid"
    # gophercloud's node.
    ipmi = sdk.baremetal.create_node(
        driver="ipmi", driver_info=IPMI_INFO, boot_interface="ipxe", raid_interface="agent"
    )
    assert (ipmi.boot_interface, ipmi.raid_interface) == ("ipxe", "agent")
    assert (ipmi.power_interface, ipmi.network_interface) == ("ipmitool", "flat")
    assert ipmi.storage_interface == "noop"


def test_a_disabled_or_unsupported_interface_is_a_400_changing_nothing(
    served: tuple[Conductor, str], client: httpx.Client
) -> None:
    conductor, _ = served
    created = client.post("/v1/nodes", json={"driver": "ipmi", "name": "i1"})
    assert created.status_code == 201, created.text
    before = conductor.get_node("i1")
    refused = client.patch(
        "/v1/nodes/i1", json=[{"op": "replace", "path": "/raid_interface", "value": "redfish"}]
    )
    assert refused.status_code == 400
    assert "raid interface implementation 'redfish' is not supported" in error_text(refused)
    unknown = client.post("/v1/nodes", json={"driver": "fake-hardware", "boot_interface": "x"})
    assert unknown.status_code == 400
    assert error_text(unknown).startswith("Could not find the following interface in the")
    assert conductor.get_node("i1") == before
    assert len(conductor.list_nodes()) == 1


def test_reset_interfaces_on_a_driver_change(
    served: tuple[Conductor, str], client: httpx.Client
) -> None:
    conductor, _ = served
    body = {"driver": "fake-hardware", "name": "n1", "raid_interface": "no-raid"}
    assert client.post("/v1/nodes", json=body).status_code == 201
    change = [{"op": "replace", "path": "/driver", "value": "manual-management"}]
    kept = client.patch("/v1/nodes/n1?reset_interfaces=false", json=change)
    assert kept.status_code == 200, kept.text
    assert kept.json()["raid_interface"] == "no-raid"
    back = [{"op": "replace", "path": "/driver", "value": "fake-hardware"}]
    reset = client.patch("/v1/nodes/n1?reset_interfaces=true", json=back)
    assert reset.status_code == 200, reset.text
    assert reset.json()["raid_interface"] == "fake"
    assert conductor.get_node("n1").raid_interface is None
    alone = [{"op": "replace", "path": "/raid_interface", "value": "no-raid"}]
    refused = client.patch("/v1/nodes/n1?reset_interfaces=true", json=alone)
    assert refused.status_code == 400
    assert "can only be used when changing the node's driver" in error_text(refused)
    old = client.patch(
        "/v1/nodes/n1?reset_interfaces=true", json=back,
        headers={"X-OpenStack-Ironic-API-Version": "1.44"},
    )  # fmt: skip
    assert old.status_code == 406
    assert conductor.get_node("n1").raid_interface is None


def test_drivers_show_defaults_and_enabled_interfaces(client: httpx.Client, sdk: Any) -> None:
    one = client.get("/v1/drivers/ipmi").json()
    assert one["default_boot_interface"] == "ipxe"
    assert one["enabled_raid_interfaces"] == ["no-raid", "agent", "fake"]
    assert one["default_storage_interface"] == "noop"
    assert {f"default_{k}_interface" for k in INTERFACE_KINDS} <= set(one)
    listed = client.get("/v1/drivers", params={"detail": "true"}).json()["drivers"]
    fake = next(d for d in listed if d["name"] == "fake-hardware")
    assert fake["default_deploy_interface"] == "fake"
    assert "default_deploy_interface" not in client.get("/v1/drivers").json()["drivers"][0]
    old = client.get("/v1/drivers/ipmi", headers={"X-OpenStack-Ironic-API-Version": "1.37"})
    assert "default_boot_interface" in old.json()
    assert "default_rescue_interface" not in old.json()
    assert (
        "default_boot_interface"
        not in client.get(
            "/v1/drivers/ipmi", headers={"X-OpenStack-Ironic-API-Version": "1.29"}
        ).json()
    )
    driver = sdk.baremetal.get_driver("fake-hardware")
    assert driver.default_raid_interface == "fake"
    assert "no-raid" in driver.enabled_raid_interfaces
    detailed = {d.name: d for d in sdk.baremetal.drivers(details=True)}
    assert detailed["manual-management"].default_management_interface == "noop"


def test_openstack_cli_chooses_and_resets_interfaces(served: tuple[Conductor, str]) -> None:
    conductor, url = served
    env = cli_env(url, OS_BAREMETAL_API_VERSION="latest")
    made = baremetal(url, "node", "create", "--driver", "fake-hardware", "--name", "c1",
                     "--deploy-interface", "fake", "-f", "json", env=env)  # fmt: skip
    assert made["deploy_interface"] == "fake"
    baremetal(url, "node", "set", "c1", "--raid-interface", "no-raid", env=env)
    assert conductor.get_node("c1").raid_interface == "no-raid"
    baremetal(url, "node", "set", "c1", "--driver", "manual-management", "--reset-interfaces",
              env=env)  # fmt: skip
    shown = baremetal(url, "node", "show", "c1", "-f", "json", env=env)
    assert (shown["raid_interface"], shown["management_interface"]) == ("no-raid", "noop")
    driver = baremetal(url, "driver", "show", "fake-hardware", "-f", "json", env=env)
    assert driver["default_deploy_interface"] == "fake"
    assert "fake" in driver["enabled_raid_interfaces"]
    listed = baremetal(url, "driver", "list", "--long", "-f", "json", env=env)
    row = next(d for d in listed if d["name"] == "ipmi")
    assert (row["type"], row["default_boot_interface"]) == ("dynamic", "ipxe")
    assert row["enabled_raid_interfaces"] == "no-raid, agent, fake"


_NO_PYGHMI = textwrap.dedent(
    """
    import runpy, sys
    sys.modules["pyghmi"] = None  # as if the ipmi extra were not installed
    sys.argv = ["ironic_fsm.api", *sys.argv[1:]]
    runpy.run_module("ironic_fsm.api", run_name="__main__")
    """
)


def test_an_ipmi_node_without_pyghmi_is_a_400(tmp_path: Path) -> None:
    log = (tmp_path / "api.stderr").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-c", _NO_PYGHMI, "--db", f"sqlite:///{tmp_path / 'db.sqlite'}",
         "--api", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=log, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        port = proc.stdout.readline().strip() if ready else ""
        assert port.isdigit(), (tmp_path / "api.stderr").read_text()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=LATEST, timeout=60) as c:
            refused = c.post("/v1/nodes", json={"driver": "ipmi", "driver_info": IPMI_INFO})
            assert refused.status_code == 400, refused.text
            assert "pyghmi" in error_text(refused)
            assert "ipmi" in error_text(refused)
            assert c.get("/v1/nodes").json()["nodes"] == []
            fine = c.post("/v1/nodes", json={"driver": "fake-hardware"})
            assert fine.status_code == 201
            swap = c.patch(
                f"/v1/nodes/{fine.json()['uuid']}",
                json=[{"op": "replace", "path": "/power_interface", "value": "ipmitool"}],
            )
            assert swap.status_code == 400, swap.text
            assert "pyghmi" in error_text(swap)
    finally:
        stop_processes([proc], timeout=15)
        log.close()
