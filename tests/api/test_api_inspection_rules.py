"""Inspection rules (1.96): kept, checked as Ironic checks them, shown as Ironic shows them,
and run on inventory; the same answers through openstacksdk, the CLI and the library."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openstack.exceptions
import pytest
from api_helpers import LATEST, api_process, error_text, sdk
from cli_harness import Run, ok

from ironic_fsm import Conductor, Config
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.inspection_rules import RuleFailed
from ironic_fsm.node import Node
from ironic_fsm.stores import MemoryStore

SET_DRIVER = [{"op": "set-attribute", "args": ["/driver", "idrac"]}]


@pytest.fixture(name="url")
def _url(tmp_path: Path) -> Iterator[str]:
    with api_process(tmp_path / "rules.sqlite") as url:
        yield url


def test_sdk_creates_lists_patches_and_deletes_rules(url: str) -> None:
    with sdk(url) as cloud:
        bm = cloud.baremetal
        rule = bm.create_inspection_rule(
            actions=SET_DRIVER, description="first", priority=100,
            conditions=[{"op": "eq", "args": ["{node.driver}", "fake-hardware"]}],
        )  # fmt: skip
        assert (rule.phase, rule.priority, rule.sensitive) == ("main", 100, False)
        assert bm.get_inspection_rule(rule.id).conditions[0]["op"] == "eq"
        listed = list(bm.inspection_rules())
        assert [(r.id, r.description, r.actions) for r in listed] == [(rule.id, "first", None)]
        patched = bm.patch_inspection_rule(
            rule, [{"op": "replace", "path": "/priority", "value": 150}]
        )
        assert patched.priority == 150
        secret = bm.create_inspection_rule(actions=SET_DRIVER, sensitive=True)
        shown = bm.get_inspection_rule(secret.id)
        assert (shown.actions, shown.conditions) == (None, None)
        with pytest.raises(openstack.exceptions.BadRequestException, match="sensitive"):
            bm.patch_inspection_rule(secret, [{"op": "replace", "path": "/sensitive",
                                               "value": False}])  # fmt: skip
        bm.delete_inspection_rule(rule, ignore_missing=False)
        with pytest.raises(openstack.exceptions.NotFoundException):
            bm.get_inspection_rule(rule.id)
        assert [r.id for r in bm.inspection_rules()] == [secret.id]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"actions": SET_DRIVER, "priority": 10000},
         "Priority must be between 0 and 9999 for user-defined rules."),
        ({"actions": SET_DRIVER, "priority": -1},
         "Priority cannot be negative for user-defined rules."),
        ({"actions": SET_DRIVER, "phase": "early"}, "Invalid phase: 'early'"),
        ({"actions": [{"op": "set-attribute", "args": ["/driver"]}]},
         "Invalid parameters for action operator set-attribute: missing required "
         "argument(s): value"),
        ({"actions": [{"op": "explode", "args": []}]}, "Unsupported action operator: explode"),
        ({"actions": SET_DRIVER, "conditions": [{"op": "!near", "args": []}]},
         "Unsupported condition operator: !near"),
        ({"actions": []}, "actions must be a list of at least one action"),
        ({"conditions": []}, "'actions' is a required property"),
    ],
)  # fmt: skip
def test_a_bad_rule_is_refused_and_nothing_is_kept(
    url: str, body: dict[str, Any], words: str
) -> None:
    with httpx.Client(base_url=url, headers=LATEST, timeout=60) as client:
        refused = client.post("/v1/inspection_rules", json=body)
        assert refused.status_code == 400, refused.text
        assert words in error_text(refused)
        assert client.get("/v1/inspection_rules").json() == {"inspection_rules": []}


def test_rules_are_not_served_below_1_96(url: str) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        old = {"X-OpenStack-Ironic-API-Version": "1.95"}
        assert client.get("/v1/inspection_rules", headers=old).status_code == 404


def test_cli_manages_rules_with_openstack_baremetal_columns(run: Run) -> None:
    made = json.loads(ok(run("inspection", "rule", "create", "--actions",
                             json.dumps(SET_DRIVER), "--description", "d", "--priority", "5",
                             "-f", "json")).out)  # fmt: skip
    listed = json.loads(ok(run("inspection", "rule", "list", "-f", "json")).out)
    assert listed == [{"uuid": made["uuid"], "description": "d"}]
    long = json.loads(ok(run("inspection", "rule", "list", "--long", "-f", "json")).out)
    assert list(long[0]) == ["uuid", "description", "priority", "sensitive", "phase",
                             "actions", "conditions", "created_at", "updated_at"]  # fmt: skip
    ok(run("inspection", "rule", "set", made["uuid"], "--priority", "9"))
    ok(run("inspection", "rule", "unset", made["uuid"], "--description"))
    shown = json.loads(ok(run("inspection", "rule", "show", made["uuid"], "-f", "json")).out)
    assert (shown["priority"], shown["description"]) == (9, None)
    bad = run("inspection", "rule", "set", made["uuid"], "--priority", "10000")
    assert bad.code == 1
    assert "Priority must be between 0 and 9999" in bad.err
    again = json.loads(ok(run("inspection", "rule", "show", made["uuid"], "-f", "json")).out)
    assert again == shown
    ok(run("inspection", "rule", "delete", made["uuid"]))
    assert json.loads(ok(run("inspection", "rule", "list", "-f", "json")).out) == []


def test_rules_run_on_inventory_highest_priority_first() -> None:
    conductor = Conductor(MemoryStore(), Config())
    conductor.create_inspection_rule(
        priority=10,
        conditions=[{"op": "gt", "args": [["{inventory[memory][physical_mb]}", "2048"]]}],
        actions=[{"op": "set-attribute", "args": ["/properties/memory_mb", 8192]},
                 {"op": "add-trait", "args": ["CUSTOM_BIG"]},
                 {"op": "set-capability", "args": ["boot_mode", "uefi"]}],
    )  # fmt: skip
    conductor.create_inspection_rule(
        priority=50,
        conditions=[{"op": "!is-empty", "args": ["{inventory[bmc_address]}"]},
                    {"op": "in-net", "args": ["{inventory[bmc_address]}", "10.0.0.0/8"]}],
        actions=[{"op": "set-attribute", "args": ["/properties/memory_mb", 1]},
                 {"op": "set-plugin-data", "args": ["/seen", "{node.name}"]}],
    )  # fmt: skip
    conductor.create_inspection_rule(
        conditions=[{"op": "matches", "args": ["{inventory[bmc_address]}", "192\\..*"]}],
        actions=[{"op": "fail", "args": ["never"]}],
    )
    node = Node(uuid="11111111-2222-4333-8444-555555555555", driver="fake-hardware", name="n")
    inventory = {"memory": {"physical_mb": 4096}, "bmc_address": "10.1.2.3"}
    outcome = conductor.run_inspection_rules(node, inventory)
    assert outcome.node.properties == {"memory_mb": 8192, "capabilities": "boot_mode:uefi"}
    assert outcome.node.traits == ["CUSTOM_BIG"]
    assert outcome.plugin_data == {"seen": "n"}
    assert len(outcome.applied) == 2
    assert node.properties == {}  # the node given is left as it was
    failing = conductor.create_inspection_rule(
        conditions=[{"op": "contains", "args": ["{inventory[bmc_address]}", "^10\\."]}],
        actions=[{"op": "fail", "args": ["BMC on the wrong network"]}],
    )
    with pytest.raises(RuleFailed, match="BMC on the wrong network"):
        conductor.run_inspection_rules(node, inventory)
    with pytest.raises(InvalidParameterValue, match="sensitive flag unset"):
        conductor.update_inspection_rule(
            conductor.create_inspection_rule(actions=SET_DRIVER, sensitive=True).uuid,
            sensitive=False,
        )
    assert conductor.get_inspection_rule(failing.uuid).actions[0]["op"] == "fail"
