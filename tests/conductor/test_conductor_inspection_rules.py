"""Inspection rules run on the inventory an asynchronous inspection reports (as Ironic runs
them on the agent's): their changes are saved with the node; a ``fail`` fails inspection."""

from __future__ import annotations

from helpers import make_conductor, new_node

from ironic_fsm import Conductor, states


def _waiting(conductor: Conductor) -> str:
    node = new_node(conductor, states.MANAGEABLE, driver_info={"fail_on": ["inspect_async"]})
    conductor.do_provisioning_action(node.uuid, "inspect")
    return node.uuid


def test_rules_change_the_node_as_inspection_finishes() -> None:
    conductor = make_conductor()
    conductor.create_inspection_rule(
        conditions=[{"op": "eq", "args": [["{inventory[cpu][architecture]}", "x86_64"]]}],
        actions=[{"op": "set-attribute", "args": ["/properties/cpu_arch", "x86_64"]},
                 {"op": "add-trait", "args": ["CUSTOM_X86"]}],
    )  # fmt: skip
    uuid = _waiting(conductor)
    conductor.continue_node_inspect(uuid, {"cpu": {"architecture": "x86_64"}})
    node = conductor.get_node(uuid)
    assert node.provision_state == states.MANAGEABLE, node.last_error
    assert node.properties["cpu_arch"] == "x86_64"
    assert node.traits == ["CUSTOM_X86"]


def test_a_failing_rule_fails_inspection() -> None:
    conductor = make_conductor()
    conductor.create_inspection_rule(
        conditions=[{"op": "is-empty", "args": ["{inventory[bmc_address]}"]}],
        actions=[{"op": "fail", "args": ["no BMC address reported"]}],
    )
    uuid = _waiting(conductor)
    conductor.continue_node_inspect(uuid, {"bmc_address": ""})
    node = conductor.get_node(uuid)
    assert node.provision_state == states.INSPECTFAIL
    assert "no BMC address reported" in (node.last_error or "")
    assert node.reservation is None
