"""Boot mode and secure boot over the REST API: fields (1.75), setters (1.76), clients.

Through httpx against the in-process server, and through ``openstack
baremetal`` and openstacksdk against the server run as a process.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openstack
import pytest
from api_helpers import api_process, error_text
from api_helpers import openstack as osc
from test_api_nodes import api_fixture, at  # noqa: F401  (the fixture "api")

from ironic_fsm import Conductor
from ironic_fsm import states as s


def _node(conductor: Conductor) -> str:
    return conductor.create_node(driver="fake-hardware", name="bm1").uuid


def test_fields_from_1_75_and_in_states(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    uuid = _node(conductor)
    conductor.set_boot_mode(uuid, "bios")
    conductor.set_secure_boot_state(uuid, True)
    assert "boot_mode" not in client.get(f"/v1/nodes/{uuid}", headers=at("1.74")).json()
    shown = client.get(f"/v1/nodes/{uuid}", headers=at("1.75")).json()
    assert (shown["boot_mode"], shown["secure_boot"]) == ("bios", True)
    states = client.get(f"/v1/nodes/{uuid}/states").json()
    assert (states["boot_mode"], states["secure_boot"]) == ("bios", True)
    assert "boot_mode" not in client.get(f"/v1/nodes/{uuid}/states", headers=at("1.74")).json()
    listed = client.get("/v1/nodes", params={"fields": "uuid,boot_mode,secure_boot"}).json()
    [row] = listed["nodes"]
    assert (row["uuid"], row["boot_mode"], row["secure_boot"]) == (uuid, "bios", True)


def test_setters_reply_202_and_the_node_shows_the_change(
    api: tuple[Conductor, httpx.Client],
) -> None:
    conductor, client = api
    uuid = _node(conductor)
    response = client.put(f"/v1/nodes/{uuid}/states/boot_mode", json={"target": "bios"})
    assert response.status_code == 202, response.text
    assert response.headers["location"].endswith(f"/v1/nodes/{uuid}/states")
    response = client.put("/v1/nodes/bm1/states/secure_boot", json={"target": True})
    assert response.status_code == 202, response.text
    shown = client.get(f"/v1/nodes/{uuid}").json()
    assert (shown["boot_mode"], shown["secure_boot"]) == ("bios", True)
    stored = conductor.get_node(uuid)
    assert stored.driver_internal_info["fake_boot_mode"] == "bios"
    assert stored.reservation is None


@pytest.mark.parametrize(
    ("endpoint", "body"),
    [
        ("boot_mode", {"target": "UEFI"}),
        ("boot_mode", {"target": None}),
        ("boot_mode", {}),
        ("boot_mode", {"target": "uefi", "persistent": True}),
        ("secure_boot", {"target": "yes"}),
        ("secure_boot", {"target": 1}),
        ("secure_boot", {}),
    ],
)
def test_invalid_targets_are_400_and_change_nothing(
    api: tuple[Conductor, httpx.Client], endpoint: str, body: dict[str, Any]
) -> None:
    conductor, client = api
    uuid = _node(conductor)
    before = conductor.get_node(uuid).to_dict()
    response = client.put(f"/v1/nodes/{uuid}/states/{endpoint}", json=body)
    assert response.status_code == 400, response.text
    assert conductor.get_node(uuid).to_dict() == before


def test_transient_state_is_409(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    node = conductor.create_node(driver="fake-hardware", provision_state=s.CLEANING)
    for endpoint, target in (("boot_mode", "bios"), ("secure_boot", True)):
        response = client.put(f"/v1/nodes/{node.uuid}/states/{endpoint}", json={"target": target})
        assert response.status_code == 409, response.text
        assert "transient" in error_text(response)
    stored = conductor.get_node(node.uuid)
    assert (stored.boot_mode, stored.secure_boot, stored.reservation) == (None, None, None)


def test_setters_are_404_below_1_76_and_fields_read_only(
    api: tuple[Conductor, httpx.Client],
) -> None:
    conductor, client = api
    uuid = _node(conductor)
    for endpoint, target in (("boot_mode", "bios"), ("secure_boot", True)):
        response = client.put(
            f"/v1/nodes/{uuid}/states/{endpoint}", json={"target": target}, headers=at("1.75")
        )
        assert response.status_code == 404, response.text
    patch = [{"op": "replace", "path": "/boot_mode", "value": "bios"}]
    assert client.patch(f"/v1/nodes/{uuid}", json=patch).status_code == 400
    assert conductor.get_node(uuid).boot_mode is None


def test_openapi_lists_the_setters(api: tuple[Conductor, httpx.Client]) -> None:
    client = api[1]
    paths = client.get("/openapi.json").json()["paths"]
    assert "put" in paths["/v1/nodes/{ident}/states/boot_mode"]
    assert "put" in paths["/v1/nodes/{ident}/states/secure_boot"]


# -- the OpenStack clients ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with api_process(tmp_path_factory.mktemp("api-boot") / "nodes.sqlite") as base:
        yield base


def test_openstack_cli_sets_boot_mode_and_secure_boot(url: str) -> None:
    osc(url, "node", "create", "--driver", "fake-hardware", "--name", "cli-bm")
    osc(url, "node", "boot", "mode", "set", "cli-bm", "bios")
    osc(url, "node", "secure", "boot", "on", "cli-bm")
    shown = osc(url, "node", "show", "cli-bm", "-f", "json")
    assert (shown["boot_mode"], shown["secure_boot"]) == ("bios", True)
    failed = osc(url, "node", "boot", "mode", "set", "cli-bm", "floppy", check=False)
    assert failed.returncode != 0


def test_openstacksdk_sets_boot_mode_and_secure_boot(url: str) -> None:
    conn = openstack.connection.Connection(auth_type="none", baremetal_endpoint_override=url)
    try:
        node = conn.baremetal.create_node(driver="fake-hardware", name="sdk-bm")
        conn.baremetal.set_node_boot_mode(node, "bios")
        conn.baremetal.set_node_secure_boot(node, True)
        node = conn.baremetal.get_node("sdk-bm")
        assert (node.boot_mode, node.is_secure_boot) == ("bios", True)
        conn.baremetal.set_node_boot_mode(node, "uefi")
        conn.baremetal.set_node_secure_boot(node, False)
        node = conn.baremetal.get_node("sdk-bm")
        assert (node.boot_mode, node.is_secure_boot) == ("uefi", False)
    finally:
        conn.close()
