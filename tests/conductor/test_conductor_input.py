"""Conductor: bad requests are refused before anything is locked, and nothing is lost.

One test per defect found by the hostile-input corpus
(``test_hostile_input.py``): each failed before its fix. Every test here
runs on MemoryStore and on a SQLite file (``conductor_store``).
"""

from __future__ import annotations

import math
import traceback
from typing import Any

import pytest
from helpers import (
    SECRET,
    TEST_HW,
    Clock,
    ManualExecutor,
    build_hardware,
    dstep,
    make_conductor,
    new_node,
    step,
)

from ironic_fsm import Conductor, states
from ironic_fsm.conductor.common import DriverFault
from ironic_fsm.drivers.fake import FakePower
from ironic_fsm.exceptions import (
    DriverError,
    InvalidParameterValue,
    InvalidState,
    StoreError,
)
from ironic_fsm.interfaces import VendorInterface
from ironic_fsm.node import Node
from ironic_fsm.steps import clean_step
from ironic_fsm.task import Task

LEAKY_HW = "test-leaky-hardware"


class LeakyPower(FakePower):
    """A third-party power interface that echoes the password in its errors."""

    def set_power_state(self, task: Task, power_state: str, timeout: float | None = None) -> None:
        password = task.node.driver_info["ipmi_password"]
        try:
            raise ValueError(f"bad login {password}")  # what a vendor library raised
        except ValueError as inner:
            raise RuntimeError(f"BMC refused {password}") from inner


class NamingVendor(VendorInterface):
    @clean_step(priority=0)
    def names_node(self, task: Task) -> None:
        raise RuntimeError(f"Node {task.node.uuid}: firmware refused")

    @clean_step(priority=0)
    def returns_junk(self, task: Task) -> str:
        return "junk"


def _conductor() -> Conductor:
    conductor = make_conductor()
    conductor.register_hardware_type(
        LEAKY_HW, build_hardware(power=LeakyPower(), vendor=NamingVendor())
    )
    return conductor


def _record(conductor: Conductor, uuid: str) -> tuple[str, str | None, int]:
    node = conductor.store.get(uuid)
    return node.to_json(), node.reservation, node.version


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


class _Boom(Exception):
    pass


class _FailingSave:
    """Wraps a real store; the next save raises what ``fail_with`` holds."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.fail_with: BaseException | None = None

    def fail(self, node: Node) -> None:
        """Raise what a save of ``node`` must fail with, if anything."""
        if self.fail_with is not None:
            raise self.fail_with

    def save(self, node: Node) -> None:
        self.fail(node)
        self._store.save(node)

    def save_held(self, node: Node, holder: str, **kwargs: Any) -> None:
        """A SQL store's save of a node its holder holds (the conductor's save there)."""
        self.fail(node)
        self._store.save_held(node, holder, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


# -- the final save ------------------------------------------------------------------


@pytest.mark.parametrize(
    "error", [_Boom("driver exploded"), KeyboardInterrupt()], ids=["exception", "interrupt"]
)
def test_a_failing_final_save_raises_and_releases_the_node(error: BaseException) -> None:
    conductor = make_conductor()
    failing = _FailingSave(conductor.store)
    conductor.store = failing
    node = new_node(conductor, states.MANAGEABLE, name="n1")
    before = _record(conductor, node.uuid)
    failing.fail_with = error
    with pytest.raises(StoreError if isinstance(error, Exception) else KeyboardInterrupt):
        conductor.update_node(node.uuid, extra={"k": "v"})
    failing.fail_with = None
    assert _record(conductor, node.uuid) == before
    # Not left reserved: the next request goes through.
    assert conductor.update_node(node.uuid, extra={"k": "v"}).extra == {"k": "v"}


def test_renaming_to_a_taken_name_is_refused_and_nothing_is_saved() -> None:
    conductor = make_conductor()
    conductor.create_node(driver=TEST_HW, name="a")
    b = conductor.create_node(driver=TEST_HW, name="b")
    before = _record(conductor, b.uuid)
    with pytest.raises(InvalidParameterValue, match="taken"):
        conductor.update_node(b.uuid, name="a")
    assert _record(conductor, b.uuid) == before
    assert conductor.get_node("b").uuid == b.uuid


# -- validation before reservation -------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"driver": None},
        {"name": ["x"]},
        {"name": ""},
        {"name": "n" * 256},
        {"name": "a\x00b"},
        {"created_at": "2024-01-01"},
        {"uuid": "not-a-uuid"},
        {"uuid": None},
        {"traits": "str"},
        {"driver_info": "str"},
        {"driver_info": {"k": object()}},
        {"maintenance": "yes"},
    ],
    ids=lambda fields: next(iter(fields)) + "=" + type(next(iter(fields.values()))).__name__,
)
def test_create_node_refuses_bad_fields(fields: dict[str, Any]) -> None:
    conductor = make_conductor()
    with pytest.raises(InvalidParameterValue, match=next(iter(fields))):
        conductor.create_node(**{"driver": TEST_HW, **fields})
    assert conductor.list_nodes() == []


def test_create_node_normalises_the_uuid() -> None:
    conductor = make_conductor()
    node = conductor.create_node(driver=TEST_HW, uuid="1BE26C0B-03F2-4D2E-AE87-C02D7F33C123")
    assert node.uuid == "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
    assert conductor.get_node(node.uuid).uuid == node.uuid


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"retired": "yes"}, InvalidParameterValue),
        ({"instance_info": "x"}, InvalidParameterValue),
        ({"driver_info": {"k": object()}}, InvalidParameterValue),
        ({"extra": _deep(100_000)}, InvalidParameterValue),
        ({"retired": True}, InvalidState),
    ],
    ids=["retired-str", "instance-info-str", "driver-info-object", "too-deep", "retired-available"],
)
def test_refused_update_leaves_the_record_byte_identical(
    fields: dict[str, Any], error: type[Exception]
) -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE)
    before = _record(conductor, node.uuid)
    with pytest.raises(error):
        conductor.update_node(node.uuid, **fields)
    assert _record(conductor, node.uuid) == before


def test_update_name_to_another_nodes_uuid_is_refused() -> None:
    conductor = make_conductor()
    a = new_node(conductor, states.MANAGEABLE)
    b = new_node(conductor, states.MANAGEABLE)
    with pytest.raises(InvalidParameterValue, match="UUID"):
        conductor.update_node(b.uuid, name=a.uuid)
    assert conductor.get_node(b.uuid).name is None


def test_refused_deploy_steps_leave_the_record_byte_identical() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE)
    before = _record(conductor, node.uuid)
    with pytest.raises(InvalidParameterValue, match="nosuch"):
        conductor.do_provisioning_action(
            node.uuid, "deploy", deploy_steps=[dstep("bios", "nosuch", 10)]
        )
    assert _record(conductor, node.uuid) == before


@pytest.mark.parametrize("seconds", [math.nan, math.inf, 1e12, -1], ids=str)
def test_wait_step_with_absurd_seconds_is_refused_up_front(seconds: float) -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    before = _record(conductor, node.uuid)
    with pytest.raises(InvalidParameterValue, match="seconds"):
        conductor.do_provisioning_action(
            node.uuid, "clean", clean_steps=[step("vendor", "wait", seconds=seconds)]
        )
    assert _record(conductor, node.uuid) == before


@pytest.mark.parametrize("verb", ["clean", "service", "deploy"])
def test_step_args_that_cannot_be_stored_are_refused_up_front(verb: str) -> None:
    conductor = make_conductor()
    start = {"clean": states.MANAGEABLE, "service": states.ACTIVE, "deploy": states.AVAILABLE}
    node = new_node(conductor, start[verb])
    before = _record(conductor, node.uuid)
    bad: Any = (
        dstep("deploy", "deploy", 100, value={1, 2})
        if verb == "deploy"
        else step("vendor", "with_args", size=1, label={1, 2})
    )
    kwargs: dict[str, Any] = {f"{verb}_steps": [bad]}
    with pytest.raises(InvalidParameterValue, match="JSON"):
        conductor.do_provisioning_action(node.uuid, verb, **kwargs)
    assert _record(conductor, node.uuid) == before


def test_a_step_with_a_non_string_key_is_refused() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    with pytest.raises(InvalidParameterValue, match="not strings"):
        conductor.do_provisioning_action(
            node.uuid, "clean", clean_steps=[{1: "x", "interface": "vendor", "step": "step_a"}]
        )


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.add_deploy_template("T", None),
        lambda c: c.add_deploy_template("T", [{**dstep("bios", "b1", 1), "priority": "high"}]),
        lambda c: c.add_runbook("R", [1]),
        lambda c: c.add_runbook("R", "steps"),
        lambda c: c.add_runbook("R", [step("vendor", "step_a")], traits="CUSTOM_X"),
    ],
    ids=["template-none", "template-priority", "runbook-int", "runbook-str", "runbook-traits"],
)
def test_templates_and_runbooks_are_checked_when_added(call: Any) -> None:
    with pytest.raises(InvalidParameterValue):
        call(make_conductor())


@pytest.mark.parametrize(
    "call",
    [
        lambda c, u: c.get_node(["x"]),
        lambda c, u: c.do_provisioning_action(u, ["manage"]),
        lambda c, u: c.do_provisioning_action(["x"], "manage"),
        lambda c, u: c.set_power_state(u, ["power on"]),
        lambda c, u: c.get_clean_steps(u, "x"),
    ],
    ids=["get-list", "verb-list", "ident-list", "power-list", "min-priority-str"],
)
def test_arguments_of_the_wrong_type_are_invalid_parameters(call: Any) -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    with pytest.raises(InvalidParameterValue):
        call(conductor, node.uuid)


@pytest.mark.parametrize(
    "filters",
    [{"provision_state": "bogus"}, {"bogus": 1}, {"maintenance": "yes"}],
    ids=["unknown-state", "unknown-key", "wrong-type"],
)
def test_list_nodes_refuses_filters_that_cannot_match(filters: dict[str, Any]) -> None:
    conductor = make_conductor()
    new_node(conductor, states.MANAGEABLE)
    with pytest.raises(InvalidParameterValue):
        conductor.list_nodes(**filters)


# -- custom drivers ------------------------------------------------------------------------


def test_a_foreign_driver_error_is_wrapped_and_scrubbed() -> None:
    conductor = _conductor()
    node = new_node(
        conductor, states.MANAGEABLE, driver=LEAKY_HW, driver_info={"ipmi_password": SECRET}
    )
    before = _record(conductor, node.uuid)
    with pytest.raises(DriverError) as caught:
        conductor.set_power_state(node.uuid, states.POWER_ON)
    error = caught.value
    assert SECRET not in str(error)
    assert error.details == {"node": node.uuid, "interface": "power", "method": "set_power_state"}
    # No secret anywhere in what is raised: not in the cause, the context, their
    # tracebacks as printed, nor in the original (not kept, nor its frames' locals).
    cause = error.__cause__
    assert isinstance(cause, DriverFault)
    assert str(cause) == "RuntimeError: BMC refused ******"
    assert isinstance(cause.__cause__, DriverFault)
    assert str(cause.__cause__) == "ValueError: bad login ******"
    assert "set_power_state" in cause.trace  # where it came from is kept, as text
    assert error.__context__ is None
    assert cause.__traceback__ is None
    printed = "".join(traceback.format_exception(error))
    assert SECRET not in printed
    assert "RuntimeError: BMC refused ******" in printed
    chain: list[BaseException] = []
    link: BaseException | None = error
    while link is not None:
        chain.append(link)
        link = link.__cause__ or link.__context__
    assert not any(SECRET in repr(item) or SECRET in getattr(item, "trace", "") for item in chain)
    assert _record(conductor, node.uuid) == before


@pytest.mark.parametrize("name", ["names_node", "returns_junk"])
def test_last_error_names_the_node_once(name: str) -> None:
    conductor = _conductor()
    node = new_node(conductor, states.MANAGEABLE, driver=LEAKY_HW)
    conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", name)])
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANFAIL
    assert node.last_error is not None
    assert node.last_error.count(node.uuid) == 1, node.last_error
    assert f"vendor.{name}" in node.last_error


class CorruptingVendor(VendorInterface):
    @clean_step(priority=0)
    def corrupts(self, task: Task) -> None:
        task.node.properties = "not a dict"  # type: ignore[assignment]


def test_a_step_that_corrupts_the_record_fails_the_node_from_the_saved_copy() -> None:
    conductor = make_conductor()
    conductor.register_hardware_type("corrupting", build_hardware(vendor=CorruptingVendor()))
    node = new_node(conductor, states.MANAGEABLE, driver="corrupting", properties={"cpus": 2})
    conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "corrupts")])
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.CLEANFAIL
    assert node.properties == {"cpus": 2}
    assert node.last_error is not None
    assert "properties" in node.last_error
    assert node.reservation is None
    # Every record stays readable.
    assert [n.uuid for n in conductor.list_nodes()] == [node.uuid]


def test_any_spelling_of_a_uuid_finds_the_node() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    for spelling in (node.uuid.upper(), "{" + node.uuid + "}", node.uuid.replace("-", "")):
        assert conductor.get_node(spelling).uuid == node.uuid
    updated = conductor.update_node(node.uuid.upper(), extra={"a": 1})
    assert updated.extra == {"a": 1}


class _FailingFinalSave(_FailingSave):
    def fail(self, node: Node) -> None:
        if node.provision_state == states.AVAILABLE:
            raise _Boom("disk full")


def test_background_work_whose_final_save_fails_still_releases_the_node(
    caplog: pytest.LogCaptureFixture,
) -> None:
    executor = ManualExecutor()
    conductor = Conductor(store=_FailingFinalSave(make_conductor().store), executor=executor)
    node = conductor.create_node(driver="fake-hardware", provision_state=states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "provide")
    executor.run_all()
    stored = conductor.get_node(node.uuid)
    assert stored.reservation is None
    assert stored.provision_state == states.CLEANING  # the last state that was saved
    assert "ended unsaved" in caplog.text


def test_an_unreadable_wait_deadline_neither_stalls_the_node_nor_the_check() -> None:
    clock = Clock()
    conductor = make_conductor(clock=clock)
    waits = [step("vendor", "step_a"), step("deploy", "wait", seconds=60)]
    bad, good = new_node(conductor, states.MANAGEABLE), new_node(conductor, states.MANAGEABLE)
    for node in (bad, good):
        conductor.do_provisioning_action(node.uuid, "clean", clean_steps=waits)
    # A driver overwrote its bookkeeping.
    record = conductor.store.get(bad.uuid)
    record.driver_internal_info["clean_wait_until"] = "next tuesday"
    conductor.store.save(record)
    assert conductor.check_timeouts(now=clock.at(30)) == [bad.uuid]
    assert conductor.get_node(bad.uuid).provision_state == states.MANAGEABLE
    assert conductor.get_node(good.uuid).provision_state == states.CLEANWAIT
