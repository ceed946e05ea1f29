"""Conductor: automated and manual cleaning, runbooks.

What docs/cleaning.rst describes, section by section: when and which steps,
runbooks, manual cleaning, validation, waiting, aborting and failures.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import (
    FAKE_HW,
    TEST_HW,
    USER_STEP_CASES,
    USER_STEP_IDS,
    PhaseCase,
    StepVendor,
    build_hardware,
    calls,
    hooks,
    make_conductor,
    new_node,
    snapshot,
    step,
    unchanged,
)

from ironic_fsm import Conductor, Config, HardwareType, Node, states
from ironic_fsm.exceptions import (
    DriverNotFound,
    InvalidParameterValue,
    InvalidStateRequested,
    StepNotAllowed,
)
from ironic_fsm.interfaces import VendorInterface
from ironic_fsm.steps import clean_step
from ironic_fsm.task import Task

#: Priorities that enable the test hardware's zero-priority clean steps, with a tie.
OVERRIDES = {
    "vendor.step_a": 10,
    "vendor.step_b": 20,
    "management.mgmt_clean": 10,
    "bios.bios_clean": 10,
}


def _provided(config: Config | None = None, **fields: Any) -> Node:
    """A manageable node of the fake hardware after ``provide``: it must end available."""
    conductor = make_conductor(config=config)
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW, **fields)
    conductor.do_provisioning_action(node.uuid, "provide")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    return node


# -- verification (enroll -> manage) ---------------------------------------------------------------


def test_manage_from_enroll_verifies_power() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.ENROLL)
    assert node.power_state is None
    result = conductor.do_provisioning_action(node.uuid, "manage")
    node = conductor.get_node(node.uuid)
    assert result.provision_state == node.provision_state == states.MANAGEABLE
    assert node.target_provision_state is None
    assert node.driver_internal_info["power_validations"] == 1
    assert node.driver_internal_info["power_reads"] >= 1
    assert node.power_state == states.POWER_OFF
    assert node.last_error is None


def test_manage_from_enroll_reads_actual_power_state() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.ENROLL, power_state=states.POWER_ON)
    conductor.do_provisioning_action(node.uuid, "manage")
    assert conductor.get_node(node.uuid).power_state == states.POWER_ON


def test_failed_power_validation_returns_to_enroll() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.ENROLL, driver="test-bad-power")
    conductor.do_provisioning_action(node.uuid, "manage")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.ENROLL
    assert node.target_provision_state is None
    assert node.last_error.startswith("Failed to validate power driver interface for node")
    assert node.uuid in node.last_error
    assert "ipmi_address" in node.last_error


def test_manage_after_failed_verification_clears_last_error() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.ENROLL, driver="test-bad-power")
    conductor.do_provisioning_action(node.uuid, "manage")
    conductor.update_node(node.uuid, driver=TEST_HW)
    conductor.do_provisioning_action(node.uuid, "manage")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.last_error is None


# -- automated cleaning ----------------------------------------------------------------------------


def test_provide_runs_automated_cleaning_on_fake_hardware() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    result = conductor.do_provisioning_action(node.uuid, "provide")
    node = conductor.get_node(node.uuid)
    assert result.provision_state == node.provision_state == states.AVAILABLE
    assert node.target_provision_state is None
    assert node.driver_internal_info["fake_log_passthrough"] == 1
    assert node.clean_step in (None, {})
    assert node.driver_internal_info.get("clean_steps") is None
    assert node.last_error is None
    assert node.maintenance is False


def test_undeploy_runs_automated_cleaning_on_fake_hardware() -> None:
    conductor = make_conductor()
    node = new_node(
        conductor,
        states.ACTIVE,
        driver=FAKE_HW,
        power_state=states.POWER_ON,
        instance_info={"image_source": "http://images/x.qcow2"},
    )
    conductor.do_provisioning_action(node.uuid, "undeploy")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    assert node.target_provision_state is None
    assert node.driver_internal_info["fake_log_passthrough"] == 1
    assert node.power_state == states.POWER_OFF
    assert node.instance_info == {}


@pytest.mark.parametrize("verb", ["provide", "undeploy"])
def test_config_automated_clean_false_skips_steps(verb: str) -> None:
    conductor = make_conductor(config=Config(automated_clean=False))
    state = states.MANAGEABLE if verb == "provide" else states.ACTIVE
    node = new_node(conductor, state, driver=FAKE_HW)
    conductor.do_provisioning_action(node.uuid, verb)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    assert node.target_provision_state is None
    assert "fake_log_passthrough" not in node.driver_internal_info


def test_deprecated_clean_nodes_option_still_works() -> None:
    with pytest.warns(DeprecationWarning, match="clean_nodes"):
        node = _provided(config=Config(clean_nodes=False))
    assert "fake_log_passthrough" not in node.driver_internal_info


def test_node_automated_clean_false_skips_steps() -> None:
    node = _provided(automated_clean=False)
    assert "fake_log_passthrough" not in node.driver_internal_info


def test_node_automated_clean_true_overrides_config_false() -> None:
    node = _provided(config=Config(automated_clean=False), automated_clean=True)
    assert node.driver_internal_info["fake_log_passthrough"] == 1


def test_priority_override_enables_and_orders_steps() -> None:
    conductor = make_conductor(config=Config(clean_step_priority_override=OVERRIDES))
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "provide")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    # Highest priority first; ties: vendor, power, management, firmware, deploy, bios, raid.
    assert calls(node) == ["step_b", "step_a", "mgmt_clean", "bios_clean"]


def test_priority_override_enables_a_fake_step() -> None:
    node = _provided(config=Config(clean_step_priority_override={"bios.factory_reset": 5}))
    assert node.driver_internal_info["fake_bios_settings"] == {}
    assert node.driver_internal_info["fake_log_passthrough"] == 1


def test_priority_override_zero_disables_a_step() -> None:
    node = _provided(config=Config(clean_step_priority_override={"vendor.log_passthrough": 0}))
    assert "fake_log_passthrough" not in node.driver_internal_info


def test_default_disallowed_step_is_filtered_from_automated_cleaning() -> None:
    # send_raw, enabled by an override, is still disallowed by default: it is
    # silently dropped (had it run without raw_bytes, cleaning would fail).
    node = _provided(config=Config(clean_step_priority_override={"vendor.send_raw": 50}))
    assert "fake_raw_sent" not in node.driver_internal_info
    assert node.driver_internal_info["fake_log_passthrough"] == 1


def test_configured_disallowed_step_is_filtered_from_automated_cleaning() -> None:
    config = Config(
        clean_step_priority_override={"vendor.step_a": 10, "vendor.step_b": 5},
        disallow_clean_steps=["vendor.step_a"],
    )
    conductor = make_conductor(config=config)
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "provide")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    assert calls(node) == ["step_b"]


def test_automated_cleaning_failure_goes_to_clean_failed_with_target_available() -> None:
    config = Config(clean_step_priority_override={"vendor.boom": 10})
    conductor = make_conductor(config=config)
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "provide")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANFAIL
    assert node.target_provision_state == states.AVAILABLE
    assert node.maintenance is True
    assert node.fault == "clean failure"
    assert "vendor.boom" in node.last_error


# -- step queries and registration -----------------------------------------------------------------


def test_get_clean_steps_fake_hardware() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    steps = conductor.get_clean_steps(node.uuid)
    assert steps[0]["interface"] == "vendor"
    assert steps[0]["step"] == "log_passthrough"
    assert steps[0]["priority"] == 1
    priorities = [st["priority"] for st in steps]
    assert priorities == sorted(priorities, reverse=True)
    for st in steps:
        assert {
            "interface",
            "step",
            "priority",
            "abortable",
            "argsinfo",
            "requires_ramdisk",
        } <= set(st)
    ids = {f"{st['interface']}.{st['step']}" for st in steps}
    assert {"vendor.send_raw", "bios.apply_configuration", "bios.factory_reset"} <= ids
    only = conductor.get_clean_steps(node.uuid, min_priority=1)
    assert [(st["interface"], st["step"]) for st in only] == [("vendor", "log_passthrough")]


def test_get_clean_steps_sorted_with_overrides_and_tie_break() -> None:
    conductor = make_conductor(config=Config(clean_step_priority_override=OVERRIDES))
    node = new_node(conductor, states.MANAGEABLE)
    steps = conductor.get_clean_steps(node.uuid, min_priority=10)
    assert [f"{st['interface']}.{st['step']}" for st in steps] == [
        "vendor.step_b",
        "vendor.step_a",
        "management.mgmt_clean",
        "bios.bios_clean",
    ]
    assert [st["priority"] for st in steps] == [20, 10, 10, 10]
    everything = conductor.get_clean_steps(node.uuid)
    assert len(everything) > len(steps)
    assert [st["priority"] for st in everything] == sorted(
        (st["priority"] for st in everything), reverse=True
    )


def test_get_clean_steps_overrides_do_not_leak_into_other_conductors() -> None:
    # Overrides belong to one conductor's Config; asking for the steps must
    # not change the driver's declared priorities for everyone else.
    overridden = make_conductor(config=Config(clean_step_priority_override={"vendor.step_c": 42}))
    node = new_node(overridden, states.MANAGEABLE)
    assert overridden.get_clean_steps(node.uuid)[0]["step"] == "step_c"

    plain = make_conductor()
    other = new_node(plain, states.MANAGEABLE)
    steps = {
        f"{st['interface']}.{st['step']}": st["priority"]
        for st in plain.get_clean_steps(other.uuid)
    }
    assert steps["vendor.step_c"] == 0
    assert plain.get_clean_steps(other.uuid, min_priority=1) == []
    plain.do_provisioning_action(other.uuid, "provide")
    assert calls(plain.get_node(other.uuid)) == []


def test_changing_returned_steps_changes_nothing() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    for st in conductor.get_clean_steps(node.uuid):
        st["priority"] = 77
        st["argsinfo"]["injected"] = {"description": "x"}
    for st in conductor.get_deploy_steps(node.uuid):
        st["priority"] = 0
    for st in conductor.get_service_steps(node.uuid):
        st["priority"] = 77
    assert conductor.get_clean_steps(node.uuid, min_priority=1) == []
    assert all("injected" not in st["argsinfo"] for st in conductor.get_clean_steps(node.uuid))
    deploy = {
        f"{st['interface']}.{st['step']}": st["priority"]
        for st in conductor.get_deploy_steps(node.uuid)
    }
    assert deploy["deploy.deploy"] == 100
    conductor.do_provisioning_action(node.uuid, "provide")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    assert calls(node) == []
    conductor.do_provisioning_action(node.uuid, "deploy")
    assert calls(conductor.get_node(node.uuid)) == ["deploy"]


def test_get_clean_steps_changes_nothing() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    before = snapshot(conductor.get_node(node.uuid))
    conductor.get_clean_steps(node.uuid)
    assert snapshot(conductor.get_node(node.uuid)) == before


class _TwinVendor(VendorInterface):
    @clean_step(priority=7)
    def zap(self, task: Task) -> None: ...

    @clean_step(priority=7)
    def zip(self, task: Task) -> None: ...


def test_register_refuses_equal_priorities_in_one_interface() -> None:
    conductor = Conductor()
    with pytest.raises(InvalidParameterValue) as info:
        conductor.register_hardware_type("twins", HardwareType(vendor=_TwinVendor()))
    message = str(info.value)
    assert "vendor.zap" in message
    assert "vendor.zip" in message
    # A refused type is not registered.
    with pytest.raises(DriverNotFound):
        conductor.create_node(driver="twins")


def test_register_refuses_equal_priorities_made_by_overrides() -> None:
    config = Config(clean_step_priority_override={"vendor.step_a": 10, "vendor.step_c": 10})
    conductor = make_conductor(config=config, register=False)
    with pytest.raises(InvalidParameterValue) as info:
        conductor.register_hardware_type(TEST_HW, build_hardware())
    assert "vendor.step_a" in str(info.value)
    assert "vendor.step_c" in str(info.value)


def test_register_accepts_equal_priorities_across_interfaces() -> None:
    config = Config(clean_step_priority_override={"vendor.step_a": 10, "management.mgmt_clean": 10})
    conductor = make_conductor(config=config)
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "provide")
    assert calls(conductor.get_node(node.uuid)) == ["step_a", "mgmt_clean"]


# -- manual cleaning -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "state", [states.ENROLL, states.AVAILABLE, states.ACTIVE, states.ERROR, states.CLEANFAIL]
)
def test_manual_clean_only_from_manageable(state: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidStateRequested):
        conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "step_a")])


@pytest.mark.parametrize("given", [None, []], ids=["none", "empty"])
@pytest.mark.parametrize("phase", USER_STEP_CASES, ids=USER_STEP_IDS)
def test_user_step_verbs_require_steps(phase: PhaseCase, given: list[object] | None) -> None:
    conductor = make_conductor()
    node = phase.new_node(conductor)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue):
        conductor.do_provisioning_action(node.uuid, phase.verb, **{f"{phase.name}_steps": given})


def test_manual_clean_runs_steps_in_user_order() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    requested = [
        step("vendor", "step_c"),
        step("management", "mgmt_clean"),
        step("vendor", "step_a"),
        step("vendor", "with_args", size=3, label="x"),
        step("vendor", "step_b"),
    ]
    result = conductor.do_provisioning_action(node.uuid, "clean", clean_steps=requested)
    node = conductor.get_node(node.uuid)
    assert result.provision_state == node.provision_state == states.MANAGEABLE
    assert node.target_provision_state is None
    assert calls(node) == [
        "step_c",
        "mgmt_clean",
        "step_a",
        "with_args{'size': 3, 'label': 'x'}",
        "step_b",
    ]
    assert node.last_error is None
    assert node.maintenance is False
    assert node.clean_step in (None, {})


def test_manual_clean_ignores_user_priority() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    requested = [
        {"interface": "vendor", "step": "step_a", "args": {}, "priority": 1},
        {"interface": "vendor", "step": "step_b", "args": {}, "priority": 99},
    ]
    conductor.do_provisioning_action(node.uuid, "clean", clean_steps=requested)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert calls(node) == ["step_a", "step_b"]


def test_manual_clean_of_fake_hardware() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    conductor.do_provisioning_action(
        node.uuid,
        "clean",
        clean_steps=[step("bios", "apply_configuration", settings=[{"name": "a", "value": "1"}])],
    )
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.driver_internal_info["fake_bios_settings"] == {"a": "1"}
    assert "fake_log_passthrough" not in node.driver_internal_info


@pytest.mark.parametrize(
    ("bad", "fragments"),
    [
        (step("vendor", "no_such_step"), ["vendor.no_such_step"]),
        (step("nosuchiface", "step_a"), ["nosuchiface"]),
        (step("vendor", "step_a", bogus=1), ["vendor.step_a", "unexpected", "bogus"]),
        (step("vendor", "with_args", label="x"), ["vendor.with_args", "missing", "size"]),
    ],
    ids=["unknown-step", "unknown-interface", "unexpected-arg", "missing-arg"],
)
def test_manual_clean_invalid_step_is_refused_and_changes_nothing(
    bad: dict[str, object], fragments: list[str]
) -> None:
    """One rule for every entry point (the API answers 400 the same way): bad input is
    refused before the node moves, rather than sent to clean failed as Ironic 39 does."""
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue) as refused:
        conductor.do_provisioning_action(
            node.uuid,
            "clean",
            clean_steps=[step("vendor", "step_a"), bad, step("vendor", "step_b")],
        )
    for fragment in fragments:
        assert fragment in str(refused.value)
    assert node.uuid in str(refused.value)
    node = conductor.get_node(node.uuid)
    assert (node.provision_state, node.target_provision_state) == (states.MANAGEABLE, None)
    assert (node.reservation, node.last_error, node.maintenance) == (None, None, False)
    assert calls(node) == []


def test_manual_clean_reports_every_problem_at_once() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue) as refused:
        conductor.do_provisioning_action(
            node.uuid,
            "clean",
            clean_steps=[
                step("vendor", "no_such_step"),
                step("vendor", "step_a", bogus=1),
                step("vendor", "with_args"),
            ],
        )
    for fragment in ("vendor.no_such_step", "bogus", "size"):
        assert fragment in str(refused.value)


def test_manual_clean_step_returning_garbage_fails() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[step("vendor", "garbage"), step("vendor", "step_a")]
    )
    node = conductor.get_node(node.uuid)
    assert calls(node) == ["garbage"]
    assert node.provision_state == states.CLEANFAIL
    assert node.target_provision_state == states.MANAGEABLE
    assert "banana" in node.last_error
    assert "vendor.garbage" in node.last_error
    assert node.maintenance is True
    assert node.fault == "clean failure"


def test_poweroff_in_cleanfail_powers_off() -> None:
    conductor = make_conductor(config=Config(poweroff_in_cleanfail=True))
    node = new_node(conductor, states.MANAGEABLE, power_state=states.POWER_ON)
    conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "boom")])
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANFAIL
    assert node.power_state == states.POWER_OFF


def test_clean_failed_manage_returns_to_manageable_keeping_maintenance() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "boom")])
    conductor.do_provisioning_action(node.uuid, "manage")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.target_provision_state is None
    assert node.maintenance is True
    assert node.fault == "clean failure"


@pytest.mark.parametrize("verb", ["provide", "clean", "undeploy", "deleted", "abort"])
def test_clean_failed_refuses_everything_but_manage(verb: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "boom")])
    before = snapshot(conductor.get_node(node.uuid))
    kwargs = {"clean_steps": [step("vendor", "step_a")]} if verb == "clean" else {}
    with pytest.raises(InvalidStateRequested):
        conductor.do_provisioning_action(node.uuid, verb, **kwargs)
    assert snapshot(conductor.get_node(node.uuid)) == before


@pytest.mark.parametrize("phase", USER_STEP_CASES, ids=USER_STEP_IDS)
def test_disallowed_user_step_is_refused_before_any_change(phase: PhaseCase) -> None:
    conductor = make_conductor()
    node = phase.new_node(conductor, driver=FAKE_HW)
    before = snapshot(conductor.get_node(node.uuid))
    with pytest.raises(StepNotAllowed) as info:
        phase.run(conductor, node.uuid, step("vendor", "send_raw", raw_bytes="0x00 0x01"))
    assert "vendor.send_raw" in str(info.value)
    node = conductor.get_node(node.uuid)
    assert snapshot(node) == before
    assert "fake_raw_sent" not in node.driver_internal_info


def test_operator_may_allow_send_raw() -> None:
    conductor = make_conductor(config=Config(disallow_clean_steps=[]))
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[step("vendor", "send_raw", raw_bytes="0x00")]
    )
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.driver_internal_info["fake_raw_sent"] == "0x00"


def test_validate_clean_steps_changes_nothing() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    before = snapshot(conductor.get_node(node.uuid))
    plan = conductor.validate_clean_steps(
        node.uuid, [step("vendor", "step_b"), step("vendor", "with_args", size=1)]
    )
    assert [(st["interface"], st["step"]) for st in plan] == [
        ("vendor", "step_b"),
        ("vendor", "with_args"),
    ]
    assert plan[1]["args"] == {"size": 1}
    with pytest.raises(InvalidParameterValue) as info:
        conductor.validate_clean_steps(
            node.uuid, [step("vendor", "nope"), step("vendor", "with_args")]
        )
    assert "vendor.nope" in str(info.value)
    assert "size" in str(info.value)
    after = conductor.get_node(node.uuid)
    assert snapshot(after) == before
    assert calls(after) == []


# -- runbooks --------------------------------------------------------------------------------------


def test_runbook_needs_one_of_its_traits_on_the_node() -> None:
    conductor = make_conductor()
    conductor.add_runbook(
        "rb-firmware", [step("vendor", "step_b"), step("vendor", "step_a")], traits=["CUSTOM_RB"]
    )
    node = new_node(conductor, states.MANAGEABLE, traits=["CUSTOM_OTHER"])
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue) as info:
        conductor.do_provisioning_action(node.uuid, "clean", runbook="rb-firmware")
    assert "rb-firmware" in str(info.value)


def test_runbook_runs_its_steps_in_order() -> None:
    conductor = make_conductor()
    conductor.add_runbook(
        "rb-firmware",
        [step("vendor", "step_b"), step("vendor", "step_a")],
        traits=["CUSTOM_RB", "CUSTOM_RB2"],
    )
    node = new_node(conductor, states.MANAGEABLE, traits=["CUSTOM_RB2"])
    conductor.do_provisioning_action(node.uuid, "clean", runbook="rb-firmware")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.target_provision_state is None
    assert calls(node) == ["step_b", "step_a"]


def test_runbook_for_servicing() -> None:
    conductor = make_conductor()
    conductor.add_runbook(
        "rb-svc", [step("vendor", "step_c"), step("vendor", "step_a")], traits=["CUSTOM_RB"]
    )
    node = new_node(conductor, states.ACTIVE, traits=["CUSTOM_RB"])
    conductor.do_provisioning_action(node.uuid, "service", runbook="rb-svc")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.ACTIVE
    assert calls(node) == ["step_c", "step_a"]


def test_unknown_runbook_is_refused() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, traits=["CUSTOM_RB"])
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue):
        conductor.do_provisioning_action(node.uuid, "clean", runbook="nope")


def test_runbook_and_clean_steps_together_are_refused() -> None:
    conductor = make_conductor()
    conductor.add_runbook("rb", [step("vendor", "step_a")], traits=["CUSTOM_RB"])
    node = new_node(conductor, states.MANAGEABLE, traits=["CUSTOM_RB"])
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue):
        conductor.do_provisioning_action(
            node.uuid, "clean", runbook="rb", clean_steps=[step("vendor", "step_b")]
        )


def test_runbook_with_disallowed_step_is_refused() -> None:
    conductor = make_conductor()
    conductor.add_runbook("rb", [step("vendor", "send_raw", raw_bytes="00")], traits=["CUSTOM_RB"])
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW, traits=["CUSTOM_RB"])
    with unchanged(conductor, node.uuid), pytest.raises(StepNotAllowed):
        conductor.do_provisioning_action(node.uuid, "clean", runbook="rb")


def test_step_vendor_steps_are_all_manual_only() -> None:
    # Guard for the helpers: no StepVendor clean step runs in automated cleaning.
    assert all(info.priority == 0 for info in StepVendor.step_definitions["clean"])


# -- automated cleaning by runbook (docs/cleaning.rst) ---------------------------------------------


def test_automated_cleaning_by_runbook() -> None:
    config = Config(automated_cleaning_step_source="runbook", automated_cleaning_runbook="rb-auto")
    conductor = make_conductor(config=config)
    conductor.add_runbook(
        "rb-auto", [step("vendor", "step_c"), step("vendor", "step_a")], traits=["CUSTOM_AUTO"]
    )
    node = new_node(conductor, states.MANAGEABLE, traits=["CUSTOM_AUTO"])
    conductor.do_provisioning_action(node.uuid, "provide")
    node = conductor.get_node(node.uuid)
    # Declarative, not manual: the target stays available and the list order is kept.
    assert node.provision_state == states.AVAILABLE
    assert node.target_provision_state is None
    assert calls(node) == ["step_c", "step_a"]


def test_automated_cleaning_runbook_by_resource_class() -> None:
    config = Config(
        automated_cleaning_step_source="runbook",
        automated_cleaning_runbook="rb-default",
        automated_cleaning_runbook_by_resource_class={"gpu": "rb-gpu"},
    )
    conductor = make_conductor(config=config)
    conductor.add_runbook("rb-default", [step("vendor", "step_a")], traits=["CUSTOM_AUTO"])
    conductor.add_runbook("rb-gpu", [step("vendor", "step_b")], traits=["CUSTOM_AUTO"])
    gpu = new_node(conductor, states.MANAGEABLE, traits=["CUSTOM_AUTO"], resource_class="gpu")
    plain = new_node(conductor, states.MANAGEABLE, traits=["CUSTOM_AUTO"], resource_class="cpu")
    for node in (gpu, plain):
        conductor.do_provisioning_action(node.uuid, "provide")
    assert calls(conductor.get_node(gpu.uuid)) == ["step_b"]
    assert calls(conductor.get_node(plain.uuid)) == ["step_a"]


def test_runbook_mode_without_runbook_refuses_provide() -> None:
    conductor = make_conductor(config=Config(automated_cleaning_step_source="runbook"))
    node = new_node(conductor, states.MANAGEABLE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue) as info:
        conductor.do_provisioning_action(node.uuid, "provide")
    assert "runbook" in str(info.value)


def test_runbook_mode_without_runbook_does_not_strand_a_torn_down_node() -> None:
    # Ironic 39 leaves the node in 'deleting' with no worker (bug 13).
    conductor = make_conductor(config=Config(automated_cleaning_step_source="runbook"))
    node = new_node(conductor, states.ACTIVE)
    conductor.do_provisioning_action(node.uuid, "undeploy")
    node = conductor.get_node(node.uuid)
    assert node.provision_state not in (states.DELETING, states.CLEANING)
    assert node.provision_state in states.FAILURE_STATES | {states.ERROR}
    assert "runbook" in node.last_error
    assert node.reservation is None


def test_hybrid_mode_without_runbook_uses_driver_priorities() -> None:
    node = _provided(config=Config(automated_cleaning_step_source="hybrid"))
    assert node.driver_internal_info["fake_log_passthrough"] == 1


# -- the cleaning ramdisk (prepare_cleaning / tear_down_cleaning) ----------------------------------

FIRMWARE = step("firmware", "update", settings=[{"component": "bmc"}])


#: The deploy-interface hooks around steps that need the ramdisk.
_RAMDISK_HOOKS = {"clean": "cleaning", "service": "service"}


@pytest.mark.parametrize("phase", USER_STEP_CASES, ids=USER_STEP_IDS)
def test_steps_needing_the_ramdisk_prepare_and_tear_it_down(phase: PhaseCase) -> None:
    conductor = make_conductor()
    node = phase.new_node(conductor)
    phase.run(conductor, node.uuid, FIRMWARE)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == phase.done
    assert node.driver_internal_info["fake_firmware"] == [{"component": "bmc"}]
    suffix = _RAMDISK_HOOKS[phase.name]
    assert hooks(node) == {f"prepare_{suffix}": 1, f"tear_down_{suffix}": 1}


def test_out_of_band_steps_skip_the_ramdisk() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "step_a")])
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert hooks(node) == {}


def test_disable_ramdisk_refuses_steps_that_need_it() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue) as refused:
        conductor.do_provisioning_action(
            node.uuid, "clean", clean_steps=[step("vendor", "step_a"), FIRMWARE],
            disable_ramdisk=True,
        )  # fmt: skip
    assert "firmware.update" in str(refused.value)
    assert "ramdisk" in str(refused.value)
    node = conductor.get_node(node.uuid)
    assert calls(node) == []
    assert "fake_firmware" not in node.driver_internal_info
    assert hooks(node) == {}


@pytest.mark.parametrize(("second", "abort"), [("boom", False), ("async_clean", True)])
def test_a_failed_or_aborted_cleaning_tears_the_ramdisk_down(second: str, abort: bool) -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[FIRMWARE, step("vendor", second)]
    )
    if abort:
        conductor.do_provisioning_action(node.uuid, "abort")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANFAIL
    assert hooks(node) == {"prepare_cleaning": 1, "tear_down_cleaning": 1}


def test_clean_steps_only_with_clean() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue):
        conductor.do_provisioning_action(
            node.uuid, "provide", clean_steps=[step("vendor", "step_a")]
        )
