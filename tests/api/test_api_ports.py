"""``/v1/ports`` through the real clients (openstacksdk, ``openstack baremetal``) over HTTP,
on a SQLite file and on PostgreSQL; one answer with the library and ``ironic-fsm port``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from api_helpers import LATEST, api_process, error_text, sdk
from api_helpers import openstack as osc

SQL_KINDS = ["sqlite", "postgres"]


@pytest.fixture(scope="module", params=SQL_KINDS)
def url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    where = tmp_path_factory.mktemp("ports")
    if request.param == "sqlite":
        with api_process(where / "ports.sqlite") as base:
            yield base
        return
    from conftest import fresh_postgres_url

    for db_url in fresh_postgres_url(request.getfixturevalue("postgres_server")):
        with api_process(where / "pg", url=db_url) as base:
            yield base


@pytest.fixture(scope="module")
def conn(url: str) -> Iterator[Any]:
    with sdk(url) as connection:
        yield connection


@pytest.fixture(scope="module")
def http(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url, headers=LATEST, timeout=60) as client:
        yield client


def _at(version: str) -> dict[str, str]:
    return {"X-OpenStack-Ironic-API-Version": version}


def test_sdk_port_lifecycle(conn: Any) -> None:
    node = conn.baremetal.create_node(driver="fake-hardware", name="sdk-ports")
    port = conn.baremetal.create_port(
        node_id=node.id, address="AA:BB:CC:00:01:01", extra={"rack": 4},
        local_link_connection={"switch_id": "0A:1B:2C:3D:4E:5F", "port_id": "Eth1/1"},
        physical_network="physnet1",
    )  # fmt: skip
    assert port.address == "aa:bb:cc:00:01:01"  # stored normalised
    assert port.local_link_connection["switch_id"] == "0a:1b:2c:3d:4e:5f"
    assert (port.is_pxe_enabled, port.is_smartnic, port.node_id) == (True, False, node.id)
    fetched = conn.baremetal.get_port(port.id)
    assert (fetched.extra, fetched.physical_network) == ({"rack": 4}, "physnet1")
    listed = list(conn.baremetal.ports(node=node.id, details=True))
    assert [(p.id, p.extra) for p in listed] == [(port.id, {"rack": 4})]
    by_address = list(conn.baremetal.ports(address="aa:bb:cc:00:01:01"))
    assert [p.id for p in by_address] == [port.id]
    updated = conn.baremetal.update_port(port.id, extra={"rack": 5}, is_pxe_enabled=False)
    assert (updated.extra, updated.is_pxe_enabled) == ({"rack": 5}, False)
    patched = conn.baremetal.patch_port(port.id, [{"op": "add", "path": "/name", "value": "eth0"}])
    assert patched.name == "eth0"
    assert conn.baremetal.get_port("eth0").id == port.id
    conn.baremetal.delete_port(port.id)
    assert list(conn.baremetal.ports(node=node.id)) == []
    conn.baremetal.delete_port(port.id, ignore_missing=True)


def test_deleting_a_node_deletes_its_ports(conn: Any, http: httpx.Client) -> None:
    node = conn.baremetal.create_node(driver="fake-hardware", name="doomed-ports")
    kept = conn.baremetal.create_node(driver="fake-hardware", name="kept-ports")
    for i in range(3):
        conn.baremetal.create_port(node_id=node.id, address=f"aa:bb:cc:00:02:0{i}")
    survivor = conn.baremetal.create_port(node_id=kept.id, address="aa:bb:cc:00:02:09")
    assert len(http.get(f"/v1/nodes/{node.id}/ports").json()["ports"]) == 3
    conn.baremetal.delete_node(node.id)
    remaining = http.get("/v1/ports", params={"limit": 1000}).json()["ports"]
    addresses = {p["address"] for p in remaining}
    assert "aa:bb:cc:00:02:00" not in addresses
    assert survivor.address in addresses
    # The addresses are free again.
    conn.baremetal.create_port(node_id=kept.id, address="aa:bb:cc:00:02:00")


def test_a_duplicate_address_is_409_and_writes_nothing(conn: Any, http: httpx.Client) -> None:
    node = conn.baremetal.create_node(driver="fake-hardware", name="dup-ports")
    conn.baremetal.create_port(node_id=node.id, address="aa:bb:cc:00:03:01")
    answer = http.post(
        "/v1/ports",
        json={"node_uuid": node.id, "address": "AA:BB:CC:00:03:01", "name": "twin"},
    )
    assert answer.status_code == 409
    assert error_text(answer) == "A port with MAC address aa:bb:cc:00:03:01 already exists."
    assert http.get("/v1/ports/twin").status_code == 404
    assert len(http.get(f"/v1/nodes/{node.id}/ports").json()["ports"]) == 1


def test_bad_input_is_400_in_ironics_words(conn: Any, http: httpx.Client) -> None:
    node = conn.baremetal.create_node(driver="fake-hardware", name="bad-ports")
    bad_mac = http.post("/v1/ports", json={"node_uuid": node.id, "address": "not-a-mac"})
    assert bad_mac.status_code == 400
    assert error_text(bad_mac) == "Expected valid MAC address for address: 'not-a-mac'"
    no_node = http.post(
        "/v1/ports",
        json={"node_uuid": "0c8b6c3e-45a4-4d86-9a7c-6fbc3d2d7d11", "address": "aa:bb:cc:00:04:01"},
    )
    assert no_node.status_code == 400
    assert "0c8b6c3e-45a4-4d86-9a7c-6fbc3d2d7d11 could not be found" in error_text(no_node)
    smartnic = http.post(
        "/v1/ports", json={"node_uuid": node.id, "address": "aa:bb:cc:00:04:02",
                           "is_smartnic": True},
    )  # fmt: skip
    assert smartnic.status_code == 400
    assert "Smart NIC port must have port_id and hostname" in error_text(smartnic)
    unknown = http.post("/v1/ports", json={"node_uuid": node.id, "address": "aa:bb:cc:00:04:03",
                                           "colour": "red"})  # fmt: skip
    assert unknown.status_code == 400
    assert http.get("/v1/ports", params={"address": "aa:bb:cc:00:04:03"}).json()["ports"] == []
    assert http.get("/v1/ports", params={"sort_key": "extra"}).status_code == 400
    assert http.get("/v1/ports/no-such-port").status_code == 404


def test_fields_follow_the_microversion(conn: Any, http: httpx.Client) -> None:
    node = conn.baremetal.create_node(driver="fake-hardware", name="versioned-ports")
    port = conn.baremetal.create_port(node_id=node.id, address="aa:bb:cc:00:05:01")
    old = http.get(f"/v1/ports/{port.id}", headers=_at("1.1")).json()
    assert set(old) == {"uuid", "address", "node_uuid", "extra", "created_at", "updated_at",
                        "links"}  # fmt: skip
    at_53 = http.get(f"/v1/ports/{port.id}", headers=_at("1.53")).json()
    assert "is_smartnic" in at_53
    assert "name" not in at_53
    latest = http.get(f"/v1/ports/{port.id}").json()
    assert latest["name"] is None
    assert latest["portgroup_uuid"] is None
    named = http.post(
        "/v1/ports",
        headers=_at("1.87"),
        json={"node_uuid": node.id, "address": "aa:bb:cc:00:05:02", "name": "x"},
    )
    assert named.status_code == 406
    by_group = http.get("/v1/ports", headers=_at("1.23"), params={"portgroup": "g"})
    assert by_group.status_code == 406
    summary = http.get("/v1/ports", params={"node": node.id}).json()["ports"]
    assert [set(p) for p in summary] == [{"uuid", "address", "links"}]
    chosen = http.get(f"/v1/ports/{port.id}", params={"fields": "address,pxe_enabled"}).json()
    assert set(chosen) == {"address", "pxe_enabled", "links"}


def test_pages_follow_next(conn: Any, http: httpx.Client) -> None:
    node = conn.baremetal.create_node(driver="fake-hardware", name="paged-ports")
    made = [
        conn.baremetal.create_port(node_id=node.id, address=f"aa:bb:cc:00:06:{i:02x}").id
        for i in range(5)
    ]
    seen: list[str] = []
    page = http.get(f"/v1/nodes/{node.id}/ports", params={"limit": 2}).json()
    while True:
        seen += [p["uuid"] for p in page["ports"]]
        if "next" not in page:
            break
        page = http.get(page["next"]).json()
    assert seen == made
    via_sdk = [p.id for p in conn.baremetal.ports(node=node.id, limit=2)]
    assert via_sdk == made


def test_cli_port_commands(url: str) -> None:
    node = osc(url, "node", "create", "--driver", "fake-hardware", "--name", "cli-ports",
               "-f", "json")  # fmt: skip
    created = osc(url, "port", "create", "--node", node["uuid"], "AA:BB:CC:00:07:01",
                  "--extra", "rack=7", "--physical-network", "physnet1", "-f", "json")  # fmt: skip
    assert (created["address"], created["extra"]) == ("aa:bb:cc:00:07:01", {"rack": 7})
    listed = osc(url, "port", "list", "--node", "cli-ports", "-f", "json")
    assert listed == [{"uuid": created["uuid"], "address": "aa:bb:cc:00:07:01"}]
    long = osc(url, "port", "list", "--node", "cli-ports", "--long", "-f", "json")
    assert long[0]["physical_network"] == "physnet1"
    osc(url, "port", "set", created["uuid"], "--extra", "row=2", "--pxe-disabled")
    shown = osc(url, "port", "show", created["uuid"], "-f", "json")
    assert (shown["extra"], shown["pxe_enabled"]) == ({"rack": 7, "row": 2}, False)
    osc(url, "port", "unset", created["uuid"], "--extra", "rack")
    by_address = osc(url, "port", "show", "--address", "aa:bb:cc:00:07:01", "-f", "json")
    assert by_address["extra"] == {"row": 2}
    osc(url, "port", "delete", created["uuid"])
    assert osc(url, "port", "list", "--node", "cli-ports", "-f", "json") == []
