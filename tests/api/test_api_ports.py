"""``/v1/ports`` through the real clients (openstacksdk, ``openstack baremetal``) over HTTP,
on a SQLite file and on PostgreSQL; one answer with the library and ``ironic-fsm port``.
"""

from __future__ import annotations

from typing import Any

import httpx
from api_helpers import error_text
from api_helpers import openstack as osc

SQL_KINDS = ["sqlite", "postgres"]


def _at(version: str) -> dict[str, str]:
    return {"X-OpenStack-Ironic-API-Version": version}


def test_sdk_port_lifecycle(served_sdk: Any) -> None:
    node = served_sdk.baremetal.create_node(driver="fake-hardware", name="sdk-ports")
    port = served_sdk.baremetal.create_port(
        node_id=node.id, address="AA:BB:CC:00:01:01", extra={"rack": 4},
        local_link_connection={"switch_id": "0A:1B:2C:3D:4E:5F", "port_id": "Eth1/1"},
        physical_network="physnet1",
    )  # fmt: skip
    assert port.address == "aa:bb:cc:00:01:01"  # stored normalised
    assert port.local_link_connection["switch_id"] == "0a:1b:2c:3d:4e:5f"
    assert (port.is_pxe_enabled, port.is_smartnic, port.node_id) == (True, False, node.id)
    fetched = served_sdk.baremetal.get_port(port.id)
    assert (fetched.extra, fetched.physical_network) == ({"rack": 4}, "physnet1")
    listed = list(served_sdk.baremetal.ports(node=node.id, details=True))
    assert [(p.id, p.extra) for p in listed] == [(port.id, {"rack": 4})]
    by_address = list(served_sdk.baremetal.ports(address="aa:bb:cc:00:01:01"))
    assert [p.id for p in by_address] == [port.id]
    updated = served_sdk.baremetal.update_port(port.id, extra={"rack": 5}, is_pxe_enabled=False)
    assert (updated.extra, updated.is_pxe_enabled) == ({"rack": 5}, False)
    patched = served_sdk.baremetal.patch_port(
        port.id, [{"op": "add", "path": "/name", "value": "eth0"}]
    )
    assert patched.name == "eth0"
    assert served_sdk.baremetal.get_port("eth0").id == port.id
    served_sdk.baremetal.delete_port(port.id)
    assert list(served_sdk.baremetal.ports(node=node.id)) == []
    served_sdk.baremetal.delete_port(port.id, ignore_missing=True)


def test_deleting_a_node_deletes_its_ports(served_sdk: Any, served_http: httpx.Client) -> None:
    node = served_sdk.baremetal.create_node(driver="fake-hardware", name="doomed-ports")
    kept = served_sdk.baremetal.create_node(driver="fake-hardware", name="kept-ports")
    for i in range(3):
        served_sdk.baremetal.create_port(node_id=node.id, address=f"aa:bb:cc:00:02:0{i}")
    survivor = served_sdk.baremetal.create_port(node_id=kept.id, address="aa:bb:cc:00:02:09")
    assert len(served_http.get(f"/v1/nodes/{node.id}/ports").json()["ports"]) == 3
    served_sdk.baremetal.delete_node(node.id)
    remaining = served_http.get("/v1/ports", params={"limit": 1000}).json()["ports"]
    addresses = {p["address"] for p in remaining}
    assert "aa:bb:cc:00:02:00" not in addresses
    assert survivor.address in addresses
    # The addresses are free again.
    served_sdk.baremetal.create_port(node_id=kept.id, address="aa:bb:cc:00:02:00")


def test_a_duplicate_address_is_409_and_writes_nothing(
    served_sdk: Any, served_http: httpx.Client
) -> None:
    node = served_sdk.baremetal.create_node(driver="fake-hardware", name="dup-ports")
    served_sdk.baremetal.create_port(node_id=node.id, address="aa:bb:cc:00:03:01")
    answer = served_http.post(
        "/v1/ports",
        json={"node_uuid": node.id, "address": "AA:BB:CC:00:03:01", "name": "twin"},
    )
    assert answer.status_code == 409
    assert error_text(answer) == "A port with MAC address aa:bb:cc:00:03:01 already exists."
    assert served_http.get("/v1/ports/twin").status_code == 404
    assert len(served_http.get(f"/v1/nodes/{node.id}/ports").json()["ports"]) == 1


def test_bad_input_is_400_in_ironics_words(served_sdk: Any, served_http: httpx.Client) -> None:
    node = served_sdk.baremetal.create_node(driver="fake-hardware", name="bad-ports")
    bad_mac = served_http.post("/v1/ports", json={"node_uuid": node.id, "address": "not-a-mac"})
    assert bad_mac.status_code == 400
    assert error_text(bad_mac) == "Expected valid MAC address for address: 'not-a-mac'"
    no_node = served_http.post(
        "/v1/ports",
        json={"node_uuid": "0c8b6c3e-45a4-4d86-9a7c-6fbc3d2d7d11", "address": "aa:bb:cc:00:04:01"},
    )
    assert no_node.status_code == 400
    assert "0c8b6c3e-45a4-4d86-9a7c-6fbc3d2d7d11 could not be found" in error_text(no_node)
    smartnic = served_http.post(
        "/v1/ports", json={"node_uuid": node.id, "address": "aa:bb:cc:00:04:02",
                           "is_smartnic": True},
    )  # fmt: skip
    assert smartnic.status_code == 400
    assert "Smart NIC port must have port_id and hostname" in error_text(smartnic)
    body = {"node_uuid": node.id, "address": "aa:bb:cc:00:04:03", "colour": "red"}
    unknown = served_http.post("/v1/ports", json=body)
    assert unknown.status_code == 400
    assert (
        served_http.get("/v1/ports", params={"address": "aa:bb:cc:00:04:03"}).json()["ports"] == []
    )
    assert served_http.get("/v1/ports", params={"sort_key": "extra"}).status_code == 400
    assert served_http.get("/v1/ports/no-such-port").status_code == 404


def test_fields_follow_the_microversion(served_sdk: Any, served_http: httpx.Client) -> None:
    node = served_sdk.baremetal.create_node(driver="fake-hardware", name="versioned-ports")
    port = served_sdk.baremetal.create_port(node_id=node.id, address="aa:bb:cc:00:05:01")
    old = served_http.get(f"/v1/ports/{port.id}", headers=_at("1.1")).json()
    assert set(old) == {"uuid", "address", "node_uuid", "extra", "created_at", "updated_at",
                        "links"}  # fmt: skip
    at_53 = served_http.get(f"/v1/ports/{port.id}", headers=_at("1.53")).json()
    assert "is_smartnic" in at_53
    assert "name" not in at_53
    latest = served_http.get(f"/v1/ports/{port.id}").json()
    assert latest["name"] is None
    assert latest["portgroup_uuid"] is None
    named = served_http.post(
        "/v1/ports",
        headers=_at("1.87"),
        json={"node_uuid": node.id, "address": "aa:bb:cc:00:05:02", "name": "x"},
    )
    assert named.status_code == 406
    by_group = served_http.get("/v1/ports", headers=_at("1.23"), params={"portgroup": "g"})
    assert by_group.status_code == 406
    summary = served_http.get("/v1/ports", params={"node": node.id}).json()["ports"]
    assert [set(p) for p in summary] == [{"uuid", "address", "links"}]
    chosen = served_http.get(
        f"/v1/ports/{port.id}", params={"fields": "address,pxe_enabled"}
    ).json()
    assert set(chosen) == {"address", "pxe_enabled", "links"}


def test_pages_follow_next(served_sdk: Any, served_http: httpx.Client) -> None:
    node = served_sdk.baremetal.create_node(driver="fake-hardware", name="paged-ports")
    made = [
        served_sdk.baremetal.create_port(node_id=node.id, address=f"aa:bb:cc:00:06:{i:02x}").id
        for i in range(5)
    ]
    seen: list[str] = []
    page = served_http.get(f"/v1/nodes/{node.id}/ports", params={"limit": 2}).json()
    while True:
        seen += [p["uuid"] for p in page["ports"]]
        if "next" not in page:
            break
        page = served_http.get(page["next"]).json()
    assert seen == made
    via_sdk = [p.id for p in served_sdk.baremetal.ports(node=node.id, limit=2)]
    assert via_sdk == made


def test_cli_port_commands(served_url: str) -> None:
    node = osc(served_url, "node", "create", "--driver", "fake-hardware", "--name", "cli-ports",
               "-f", "json")  # fmt: skip
    created = osc(served_url, "port", "create", "--node", node["uuid"], "AA:BB:CC:00:07:01",
                  "--extra", "rack=7", "--physical-network", "physnet1", "-f", "json")  # fmt: skip
    assert (created["address"], created["extra"]) == ("aa:bb:cc:00:07:01", {"rack": 7})
    listed = osc(served_url, "port", "list", "--node", "cli-ports", "-f", "json")
    assert listed == [{"uuid": created["uuid"], "address": "aa:bb:cc:00:07:01"}]
    long = osc(served_url, "port", "list", "--node", "cli-ports", "--long", "-f", "json")
    assert long[0]["physical_network"] == "physnet1"
    osc(served_url, "port", "set", created["uuid"], "--extra", "row=2", "--pxe-disabled")
    shown = osc(served_url, "port", "show", created["uuid"], "-f", "json")
    assert (shown["extra"], shown["pxe_enabled"]) == ({"rack": 7, "row": 2}, False)
    osc(served_url, "port", "unset", created["uuid"], "--extra", "rack")
    by_address = osc(served_url, "port", "show", "--address", "aa:bb:cc:00:07:01", "-f", "json")
    assert by_address["extra"] == {"row": 2}
    osc(served_url, "port", "delete", created["uuid"])
    assert osc(served_url, "port", "list", "--node", "cli-ports", "-f", "json") == []


def test_filters_by_port_group_and_shard(served_sdk: Any, served_http: httpx.Client) -> None:
    sharded = served_http.post(
        "/v1/nodes", json={"driver": "fake-hardware", "name": "sharded", "shard": "s9"}
    ).json()
    other = served_sdk.baremetal.create_node(driver="fake-hardware", name="unsharded")
    mine = served_sdk.baremetal.create_port(node_id=sharded["uuid"], address="aa:bb:cc:00:09:01")
    served_sdk.baremetal.create_port(node_id=other.id, address="aa:bb:cc:00:09:02")
    by_shard = served_http.get("/v1/ports", params={"shard": "s9"}).json()["ports"]
    assert [p["uuid"] for p in by_shard] == [mine.id]
    group = served_sdk.baremetal.create_port_group(node_id=sharded["uuid"], name="g9")
    served_sdk.baremetal.update_port(mine.id, port_group_id=group.id)
    in_group = served_http.get("/v1/ports", params={"portgroup": "g9"}).json()["ports"]
    assert [p["uuid"] for p in in_group] == [mine.id]
    both = served_http.get("/v1/ports", params={"portgroup": "g9", "shard": "s9"})
    assert both.status_code == 400
    sorted_ports = served_http.get(
        "/v1/ports", params={"node": sharded["uuid"], "sort_key": "address", "sort_dir": "desc"}
    )
    assert [p["address"] for p in sorted_ports.json()["ports"]] == ["aa:bb:cc:00:09:01"]
    served_sdk.baremetal.update_port(mine.id, port_group_id=None)
