"""The ``instance_name`` filter (1.104): a store column, found through every door.

openstacksdk and the API over HTTP on SQLite and PostgreSQL, the
``ironic-fsm`` CLI, and the library on the memory store all answer the same
nodes; below 1.104 the filter is refused (406) as Ironic refuses it.
"""

from __future__ import annotations

import json

import httpx
from api_helpers import sdk
from cli_harness import Run, ok

from ironic_fsm import Conductor, Config
from ironic_fsm.stores import MemoryStore


def test_sdk_finds_nodes_by_instance_name(served_url: str) -> None:
    url = served_url
    with sdk(url) as cloud:
        first = cloud.baremetal.create_node(driver="fake-hardware", name="in-first")
        second = cloud.baremetal.create_node(driver="fake-hardware", name="in-second")
        for node, name in ((first, "vm-1"), (second, "vm-2")):
            cloud.baremetal.patch_node(
                node.id, [{"op": "add", "path": "/instance_name", "value": name}]
            )
        found = list(cloud.baremetal.nodes(instance_name="vm-1", details=True))
        assert [(n.id, n.instance_name) for n in found] == [(first.id, "vm-1")]
        assert list(cloud.baremetal.nodes(instance_name="vm-3")) == []
        cloud.baremetal.patch_node(second.id, [{"op": "remove", "path": "/instance_name"}])
        assert list(cloud.baremetal.nodes(instance_name="vm-2")) == []
    with httpx.Client(base_url=url, timeout=60) as client:
        old = client.get(
            "/v1/nodes", params={"instance_name": "vm-1"},
            headers={"X-OpenStack-Ironic-API-Version": "1.103"},
        )  # fmt: skip
        assert old.status_code == 406, old.text
        assert "instance_name" in old.text


def test_cli_sets_and_filters_on_instance_name(run: Run) -> None:
    ok(run("node", "create", "--name", "n1"))
    ok(run("node", "create", "--name", "n2"))
    ok(run("node", "set", "n1", "--instance-name", "vm-1"))
    listed = json.loads(ok(run("node", "list", "--instance-name", "vm-1", "-f", "json")).out)
    assert [row["name"] for row in listed] == ["n1"]
    ok(run("node", "unset", "n1", "--instance-name"))
    assert json.loads(ok(run("node", "list", "--instance-name", "vm-1", "-f", "json")).out) == []


def test_library_filters_the_memory_store_alike() -> None:
    conductor = Conductor(MemoryStore(), Config())
    conductor.create_node(driver="fake-hardware", name="a", instance_name="vm-1")
    conductor.create_node(driver="fake-hardware", name="b")
    assert [n.name for n in conductor.list_nodes(instance_name="vm-1")] == ["a"]
    assert conductor.list_nodes(instance_name="vm-1", fields=["name"]) == [
        {"uuid": conductor.get_node("a").uuid, "name": "a"}
    ]
