"""ironic_fsm.hardware and drivers.fake: hardware types and plugin loading (docs/steps.rst)."""

from __future__ import annotations

import attrs
import pytest

from ironic_fsm import states
from ironic_fsm.config import Config
from ironic_fsm.drivers.fake import FakeDeploy, FakePower, FakeVendor, fake_hardware
from ironic_fsm.exceptions import DriverNotFound, InvalidParameterValue, IronicFSMError
from ironic_fsm.hardware import (
    HARDWARE_TYPES_NAMESPACE,
    HardwareType,
    installed_hardware_types,
    interface_namespace,
    load_hardware_type,
    noop_interface,
)
from ironic_fsm.interfaces import INTERFACE_CLASSES, INTERFACE_KINDS, BootInterface, PowerInterface
from ironic_fsm.node import Node
from ironic_fsm.task import Task


def _task(driver: HardwareType) -> Task:
    return Task(node=Node(), driver=driver, config=Config())


class PXEBoot(BootInterface): ...


class HTTPBoot(BootInterface): ...


# -- HardwareType ------------------------------------------------------------------


def test_missing_kinds_get_noop_interfaces() -> None:
    power = FakePower()
    hw = HardwareType(power=power)
    assert hw.power is power
    for kind in INTERFACE_KINDS:
        iface = getattr(hw, kind)
        assert isinstance(iface, INTERFACE_CLASSES[kind])
        assert iface.interface_type == kind
        if kind != "power":
            assert iface is noop_interface(kind)
            assert iface.get_clean_steps(_task(hw)) == []
            assert iface.get_deploy_steps(_task(hw)) == []


def test_empty_hardware_type_has_every_kind() -> None:
    hw = HardwareType()
    assert [kind for kind, _ in hw.interfaces()] == list(INTERFACE_KINDS)
    assert all(iface is not None for _, iface in hw.interfaces())


def test_noop_interface_is_shared_per_kind() -> None:
    assert noop_interface("boot") is noop_interface("boot")
    assert noop_interface("boot") is not noop_interface("raid")
    assert isinstance(noop_interface("raid"), INTERFACE_CLASSES["raid"])


@pytest.mark.parametrize(
    ("kind", "wrong"),
    [("power", FakeDeploy()), ("deploy", FakePower()), ("vendor", object()), ("boot", "pxe")],
)
def test_wrong_kind_rejected(kind: str, wrong: object) -> None:
    with pytest.raises(InvalidParameterValue) as info:
        HardwareType(**{kind: wrong})
    assert kind in str(info.value)
    assert INTERFACE_CLASSES[kind].__name__ in str(info.value)


def test_interfaces_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        HardwareType(FakePower())  # type: ignore[misc]


def test_hardware_type_is_frozen() -> None:
    hw = HardwareType()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        hw.power = FakePower()  # type: ignore[misc]


def test_select_picks_alternatives() -> None:
    default, pxe, http = BootInterface(), PXEBoot(), HTTPBoot()
    hw = HardwareType(boot=default, alternatives={"boot": {"pxe": pxe, "http": http}})
    assert hw.boot is default
    assert hw.select({"boot": "pxe"}).boot is pxe
    assert hw.select({"boot": "http"}).boot is http
    assert hw.boot is default  # select returns a new type


def test_select_with_nothing_chosen_keeps_defaults() -> None:
    hw = HardwareType(boot=BootInterface(), alternatives={"boot": {"pxe": PXEBoot()}})
    assert hw.select({}) == hw
    assert hw.select({"boot": None}).boot is hw.boot
    assert hw.select({"power": None}).power is hw.power


def test_select_unknown_name_raises_driver_not_found() -> None:
    hw = HardwareType(alternatives={"boot": {"pxe": PXEBoot()}})
    with pytest.raises(DriverNotFound) as info:
        hw.select({"boot": "ipxe"})
    assert "ipxe" in str(info.value)
    assert "pxe" in str(info.value)
    assert isinstance(info.value, LookupError)


def test_select_kind_without_alternatives_raises_driver_not_found() -> None:
    with pytest.raises(DriverNotFound, match="redfish"):
        HardwareType().select({"power": "redfish"})


def test_alternatives_validated() -> None:
    with pytest.raises(InvalidParameterValue, match="boot"):
        HardwareType(alternatives={"boot": {"pxe": FakePower()}})
    with pytest.raises(InvalidParameterValue, match="network"):
        HardwareType(alternatives={"network": {"flat": PowerInterface()}})


# -- fake-hardware -------------------------------------------------------------------


def _steps(hw: HardwareType, kind: str, phase: str) -> dict[str, dict[str, object]]:
    iface = getattr(hw, kind)
    return {s["step"]: s for s in getattr(iface, f"get_{phase}_steps")(_task(hw))}


def test_fake_hardware_has_every_kind() -> None:
    hw = fake_hardware()
    assert isinstance(hw, HardwareType)
    for kind, iface in hw.interfaces():
        if kind == "network":  # Ironic has no fake network: its first is flat, a plugin
            assert hw.supported_interfaces(kind)[:2] == ("flat", "noop")
            continue
        assert iface is not noop_interface(kind)
        assert type(iface).__name__.startswith("Fake")


def test_fake_vendor_log_passthrough_is_priority_one_clean_step() -> None:
    steps = _steps(fake_hardware(), "vendor", "clean")
    assert steps["log_passthrough"]["priority"] == 1
    assert steps["log_passthrough"]["interface"] == "vendor"
    assert steps["log_passthrough"]["requires_ramdisk"] is False


def test_fake_vendor_send_raw_is_priority_zero() -> None:
    steps = _steps(fake_hardware(), "vendor", "clean")
    assert steps["send_raw"]["priority"] == 0
    assert steps["send_raw"]["argsinfo"]["raw_bytes"]["required"] is True


def test_fake_deploy_core_step_at_100() -> None:
    steps = _steps(fake_hardware(), "deploy", "deploy")
    assert steps["deploy"]["priority"] == 100
    assert steps["deploy"]["interface"] == "deploy"


def test_fake_log_passthrough_is_also_a_service_step() -> None:
    steps = _steps(fake_hardware(), "vendor", "service")
    assert steps["log_passthrough"]["priority"] == 0


def test_send_raw_disallowed_by_default() -> None:
    assert "vendor.send_raw" in Config().disallow_clean_steps


def test_fake_interfaces_work_in_memory() -> None:
    hw = fake_hardware()
    task = _task(hw)
    hw.power.set_power_state(task, states.POWER_ON)
    assert hw.power.get_power_state(task) == states.POWER_ON
    hw.management.set_boot_device(task, "pxe", persistent=True)
    assert hw.management.get_boot_device(task) == {"boot_device": "pxe", "persistent": True}
    assert hw.vendor.execute_clean_step(task, {"step": "log_passthrough", "args": {}}) is None
    assert task.node.driver_internal_info["fake_log_passthrough"] == 1
    assert hw.inspect.inspect_hardware(task) == states.MANAGEABLE
    assert hw.rescue.rescue(task) == states.RESCUE


def test_fake_vendor_is_a_vendor_interface() -> None:
    assert FakeVendor.interface_type == "vendor"


# -- plugin loading -------------------------------------------------------------------


def test_namespaces() -> None:
    assert HARDWARE_TYPES_NAMESPACE == "ironic_fsm.hardware.types"
    assert interface_namespace("power") == "ironic_fsm.hardware.interfaces.power"


def test_fake_hardware_is_installed() -> None:
    assert "fake-hardware" in installed_hardware_types()


def test_load_hardware_type_through_entry_point() -> None:
    hw = load_hardware_type("fake-hardware")
    assert isinstance(hw, HardwareType)
    assert isinstance(hw.power, FakePower)
    assert _steps(hw, "vendor", "clean")["log_passthrough"]["priority"] == 1


def test_load_unknown_hardware_type_lists_installed() -> None:
    with pytest.raises(DriverNotFound) as info:
        load_hardware_type("nope")
    message = str(info.value)
    assert "'nope'" in message
    assert "fake-hardware" in message
    assert isinstance(info.value, IronicFSMError)
    assert "fake-hardware" in info.value.installed


def test_of_keys_each_interface_by_its_kind() -> None:
    hw = HardwareType.of(FakeVendor(), FakePower(), FakeDeploy(), description="three")
    assert type(hw.power) is FakePower
    assert type(hw.deploy) is FakeDeploy
    assert type(hw.vendor) is FakeVendor
    assert hw.description == "three"


def test_of_refuses_two_interfaces_of_one_kind() -> None:
    with pytest.raises(InvalidParameterValue, match="two power interfaces") as caught:
        HardwareType.of(FakePower(), FakeDeploy(), FakePower())
    assert caught.value.kind == "power"


def test_fake_hardware_has_a_fake_of_every_kind() -> None:
    hw = fake_hardware()
    kinds = {kind: type(iface).__name__ for kind, iface in hw.interfaces()}
    assert kinds == {
        "power": "FakePower", "management": "FakeManagement", "deploy": "FakeDeploy",
        "boot": "FakeBoot", "bios": "FakeBIOS", "raid": "FakeRAID", "inspect": "FakeInspect",
        "rescue": "FakeRescue", "vendor": "FakeVendor", "firmware": "FakeFirmware",
        "console": "FakeConsole", "network": "NoopNetworkInterface", "storage": "FakeStorage",
    }  # fmt: skip
    assert all(iface.interface_type == kind for kind, iface in hw.interfaces())
