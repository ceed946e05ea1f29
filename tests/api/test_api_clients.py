"""The real Ironic clients (``openstack baremetal``, openstacksdk) against the API process.

Nothing here was written for ironic_fsm: if these pass, tooling built on
the clients (Ansible, Bifrost, scripts) drives ironic_fsm unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openstack
import pytest
from api_helpers import api_process
from api_helpers import openstack as osc

from ironic_fsm import states as s


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with api_process(tmp_path_factory.mktemp("api") / "nodes.sqlite") as base:
        yield base


@pytest.fixture(scope="module")
def conn(url: str) -> Iterator[Any]:
    connection = openstack.connection.Connection(auth_type="none", baremetal_endpoint_override=url)
    yield connection
    connection.close()


def test_cli_lifecycle(url: str) -> None:
    created = osc(url, "node", "create", "--driver", "fake-hardware", "--name", "cli1",
                  "-f", "json")  # fmt: skip
    assert created["provision_state"] == s.ENROLL
    listed = osc(url, "node", "list", "-f", "json")
    assert "cli1" in [n["name"] for n in listed]
    osc(url, "node", "manage", "cli1", "--wait", "60")
    assert osc(url, "node", "show", "cli1", "-f", "json")["provision_state"] == s.MANAGEABLE
    steps = json.dumps([{"interface": "vendor", "step": "log_passthrough"}])
    osc(url, "node", "clean", "cli1", "--clean-steps", steps, "--wait", "60")
    osc(url, "node", "provide", "cli1", "--wait", "60")
    filtered = osc(url, "node", "list", "--provision-state", "available", "-f", "json")
    assert [n["name"] for n in filtered] == ["cli1"]
    osc(url, "node", "deploy", "cli1", "--wait", "60")
    shown = osc(url, "node", "show", "cli1", "-f", "json")
    assert (shown["provision_state"], shown["target_provision_state"]) == (s.ACTIVE, None)
    osc(url, "node", "undeploy", "cli1", "--wait", "60")
    assert osc(url, "node", "show", "cli1", "-f", "json")["provision_state"] == s.AVAILABLE


def test_cli_node_settings(url: str) -> None:
    osc(url, "node", "create", "--driver", "fake-hardware", "--name", "cli2")
    osc(url, "node", "maintenance", "set", "cli2", "--reason", "fan broken")
    shown = osc(url, "node", "show", "cli2", "-f", "json")
    assert (shown["maintenance"], shown["maintenance_reason"]) == (True, "fan broken")
    osc(url, "node", "maintenance", "unset", "cli2")
    shown = osc(url, "node", "show", "cli2", "-f", "json")
    assert (shown["maintenance"], shown["maintenance_reason"]) == (False, None)
    osc(url, "node", "power", "on", "cli2")
    assert osc(url, "node", "show", "cli2", "-f", "json")["power_state"] == s.POWER_ON
    osc(url, "node", "power", "off", "cli2")
    assert osc(url, "node", "show", "cli2", "-f", "json")["power_state"] == s.POWER_OFF
    osc(url, "node", "add", "trait", "cli2", "CUSTOM_GPU")
    assert osc(url, "node", "trait", "list", "cli2", "-f", "json") == [{"traits": "CUSTOM_GPU"}]
    osc(url, "node", "manage", "cli2", "--wait", "60")
    osc(url, "node", "set", "cli2", "--retired", "--retired-reason", "old")
    shown = osc(url, "node", "show", "cli2", "-f", "json")
    assert (shown["retired"], shown["retired_reason"]) == (True, "old")
    validated = osc(url, "node", "validate", "cli2", "-f", "json")
    assert {v["Interface"]: v["Result"] for v in validated}["power"] is True


def test_cli_shows_the_fault_of_a_refusal(url: str) -> None:
    result = osc(url, "node", "show", "no-such-node", check=False)
    assert result.returncode != 0
    assert "no-such-node could not be found (HTTP 404)" in result.stderr


def test_sdk_flows(conn: Any) -> None:
    node = conn.baremetal.create_node(driver="fake-hardware", name="sdk1")
    assert node.provision_state == s.ENROLL
    found = conn.baremetal.find_node("sdk1")
    assert found.id == node.id
    node = conn.baremetal.set_node_provision_state(node, "manage", wait=True, timeout=60)
    assert node.provision_state == s.MANAGEABLE
    node = conn.baremetal.set_node_provision_state(node, "provide", wait=True, timeout=60)
    assert node.provision_state == s.AVAILABLE
    conn.baremetal.patch_node(node, [{"op": "add", "path": "/extra/answer", "value": 42}])
    assert conn.baremetal.get_node("sdk1").extra == {"answer": 42}
    conn.baremetal.set_node_provision_state(node, "active")
    node = conn.baremetal.wait_for_nodes_provision_state([node], "active", timeout=60)[0]
    assert node.provision_state == s.ACTIVE
    conn.baremetal.add_node_trait(node, "CUSTOM_FAST")
    conn.baremetal.set_node_traits(node, ["CUSTOM_A", "CUSTOM_B"])
    conn.baremetal.remove_node_trait(node, "CUSTOM_A")
    assert conn.baremetal.get_node(node.id).traits == ["CUSTOM_B"]
    conn.baremetal.set_node_maintenance(node, reason="checking")
    shown = conn.baremetal.get_node(node.id)
    assert (shown.is_maintenance, shown.maintenance_reason) == (True, "checking")
    conn.baremetal.unset_node_maintenance(node)
    assert conn.baremetal.get_node(node.id).is_maintenance is False
    node = conn.baremetal.set_node_provision_state(node, "deleted", wait=True, timeout=60)
    assert node.provision_state == s.AVAILABLE
    names = [n.name for n in conn.baremetal.nodes(details=True, provision_state="available")]
    assert "sdk1" in names
    conn.baremetal.delete_node(node)
    assert conn.baremetal.find_node("sdk1") is None


def test_sdk_sees_validation_and_paging(conn: Any) -> None:
    for i in range(3):
        conn.baremetal.create_node(driver="fake-hardware", name=f"page{i}")
    names = [n.name for n in conn.baremetal.nodes(limit=2, paginated=True)]
    assert {"page0", "page1", "page2"} <= set(names)
    result = conn.baremetal.validate_node("page0", required=("power",))
    assert result["power"].result is True


def test_sdk_error_reaches_the_caller(conn: Any, tmp_path: Path) -> None:
    with pytest.raises(openstack.exceptions.NotFoundException, match="could not be found"):
        conn.baremetal.get_node("missing-node")


def test_conductor_group_through_the_clients(url: str, conn: Any) -> None:
    osc(url, "node", "create", "--driver", "fake-hardware", "--name", "grp1",
        "--conductor-group", "Edge-1")  # fmt: skip
    assert osc(url, "node", "show", "grp1", "-f", "json")["conductor_group"] == "edge-1"
    conn.baremetal.create_node(driver="fake-hardware", name="grp2", conductor_group="edge-2")
    found = [n.name for n in conn.baremetal.nodes(conductor_group="edge-1")]
    assert found == ["grp1"]
    osc(url, "node", "set", "grp2", "--conductor-group", "edge-1")
    listed = osc(url, "node", "list", "--conductor-group", "edge-1", "-f", "json")
    assert sorted(n["name"] for n in listed) == ["grp1", "grp2"]


TEMPLATE_STEPS = [{"interface": "deploy", "step": "deploy", "args": {}, "priority": 90}]
RUNBOOK_STEPS = [{"interface": "vendor", "step": "log_passthrough", "args": {}, "order": 1}]


def test_sdk_drives_deploy_templates_and_runbooks(conn: Any) -> None:
    made = conn.baremetal.create_deploy_template(name="CUSTOM_SDK", steps=TEMPLATE_STEPS)
    assert conn.baremetal.get_deploy_template("CUSTOM_SDK").id == made.id
    conn.baremetal.patch_deploy_template(
        made, [{"op": "add", "path": "/extra/team", "value": "ops"}]
    )
    assert conn.baremetal.get_deploy_template(made.id).extra == {"team": "ops"}
    assert "CUSTOM_SDK" in [t.name for t in conn.baremetal.deploy_templates()]
    conn.baremetal.delete_deploy_template(made)
    assert "CUSTOM_SDK" not in [t.name for t in conn.baremetal.deploy_templates()]
    book = conn.baremetal.create_runbook(name="CUSTOM_SDKRB", steps=RUNBOOK_STEPS)
    conn.baremetal.patch_runbook(book, [{"op": "replace", "path": "/public", "value": True}])
    assert conn.baremetal.get_runbook("CUSTOM_SDKRB").public is True
    conn.baremetal.delete_runbook(book)


def test_cli_drives_deploy_templates_and_runbooks(url: str) -> None:
    steps = json.dumps(TEMPLATE_STEPS)
    made = osc(url, "deploy", "template", "create", "CUSTOM_CLI", "--steps", steps, "-f", "json")
    assert made["name"] == "CUSTOM_CLI"
    listed = osc(url, "deploy", "template", "list", "-f", "json")
    assert "CUSTOM_CLI" in [t["name"] for t in listed]
    shown = osc(url, "deploy", "template", "show", "CUSTOM_CLI", "-f", "json")
    assert shown["steps"] == TEMPLATE_STEPS
    osc(url, "deploy", "template", "delete", "CUSTOM_CLI")
    assert osc(url, "deploy", "template", "show", "CUSTOM_CLI", check=False).returncode != 0
    book = osc(url, "runbook", "create", "--name", "CUSTOM_CLIRB", "--steps",
               json.dumps(RUNBOOK_STEPS), "-f", "json")  # fmt: skip
    assert book["steps"] == RUNBOOK_STEPS
    assert osc(url, "runbook", "show", "CUSTOM_CLIRB", "-f", "json")["public"] is False
    osc(url, "node", "create", "--driver", "fake-hardware", "--name", "rb1")
    osc(url, "node", "manage", "rb1", "--wait", "60")
    osc(url, "node", "add", "trait", "rb1", "CUSTOM_CLIRB")
    osc(url, "node", "clean", "rb1", "--runbook", "CUSTOM_CLIRB", "--wait", "60")
    shown = osc(url, "node", "show", "rb1", "-f", "json")
    assert (shown["provision_state"], shown["last_error"]) == (s.MANAGEABLE, None)
    osc(url, "runbook", "delete", "CUSTOM_CLIRB")
    assert "CUSTOM_CLIRB" not in [r["name"] for r in osc(url, "runbook", "list", "-f", "json")]


def test_tenancy_fields_through_the_clients(url: str, conn: Any) -> None:
    osc(url, "node", "create", "--driver", "fake-hardware", "--name", "ten1", "--owner", "p1",
        "--lessee", "p2", "--description", "second shelf")  # fmt: skip
    shown = osc(url, "node", "show", "ten1", "-f", "json")
    assert (shown["owner"], shown["lessee"], shown["description"]) == ("p1", "p2", "second shelf")
    assert [n["name"] for n in osc(url, "node", "list", "--owner", "p1", "-f", "json")] == ["ten1"]
    instance = "6d9f2e3a-0c1b-4e5f-8a7b-9c0d1e2f3a4b"
    osc(url, "node", "set", "ten1", "--instance-uuid", instance)
    associated = [n.name for n in conn.baremetal.nodes(associated=True)]
    assert associated == ["ten1"]
    assert conn.baremetal.get_node("ten1").instance_id == instance
    osc(url, "node", "unset", "ten1", "--instance-uuid", "--owner")
    shown = osc(url, "node", "show", "ten1", "-f", "json")
    assert (shown["owner"], shown["instance_uuid"]) == (None, None)
