"""``/v1/portgroups`` and ``/v1/chassis`` through the real clients over HTTP, on a SQLite
file and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import httpx
from api_helpers import error_text
from api_helpers import openstack as osc


def test_sdk_chassis_and_its_nodes(served_sdk: Any, served_http: httpx.Client) -> None:
    chassis = served_sdk.baremetal.create_chassis(description="rack 1", extra={"row": 3})
    assert (chassis.description, chassis.extra) == ("rack 1", {"row": 3})
    inside = served_sdk.baremetal.create_node(driver="fake-hardware", chassis_id=chassis.id)
    served_sdk.baremetal.create_node(driver="fake-hardware", name="outside")
    assert inside.chassis_id == chassis.id
    listed = served_http.get(f"/v1/chassis/{chassis.id}/nodes").json()["nodes"]
    assert [n["uuid"] for n in listed] == [inside.id]
    filtered = served_http.get("/v1/nodes", params={"chassis_uuid": chassis.id}).json()["nodes"]
    assert [n["uuid"] for n in filtered] == [inside.id]
    refused = served_http.delete(f"/v1/chassis/{chassis.id}")
    assert refused.status_code == 400
    assert "contains nodes" in error_text(refused)
    updated = served_sdk.baremetal.update_chassis(chassis.id, description="rack 2")
    assert updated.description == "rack 2"
    served_sdk.baremetal.update_node(inside.id, chassis_id=None)
    served_sdk.baremetal.delete_chassis(chassis.id)
    assert served_sdk.baremetal.get_node(inside.id).chassis_id is None
    assert served_http.get(f"/v1/chassis/{chassis.id}").status_code == 404


def test_a_node_in_an_unknown_chassis_is_400(served_http: httpx.Client) -> None:
    ghost = "0c8b6c3e-45a4-4d86-9a7c-6fbc3d2d7d11"
    created = served_http.post("/v1/nodes", json={"driver": "fake-hardware", "chassis_uuid": ghost})
    assert created.status_code == 400
    assert error_text(created) == f"Chassis {ghost} could not be found."


def test_sdk_port_group_lifecycle(served_sdk: Any, served_http: httpx.Client) -> None:
    node = served_sdk.baremetal.create_node(driver="fake-hardware", name="bonded")
    group = served_sdk.baremetal.create_port_group(
        node_id=node.id, address="AA:BB:CC:00:10:00", name="bond0", properties={"miimon": 100}
    )
    assert (group.address, group.mode, group.is_standalone_ports_supported) == (
        "aa:bb:cc:00:10:00", "active-backup", True,
    )  # fmt: skip
    port = served_sdk.baremetal.create_port(
        node_id=node.id, address="aa:bb:cc:00:10:01", port_group_id=group.id
    )
    assert port.port_group_id == group.id
    members = served_http.get(f"/v1/portgroups/{group.id}/ports").json()["ports"]
    assert [p["uuid"] for p in members] == [port.id]
    on_node = served_http.get(f"/v1/nodes/{node.id}/portgroups").json()["portgroups"]
    assert [g["name"] for g in on_node] == ["bond0"]
    # A PXE port holds the group to standalone ports; a group with ports stays.
    closed = served_http.patch(f"/v1/portgroups/{group.id}",
                        json=[{"op": "replace", "path": "/standalone_ports_supported",
                               "value": False}])  # fmt: skip
    assert closed.status_code == 409
    busy = served_http.delete(f"/v1/portgroups/{group.id}")
    assert busy.status_code == 400
    assert "contains ports" in error_text(busy)
    served_sdk.baremetal.update_port(port.id, port_group_id=None)
    assert served_sdk.baremetal.update_port_group(group.id, mode="802.3ad").mode == "802.3ad"
    served_sdk.baremetal.delete_port_group(group.id)
    assert served_http.get(f"/v1/nodes/{node.id}/portgroups").json()["portgroups"] == []


def test_port_groups_follow_the_microversion(served_sdk: Any, served_http: httpx.Client) -> None:
    node = served_sdk.baremetal.create_node(driver="fake-hardware")
    group = served_sdk.baremetal.create_port_group(node_id=node.id)
    too_old = {"X-OpenStack-Ironic-API-Version": "1.22"}
    assert served_http.get("/v1/portgroups", headers=too_old).status_code == 404
    at_23 = served_http.get(f"/v1/portgroups/{group.id}",
                     headers={"X-OpenStack-Ironic-API-Version": "1.23"}).json()  # fmt: skip
    assert "mode" not in at_23
    assert at_23["uuid"] == group.id
    other = served_sdk.baremetal.create_node(driver="fake-hardware")
    body = {"node_uuid": other.id, "address": "aa:bb:cc:00:11:01", "portgroup_uuid": group.id}
    foreign = served_http.post("/v1/ports", json=body)
    assert foreign.status_code == 400
    assert "belonging to a different node" in error_text(foreign)


def test_cli_chassis_and_port_group_commands(served_url: str) -> None:
    chassis = osc(served_url, "chassis", "create", "--description", "rack 9", "-f", "json")
    assert {"uuid": chassis["uuid"], "description": "rack 9"} in osc(
        served_url, "chassis", "list", "-f", "json"
    )
    osc(served_url, "chassis", "set", chassis["uuid"], "--extra", "room=2")
    assert osc(served_url, "chassis", "show", chassis["uuid"], "-f", "json")["extra"] == {"room": 2}
    node = osc(served_url, "node", "create", "--driver", "fake-hardware", "--chassis-uuid",
               chassis["uuid"], "-f", "json")  # fmt: skip
    assert node["chassis_uuid"] == chassis["uuid"]
    group = osc(served_url, "port", "group", "create", "--node", node["uuid"], "--name", "bond9",
                "--address", "aa:bb:cc:00:12:00", "-f", "json")  # fmt: skip
    assert group["mode"] == "active-backup"
    osc(served_url, "port", "group", "set", "bond9", "--mode", "balance-rr")
    shown = osc(served_url, "port", "group", "show", "bond9", "-f", "json")
    assert shown["mode"] == "balance-rr"
    listed = osc(served_url, "port", "group", "list", "--node", node["uuid"], "-f", "json")
    assert listed == [{"uuid": group["uuid"], "address": "aa:bb:cc:00:12:00", "name": "bond9"}]
    osc(served_url, "port", "group", "delete", "bond9")
    osc(served_url, "node", "delete", node["uuid"])
    osc(served_url, "chassis", "delete", chassis["uuid"])
