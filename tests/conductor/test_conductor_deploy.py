"""Conductor: deploying, rebuilding, deploy templates, user deploy steps.

The merge of driver, template and user steps is the one docs/steps.rst
describes ("Planning rules"); deploy steps and templates in docs/operator.rst.
"""

from __future__ import annotations

import pytest
from helpers import (
    FAKE_HW,
    TEMPLATES_HW,
    TEST_HW,
    calls,
    dstep,
    hooks,
    make_conductor,
    new_node,
    snapshot,
    unchanged,
)

from ironic_fsm import Conductor, Config, Node, states
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    InvalidState,
    NodeProtected,
    StepNotAllowed,
)

TEMPLATE = [dstep("bios", "b1", 90), dstep("bios", "b2", 10)]


def test_deploy_runs_the_core_step() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE)
    result = conductor.do_provisioning_action(node.uuid, "deploy")
    node = conductor.get_node(node.uuid)
    assert result.provision_state == node.provision_state == states.ACTIVE
    assert node.target_provision_state is None
    assert calls(node) == ["deploy"]
    assert node.driver_internal_info["fake_deployed"] is True
    assert node.last_error is None
    assert not node.deploy_step
    assert not node.driver_internal_info.get("deploy_steps")


def test_driver_steps_run_by_priority() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE, driver=TEMPLATES_HW)
    conductor.do_provisioning_action(node.uuid, "deploy")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.ACTIVE
    # deploy.deploy=100 and bios.b4=100 tie: deploy ranks above bios; b3=70.
    assert calls(node) == ["deploy", "b4", "b3"]


def test_get_deploy_steps_sorted() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE, driver=TEMPLATES_HW)
    steps = conductor.get_deploy_steps(node.uuid)
    prios = [st["priority"] for st in steps]
    assert prios == sorted(prios, reverse=True)
    assert [(st["interface"], st["step"]) for st in steps[:3]] == [
        ("deploy", "deploy"),
        ("bios", "b4"),
        ("bios", "b3"),
    ]


def _templated_node() -> tuple[Conductor, Node]:
    """An available node whose instance asks for CUSTOM_BIOS, with that deploy template."""
    conductor = make_conductor()
    conductor.add_deploy_template("CUSTOM_BIOS", TEMPLATE)
    node = new_node(
        conductor,
        states.AVAILABLE,
        driver=TEMPLATES_HW,
        traits=["CUSTOM_BIOS"],
        instance_info={"traits": ["CUSTOM_BIOS"]},
    )
    return conductor, node


def test_deploy_template_matched_by_instance_traits() -> None:
    conductor, node = _templated_node()
    conductor.do_provisioning_action(node.uuid, "deploy")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.ACTIVE
    assert calls(node) == ["deploy", "b4", "b1", "b3", "b2"]


def test_deploy_template_not_named_by_instance_traits_is_ignored() -> None:
    conductor = make_conductor()
    conductor.add_deploy_template("CUSTOM_BIOS", TEMPLATE)
    node = new_node(conductor, states.AVAILABLE, driver=TEMPLATES_HW, traits=["CUSTOM_BIOS"])
    conductor.do_provisioning_action(node.uuid, "deploy")
    assert calls(conductor.get_node(node.uuid)) == ["deploy", "b4", "b3"]


def test_instance_traits_must_be_node_traits() -> None:
    conductor = make_conductor()
    conductor.add_deploy_template("CUSTOM_BIOS", TEMPLATE)
    node = new_node(
        conductor, states.AVAILABLE, driver=TEMPLATES_HW, instance_info={"traits": ["CUSTOM_BIOS"]}
    )
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue) as info:
        conductor.do_provisioning_action(node.uuid, "deploy")
    assert "CUSTOM_BIOS" in str(info.value)
    after = conductor.get_node(node.uuid)
    assert calls(after) == []


def test_user_deploy_steps_override_templates_and_driver() -> None:
    # Every source overriding another, as Ironic merges them (docs/steps.rst):
    # driver b1=0 b2=0 b3=70 b4=100 deploy=100; template b1=90 b2=10; user b2=95 b3=0.
    conductor, node = _templated_node()
    conductor.do_provisioning_action(
        node.uuid, "deploy", deploy_steps=[dstep("bios", "b2", 95), dstep("bios", "b3", 0)]
    )
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.ACTIVE
    assert calls(node) == ["deploy", "b4", "b2", "b1"]


def test_validate_deploy_steps_changes_nothing() -> None:
    conductor, node = _templated_node()
    before = snapshot(conductor.get_node(node.uuid))
    plan = conductor.validate_deploy_steps(
        node.uuid, [dstep("bios", "b2", 95), dstep("bios", "b3", 0)]
    )
    assert [(st["interface"], st["step"]) for st in plan] == [
        ("deploy", "deploy"),
        ("bios", "b4"),
        ("bios", "b2"),
        ("bios", "b1"),
    ]
    assert snapshot(conductor.get_node(node.uuid)) == before


def test_core_step_may_be_disabled_but_not_moved() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE, driver=TEMPLATES_HW)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue) as info:
        conductor.do_provisioning_action(
            node.uuid, "deploy", deploy_steps=[dstep("deploy", "deploy", 50)]
        )
    assert "deploy.deploy" in str(info.value)
    conductor.do_provisioning_action(
        node.uuid, "deploy", deploy_steps=[dstep("deploy", "deploy", 0)]
    )
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.ACTIVE
    assert calls(node) == ["b4", "b3"]


@pytest.mark.parametrize(
    "user_steps",
    [
        [dstep("deploy", "no_such_step", 50)],
        [dstep("nosuchiface", "b1", 50)],
        [dstep("bios", "b1", 50, bogus=1)],
        [dstep("bios", "b1", 50), dstep("bios", "b1", 60)],
    ],
    ids=["unknown-step", "unknown-interface", "unexpected-arg", "duplicate"],
)
def test_bad_user_deploy_steps_are_refused_and_node_stays_available(
    user_steps: list[dict[str, object]],
) -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE, driver=TEMPLATES_HW)
    before = snapshot(conductor.get_node(node.uuid))
    with pytest.raises(InvalidParameterValue):
        conductor.do_provisioning_action(node.uuid, "deploy", deploy_steps=user_steps)
    after = conductor.get_node(node.uuid)
    assert after.provision_state == states.AVAILABLE
    assert snapshot(after) == before
    assert calls(after) == []


def test_unknown_user_step_is_named() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE)
    with pytest.raises(InvalidParameterValue) as info:
        conductor.do_provisioning_action(
            node.uuid, "deploy", deploy_steps=[dstep("deploy", "no_such_step", 50)]
        )
    assert "deploy.no_such_step" in str(info.value)


def test_disallowed_user_deploy_step_is_refused() -> None:
    conductor = make_conductor(config=Config(disallow_deploy_steps=["bios.b1"]))
    node = new_node(conductor, states.AVAILABLE, driver=TEMPLATES_HW)
    # StepNotAllowed is an InvalidParameterValue.
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue) as info:
        conductor.do_provisioning_action(
            node.uuid, "deploy", deploy_steps=[dstep("bios", "b1", 50)]
        )
    assert "bios.b1" in str(info.value)
    assert issubclass(StepNotAllowed, InvalidParameterValue)


def test_redeploy_from_deploy_failed() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE)
    conductor.do_provisioning_action(
        node.uuid, "deploy", deploy_steps=[dstep("deploy", "fail_deploy", 150)]
    )
    conductor.do_provisioning_action(node.uuid, "deploy")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.ACTIVE
    assert node.target_provision_state is None
    assert node.last_error is None
    assert calls(node) == ["fail_deploy", "deploy"]


def test_rebuild_from_active_does_not_clean() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.ACTIVE, driver=FAKE_HW, instance_info={"image_source": "img"})
    conductor.do_provisioning_action(node.uuid, "rebuild")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.ACTIVE
    assert node.target_provision_state is None
    assert node.driver_internal_info["fake_deployed"] is True
    assert "fake_log_passthrough" not in node.driver_internal_info


def test_rebuild_runs_deploy_steps_again() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE)
    conductor.do_provisioning_action(node.uuid, "deploy")
    conductor.do_provisioning_action(node.uuid, "rebuild")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.ACTIVE
    assert calls(node) == ["deploy", "deploy"]


@pytest.mark.parametrize("verb", ["rebuild", "undeploy", "deleted"])
def test_protected_node_refuses_rebuild_and_undeploy(verb: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.ACTIVE)
    conductor.update_node(node.uuid, protected=True, protected_reason="production database")
    with unchanged(conductor, node.uuid), pytest.raises(NodeProtected) as info:
        conductor.do_provisioning_action(node.uuid, verb)
    assert node.uuid in str(info.value)
    after = conductor.get_node(node.uuid)
    assert calls(after) == []


def test_protected_node_may_be_undeployed_once_unprotected() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.ACTIVE, driver=FAKE_HW)
    conductor.update_node(node.uuid, protected=True)
    conductor.update_node(node.uuid, protected=False)
    node = conductor.get_node(node.uuid)
    assert node.protected_reason is None
    conductor.do_provisioning_action(node.uuid, "undeploy")
    assert conductor.get_node(node.uuid).provision_state == states.AVAILABLE


def test_protected_only_in_active() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE)
    with pytest.raises(InvalidState):
        conductor.update_node(node.uuid, protected=True)
    assert conductor.get_node(node.uuid).protected is False


def test_deploy_steps_only_with_deploy_verbs() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue):
        conductor.do_provisioning_action(
            node.uuid, "provide", deploy_steps=[dstep("deploy", "deploy", 100)]
        )


def test_deploy_on_test_hardware_validates_power() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE, driver=TEST_HW)
    conductor.do_provisioning_action(node.uuid, "deploy")
    assert conductor.get_node(node.uuid).driver_internal_info["power_validations"] >= 1


def test_deploy_with_invalid_power_is_refused_and_node_stays() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE, driver="test-bad-power")
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue):
        conductor.do_provisioning_action(node.uuid, "deploy")


def test_deploy_with_every_step_disabled_fails() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE)
    conductor.do_provisioning_action(
        node.uuid, "deploy", deploy_steps=[dstep("deploy", "deploy", 0)]
    )
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.DEPLOYFAIL
    assert node.target_provision_state == states.ACTIVE
    assert "No deploy steps returned by the driver" in node.last_error
    assert calls(node) == []


def test_deploy_prepares_and_a_failure_cleans_up() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE)
    conductor.do_provisioning_action(node.uuid, "deploy")
    assert hooks(conductor.get_node(node.uuid)) == {"prepare": 1}
    other = new_node(conductor, states.AVAILABLE)
    conductor.do_provisioning_action(
        other.uuid, "deploy", deploy_steps=[dstep("deploy", "fail_deploy", 150)]
    )
    assert hooks(conductor.get_node(other.uuid)) == {"prepare": 1, "clean_up": 1}


def test_undeploy_dissociates_the_instance() -> None:
    """As Ironic: tear-down clears instance_uuid with instance_info, so the node can be deleted."""
    conductor = make_conductor()
    node = new_node(conductor, states.ACTIVE, driver=FAKE_HW)
    instance = "7c0d1e2f-3a4b-4c5d-8e6f-708192a3b4c5"
    conductor.update_node(node.uuid, instance_uuid=instance, instance_info={"image_source": "x"})
    assert conductor.list_nodes(associated=True)[0].uuid == node.uuid
    conductor.do_provisioning_action(node.uuid, "undeploy")
    node = conductor.get_node(node.uuid)
    assert (node.provision_state, node.instance_uuid, node.instance_info) == (
        states.AVAILABLE, None, {},
    )  # fmt: skip
    assert conductor.list_nodes(associated=True) == []
