"""ironic_fsm.interfaces: step discovery, execution and the kinds' contract methods."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from ironic_fsm import interfaces, states
from ironic_fsm.config import Config
from ironic_fsm.exceptions import StepFailed, UnsupportedOperation
from ironic_fsm.hardware import HardwareType
from ironic_fsm.interfaces import (
    INTERFACE_CLASSES,
    BaseInterface,
    BIOSInterface,
    DeployInterface,
    InspectInterface,
    ManagementInterface,
    PowerInterface,
    RAIDInterface,
    RescueInterface,
    VendorInterface,
)
from ironic_fsm.node import Node
from ironic_fsm.steps import clean_step, deploy_step, service_step, verify_step
from ironic_fsm.task import Task

CLEAN_KEYS = {"interface", "step", "priority", "abortable", "argsinfo", "requires_ramdisk"}
DEPLOY_KEYS = {"interface", "step", "priority", "abortable", "argsinfo"}


class RecordingVendor(VendorInterface):
    """Vendor interface whose steps record how they were called."""

    @clean_step(priority=0)
    def zeta(self, task: Task) -> None:
        task.node.driver_internal_info.setdefault("calls", []).append(("zeta", {}))

    @clean_step(
        priority=5,
        abortable=True,
        argsinfo={"size": {"description": "Size", "required": True}},
        requires_ramdisk=False,
    )
    @service_step(argsinfo={"size": {"description": "Size", "required": True}})
    def alpha(self, task: Task, size: int) -> str:
        task.node.driver_internal_info.setdefault("calls", []).append(("alpha", {"size": size}))
        return states.CLEANWAIT

    @clean_step(priority=3)
    @deploy_step(priority=40)
    def mid(self, task: Task, **kwargs: Any) -> None:
        task.node.driver_internal_info.setdefault("calls", []).append(("mid", kwargs))

    @deploy_step(priority=10)
    def deploy_only(self, task: Task) -> None: ...

    @verify_step(priority=2)
    def check(self, task: Task) -> None: ...

    def helper(self, task: Task) -> None:
        """Not a step."""


def _task(driver: HardwareType | None = None) -> Task:
    return Task(node=Node(), driver=driver or HardwareType(), config=Config())


# -- discovery -------------------------------------------------------------------


def test_step_definitions_computed_at_class_creation() -> None:
    assert "step_definitions" in vars(RecordingVendor)
    names = [info.name for info in RecordingVendor.step_definitions["clean"]]
    assert names == ["alpha", "mid", "zeta"]
    iface = RecordingVendor()
    assert "step_definitions" not in vars(iface)
    assert iface.step_definitions is RecordingVendor.step_definitions
    assert RecordingVendor().step_definitions is RecordingVendor().step_definitions


def test_discovery_is_per_class_not_per_call() -> None:
    class Late(VendorInterface):
        @clean_step(priority=1)
        def first(self, task: Task) -> None: ...

    iface = Late()

    # A method attached after class creation is not discovered by a later call.
    def added(self: object, task: Task) -> None: ...

    clean_step(priority=9)(added)
    Late.added = added  # type: ignore[attr-defined]
    assert [s["step"] for s in iface.get_clean_steps(_task())] == ["first"]


def test_steps_sorted_by_method_name() -> None:
    steps = RecordingVendor().get_clean_steps(_task())
    assert [s["step"] for s in steps] == ["alpha", "mid", "zeta"]


def test_get_steps_includes_priority_zero() -> None:
    steps = {s["step"]: s for s in RecordingVendor().get_clean_steps(_task())}
    assert steps["zeta"]["priority"] == 0


def test_clean_step_dict_keys_and_values() -> None:
    steps = {s["step"]: s for s in RecordingVendor().get_clean_steps(_task())}
    for step in steps.values():
        assert set(step) == CLEAN_KEYS
        assert step["interface"] == "vendor"
    assert steps["alpha"] == {
        "interface": "vendor",
        "step": "alpha",
        "priority": 5,
        "abortable": True,
        "argsinfo": {"size": {"description": "Size", "required": True}},
        "requires_ramdisk": False,
    }
    assert steps["zeta"]["abortable"] is False
    assert steps["zeta"]["requires_ramdisk"] is True


def test_service_step_dict_keys() -> None:
    steps = RecordingVendor().get_service_steps(_task())
    assert [s["step"] for s in steps] == ["alpha"]
    assert set(steps[0]) == CLEAN_KEYS
    assert steps[0]["priority"] == 0


def test_deploy_step_dict_keys() -> None:
    steps = RecordingVendor().get_deploy_steps(_task())
    assert [s["step"] for s in steps] == ["deploy_only", "mid"]
    for step in steps:
        assert set(step) == DEPLOY_KEYS
        assert step["abortable"] is True
    assert {s["step"]: s["priority"] for s in steps} == {"deploy_only": 10, "mid": 40}


def test_verify_steps() -> None:
    steps = RecordingVendor().get_verify_steps(_task())
    assert [(s["interface"], s["step"], s["priority"]) for s in steps] == [("vendor", "check", 2)]


def test_non_step_methods_are_not_steps() -> None:
    names = {s["step"] for s in RecordingVendor().get_clean_steps(_task())}
    assert "helper" not in names
    assert "get_clean_steps" not in names


def test_repeated_calls_return_equal_lists_of_fresh_dicts() -> None:
    iface = RecordingVendor()
    task = _task()
    first = iface.get_clean_steps(task)
    second = iface.get_clean_steps(task)
    assert first == second
    assert first is not second
    assert all(a is not b for a, b in zip(first, second, strict=True))
    first[0]["priority"] = 999
    first[0]["argsinfo"]["size"]["required"] = False
    first[0]["argsinfo"]["extra"] = {"description": "x"}
    first.append({"step": "injected"})
    third = iface.get_clean_steps(task)
    assert third == second
    assert third[0]["priority"] == 5
    assert third[0]["argsinfo"] == {"size": {"description": "Size", "required": True}}
    # and the class declaration itself is untouched
    assert RecordingVendor.step_definitions["clean"][0].argsinfo["size"]["required"] is True


def test_fresh_dicts_for_deploy_and_service_steps_too() -> None:
    iface = RecordingVendor()
    service = iface.get_service_steps(_task())
    service[0]["argsinfo"]["size"]["description"] = "changed"
    assert iface.get_service_steps(_task())[0]["argsinfo"]["size"]["description"] == "Size"
    deploy = iface.get_deploy_steps(_task())
    deploy[0]["priority"] = 0
    assert iface.get_deploy_steps(_task())[0]["priority"] == 10


def test_override_without_decorator_is_not_a_step() -> None:
    class Child(RecordingVendor):
        def alpha(self, task: Task, size: int) -> str:  # no decorator: no longer a step
            return states.CLEANWAIT

    child = [s["step"] for s in Child().get_clean_steps(_task())]
    assert child == ["mid", "zeta"]
    assert [s["step"] for s in Child().get_service_steps(_task())] == []
    # the parent is unaffected
    assert [s["step"] for s in RecordingVendor().get_clean_steps(_task())] == [
        "alpha",
        "mid",
        "zeta",
    ]


def test_subclass_inherits_parent_steps() -> None:
    class Child(RecordingVendor):
        @clean_step(priority=7)
        def beta(self, task: Task) -> None: ...

    steps = {s["step"]: s["priority"] for s in Child().get_clean_steps(_task())}
    assert steps == {"alpha": 5, "beta": 7, "mid": 3, "zeta": 0}
    assert [s["step"] for s in Child().get_clean_steps(_task())] == ["alpha", "beta", "mid", "zeta"]
    assert "beta" not in {s["step"] for s in RecordingVendor().get_clean_steps(_task())}


def test_override_with_new_decorator_replaces_declaration() -> None:
    class Child(RecordingVendor):
        @clean_step(priority=50)
        def zeta(self, task: Task) -> None: ...

    steps = {s["step"]: s["priority"] for s in Child().get_clean_steps(_task())}
    assert steps["zeta"] == 50
    assert {s["step"]: s["priority"] for s in RecordingVendor().get_clean_steps(_task())}[
        "zeta"
    ] == 0


def test_inherited_steps_report_the_subclass_interface_type() -> None:
    class Mixin:
        @clean_step(priority=4)
        def shared(self, task: Task) -> None: ...

    class Raid(Mixin, RAIDInterface): ...

    class Bios(Mixin, BIOSInterface): ...

    assert [(s["interface"], s["step"]) for s in Raid().get_clean_steps(_task())] == [
        ("raid", "shared")
    ]
    assert [(s["interface"], s["step"]) for s in Bios().get_clean_steps(_task())] == [
        ("bios", "shared")
    ]


# -- execution -------------------------------------------------------------------------


def test_execute_clean_step_passes_args() -> None:
    task = _task()
    result = RecordingVendor().execute_clean_step(
        task, {"interface": "vendor", "step": "alpha", "args": {"size": 3}}
    )
    assert result == states.CLEANWAIT
    assert task.node.driver_internal_info["calls"] == [("alpha", {"size": 3})]


@pytest.mark.parametrize("step", [{"step": "mid"}, {"step": "mid", "args": None},
                                  {"step": "mid", "args": {}}])  # fmt: skip
def test_execute_without_args_calls_with_task_only(step: dict[str, Any]) -> None:
    task = _task()
    assert RecordingVendor().execute_clean_step(task, {"interface": "vendor", **step}) is None
    assert task.node.driver_internal_info["calls"] == [("mid", {})]


def test_execute_deploy_step() -> None:
    task = _task()
    RecordingVendor().execute_deploy_step(
        task, {"interface": "vendor", "step": "mid", "args": {"x": 1}}
    )
    assert task.node.driver_internal_info["calls"] == [("mid", {"x": 1})]


@pytest.mark.parametrize("name", ["helper", "deploy_only", "no_such_method", "get_clean_steps"])
def test_execute_clean_step_refuses_non_clean_steps(name: str) -> None:
    task = _task()
    with pytest.raises(StepFailed, match=name):
        RecordingVendor().execute_clean_step(task, {"interface": "vendor", "step": name})
    assert "calls" not in task.node.driver_internal_info


def test_execute_deploy_step_refuses_clean_only_step() -> None:
    with pytest.raises(StepFailed, match="zeta"):
        RecordingVendor().execute_deploy_step(_task(), {"interface": "vendor", "step": "zeta"})


def test_execute_service_step_refuses_clean_only_step() -> None:
    with pytest.raises(StepFailed, match="mid"):
        RecordingVendor().execute_service_step(_task(), {"interface": "vendor", "step": "mid"})


# -- kinds ---------------------------------------------------------------------------

UNSUPPORTED = [
    (PowerInterface, "get_power_state", ()),
    (PowerInterface, "set_power_state", (states.POWER_ON,)),
    (PowerInterface, "reboot", ()),
    (ManagementInterface, "set_boot_device", ("pxe",)),
    (ManagementInterface, "get_supported_boot_modes", ()),
    (ManagementInterface, "get_boot_mode", ()),
    (ManagementInterface, "set_boot_mode", ("uefi",)),
    (ManagementInterface, "get_secure_boot_state", ()),
    (ManagementInterface, "set_secure_boot_state", (True,)),
    (DeployInterface, "deploy", ()),
    (BIOSInterface, "apply_configuration", ([{"name": "a", "value": "b"}],)),
    (BIOSInterface, "factory_reset", ()),
    (RAIDInterface, "create_configuration", ()),
    (RAIDInterface, "delete_configuration", ()),
    (InspectInterface, "inspect_hardware", ()),
    (InspectInterface, "abort", ()),
    (RescueInterface, "rescue", ()),
    (RescueInterface, "unrescue", ()),
]


@pytest.mark.parametrize(
    ("cls", "method", "args"), UNSUPPORTED, ids=lambda p: getattr(p, "__name__", str(p))
)
def test_base_kinds_raise_unsupported_operation(
    cls: type[BaseInterface], method: str, args: tuple[Any, ...]
) -> None:
    with pytest.raises(UnsupportedOperation, match=method) as info:
        getattr(cls(), method)(_task(), *args)
    assert isinstance(info.value, NotImplementedError)


CONTRACT_METHODS = {
    "power": ["validate", "get_power_state", "set_power_state", "reboot"],
    "management": ["get_boot_device", "set_boot_device", "get_supported_boot_devices"],
    "deploy": [
        "deploy", "prepare", "clean_up", "tear_down", "take_over", "prepare_cleaning",
        "tear_down_cleaning", "prepare_service", "tear_down_service",
    ],
    "inspect": ["inspect_hardware", "abort"],
    "rescue": ["rescue", "unrescue", "clean_up"],
    "bios": ["apply_configuration", "factory_reset", "cache_bios_settings"],
    "raid": ["create_configuration", "delete_configuration"],
}  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "method"),
    [(kind, m) for kind, methods in CONTRACT_METHODS.items() for m in methods],
)
def test_contract_methods_exist(kind: str, method: str) -> None:
    cls = INTERFACE_CLASSES[kind]
    assert callable(getattr(cls, method, None))
    params = list(inspect.signature(getattr(cls, method)).parameters)
    assert params[:2] == ["self", "task"]


def test_contract_signatures() -> None:
    assert list(inspect.signature(PowerInterface.set_power_state).parameters) == [
        "self", "task", "power_state", "timeout",
    ]  # fmt: skip
    assert inspect.signature(PowerInterface.set_power_state).parameters["timeout"].default is None
    assert inspect.signature(PowerInterface.reboot).parameters["timeout"].default is None
    params = inspect.signature(ManagementInterface.set_boot_device).parameters
    assert list(params) == ["self", "task", "device", "persistent"]
    assert params["persistent"].default is False
    assert list(inspect.signature(BIOSInterface.apply_configuration).parameters) == [
        "self", "task", "settings",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "method",
    [
        "get_properties", "validate", "get_clean_steps", "execute_clean_step",
        "get_deploy_steps", "execute_deploy_step", "get_service_steps", "execute_service_step",
        "get_verify_steps", "execute_verify_step",
    ],
)  # fmt: skip
def test_base_interface_api(method: str) -> None:
    assert callable(getattr(BaseInterface, method))


def test_interface_kinds_and_types() -> None:
    expected = {
        "power": "PowerInterface",
        "management": "ManagementInterface",
        "deploy": "DeployInterface",
        "boot": "BootInterface",
        "bios": "BIOSInterface",
        "raid": "RAIDInterface",
        "inspect": "InspectInterface",
        "rescue": "RescueInterface",
        "vendor": "VendorInterface",
        "firmware": "FirmwareInterface",
        "console": "ConsoleInterface",
        "network": "NetworkInterface",
        "storage": "StorageInterface",
    }
    assert {k: c.__name__ for k, c in INTERFACE_CLASSES.items()} == expected
    for kind, name in expected.items():
        cls = getattr(interfaces, name)
        assert cls.interface_type == kind
        assert issubclass(cls, BaseInterface)


def test_base_kinds_have_no_steps() -> None:
    task = _task()
    for cls in INTERFACE_CLASSES.values():
        iface = cls()
        assert iface.get_clean_steps(task) == []
        assert iface.get_deploy_steps(task) == []
        assert iface.get_service_steps(task) == []


def test_harmless_defaults() -> None:
    task = _task()
    assert PowerInterface().validate(task) is None
    assert PowerInterface().get_properties() == {}
    assert DeployInterface().tear_down(task) is None
    assert DeployInterface().prepare_cleaning(task) is None
    assert ManagementInterface().get_boot_device(task) == {"boot_device": None, "persistent": None}
