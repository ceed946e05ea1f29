"""Node fields once shown with fixed values, now stored (issue 13), over HTTP and real clients.

``network_data`` (1.66), ``shard`` (1.82), ``parent_node`` (1.83) and the
inspection times (1.6): shown from their versions, set on create and by
PATCH, filtered as Ironic filters them; ``/v1/shards`` and
``/v1/nodes/{ident}/children``. Below its version a field is absent and
setting or filtering on it is refused with 406, as Ironic does.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import httpx
import openstack
import pytest
from api_helpers import api_process, error_text
from api_helpers import openstack as osc
from test_api_nodes import api_fixture, at, create  # noqa: F401  (the fixture "api")

from ironic_fsm import Conductor

NETWORK = {"links": [{"id": "eth0", "type": "phy"}], "networks": [], "services": []}


def _names(client: httpx.Client, query: str = "", version: str = "1.92") -> list[str]:
    response = client.get(f"/v1/nodes?{query}", headers=at(version))
    assert response.status_code == 200, response.text
    return sorted(n["name"] for n in response.json()["nodes"])


def _family(client: httpx.Client) -> dict[str, dict[str, Any]]:
    """A host with two children (shards a and b), a node in shard a, one without a shard."""
    host = create(client, name="host", shard="a")
    return {
        "host": host,
        "child-a": create(client, name="child-a", shard="a", parent_node="host"),
        "child-b": create(client, name="child-b", shard="b", parent_node=host["uuid"]),
        "lone": create(client, name="lone", shard="a"),
        "unsharded": create(client, name="unsharded"),
    }


# -- stored, shown from their versions ------------------------------------------------------


def test_create_stores_the_fields_and_the_parent_by_uuid(
    api: tuple[Conductor, httpx.Client],
) -> None:
    conductor, client = api
    host = create(client, name="host")
    body = create(client, name="dpu", network_data=NETWORK, shard="s1", parent_node="host")
    assert (body["network_data"], body["shard"], body["parent_node"]) == (
        NETWORK,
        "s1",
        host["uuid"],  # the name given, the UUID stored: as Ironic
    )
    stored = conductor.get_node("dpu")
    assert (stored.network_data, stored.shard, stored.parent_node) == (NETWORK, "s1", host["uuid"])
    assert client.get("/v1/nodes/dpu").json()["parent_node"] == host["uuid"]


@pytest.mark.parametrize(
    ("field", "since", "shown"),
    [("network_data", "1.66", NETWORK), ("shard", "1.82", "s1"), ("parent_node", "1.83", None)],
)
def test_a_field_is_absent_below_its_version(
    api: tuple[Conductor, httpx.Client], field: str, since: str, shown: Any
) -> None:
    _, client = api
    create(client, name="n1", network_data=NETWORK, shard="s1")
    major, minor = since.split(".")
    older = f"{major}.{int(minor) - 1}"
    assert field not in client.get("/v1/nodes/n1", headers=at(older)).json()
    assert client.get("/v1/nodes/n1", headers=at(since)).json()[field] == shown
    listed = client.get("/v1/nodes/detail", headers=at(older)).json()["nodes"][0]
    assert field not in listed


@pytest.mark.parametrize(
    ("field", "value", "version"),
    [("network_data", NETWORK, "1.65"), ("shard", "s1", "1.81"), ("parent_node", "p", "1.82")],
)
def test_setting_a_field_below_its_version_is_406_and_changes_nothing(
    api: tuple[Conductor, httpx.Client], field: str, value: Any, version: str
) -> None:
    conductor, client = api
    create(client, name="p")
    refused = client.post(
        "/v1/nodes", json={"driver": "fake-hardware", "name": "n", field: value},
        headers=at(version),
    )  # fmt: skip
    assert refused.status_code == 406
    assert field in error_text(refused)
    before = conductor.get_node("p")
    patch = [{"op": "add", "path": f"/{field}", "value": value}]
    refused = client.patch("/v1/nodes/p", json=patch, headers=at(version))
    assert refused.status_code == 406
    assert [n.name for n in conductor.list_nodes()] == ["p"]
    assert conductor.get_node("p") == before


def test_inspection_times_are_shown_from_1_6(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    finished = datetime(2026, 5, 4, 3, 2, 1, tzinfo=timezone.utc)
    conductor.create_node(driver="fake-hardware", name="i1", inspection_finished_at=finished)
    shown = client.get("/v1/nodes/i1", headers=at("1.6")).json()
    assert shown["inspection_finished_at"] == finished.isoformat()
    assert shown["inspection_started_at"] is None
    assert "inspection_finished_at" not in client.get("/v1/nodes/i1", headers=at("1.5")).json()


# -- PATCH ----------------------------------------------------------------------------------


def test_patch_sets_and_removes_the_fields(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    host = create(client, name="host")
    create(client, name="n1")
    patch = [
        {"op": "add", "path": "/shard", "value": "s2"},
        {"op": "add", "path": "/parent_node", "value": "host"},
        {"op": "add", "path": "/network_data", "value": NETWORK},
        {"op": "add", "path": "/network_data/networks/0", "value": {"id": "n0"}},
    ]
    response = client.patch("/v1/nodes/n1", json=patch)
    assert response.status_code == 200, response.text
    stored = conductor.get_node("n1")
    assert (stored.shard, stored.parent_node) == ("s2", host["uuid"])
    assert stored.network_data["networks"] == [{"id": "n0"}]
    removed: list[dict[str, Any]] = [
        {"op": "remove", "path": f"/{name}"} for name in ("shard", "parent_node")
    ]
    removed.append({"op": "replace", "path": "/network_data", "value": None})
    assert client.patch("/v1/nodes/n1", json=removed).status_code == 200
    stored = conductor.get_node("n1")
    assert (stored.shard, stored.parent_node, stored.network_data) == (None, None, {})


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("no-such-node", "parent_node 'no-such-node'"),
        ("n1", "parent_node 'n1'"),  # its own parent
        ("5f1c4c3e-7d2a-4e6b-9c1a-0b2d3e4f5a6b", "Requested value was invalid"),
    ],
)
def test_a_bad_parent_is_400_and_changes_nothing(
    api: tuple[Conductor, httpx.Client], value: str, why: str
) -> None:
    conductor, client = api
    create(client, name="n1", shard="s1")
    before = conductor.get_node("n1")
    patch = [
        {"op": "replace", "path": "/shard", "value": "s2"},
        {"op": "add", "path": "/parent_node", "value": value},
    ]
    refused = client.patch("/v1/nodes/n1", json=patch)
    assert refused.status_code == 400
    assert why in error_text(refused)
    after = conductor.get_node("n1")
    assert after == before
    assert after.reservation is None


def test_a_too_long_shard_is_400(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    create(client, name="n1")
    before = conductor.get_node("n1")
    refused = client.patch(
        "/v1/nodes/n1", json=[{"op": "add", "path": "/shard", "value": "x" * 256}]
    )
    assert refused.status_code == 400
    assert "shard" in error_text(refused)
    assert conductor.get_node("n1") == before


# -- list filters ---------------------------------------------------------------------------


def test_lists_leave_children_out_unless_asked(api: tuple[Conductor, httpx.Client]) -> None:
    _, client = api
    nodes = _family(client)
    parents = ["host", "lone", "unsharded"]
    assert _names(client) == parents
    assert _names(client, version="1.5") == parents  # at every version, as Ironic
    everyone = ["child-a", "child-b", "host", "lone", "unsharded"]
    assert _names(client, "include_children=true") == everyone
    host = nodes["host"]["uuid"]
    assert _names(client, f"parent_node={host}") == ["child-a", "child-b"]
    assert _names(client, f"parent_node={host}&shard=b") == ["child-b"]
    assert _names(client, "parent_node=host") == []  # a name matches no stored UUID
    # With include_children, Ironic ignores parent_node.
    assert _names(client, f"include_children=true&parent_node={host}") == everyone
    detail = client.get("/v1/nodes/detail?include_children=True").json()["nodes"]
    assert {n["name"]: n["parent_node"] for n in detail}["child-a"] == host


def test_shard_filters(api: tuple[Conductor, httpx.Client]) -> None:
    _, client = api
    _family(client)
    assert _names(client, "shard=a") == ["host", "lone"]
    assert _names(client, "shard=a&include_children=1") == ["child-a", "host", "lone"]
    assert _names(client, "shard=a,b&include_children=1") == ["child-a", "child-b", "host", "lone"]
    assert _names(client, "sharded=false") == ["unsharded"]
    assert _names(client, "sharded=true") == ["host", "lone"]
    assert _names(client, "shard=") == []


#: Each new filter, and the version just below the one that brought it.
TOO_OLD_FOR = {
    "shard=a": "1.81",
    "sharded=true": "1.81",
    "include_children=true": "1.82",
    "parent_node=5f1c4c3e-7d2a-4e6b-9c1a-0b2d3e4f5a6b": "1.82",
}


@pytest.mark.parametrize("query", TOO_OLD_FOR)
def test_a_filter_below_its_version_is_406(api: tuple[Conductor, httpx.Client], query: str) -> None:
    _, client = api
    create(client, name="n1", shard="a")
    response = client.get(f"/v1/nodes?{query}", headers=at(TOO_OLD_FOR[query]))
    assert response.status_code == 406
    assert query.split("=")[0] in error_text(response)


# -- /v1/shards and children ----------------------------------------------------------------


def test_shards_counts_every_node_by_shard(api: tuple[Conductor, httpx.Client]) -> None:
    _, client = api
    _family(client)
    response = client.get("/v1/shards")
    assert response.status_code == 200
    assert response.json() == {
        "shards": [
            {"name": "a", "count": 3},  # children count too
            {"name": "None", "count": 1},  # Ironic's name for the nodes without a shard
            {"name": "b", "count": 1},
        ]
    }
    assert client.get("/v1/shards", headers=at("1.81")).status_code == 404
    assert "shards" in client.get("/v1", headers=at("1.82")).json()
    assert "shards" not in client.get("/v1", headers=at("1.81")).json()


def test_children_lists_the_uuids_of_a_nodes_children(
    api: tuple[Conductor, httpx.Client],
) -> None:
    _, client = api
    nodes = _family(client)
    host = nodes["host"]["uuid"]
    response = client.get("/v1/nodes/host/children")
    assert response.status_code == 200
    body = response.json()
    assert sorted(body["children"]) == sorted(nodes[n]["uuid"] for n in ("child-a", "child-b"))
    assert body["links"] == {
        "href": f"{client.base_url}/v1/nodes?parent_node={host}",
        "rel": "children",
    }
    assert client.get("/v1/nodes/lone/children").json()["children"] == []
    assert client.get("/v1/nodes/host/children", headers=at("1.82")).status_code == 404
    assert client.get("/v1/nodes/nope/children").status_code == 404


def test_deleting_a_parent_leaves_its_children_as_ironic_does(
    api: tuple[Conductor, httpx.Client],
) -> None:
    conductor, client = api
    nodes = _family(client)
    assert client.delete("/v1/nodes/host").status_code == 204
    assert conductor.get_node("child-a").parent_node == nodes["host"]["uuid"]
    assert _names(client) == ["lone", "unsharded"]  # children still have a parent_node


# -- real clients ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with api_process(tmp_path_factory.mktemp("api") / "nodes.sqlite") as base:
        yield base


def test_cli_shards_and_children(url: str) -> None:
    osc(url, "node", "create", "--driver", "fake-hardware", "--name", "cli-host", "--shard", "r1")
    child = osc(url, "node", "create", "--driver", "fake-hardware", "--name", "cli-dpu",
                "--shard", "r2", "--parent-node", "cli-host", "-f", "json")  # fmt: skip
    host = osc(url, "node", "show", "cli-host", "-f", "json")
    assert (child["shard"], child["parent_node"]) == ("r2", host["uuid"])
    listed = osc(url, "node", "list", "--shards", "r1", "r2", "-f", "json")
    assert [n["name"] for n in listed] == ["cli-host"]
    listed = osc(url, "node", "list", "--include-children", "--shards", "r1", "r2", "-f", "json")
    assert sorted(n["name"] for n in listed) == ["cli-dpu", "cli-host"]
    listed = osc(url, "node", "list", "--parent-node", host["uuid"], "-f", "json")
    assert [n["name"] for n in listed] == ["cli-dpu"]
    children = osc(url, "node", "children", "list", "cli-host", "-f", "json")
    assert children == {"children": [child["uuid"]]}
    shards = osc(url, "shard", "list", "-f", "json")
    assert {row["name"]: row["count"] for row in shards} == {"r1": 1, "r2": 1}
    osc(url, "node", "set", "cli-dpu", "--shard", "r1")
    osc(url, "node", "unset", "cli-dpu", "--parent-node")
    shown = osc(url, "node", "show", "cli-dpu", "-f", "json")
    assert (shown["shard"], shown["parent_node"]) == ("r1", None)


def test_sdk_shards_and_children(url: str) -> None:
    conn = openstack.connection.Connection(auth_type="none", baremetal_endpoint_override=url)
    try:
        host = conn.baremetal.create_node(driver="fake-hardware", name="sdk-host", shard="z1")
        child = conn.baremetal.create_node(
            driver="fake-hardware", name="sdk-dpu", shard="z1", parent_node=host.id
        )
        assert conn.baremetal.get_node("sdk-dpu").parent_node == host.id
        found = [n.name for n in conn.baremetal.nodes(shard="z1")]
        assert found == ["sdk-host"]
        found = sorted(n.name for n in conn.baremetal.nodes(shard="z1", include_children=True))
        assert found == ["sdk-dpu", "sdk-host"]
        assert [n.id for n in conn.baremetal.nodes(parent_node=host.id)] == [child.id]
    finally:
        conn.close()
