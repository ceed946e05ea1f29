"""Nodes over plain HTTP: create, list, show, patch, delete, and bad input changing nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from api_helpers import api_client, error_text
from helpers import DecodeCounter

from ironic_fsm import Conductor
from ironic_fsm import states as s


def at(version: str) -> dict[str, str]:
    """The header that asks for API ``version``."""
    return {"X-OpenStack-Ironic-API-Version": version}


@pytest.fixture(name="api")
def api_fixture(tmp_path: Any) -> Iterator[tuple[Conductor, httpx.Client]]:
    """A conductor and a client of its API (in this process, latest version)."""
    with api_client(tmp_path / "nodes.sqlite") as pair:
        yield pair


def create(client: httpx.Client, **fields: Any) -> dict[str, Any]:
    """Create a fake-hardware node with ``fields``; its view."""
    response = client.post("/v1/nodes", json={"driver": "fake-hardware", **fields})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def test_create_enrolls_and_locates(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    response = client.post("/v1/nodes", json={"driver": "fake-hardware", "name": "n1"})
    assert response.status_code == 201
    body = response.json()
    assert body["provision_state"] == s.ENROLL
    assert body["target_provision_state"] is None
    assert body["power_state"] is None
    assert body["maintenance"] is False
    assert body["traits"] == []
    assert body["driver_info"] == {}
    assert response.headers["Location"] == f"{client.base_url}/v1/nodes/{body['uuid']}"
    assert conductor.get_node("n1").uuid == body["uuid"]


def test_create_below_1_11_is_available(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    response = client.post(
        "/v1/nodes", json={"driver": "fake-hardware", "name": "old"},
        headers={"X-OpenStack-Ironic-API-Version": "1.10"},
    )  # fmt: skip
    assert response.status_code == 201
    assert conductor.get_node("old").provision_state == s.AVAILABLE


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"driver": "fake-hardware", "provision_state": "active"}, 400, "provision_state"),
        ({"driver": "fake-hardware", "traits": ["CUSTOM_A"]}, 400, "traits"),
        ({"name": "no-driver"}, 400, "driver"),
        ({"driver": "no-such-driver"}, 400, "no-such-driver"),
        ({"driver": "fake-hardware", "name": "detail"}, 400, "detail"),
        ({"driver": "fake-hardware", "name": "has space"}, 400, "has space"),
        ({"driver": "fake-hardware", "shard": "s" * 256}, 400, "shard"),
        ({"driver": "fake-hardware", "parent_node": "no-such-node"}, 400, "parent_node"),
        ({"driver": "fake-hardware", "network_data": []}, 400, "network_data"),
        ({"driver": "fake-hardware", "instance_uuid": "not-a-uuid"}, 400, "instance_uuid"),
        ({"driver": "fake-hardware", "uuid": "not-a-uuid"}, 400, "not-a-uuid"),
    ],
)
def test_bad_create_is_refused_and_stores_nothing(
    api: tuple[Conductor, httpx.Client], body: dict[str, Any], status: int, words: str
) -> None:
    conductor, client = api
    response = client.post("/v1/nodes", json=body)
    assert response.status_code == status
    assert words in error_text(response)
    assert conductor.list_nodes() == []


def test_duplicate_name_is_409(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    create(client, name="twin")
    response = client.post("/v1/nodes", json={"driver": "fake-hardware", "name": "twin"})
    assert response.status_code == 409
    assert len(conductor.list_nodes()) == 1


def test_not_json_is_400(api: tuple[Conductor, httpx.Client]) -> None:
    _, client = api
    response = client.post("/v1/nodes", content=b"{not json")
    assert response.status_code == 400
    assert "JSON" in error_text(response)


def test_oversized_body_is_refused(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    blob = "x" * (2 * 1024 * 1024)
    response = client.post("/v1/nodes", json={"driver": "fake-hardware", "extra": {"b": blob}})
    assert response.status_code == 413
    assert "larger than" in error_text(response)
    assert conductor.list_nodes() == []


def test_secrets_are_masked(api: tuple[Conductor, httpx.Client]) -> None:
    _, client = api
    info = {"ipmi_address": "10.0.0.1", "ipmi_password": "hunter2", "auth_token": "tok"}
    created = create(client, name="secret", driver_info=info, extra={"api_key": "hunter2"})
    shown = client.get("/v1/nodes/secret").json()
    for body in (created, shown):
        assert body["driver_info"] == {
            "ipmi_address": "10.0.0.1", "ipmi_password": "******", "auth_token": "******",
        }  # fmt: skip
        assert body["extra"] == {"api_key": "******"}
    detail = client.get("/v1/nodes/detail")
    assert "hunter2" not in detail.text


def test_get_by_uuid_or_name_and_fields(api: tuple[Conductor, httpx.Client]) -> None:
    _, client = api
    node = create(client, name="n1")
    assert client.get(f"/v1/nodes/{node['uuid']}").json()["name"] == "n1"
    some = client.get("/v1/nodes/n1", params={"fields": "uuid,provision_state"}).json()
    assert set(some) == {"uuid", "provision_state", "links"}
    bad = client.get("/v1/nodes/n1", params={"fields": "uuid,bogus"})
    assert bad.status_code == 400


def test_fields_leave_out_newer_fields(api: tuple[Conductor, httpx.Client]) -> None:
    _, client = api
    node = create(client, name="n1")
    old = client.get(f"/v1/nodes/{node['uuid']}", headers={"X-OpenStack-Ironic-API-Version": "1.1"})
    assert "name" not in old.json()
    assert "traits" not in old.json()
    assert "uuid" in old.json()


def test_list_filters_and_summary(api: tuple[Conductor, httpx.Client]) -> None:
    _conductor, client = api
    a = create(client, name="a")
    create(client, name="b", resource_class="gold")
    client.put(f"/v1/nodes/{a['uuid']}/maintenance", json={"reason": "r"})
    listed = client.get("/v1/nodes").json()["nodes"]
    assert {n["name"] for n in listed} == {"a", "b"}
    assert set(listed[0]) == {
        "uuid", "name", "instance_uuid", "power_state", "provision_state", "maintenance", "links",
    }  # fmt: skip

    def names(**params: str) -> set[str]:
        response = client.get("/v1/nodes", params=params)
        assert response.status_code == 200, response.text
        return {n["name"] for n in response.json()["nodes"]}

    assert names(maintenance="true") == {"a"}
    assert names(maintenance="false") == {"b"}
    assert names(resource_class="gold") == {"b"}
    assert names(provision_state="enroll") == {"a", "b"}
    assert names(driver="fake-hardware") == {"a", "b"}
    assert names(retired="false") == {"a", "b"}
    assert names(associated="true") == set()
    assert names(associated="false") == {"a", "b"}
    assert names(owner="someone") == set()
    assert names(conductor_group="") == {"a", "b"}
    assert client.get("/v1/nodes", params={"maintenance": "maybe"}).status_code == 400
    assert client.get("/v1/nodes", params={"provision_state": "nowhere"}).status_code == 400


def test_pagination_follows_next(api: tuple[Conductor, httpx.Client]) -> None:
    _, client = api
    made = [create(client, name=f"p{i}")["uuid"] for i in range(5)]
    seen: list[str] = []
    url: str | None = "/v1/nodes?limit=2&fields=uuid,name"
    pages = 0
    while url:
        body = client.get(url).json()
        seen += [n["uuid"] for n in body["nodes"]]
        assert all(set(n) == {"uuid", "name", "links"} for n in body["nodes"])
        url = body.get("next")
        if url:
            query = parse_qs(urlsplit(url).query)
            assert query["limit"] == ["2"]
            assert query["marker"] == [seen[-1]]
        pages += 1
    assert seen == made
    assert pages == 3
    desc = client.get("/v1/nodes", params={"sort_dir": "desc", "sort_key": "name"}).json()
    assert [n["name"] for n in desc["nodes"]] == [f"p{i}" for i in range(4, -1, -1)]


@pytest.mark.parametrize(
    "params",
    [{"limit": "0"}, {"limit": "x"}, {"sort_key": "driver_info"}, {"sort_dir": "up"},
     {"detail": "true", "fields": "uuid"}],
)  # fmt: skip
def test_bad_paging_is_400(api: tuple[Conductor, httpx.Client], params: dict[str, str]) -> None:
    _, client = api
    assert client.get("/v1/nodes", params=params).status_code == 400


def test_detail_path_with_fields_is_400(api: tuple[Conductor, httpx.Client]) -> None:
    _, client = api
    assert client.get("/v1/nodes/detail", params={"fields": "uuid"}).status_code == 400


def test_detail_shows_full_nodes(api: tuple[Conductor, httpx.Client]) -> None:
    _, client = api
    create(client, name="d")
    for response in (client.get("/v1/nodes/detail"), client.get("/v1/nodes?detail=True")):
        node = response.json()["nodes"][0]
        assert node["driver"] == "fake-hardware"
        assert "driver_info" in node


def test_patch_changes_what_it_names(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    node = create(client, name="n1", extra={"foo": "bar"})
    response = client.patch(
        "/v1/nodes/n1",
        json=[
            {"op": "add", "path": "/extra/answer", "value": 42},
            {"op": "remove", "path": "/extra/foo"},
            {"op": "replace", "path": "/name", "value": "n2"},
            {"op": "add", "path": "/resource_class", "value": "gold"},
        ],
    )
    assert response.status_code == 200, response.text
    assert response.json()["extra"] == {"answer": 42}
    stored = conductor.get_node(node["uuid"])
    assert (stored.name, stored.extra, stored.resource_class) == ("n2", {"answer": 42}, "gold")


@pytest.mark.parametrize(
    ("operations", "status"),
    [
        ([{"op": "replace", "path": "/provision_state", "value": "active"}], 400),
        ([{"op": "replace", "path": "/uuid", "value": "x"}], 400),
        ([{"op": "add", "path": "/traits", "value": ["CUSTOM_A"]}], 400),
        ([{"op": "replace", "path": "/maintenance_reason", "value": "x"}], 400),
        ([{"op": "add", "path": "/extra/a", "value": 1},
          {"op": "replace", "path": "/power_state", "value": "power on"}], 400),
        ([{"op": "remove", "path": "/extra/missing"}], 400),
        ([{"op": "replace", "path": "/name", "value": "taken"}], 409),
        ([{"op": "replace", "path": "/retired", "value": "maybe"}], 400),
        ({"op": "replace"}, 400),
    ],
)  # fmt: skip
def test_refused_patch_changes_nothing(
    api: tuple[Conductor, httpx.Client], operations: Any, status: int
) -> None:
    conductor, client = api
    create(client, name="taken")
    node = create(client, name="n1", extra={"k": "v"})
    before = conductor.get_node(node["uuid"])
    response = client.patch("/v1/nodes/n1", json=operations)
    assert response.status_code == status, response.text
    after = conductor.get_node(node["uuid"])
    assert after == before
    assert after.reservation is None


def test_retired_on_available_is_409(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    node = create(client, name="n1")
    for verb in ("manage", "provide"):
        assert client.put("/v1/nodes/n1/states/provision", json={"target": verb}).status_code == 202
        _wait_settled(conductor, node["uuid"])
    response = client.patch("/v1/nodes/n1", json=[{"op": "add", "path": "/retired", "value": True}])
    assert response.status_code == 409
    assert conductor.get_node("n1").retired is False


def _wait_settled(conductor: Conductor, uuid: str, timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        node = conductor.get_node(uuid)
        if node.target_provision_state is None and node.reservation is None:
            return
        time.sleep(0.02)
    raise AssertionError(f"node {uuid} did not settle: {conductor.get_node(uuid)}")


def test_delete_rules(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    node = create(client, name="n1")
    for verb in ("manage", "provide", "active"):
        assert client.put("/v1/nodes/n1/states/provision", json={"target": verb}).status_code == 202
        _wait_settled(conductor, node["uuid"])
    assert conductor.get_node("n1").provision_state == s.ACTIVE
    refused = client.delete("/v1/nodes/n1")
    assert refused.status_code == 409
    patch = [{"op": "replace", "path": "/protected", "value": True}]
    assert client.patch("/v1/nodes/n1", json=patch).status_code == 200
    client.put("/v1/nodes/n1/maintenance", json={})
    protected = client.delete("/v1/nodes/n1")
    assert protected.status_code == 403
    assert conductor.get_node("n1").protected is True
    undeploy = client.put("/v1/nodes/n1/states/provision", json={"target": "deleted"})
    assert undeploy.status_code == 403
    other = create(client, name="n2")
    assert client.delete("/v1/nodes/n2").status_code == 204
    assert client.get(f"/v1/nodes/{other['uuid']}").status_code == 404


@pytest.mark.parametrize(("text", "expected"), [("True", True), ("false", False), ("1", True)])
def test_patch_takes_booleans_written_as_text(
    api: tuple[Conductor, httpx.Client], text: str, expected: bool
) -> None:
    conductor, client = api
    create(client, name="n1")
    response = client.patch(
        "/v1/nodes/n1", json=[{"op": "replace", "path": "/maintenance", "value": text}]
    )
    assert response.status_code == 200, response.text
    assert conductor.get_node("n1").maintenance is expected


def test_fields_may_name_the_conductor(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    create(client, name="n1")
    response = client.get("/v1/nodes/n1", params={"fields": "uuid,conductor"})
    assert response.status_code == 200, response.text
    assert response.json()["conductor"] == conductor.config.host
    assert set(response.json()) == {"uuid", "conductor", "links"}


def test_interfaces_change_only_in_quiet_states(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    node = create(client, name="n1")
    for verb in ("manage", "provide", "active"):
        assert client.put("/v1/nodes/n1/states/provision", json={"target": verb}).status_code == 202
        _wait_settled(conductor, node["uuid"])
    change = [{"op": "replace", "path": "/driver", "value": "ipmi"}]
    refused = client.patch("/v1/nodes/n1", json=change)
    assert refused.status_code == 409
    assert "driver" in error_text(refused)
    assert conductor.get_node("n1").driver == "fake-hardware"
    client.put("/v1/nodes/n1/maintenance", json={})
    allowed = client.patch("/v1/nodes/n1", json=change)
    assert allowed.status_code == 200, allowed.text
    assert conductor.get_node("n1").driver == "ipmi"


@pytest.mark.parametrize(
    "operations",
    [
        [{"op": "test", "path": "/driver_info/ipmi_password", "value": "guess"}],
        [{"op": "copy", "from": "/driver_info/ipmi_password", "path": "/extra/leak"}],
        [{"op": "move", "from": "/driver_info/ipmi_password", "path": "/extra/leak"}],
        [{"op": "remove", "path": "/driver_info/missing"}],
        [{"op": "add", "path": "/driver_info/ipmi_password/deeper", "value": 1}],
    ],
)
def test_patch_errors_never_show_secrets(
    api: tuple[Conductor, httpx.Client], operations: list[dict[str, Any]]
) -> None:
    conductor, client = api
    info = {"ipmi_address": "10.0.0.9", "ipmi_password": "Very-Secret-77"}
    node = create(client, name="n1", driver_info=info)
    response = client.patch("/v1/nodes/n1", json=operations)
    assert response.status_code == 400, response.text
    assert "Very-Secret-77" not in response.text
    stored = conductor.get_node(node["uuid"])
    assert stored.extra == {}
    assert stored.driver_info == info


def test_interfaces_show_the_drivers_defaults(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    fake = create(client, name="f1")
    assert (fake["power_interface"], fake["boot_interface"]) == ("fake", "fake")
    ipmi = client.post("/v1/nodes", json={"driver": "ipmi", "name": "i1"}).json()
    assert (ipmi["power_interface"], ipmi["deploy_interface"]) == ("ipmitool", "disk-boot")
    assert ipmi["bios_interface"] == "no-bios"
    listed = client.get("/v1/nodes/detail").json()["nodes"]
    assert {n["name"]: n["power_interface"] for n in listed} == {"f1": "fake", "i1": "ipmitool"}
    assert conductor.get_node("i1").power_interface is None  # shown, not stored


def test_conductor_group_is_stored_shown_set_and_filtered(
    api: tuple[Conductor, httpx.Client],
) -> None:
    conductor, client = api
    node = create(client, name="g1", conductor_group="Rack-1")
    create(client, name="g2")
    assert node["conductor_group"] == "rack-1"  # Ironic lowers groups
    assert conductor.get_node("g1").conductor_group == "rack-1"
    listed = client.get("/v1/nodes", params={"conductor_group": "RACK-1"}).json()["nodes"]
    assert [n["name"] for n in listed] == ["g1"]
    changed = client.patch(
        "/v1/nodes/g2", json=[{"op": "add", "path": "/conductor_group", "value": "rack-2"}]
    )
    assert changed.status_code == 200, changed.text
    assert conductor.get_node("g2").conductor_group == "rack-2"
    before = conductor.get_node("g2")
    bad = client.patch(
        "/v1/nodes/g2", json=[{"op": "replace", "path": "/conductor_group", "value": "a b"}]
    )
    assert bad.status_code == 400
    assert conductor.get_node("g2") == before
    old = {"X-OpenStack-Ironic-API-Version": "1.45"}
    refused = client.post(
        "/v1/nodes", json={"driver": "fake-hardware", "conductor_group": "x"}, headers=old
    )
    assert refused.status_code == 406
    assert "conductor_group" not in client.get("/v1/nodes/g1", headers=old).json()
    assert len(conductor.list_nodes()) == 2


def test_column_listings_decode_no_record(
    api: tuple[Conductor, httpx.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, client = api
    for name in ("c1", "c2"):
        create(client, name=name, conductor_group="rack")
    counter = DecodeCounter(monkeypatch)
    summary = client.get("/v1/nodes").json()["nodes"]
    assert [n["name"] for n in summary] == ["c1", "c2"]
    assert summary[0]["provision_state"] == s.ENROLL
    shown = client.get("/v1/nodes", params={"fields": "name,conductor_group,created_at"})
    assert [n["conductor_group"] for n in shown.json()["nodes"]] == ["rack", "rack"]
    assert counter.count == 0
    client.get("/v1/nodes", params={"fields": "name,extra"})  # the record is needed
    assert counter.count == 2


INSTANCE = "6d9f2e3a-0c1b-4e5f-8a7b-9c0d1e2f3a4b"
OTHER_INSTANCE = "7d9f2e3a-0c1b-4e5f-8a7b-9c0d1e2f3a4b"


def test_tenancy_fields_and_instance_are_stored_and_filtered(
    api: tuple[Conductor, httpx.Client],
) -> None:
    _, client = api
    create(client, name="t1", owner="p1", lessee="p2", description="by the door")
    create(client, name="t2", owner="p3")
    shown = client.get("/v1/nodes/t1").json()
    assert (shown["owner"], shown["lessee"], shown["description"]) == ("p1", "p2", "by the door")
    patched = client.patch(
        "/v1/nodes/t2",
        json=[{"op": "add", "path": "/instance_uuid", "value": INSTANCE.upper()}],
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["instance_uuid"] == INSTANCE

    def names(**params: str) -> list[str]:
        response = client.get("/v1/nodes", params=params)
        assert response.status_code == 200, response.text
        return [n["name"] for n in response.json()["nodes"]]

    assert names(owner="p1") == ["t1"]
    assert names(lessee="p2") == ["t1"]
    assert names(associated="true") == ["t2"]
    assert names(associated="false") == ["t1"]
    assert names(instance_uuid=INSTANCE) == ["t2"]
    assert client.get("/v1/nodes", params={"instance_uuid": "nope"}).status_code == 400
    old = {"X-OpenStack-Ironic-API-Version": "1.49"}
    assert client.get("/v1/nodes", params={"owner": "p1"}, headers=old).status_code == 406
    assert "owner" not in client.get("/v1/nodes/t1", headers=old).json()


@pytest.mark.parametrize(
    ("operations", "status"),
    [
        ([{"op": "replace", "path": "/instance_uuid", "value": OTHER_INSTANCE}], 409),
        ([{"op": "add", "path": "/description", "value": "d" * 4097}], 400),
        ([{"op": "add", "path": "/owner", "value": "o" * 256}], 400),
        ([{"op": "add", "path": "/lessee", "value": 5}], 400),
    ],
)  # fmt: skip
def test_refused_tenancy_patches_change_nothing(
    api: tuple[Conductor, httpx.Client], operations: Any, status: int
) -> None:
    conductor, client = api
    node = create(client, name="held", instance_uuid=INSTANCE, owner="p1")
    before = conductor.get_node(node["uuid"])
    response = client.patch("/v1/nodes/held", json=operations)
    assert response.status_code == status, response.text
    assert conductor.get_node(node["uuid"]) == before
    cleared = client.patch("/v1/nodes/held", json=[{"op": "remove", "path": "/instance_uuid"}])
    assert cleared.status_code == 200, cleared.text
    assert conductor.get_node("held").instance_uuid is None


def test_an_associated_node_is_not_deleted(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    node = create(client, name="busy", instance_uuid=INSTANCE)
    before = conductor.get_node(node["uuid"])
    refused = client.delete("/v1/nodes/busy")
    assert refused.status_code == 409
    assert INSTANCE in error_text(refused)
    assert conductor.get_node("busy") == before
    client.patch("/v1/nodes/busy", json=[{"op": "remove", "path": "/instance_uuid"}])
    assert client.delete("/v1/nodes/busy").status_code == 204
    assert conductor.list_nodes() == []
