"""``/v1/allocations`` through the real clients over HTTP, on a SQLite file and PostgreSQL."""

from __future__ import annotations

from typing import Any

import httpx
from api_helpers import error_text
from api_helpers import openstack as osc


def _available(sdk: Any, resource_class: str, **fields: Any) -> Any:
    node = sdk.baremetal.create_node(driver="fake-hardware", resource_class=resource_class,
                                     **fields)  # fmt: skip
    sdk.baremetal.set_node_provision_state(node, "manage", wait=True, timeout=120)
    sdk.baremetal.set_node_provision_state(node, "provide", wait=True, timeout=120)
    sdk.baremetal.set_node_power_state(node, "power off", wait=True, timeout=120)
    return node


def test_sdk_allocation_lifecycle(served_sdk: Any, served_http: httpx.Client) -> None:
    node = _available(served_sdk, "api-gold")
    created = served_sdk.baremetal.create_allocation(resource_class="api-gold", name="alloc-1")
    assert (created.state, created.node_id) == ("allocating", None)  # as recorded, as Ironic
    settled = served_sdk.baremetal.wait_for_allocation(created, timeout=60)
    assert (settled.state, settled.node_id, settled.last_error) == ("active", node.id, None)
    shown = served_sdk.baremetal.get_node(node.id)
    assert (shown.instance_id, shown.allocation_id) == (created.id, created.id)
    held = served_http.get(f"/v1/nodes/{node.id}/allocation").json()
    assert (held["uuid"], held["name"]) == (created.id, "alloc-1")
    patched = served_http.patch(f"/v1/allocations/{created.id}",
                                json=[{"op": "add", "path": "/extra/k", "value": "v"}])  # fmt: skip
    assert patched.json()["extra"] == {"k": "v"}
    listed = served_http.get("/v1/allocations", params={"state": "active"}).json()
    assert created.id in [a["uuid"] for a in listed["allocations"]]
    served_sdk.baremetal.delete_allocation(created.id)
    freed = served_sdk.baremetal.get_node(node.id)
    assert (freed.instance_id, freed.allocation_id) == (None, None)
    assert served_http.get(f"/v1/nodes/{node.id}/allocation").status_code == 404


def test_a_request_nothing_meets_is_an_error_allocation(served_http: httpx.Client) -> None:
    answer = served_http.post("/v1/allocations", json={"resource_class": "nothing-has-it"})
    assert answer.status_code == 201
    uuid = answer.json()["uuid"]
    settled = served_http.get(f"/v1/allocations/{uuid}").json()
    assert settled["state"] == "error"
    assert "no available nodes match the resource class nothing-has-it" in settled["last_error"]
    body = {"resource_class": "x", "candidate_nodes": ["ghost"]}
    ghost = served_http.post("/v1/allocations", json=body)
    assert ghost.status_code == 400
    assert "ghost" in error_text(ghost)


def test_allocations_follow_the_microversion(served_http: httpx.Client) -> None:
    old = {"X-OpenStack-Ironic-API-Version": "1.51"}
    assert served_http.get("/v1/allocations", headers=old).status_code == 404
    at_52 = {"X-OpenStack-Ironic-API-Version": "1.52"}
    made = served_http.post("/v1/allocations", headers=at_52, json={"resource_class": "v"})
    assert "owner" not in made.json()
    refused = served_http.patch(f"/v1/allocations/{made.json()['uuid']}", headers=at_52,
                                json=[{"op": "add", "path": "/name", "value": "n"}])  # fmt: skip
    assert refused.status_code == 405
    backfill = served_http.post("/v1/allocations", headers={"X-OpenStack-Ironic-API-Version":
                                "1.57"}, json={"resource_class": "v", "node": "x"})  # fmt: skip
    assert backfill.status_code == 406


def test_cli_allocation_commands(served_sdk: Any, served_url: str) -> None:
    node = _available(served_sdk, "cli-gold")
    created = osc(served_url, "allocation", "create", "--resource-class", "cli-gold",
                  "--name", "cli-alloc", "--wait", "60", "-f", "json")  # fmt: skip
    assert (created["state"], created["node_uuid"]) == ("active", node.id)
    listed = osc(served_url, "allocation", "list", "--node", node.id, "-f", "json")
    assert [a["uuid"] for a in listed] == [created["uuid"]]
    osc(served_url, "allocation", "set", "cli-alloc", "--extra", "owner=me")
    assert osc(served_url, "allocation", "show", "cli-alloc", "-f", "json")["extra"] == {
        "owner": "me"
    }
    osc(served_url, "allocation", "delete", "cli-alloc")
    assert served_sdk.baremetal.get_node(node.id).instance_id is None
