"""``/v1/volume``: connectors and targets through the real clients, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import httpx
from api_helpers import error_text
from api_helpers import openstack as osc


def _powered_off(sdk: Any) -> Any:
    node = sdk.baremetal.create_node(driver="fake-hardware")
    sdk.baremetal.set_node_provision_state(node, "manage", wait=True, timeout=120)
    sdk.baremetal.set_node_power_state(node, "power off", wait=True, timeout=120)
    return node


def test_sdk_connectors_and_targets(served_sdk: Any, served_http: httpx.Client) -> None:
    node = _powered_off(served_sdk)
    connector = served_sdk.baremetal.create_volume_connector(
        node_id=node.id, type="iqn", connector_id="iqn.2017-07.org.openstack:01:abc"
    )
    target = served_sdk.baremetal.create_volume_target(
        node_id=node.id, volume_type="iscsi", boot_index=0, volume_id="vol-1",
        properties={"target_lun": 0},
    )  # fmt: skip
    assert (target.boot_index, target.properties) == (0, {"target_lun": 0})
    twin = served_http.post("/v1/volume/connectors", json={
        "node_uuid": node.id, "type": "iqn", "connector_id": "iqn.2017-07.org.openstack:01:abc",
    })  # fmt: skip
    assert twin.status_code == 409
    same_index = served_http.post("/v1/volume/targets", json={
        "node_uuid": node.id, "volume_type": "iscsi", "boot_index": 0, "volume_id": "vol-2",
    })  # fmt: skip
    assert same_index.status_code == 409
    under_node = served_http.get(f"/v1/nodes/{node.id}/volume/connectors").json()
    assert [c["uuid"] for c in under_node["connectors"]] == [connector.id]
    root = served_http.get("/v1/volume").json()
    assert root["targets"][0]["href"].endswith("/v1/volume/targets")
    updated = served_sdk.baremetal.update_volume_target(target.id, volume_id="vol-9")
    assert updated.volume_id == "vol-9"
    served_sdk.baremetal.set_node_power_state(node, "power on", wait=True, timeout=120)
    busy = served_http.patch(
        f"/v1/volume/connectors/{connector.id}",
        json=[{"op": "add", "path": "/extra/k", "value": 1}],
    )
    assert busy.status_code == 400
    assert "while it is in state" in error_text(busy)
    assert served_sdk.baremetal.get_volume_connector(connector.id).extra == {}
    served_sdk.baremetal.delete_volume_connector(connector.id)  # manageable: deletable
    assert served_http.get(f"/v1/volume/connectors/{connector.id}").status_code == 404
    served_sdk.baremetal.delete_node(node.id)
    assert served_http.get(f"/v1/volume/targets/{target.id}").status_code == 404


def test_volume_needs_1_32(served_http: httpx.Client) -> None:
    old = {"X-OpenStack-Ironic-API-Version": "1.31"}
    assert served_http.get("/v1/volume", headers=old).status_code == 404
    assert served_http.get("/v1/volume/connectors", headers=old).status_code == 404


def test_cli_volume_commands(served_sdk: Any, served_url: str) -> None:
    node = _powered_off(served_sdk)
    made = osc(served_url, "volume", "connector", "create", "--node", node.id, "--type", "wwpn",
               "--connector-id", "50:00:00:00:00:00:00:01", "-f", "json")  # fmt: skip
    assert made["type"] == "wwpn"
    listed = osc(served_url, "volume", "connector", "list", "--node", node.id, "-f", "json")
    assert [c["uuid"] for c in listed] == [made["uuid"]]
    target = osc(served_url, "volume", "target", "create", "--node", node.id, "--type",
                 "iscsi", "--boot-index", "0", "--volume-id", "v1", "-f", "json")  # fmt: skip
    osc(served_url, "volume", "target", "set", target["uuid"], "--property", "lun=1")
    shown = osc(served_url, "volume", "target", "show", target["uuid"], "-f", "json")
    assert shown["properties"] == {"lun": 1}
    osc(served_url, "volume", "target", "delete", target["uuid"])
    osc(served_url, "volume", "connector", "delete", made["uuid"])


def test_sdk_vifs_with_noop_networking(served_sdk: Any, served_http: httpx.Client) -> None:
    node = served_sdk.baremetal.create_node(driver="fake-hardware", network_interface="noop")
    vif = "200712fc-fdfb-47da-89a6-2d19f76c7618"
    served_sdk.baremetal.attach_vif_to_node(node, vif)
    assert served_sdk.baremetal.list_node_vifs(node) == []  # noop records nothing, as Ironic
    assert served_sdk.baremetal.detach_vif_from_node(node, vif, ignore_missing=False)
    old = {"X-OpenStack-Ironic-API-Version": "1.27"}
    assert served_http.get(f"/v1/nodes/{node.id}/vifs", headers=old).status_code == 404
    ghost = "5c9dcd04-2073-49bc-9618-99ae634d8971"
    assert served_http.get(f"/v1/nodes/{ghost}/vifs").status_code == 404
