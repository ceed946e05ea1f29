"""``/v1/drivers``, ``/v1/conductors``, ``/v1/deploy_templates`` and ``/v1/runbooks``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openstack
import pytest
from api_helpers import api_client

from ironic_fsm import Conductor


@pytest.fixture
def api(tmp_path: Any) -> Iterator[tuple[Conductor, httpx.Client]]:
    with api_client(tmp_path / "nodes.sqlite") as pair:
        yield pair


def test_drivers_list_and_show(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    conductor.register()
    drivers = client.get("/v1/drivers").json()["drivers"]
    names = {d["name"] for d in drivers}
    assert {"fake-hardware", "ipmi", "redfish"} <= names
    fake = client.get("/v1/drivers/fake-hardware")
    assert fake.status_code == 200
    assert fake.json()["hosts"] == [conductor.config.host]
    assert fake.json()["type"] == "dynamic"
    assert client.get("/v1/drivers", params={"type": "classic"}).json() == {"drivers": []}
    assert client.get("/v1/drivers/no-such-driver").status_code == 404


def test_conductors_list_and_show(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    conductor.register()
    listed = client.get("/v1/conductors").json()["conductors"]
    assert [(c["hostname"], c["alive"]) for c in listed] == [(conductor.config.host, True)]
    shown = client.get(f"/v1/conductors/{conductor.config.host}").json()
    assert "fake-hardware" in shown["drivers"]
    assert client.get("/v1/conductors/elsewhere").status_code == 404
    conductor.unregister()
    listed = client.get("/v1/conductors").json()["conductors"]
    assert [c["alive"] for c in listed] == [False]


STEPS = [{"interface": "deploy", "step": "deploy", "args": {}, "priority": 90}]


def test_settings_file_templates_are_listed_read_only(
    api: tuple[Conductor, httpx.Client],
) -> None:
    conductor, client = api
    conductor.add_deploy_template("CUSTOM_SLOW", STEPS)
    listed = client.get("/v1/deploy_templates").json()["deploy_templates"]
    assert [(t["name"], set(t)) for t in listed] == [("CUSTOM_SLOW", {"uuid", "name", "links"})]
    uuid = listed[0]["uuid"]
    for ident in (uuid, "CUSTOM_SLOW"):
        shown = client.get(f"/v1/deploy_templates/{ident}").json()
        assert (shown["uuid"], shown["steps"]) == (uuid, STEPS)
    detail = client.get("/v1/deploy_templates", params={"detail": "True"}).json()
    assert detail["deploy_templates"][0]["steps"] == STEPS
    assert client.delete(f"/v1/deploy_templates/{uuid}").status_code == 409
    patch = [{"op": "add", "path": "/extra/k", "value": 1}]
    assert client.patch("/v1/deploy_templates/CUSTOM_SLOW", json=patch).status_code == 409
    assert client.get("/v1/deploy_templates/CUSTOM_NEW").status_code == 404
    old = {"X-OpenStack-Ironic-API-Version": "1.54"}
    assert client.get("/v1/deploy_templates", headers=old).status_code == 404
    refused = client.post("/v1/deploy_templates", json={"name": "CUSTOM_N", "steps": STEPS},
                          headers=old)  # fmt: skip
    assert refused.status_code == 405
    assert conductor.list_deploy_templates() == []


def test_deploy_template_crud_over_http(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    made = client.post("/v1/deploy_templates", json={"name": "CUSTOM_A", "steps": STEPS})
    assert made.status_code == 201, made.text
    uuid = made.json()["uuid"]
    assert made.headers["location"].endswith(f"/v1/deploy_templates/{uuid}")
    assert conductor.get_deploy_template("CUSTOM_A").steps == STEPS
    patch = [{"op": "replace", "path": "/name", "value": "CUSTOM_B"},
             {"op": "add", "path": "/extra/owner", "value": "ops"}]  # fmt: skip
    patched = client.patch(f"/v1/deploy_templates/{uuid}", json=patch)
    assert patched.status_code == 200, patched.text
    assert (patched.json()["name"], patched.json()["extra"]) == ("CUSTOM_B", {"owner": "ops"})
    assert client.delete("/v1/deploy_templates/CUSTOM_B").status_code == 204
    assert client.get(f"/v1/deploy_templates/{uuid}").status_code == 404
    assert conductor.list_deploy_templates() == []


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"name": "lower-case", "steps": STEPS}, 400),
        ({"name": "CUSTOM_X", "steps": []}, 400),
        ({"name": "CUSTOM_X", "steps": [{"interface": "deploy", "step": "deploy"}]}, 400),
        ({"name": "CUSTOM_X", "steps": STEPS, "colour": "red"}, 400),
        ({"name": "CUSTOM_TAKEN", "steps": STEPS}, 409),
    ],
)
def test_refused_template_creation_stores_nothing(
    api: tuple[Conductor, httpx.Client], body: dict[str, Any], status: int
) -> None:
    conductor, client = api
    taken = conductor.create_deploy_template("CUSTOM_TAKEN", STEPS)
    assert client.post("/v1/deploy_templates", json=body).status_code == status
    assert conductor.list_deploy_templates() == [taken]


@pytest.mark.parametrize(
    ("operations", "status"),
    [
        ([{"op": "replace", "path": "/steps", "value": []}], 400),
        ([{"op": "replace", "path": "/name", "value": "CUSTOM_OTHER"}], 409),
        ([{"op": "replace", "path": "/uuid", "value": "x"}], 400),
        ([{"op": "remove", "path": "/extra/missing"}], 400),
    ],
)
def test_refused_template_patch_changes_nothing(
    api: tuple[Conductor, httpx.Client], operations: Any, status: int
) -> None:
    conductor, client = api
    conductor.create_deploy_template("CUSTOM_OTHER", STEPS)
    kept = conductor.create_deploy_template("CUSTOM_KEPT", STEPS)
    response = client.patch("/v1/deploy_templates/CUSTOM_KEPT", json=operations)
    assert response.status_code == status, response.text
    assert conductor.get_deploy_template(kept.uuid) == kept


RUNBOOK_STEPS = [{"interface": "vendor", "step": "step_a", "args": {}, "order": 1}]


def test_runbooks_need_1_92_and_are_served_from_it(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    old = {"X-OpenStack-Ironic-API-Version": "1.91"}
    assert client.get("/v1/runbooks", headers=old).status_code == 404
    assert client.get("/v1").json()["runbooks"]
    made = client.post("/v1/runbooks", json={"name": "CUSTOM_RB", "steps": RUNBOOK_STEPS,
                                             "public": True})  # fmt: skip
    assert made.status_code == 201, made.text
    shown = made.json()
    assert (shown["public"], shown["owner"], shown["disable_ramdisk"]) == (True, None, False)
    refused = client.patch("/v1/runbooks/CUSTOM_RB",
                           json=[{"op": "add", "path": "/owner", "value": "p1"}])  # fmt: skip
    assert refused.status_code == 400  # a public runbook has no owner
    assert conductor.get_runbook("CUSTOM_RB").owner is None
    listed = client.get("/v1/runbooks", params={"detail": "true"}).json()["runbooks"]
    assert [r["steps"] for r in listed] == [RUNBOOK_STEPS]
    assert client.delete("/v1/runbooks/CUSTOM_RB").status_code == 204
    assert conductor.list_runbooks() == []


def test_sdk_reads_deploy_templates(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    conductor.add_deploy_template("CUSTOM_SLOW", STEPS)
    conn = openstack.connection.Connection(
        auth_type="none", baremetal_endpoint_override=str(client.base_url)
    )
    try:
        templates = list(conn.baremetal.deploy_templates(details=True))
        assert [(t.name, t.steps) for t in templates] == [("CUSTOM_SLOW", STEPS)]
        assert conn.baremetal.get_deploy_template(templates[0].id).name == "CUSTOM_SLOW"
    finally:
        conn.close()
