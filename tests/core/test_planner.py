"""ironic_fsm.planner: gathering, ordering and validating steps (docs/steps.rst)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import recording_step

from ironic_fsm.conductor.plans import gather_steps
from ironic_fsm.config import Config
from ironic_fsm.drivers.fake import fake_hardware
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.hardware import HardwareType
from ironic_fsm.interfaces import (
    BIOSInterface,
    BootInterface,
    DeployInterface,
    FirmwareInterface,
    ManagementInterface,
    PowerInterface,
    RAIDInterface,
    VendorInterface,
)
from ironic_fsm.node import Node
from ironic_fsm.planner import (
    CORE_DEPLOY_STEP,
    check_priority_conflicts,
    plan_automated_clean,
    plan_deploy,
    sort_steps,
    validate_user_steps,
)
from ironic_fsm.steps import clean_step, deploy_step
from ironic_fsm.task import Task

# -- a hardware type with equal priorities across kinds ----------------------------


def _clean(name: str, priority: int, **declared: Any) -> Any:
    """A clean step method that the planner orders; these tests never run one."""
    return recording_step(name, clean_step(priority=priority, **declared))


class Vendor(VendorInterface):
    v_ten = _clean("v_ten", 10)
    v_off = _clean("v_off", 0)


class Power(PowerInterface):
    p_ten = _clean("p_ten", 10)
    p_fifty = _clean("p_fifty", 50)


class Management(ManagementInterface):
    m_ten = _clean("m_ten", 10)


class Firmware(FirmwareInterface):
    f_ten = _clean("f_ten", 10)


class Deploy(DeployInterface):
    @deploy_step(priority=100)
    def deploy(self, task: Task) -> None: ...

    d_ten = _clean("d_ten", 10)
    erase_devices = _clean("erase_devices", 99)

    @clean_step(
        priority=0,
        argsinfo={
            "size": {"description": "Bytes to wipe", "required": True},
            "mode": {"description": "How to wipe"},
        },
    )
    def wipe(self, task: Task, size: int, mode: str = "zero") -> None: ...

    no_ramdisk = _clean("no_ramdisk", 0, requires_ramdisk=False)


class Bios(BIOSInterface):
    b_ten = _clean("b_ten", 10)
    b_one = _clean("b_one", 1)


class Raid(RAIDInterface):
    r_ten = _clean("r_ten", 10)

    @clean_step(priority=0)
    def create_configuration(self, task: Task, **kwargs: Any) -> None: ...


class Boot(BootInterface):
    boot_step = _clean("boot_step", 500)


def _hw() -> HardwareType:
    return HardwareType(
        vendor=Vendor(),
        power=Power(),
        management=Management(),
        firmware=Firmware(),
        deploy=Deploy(),
        bios=Bios(),
        raid=Raid(),
        boot=Boot(),
    )


def _task(hw: HardwareType) -> Task:
    return Task(node=Node(), driver=hw, config=Config())


def _clean_steps() -> list[dict[str, Any]]:
    hw = _hw()
    return gather_steps("clean", hw, _task(hw))


def _ids(plan: list[dict[str, Any]]) -> list[str]:
    return [f"{s['interface']}.{s['step']}" for s in plan]


# -- gathering and automated clean --------------------------------------------------


def test_gather_steps_asks_only_the_phase_interfaces() -> None:
    ids = _ids(_clean_steps())
    assert "boot.boot_step" not in ids
    assert "deploy.wipe" in ids  # priority 0 included
    assert "vendor.v_off" in ids
    interfaces = []
    for step_id in ids:
        kind = step_id.split(".")[0]
        if kind not in interfaces:
            interfaces.append(kind)
    assert interfaces == ["vendor", "power", "management", "firmware", "deploy", "bios", "raid"]


def test_automated_clean_order() -> None:
    plan = plan_automated_clean(_clean_steps())
    assert _ids(plan) == [
        "deploy.erase_devices",
        "power.p_fifty",
        "vendor.v_ten",
        "power.p_ten",
        "management.m_ten",
        "firmware.f_ten",
        "deploy.d_ten",
        "bios.b_ten",
        "raid.r_ten",
        "bios.b_one",
    ]
    assert [s["priority"] for s in plan] == [99, 50, 10, 10, 10, 10, 10, 10, 10, 1]


def test_automated_clean_drops_priority_zero() -> None:
    ids = _ids(plan_automated_clean(_clean_steps()))
    for disabled in (
        "vendor.v_off",
        "deploy.wipe",
        "deploy.no_ramdisk",
        "raid.create_configuration",
    ):
        assert disabled not in ids


def test_automated_clean_ignores_input_order() -> None:
    steps = _clean_steps()
    assert _ids(plan_automated_clean(list(reversed(steps)))) == _ids(plan_automated_clean(steps))


def test_plan_entries_are_fresh_and_complete() -> None:
    steps = _clean_steps()
    plan = plan_automated_clean(steps)
    first = plan[0]
    assert first == {
        "interface": "deploy",
        "step": "erase_devices",
        "args": {},
        "priority": 99,
        "abortable": False,
        "requires_ramdisk": True,
    }
    first["priority"] = 1
    assert next(s for s in steps if s["step"] == "erase_devices")["priority"] == 99


def test_overrides_enable_and_disable() -> None:
    plan = plan_automated_clean(
        _clean_steps(),
        overrides={"raid.create_configuration": 60, "deploy.erase_devices": 0, "vendor.v_off": 5},
    )
    ids = _ids(plan)
    assert "deploy.erase_devices" not in ids
    assert ids[:2] == ["raid.create_configuration", "power.p_fifty"]
    assert plan[0]["priority"] == 60
    assert ids.index("vendor.v_off") == ids.index("bios.b_one") - 1
    assert next(s for s in plan if s["step"] == "v_off")["priority"] == 5


def test_override_can_reorder() -> None:
    ids = _ids(plan_automated_clean(_clean_steps(), overrides={"bios.b_one": 1000}))
    assert ids[0] == "bios.b_one"


def test_disallowed_steps_filtered() -> None:
    ids = _ids(
        plan_automated_clean(
            _clean_steps(),
            disallowed=["power.p_fifty", "raid.r_ten"],
            overrides={"vendor.v_off": 3},
        )
    )
    assert "power.p_fifty" not in ids
    assert "raid.r_ten" not in ids
    assert "vendor.v_off" in ids
    # disallowing beats an override that enables the step
    assert "vendor.v_off" not in _ids(
        plan_automated_clean(
            _clean_steps(), overrides={"vendor.v_off": 3}, disallowed=["vendor.v_off"]
        )
    )


def test_fake_hardware_automated_clean_with_default_config() -> None:
    hw = fake_hardware()
    config = Config()
    plan = plan_automated_clean(
        gather_steps("clean", hw, _task(hw)),
        overrides=config.clean_step_priority_override,
        disallowed=config.disallow_clean_steps,
    )
    assert _ids(plan) == ["vendor.log_passthrough"]


def test_send_raw_filtered_even_when_enabled_by_override() -> None:
    hw = fake_hardware()
    plan = plan_automated_clean(
        gather_steps("clean", hw, _task(hw)),
        overrides={"vendor.send_raw": 10},
        disallowed=Config().disallow_clean_steps,
    )
    assert "vendor.send_raw" not in _ids(plan)


def test_sort_steps_ties_by_interface_then_given_order() -> None:
    steps = [
        {"interface": "raid", "step": "a", "priority": 5},
        {"interface": "deploy", "step": "z", "priority": 5},
        {"interface": "deploy", "step": "b", "priority": 5},
        {"interface": "vendor", "step": "c", "priority": 5},
        {"interface": "power", "step": "d", "priority": 6},
    ]
    assert _ids(sort_steps("clean", steps)) == [
        "power.d", "vendor.c", "deploy.z", "deploy.b", "raid.a",
    ]  # fmt: skip


# -- priority conflicts ------------------------------------------------------------


def _conflicting() -> list[dict[str, Any]]:
    return [
        {"interface": "bios", "step": "first", "priority": 10},
        {"interface": "bios", "step": "second", "priority": 10},
        {"interface": "raid", "step": "third", "priority": 10},
        {"interface": "bios", "step": "off_a", "priority": 0},
        {"interface": "bios", "step": "off_b", "priority": 0},
    ]


def test_priority_conflict_names_both_steps() -> None:
    with pytest.raises(InvalidParameterValue) as info:
        check_priority_conflicts("clean", _conflicting())
    message = str(info.value)
    assert "bios.first" in message
    assert "bios.second" in message
    assert "10" in message
    assert "raid.third" not in message


def test_priority_conflict_resolved_by_override() -> None:
    check_priority_conflicts("clean", _conflicting(), overrides={"bios.second": 11})
    check_priority_conflicts("clean", _conflicting(), overrides={"bios.first": 0})


def test_priority_conflict_created_by_override() -> None:
    with pytest.raises(InvalidParameterValue, match="off_a"):
        check_priority_conflicts(
            "clean", _conflicting(), overrides={"bios.second": 11, "bios.off_a": 10}
        )


def test_no_conflict_across_interfaces_or_at_priority_zero() -> None:
    check_priority_conflicts("clean", _clean_steps())
    check_priority_conflicts("clean", [s for s in _conflicting() if s["step"] != "second"])


def test_fake_hardware_has_no_priority_conflicts() -> None:
    hw = fake_hardware()
    for phase in ("clean", "deploy"):
        check_priority_conflicts(phase, gather_steps(phase, hw, _task(hw)))  # type: ignore[arg-type]


# -- user steps (manual clean, service, runbook) ------------------------------------


def test_user_steps_keep_user_order_and_args() -> None:
    plan = validate_user_steps(
        "clean",
        _clean_steps(),
        [
            {"interface": "bios", "step": "b_one"},
            {"interface": "deploy", "step": "wipe", "args": {"size": 5}},
            {"interface": "deploy", "step": "erase_devices", "args": {}},
        ],
    )
    assert _ids(plan) == ["bios.b_one", "deploy.wipe", "deploy.erase_devices"]
    assert plan[1]["args"] == {"size": 5}
    assert plan[0]["args"] == {}


def test_user_priority_is_ignored() -> None:
    plan = validate_user_steps(
        "clean",
        _clean_steps(),
        [
            {"interface": "bios", "step": "b_one", "priority": 999},
            {"interface": "raid", "step": "r_ten"},
        ],
    )
    assert _ids(plan) == ["bios.b_one", "raid.r_ten"]
    assert plan[0]["priority"] == 1


def test_every_problem_reported_at_once() -> None:
    with pytest.raises(InvalidParameterValue) as info:
        validate_user_steps(
            "clean",
            _clean_steps(),
            [
                {"interface": "network", "step": "flip"},
                {"interface": "deploy", "step": "no_such_step"},
                {"interface": "bios", "step": "b_one", "args": {"surprise": 1}},
                {"interface": "deploy", "step": "wipe", "args": {"mode": "random"}},
                {"interface": "vendor", "step": "v_off"},
                {"interface": "deploy", "step": "erase_devices"},
                {"interface": "deploy", "step": "no_ramdisk"},
            ],
            disallowed=["vendor.v_off"],
            disable_ramdisk=True,
        )
    message = str(info.value)
    assert "network" in message  # unknown interface
    assert "deploy.no_such_step" in message  # unknown step
    assert "surprise" in message  # unexpected argument
    assert "size" in message  # missing required argument
    assert "Bytes to wipe" in message  # ... with its description
    assert "vendor.v_off" in message  # disallowed
    assert "not allowed" in message
    assert "deploy.erase_devices" in message  # needs a ramdisk
    assert "ramdisk" in message
    assert "deploy.no_ramdisk" not in message
    assert len(info.value.problems) == 8  # wipe also needs the ramdisk


def test_requires_ramdisk_ok_when_ramdisk_enabled() -> None:
    plan = validate_user_steps(
        "clean", _clean_steps(), [{"interface": "deploy", "step": "erase_devices"}]
    )
    assert plan[0]["requires_ramdisk"] is True


def test_disable_ramdisk_accepts_steps_without_ramdisk() -> None:
    plan = validate_user_steps(
        "clean",
        _clean_steps(),
        [{"interface": "deploy", "step": "no_ramdisk"}],
        disable_ramdisk=True,
    )
    assert _ids(plan) == ["deploy.no_ramdisk"]


def test_user_steps_disallowed_by_default_config() -> None:
    hw = fake_hardware()
    with pytest.raises(InvalidParameterValue, match=r"vendor\.send_raw"):
        validate_user_steps(
            "clean",
            gather_steps("clean", hw, _task(hw)),
            [{"interface": "vendor", "step": "send_raw", "args": {"raw_bytes": "0x00"}}],
            disallowed=Config().disallow_clean_steps,
        )


@pytest.mark.parametrize("name", ["hold", "wait", "power_on", "power_off", "reboot"])
@pytest.mark.parametrize("interface", ["deploy", "power", "bogus"])
def test_reserved_steps_kept_whatever_interface(name: str, interface: str) -> None:
    plan = validate_user_steps(
        "clean",
        _clean_steps(),
        [
            {"interface": "bios", "step": "b_one"},
            {"interface": interface, "step": name},
            {"interface": "raid", "step": "r_ten"},
        ],
    )
    assert [s["step"] for s in plan] == ["b_one", name, "r_ten"]


def test_wait_with_seconds_kept() -> None:
    plan = validate_user_steps(
        "service", [], [{"interface": "deploy", "step": "wait", "args": {"seconds": 30}}]
    )
    assert plan[0]["step"] == "wait"
    assert plan[0]["args"] == {"seconds": 30}


@pytest.mark.parametrize("seconds", ["ten", -1, True, [5]])
def test_wait_with_bad_seconds_reported(seconds: object) -> None:
    with pytest.raises(InvalidParameterValue, match="seconds"):
        validate_user_steps(
            "clean",
            _clean_steps(),
            [{"interface": "deploy", "step": "wait", "args": {"seconds": seconds}}],
        )


def test_reserved_step_with_unexpected_argument_reported() -> None:
    with pytest.raises(InvalidParameterValue, match="force"):
        validate_user_steps(
            "clean", _clean_steps(), [{"interface": "deploy", "step": "hold", "args": {"force": 1}}]
        )


@pytest.mark.parametrize("steps", [[], ()])
def test_empty_step_list_rejected(steps: Any) -> None:
    with pytest.raises(InvalidParameterValue, match="empty"):
        validate_user_steps("clean", _clean_steps(), steps)


@pytest.mark.parametrize("steps", ["deploy.erase_devices", {"interface": "deploy"}, None, 5])
def test_non_list_rejected(steps: Any) -> None:
    with pytest.raises(InvalidParameterValue, match="list"):
        validate_user_steps("clean", _clean_steps(), steps)


@pytest.mark.parametrize(
    "entry",
    ["deploy.erase_devices", {"step": "erase_devices"}, {"interface": "deploy"},
     {"interface": "deploy", "step": "erase_devices", "args": [1]},
     {"interface": "deploy", "step": "erase_devices", "colour": "red"}],
)  # fmt: skip
def test_malformed_entries_rejected(entry: Any) -> None:
    with pytest.raises(InvalidParameterValue):
        validate_user_steps("clean", _clean_steps(), [entry])


def test_error_names_node() -> None:
    with pytest.raises(InvalidParameterValue, match="node-42"):
        validate_user_steps(
            "clean", _clean_steps(), [{"interface": "deploy", "step": "nope"}], node="node-42"
        )


# -- deploy ----------------------------------------------------------------------------


def _bios_driver() -> list[dict[str, Any]]:
    def step(iface: str, name: str, prio: int, **extra: Any) -> dict[str, Any]:
        return {"interface": iface, "step": name, "priority": prio, "abortable": True,
                "argsinfo": extra.get("argsinfo", {})}  # fmt: skip

    return [
        step("deploy", "deploy", 100),
        step("bios", "b1", 0),
        step("bios", "b2", 0),
        step("bios", "b3", 70),
        step("bios", "b4", 100),
        step("bios", "apply", 0, argsinfo={"settings": {"description": "S", "required": True}}),
    ]


def _templated(templates: dict[str, list[dict[str, Any]]], **kwargs: Any) -> list[dict[str, Any]]:
    """``plan_deploy`` on the BIOS driver with ``templates``; unless told otherwise, the
    node has, and its instance asks for, every template's trait."""
    traits = list(templates)
    kwargs.setdefault("node_traits", traits)
    kwargs.setdefault("instance_traits", traits)
    return plan_deploy(_bios_driver(), templates=templates, **kwargs)


def _user(iface: str, name: str, prio: Any, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"interface": iface, "step": name, "priority": prio, "args": args or {}}


def test_plan_deploy_driver_only() -> None:
    plan = plan_deploy(_bios_driver())
    assert _ids(plan) == ["deploy.deploy", "bios.b4", "bios.b3"]


def test_plan_deploy_reference_example() -> None:
    plan = _templated(
        {"CUSTOM_BIOS": [_user("bios", "b1", 90), _user("bios", "b2", 10)]},
        user_steps=[_user("bios", "b2", 95), _user("bios", "b3", 0)],
    )
    assert _ids(plan) == ["deploy.deploy", "bios.b4", "bios.b2", "bios.b1"]
    assert [s["priority"] for s in plan] == [100, 100, 95, 90]


def test_user_overrides_template_overrides_driver() -> None:
    plan = _templated(
        {"CUSTOM_A": [_user("bios", "b3", 20, None), _user("bios", "b4", 30)]},
        user_steps=[_user("bios", "b4", 5)],
    )
    prios = {f"{s['interface']}.{s['step']}": s["priority"] for s in plan}
    assert prios == {"deploy.deploy": 100, "bios.b3": 20, "bios.b4": 5}
    assert _ids(plan) == ["deploy.deploy", "bios.b3", "bios.b4"]


def test_template_not_named_by_instance_traits_is_ignored() -> None:
    plan = _templated(
        {"CUSTOM_OTHER": [_user("bios", "b1", 90)]},
        instance_traits=[],
    )
    assert "bios.b1" not in _ids(plan)


def test_priority_zero_removes_step() -> None:
    plan = plan_deploy(_bios_driver(), user_steps=[_user("bios", "b4", 0)])
    assert _ids(plan) == ["deploy.deploy", "bios.b3"]


def test_user_args_and_digit_string_priority() -> None:
    plan = plan_deploy(
        _bios_driver(), user_steps=[_user("bios", "apply", "60", {"settings": [{"name": "a"}]})]
    )
    apply = next(s for s in plan if s["step"] == "apply")
    assert apply["priority"] == 60
    assert apply["args"] == {"settings": [{"name": "a"}]}
    assert _ids(plan) == ["deploy.deploy", "bios.b4", "bios.b3", "bios.apply"]


def test_missing_required_argument_for_enabled_deploy_step() -> None:
    with pytest.raises(InvalidParameterValue, match="settings"):
        plan_deploy(_bios_driver(), user_steps=[_user("bios", "apply", 60)])


def test_core_step_may_be_disabled() -> None:
    plan = plan_deploy(_bios_driver(), user_steps=[_user("deploy", "deploy", 0)])
    assert CORE_DEPLOY_STEP not in _ids(plan)
    assert _ids(plan) == ["bios.b4", "bios.b3"]


@pytest.mark.parametrize("prio", [50, 150])
def test_core_step_cannot_be_reprioritised(prio: int) -> None:
    with pytest.raises(InvalidParameterValue) as info:
        plan_deploy(_bios_driver(), user_steps=[_user("deploy", "deploy", prio)])
    assert "deploy.deploy" in str(info.value)
    assert "core" in str(info.value)


def test_core_step_cannot_be_reprioritised_by_template() -> None:
    with pytest.raises(InvalidParameterValue, match="core"):
        _templated({"CUSTOM_T": [_user("deploy", "deploy", 10)]})


def test_duplicate_user_steps_rejected() -> None:
    with pytest.raises(InvalidParameterValue, match=r"bios\.b1"):
        plan_deploy(_bios_driver(), user_steps=[_user("bios", "b1", 10), _user("bios", "b1", 20)])


def test_duplicates_across_templates_rejected() -> None:
    with pytest.raises(InvalidParameterValue) as info:
        _templated(
            {
                "CUSTOM_A": [_user("bios", "b1", 10)],
                "CUSTOM_B": [_user("bios", "b1", 20)],
            },
        )
    assert "bios.b1" in str(info.value)
    assert "template" in str(info.value)


def test_same_step_in_template_and_user_is_an_override() -> None:
    plan = _templated(
        {"CUSTOM_A": [_user("bios", "b1", 10)]},
        user_steps=[_user("bios", "b1", 20)],
    )
    assert next(s for s in plan if s["step"] == "b1")["priority"] == 20


def test_unknown_user_step_rejected_not_dropped() -> None:
    with pytest.raises(InvalidParameterValue, match=r"bios\.b99"):
        plan_deploy(_bios_driver(), user_steps=[_user("bios", "b99", 10)])


def test_unknown_template_step_rejected() -> None:
    with pytest.raises(InvalidParameterValue, match=r"raid\.nothing"):
        _templated({"CUSTOM_A": [_user("raid", "nothing", 10)]})


def test_instance_traits_must_be_node_traits() -> None:
    with pytest.raises(InvalidParameterValue) as info:
        _templated(
            {"CUSTOM_X": [_user("bios", "b1", 10)]},
            node_traits=["CUSTOM_Y"],
        )
    assert "CUSTOM_X" in str(info.value)


@pytest.mark.parametrize("prio", [None, -1, "high", True])
def test_user_deploy_step_needs_valid_priority(prio: Any) -> None:
    with pytest.raises(InvalidParameterValue, match="priority"):
        plan_deploy(_bios_driver(), user_steps=[_user("bios", "b1", prio)])


def test_disallowed_user_deploy_step_rejected_template_filtered() -> None:
    with pytest.raises(InvalidParameterValue, match="not allowed"):
        plan_deploy(_bios_driver(), user_steps=[_user("bios", "b1", 10)], disallowed=["bios.b1"])
    plan = _templated(
        {"CUSTOM_A": [_user("bios", "b1", 10)]},
        disallowed=["bios.b1", "bios.b3"],
    )
    assert _ids(plan) == ["deploy.deploy", "bios.b4"]


@pytest.mark.parametrize("name", ["hold", "wait", "power_off", "power_on", "reboot"])
def test_reserved_steps_kept_in_deploy_plan_with_priority(name: str) -> None:
    plan = plan_deploy(_bios_driver(), user_steps=[_user("deploy", name, 80)])
    assert _ids(plan) == ["deploy.deploy", "bios.b4", f"deploy.{name}", "bios.b3"]
    assert next(s for s in plan if s["step"] == name)["priority"] == 80


def test_deploy_plan_from_fake_hardware() -> None:
    hw = fake_hardware()
    steps = gather_steps("deploy", hw, _task(hw))
    assert _ids(plan_deploy(steps)) == ["deploy.deploy"]
    plan = plan_deploy(
        steps,
        user_steps=[_user("bios", "apply_configuration", 110,
                          {"settings": [{"name": "a", "value": "b"}]})],
    )  # fmt: skip
    assert _ids(plan) == ["bios.apply_configuration", "deploy.deploy"]
