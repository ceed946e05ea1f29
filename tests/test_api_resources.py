"""``/v1/drivers`` and ``/v1/conductors``."""

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


def test_deploy_templates_are_listed_read_only(api: tuple[Conductor, httpx.Client]) -> None:
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
    refused = client.post("/v1/deploy_templates", json={"name": "CUSTOM_NEW", "steps": STEPS})
    assert refused.status_code == 405
    assert client.delete(f"/v1/deploy_templates/{uuid}").status_code == 405
    assert client.get("/v1/deploy_templates/CUSTOM_NEW").status_code == 404
    old = client.get("/v1/deploy_templates", headers={"X-OpenStack-Ironic-API-Version": "1.54"})
    assert old.status_code == 404


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
