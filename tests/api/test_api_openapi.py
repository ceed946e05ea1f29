"""``/openapi.json`` describes what is served: real responses are checked against it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import fastjsonschema
import httpx
import pytest
from api_helpers import LATEST, api_in_process


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Any]]:
    db = tmp_path_factory.mktemp("openapi") / "nodes.sqlite"
    with (
        api_in_process(db) as (_, _, url),
        httpx.Client(base_url=url, headers=LATEST, timeout=60) as client,
    ):
        yield client, client.get("/openapi.json").json()


def _validator(doc: dict[str, Any], name: str) -> Any:
    return fastjsonschema.compile(
        {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    )


def test_document_is_openapi_3_1(served: tuple[httpx.Client, Any]) -> None:
    client, doc = served
    assert doc["openapi"] == "3.1.0"
    assert doc["info"]["version"] == client.get("/").json()["default_version"]["version"]
    for path in ("/v1/nodes", "/v1/nodes/{ident}", "/v1/nodes/{ident}/states/provision",
                 "/v1/nodes/{ident}/traits/{trait}"):  # fmt: skip
        assert path in doc["paths"]


def test_real_responses_match_the_document(served: tuple[httpx.Client, Any]) -> None:
    client, doc = served
    created = client.post(
        "/v1/nodes",
        json={"driver": "fake-hardware", "name": "o1", "driver_info": {"ipmi_password": "p"}},
    )
    assert created.status_code == 201
    node, node_list, error = (_validator(doc, n) for n in ("Node", "NodeList", "Error"))
    node(created.json())
    node(client.get("/v1/nodes/o1").json())
    client.put("/v1/nodes/o1/traits/CUSTOM_X")
    node_list(client.get("/v1/nodes").json())
    node_list(client.get("/v1/nodes/detail?limit=1").json())
    error(client.get("/v1/nodes/nope").json())
    error(client.post("/v1/nodes", json={"driver": 1}).json())


def test_document_refuses_what_the_server_refuses(served: tuple[httpx.Client, Any]) -> None:
    _, doc = served
    check = _validator(doc, "Node")
    with pytest.raises(fastjsonschema.JsonSchemaValueException):
        check({"uuid": "u", "links": [], "surprise": 1})
    schema = doc["paths"]["/v1/nodes"]["post"]["requestBody"]["content"]["application/json"]
    create = fastjsonschema.compile(schema["schema"])
    with pytest.raises(fastjsonschema.JsonSchemaValueException):
        create({"driver": "fake-hardware", "provision_state": "active"})


def test_shards_and_children_match_the_document(served: tuple[httpx.Client, Any]) -> None:
    client, doc = served
    assert {"/v1/shards", "/v1/nodes/{ident}/children"} <= doc["paths"].keys()
    parent = client.post("/v1/nodes", json={"driver": "fake-hardware", "name": "p1", "shard": "a"})
    assert parent.status_code == 201
    child = client.post(
        "/v1/nodes", json={"driver": "fake-hardware", "shard": "a", "parent_node": "p1"}
    )
    assert child.status_code == 201
    _validator(doc, "Node")(child.json())
    _validator(doc, "Shards")(client.get("/v1/shards").json())
    _validator(doc, "Children")(client.get("/v1/nodes/p1/children").json())
