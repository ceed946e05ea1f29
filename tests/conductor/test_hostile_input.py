"""Hostile input loses nothing: a table of bad requests, run on every store.

Every bad request must either raise an :class:`IronicFSMError` subclass and
leave every stored record byte-identical (version included) and
unreserved, or move the node to its documented failure state and save that
state before returning. Each row of :data:`CASES` is one bad request; the
table is data so that a new hostile input is one more line.

Set ``HOSTILE_REPORT=<file>`` to append each outcome as a JSON line (the
team publishes the per-store counts).
"""

from __future__ import annotations

import json
import os
import uuid as _uuid
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import attrs
import pytest
from helpers import TEST_HW, StepDeploy, build_hardware, make_conductor

from ironic_fsm import Conductor, states
from ironic_fsm.drivers.fake import FakeInspect, FakePower
from ironic_fsm.exceptions import (
    DriverError,
    DriverNotFound,
    InvalidParameterValue,
    InvalidState,
    InvalidStateRequested,
    IronicFSMError,
    NodeInMaintenance,
    NodeNotFound,
    NodeProtected,
)
from ironic_fsm.interfaces import VendorInterface
from ironic_fsm.node import Node
from ironic_fsm.steps import clean_step, deploy_step
from ironic_fsm.stores import Store
from ironic_fsm.task import Task

#: A BMC password that must never leave the node record's driver_info.
PASSWORD = "H0stile-Pa55word"
HOSTILE_HW = "hostile-hardware"

IPV = InvalidParameterValue
ISR = InvalidStateRequested


def _leak(task: Task, what: str) -> RuntimeError:
    return RuntimeError(f"{what} failed, BMC said: bad password {PASSWORD}")


class HostilePower(FakePower):
    """A third-party power interface whose errors echo the password."""

    def set_power_state(self, task: Task, power_state: str, timeout: float | None = None) -> None:
        if task.node.extra.get("hostile") == "power":
            raise _leak(task, "set_power_state")
        super().set_power_state(task, power_state, timeout)

    def reboot(self, task: Task, timeout: float | None = None) -> None:
        if task.node.extra.get("hostile") == "power":
            raise _leak(task, "reboot")
        super().reboot(task, timeout)

    def validate(self, task: Task) -> None:
        if task.node.extra.get("hostile") == "validate":
            raise _leak(task, "validate")


class HostileVendor(VendorInterface):
    """Steps that raise, and step discovery that raises."""

    @clean_step(priority=0)
    def explode(self, task: Task) -> None:
        raise _leak(task, "explode")

    @clean_step(priority=0)
    def names_node(self, task: Task) -> None:
        raise RuntimeError(f"Node {task.node.uuid}: firmware refused")

    def get_clean_steps(self, task: Task) -> list[dict[str, Any]]:
        if task.node.extra.get("hostile") == "steps":
            raise _leak(task, "get_clean_steps")
        return super().get_clean_steps(task)

    @clean_step(priority=0)
    def corrupts(self, task: Task) -> None:
        task.node.properties = "not a dict"  # type: ignore[assignment]


class HostileDeploy(StepDeploy):
    @deploy_step(priority=0)
    def leak_deploy(self, task: Task) -> None:
        raise _leak(task, "leak_deploy")

    def take_over(self, task: Task) -> None:
        raise _leak(task, "take_over")


class HostileInspect(FakeInspect):
    def inspect_hardware(self, task: Task) -> str:
        raise _leak(task, "inspect_hardware")


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


def _deep_list(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _step(iface: str, name: str, **args: Any) -> dict[str, Any]:
    return {"interface": iface, "step": name, "args": args}


def _dstep(iface: str, name: str, priority: Any, **args: Any) -> dict[str, Any]:
    return {"interface": iface, "step": name, "args": args, "priority": priority}


def _wait(seconds: Any) -> list[dict[str, Any]]:
    return [_step("vendor", "wait", seconds=seconds)]


@attrs.frozen
class Ctx:
    """What a case's call may use: the conductor, the node under test and another node.

    The conductor is typed loosely: the corpus calls it with wrong types on purpose.
    """

    conductor: Any
    node: Node
    other: Node

    @property
    def u(self) -> str:
        return self.node.uuid


Call = Callable[[Ctx], Any]


@attrs.frozen
class Case:
    """One bad request.

    ``raises`` is the library exception expected; ``state`` instead names
    the documented failure state the node must end in (saved).
    """

    id: str
    call: Call
    raises: type[IronicFSMError] | None = IPV
    state: str | None = None
    start: str = states.MANAGEABLE
    driver: str = TEST_HW
    fields: dict[str, Any] = attrs.field(factory=dict)


def _c(id: str, call: Call, raises: type[IronicFSMError] | None = IPV, **kw: Any) -> Case:
    return Case(id, call, raises, **kw)


def _driver(
    id: str, call: Call, outcome: type[IronicFSMError] | str, hostile: str = "", **kw: Any
) -> Case:
    """A case on the hostile hardware: ``outcome`` is the exception or the failure state;
    ``hostile`` names what the driver turns against the caller (its node's extra)."""
    fields = {"extra": {"hostile": hostile}} if hostile else {}
    if isinstance(outcome, str):
        return Case(id, call, None, state=outcome, driver=HOSTILE_HW, fields=fields, **kw)
    return Case(id, call, outcome, driver=HOSTILE_HW, fields=fields, **kw)


def _power(state: str) -> Call:
    return lambda x: x.conductor.set_power_state(x.u, state)


def _create(**fields: Any) -> Call:
    return lambda x: x.conductor.create_node(driver=fields.pop("driver", TEST_HW), **fields)


def _create_raw(**fields: Any) -> Call:
    return lambda x: x.conductor.create_node(**fields)


def _update(**fields: Any) -> Call:
    return lambda x: x.conductor.update_node(x.u, **fields)


def _verb(verb: Any, **kw: Any) -> Call:
    return lambda x: x.conductor.do_provisioning_action(x.u, verb, **kw)


def _clean(steps: Any) -> Call:
    return _verb("clean", clean_steps=steps)


def _service(steps: Any) -> Call:
    return _verb("service", service_steps=steps)


def _deploy(steps: Any) -> Call:
    return _verb("deploy", deploy_steps=steps)


AWARE = datetime(2030, 1, 1, tzinfo=timezone.utc)
NOT_JSON: list[tuple[str, Any]] = [
    ("set", {"value": {1, 2}}),
    ("object", {"value": object()}),
    ("bytes", {"value": b"raw"}),
    ("nan", {"value": float("nan")}),
    ("int-key", {1: "a"}),
    ("deep", _deep(100_000)),
]
DICT_FIELDS = ["driver_info", "properties", "instance_info", "extra", "target_raid_config"]

CASES: list[Case] = [
    # -- create_node: field types and shapes --------------------------------------------
    _c("create-driver-none", _create_raw(driver=None)),
    _c("create-driver-empty", _create_raw(driver="")),
    _c("create-driver-int", _create_raw(driver=1)),
    _c("create-driver-list", _create_raw(driver=["x"])),
    _c("create-driver-unknown", _create_raw(driver="no-such-driver"), DriverNotFound),
    _c("create-name-list", _create(name=["x"])),
    _c("create-name-empty", _create(name="")),
    _c("create-name-int", _create(name=1)),
    _c("create-name-bool", _create(name=True)),
    _c("create-name-256", _create(name="n" * 256)),
    _c("create-name-300", _create(name="n" * 300)),
    _c("create-name-nul", _create(name="a\x00b")),
    _c("create-name-newline", _create(name="a\nb")),
    _c("create-name-tab", _create(name="a\tb")),
    _c("create-name-uuid", _create(name=str(_uuid.uuid4()))),
    _c("create-name-upper-uuid", _create(name=str(_uuid.uuid4()).upper())),
    _c("create-name-taken", lambda x: x.conductor.create_node(driver=TEST_HW, name="other")),
    _c("create-name-is-uuid-of-other", lambda x: x.conductor.create_node(name=x.other.uuid)),
    _c("create-uuid-taken", lambda x: x.conductor.create_node(driver=TEST_HW, uuid=x.u)),
    _c("create-uuid-bad", _create(uuid="not-a-uuid")),
    _c("create-uuid-none", _create(uuid=None)),
    _c("create-uuid-int", _create(uuid=123)),
    _c("create-uuid-empty", _create(uuid="")),
    _c("create-uuid-nul", _create(uuid="\x00" * 36)),
    _c("create-created-at-str", _create(created_at="2024-01-01")),
    _c("create-created-at-naive", _create(created_at=datetime(2024, 1, 1))),
    _c("create-created-at-int", _create(created_at=123)),
    _c("create-updated-at-str", _create(updated_at="yesterday")),
    _c("create-provision-updated-at-float", _create(provision_updated_at=1.5)),
    _c("create-traits-str", _create(traits="str")),
    _c("create-traits-int-item", _create(traits=[1])),
    _c("create-traits-none-item", _create(traits=[None])),
    _c("create-traits-empty-item", _create(traits=[""])),
    _c("create-traits-set", _create(traits={"A"})),
    _c("create-traits-none", _create(traits=None)),
    *[_c(f"create-{f}-str", _create(**{f: "str"})) for f in DICT_FIELDS],
    *[_c(f"create-{f}-list", _create(**{f: ["a"]})) for f in DICT_FIELDS],
    *[_c(f"create-{f}-none", _create(**{f: None})) for f in DICT_FIELDS],
    *[_c(f"create-driver_info-{n}", _create(driver_info=v)) for n, v in NOT_JSON],
    *[_c(f"create-extra-{n}", _create(extra=v)) for n, v in NOT_JSON],
    _c("create-properties-deep-100k", _create(properties=_deep(100_000))),
    _c("create-dii-object", _create(driver_internal_info={"k": object()})),
    _c("create-raid-config-set", _create(raid_config={"k": {1}})),
    _c("create-extra-tuple", _create(extra={"t": (1, 2)})),
    _c("create-extra-nul-key", _create(extra={"a\x00": 1})),
    _c("create-maintenance-yes", _create(maintenance="yes")),
    _c("create-maintenance-1", _create(maintenance=1)),
    _c("create-maintenance-none", _create(maintenance=None)),
    _c("create-retired-no", _create(retired="no")),
    _c("create-protected-1", _create(protected=1)),
    _c("create-automated-clean-yes", _create(automated_clean="yes")),
    _c("create-provision-state-bogus", _create(provision_state="bogus")),
    _c("create-provision-state-none", _create(provision_state=None)),
    _c("create-provision-state-int", _create(provision_state=1)),
    _c("create-target-state-int", _create(target_provision_state=1)),
    _c("create-power-state-int", _create(power_state=1)),
    _c("create-version-str", _create(version="1")),
    _c("create-version-negative", _create(version=-1)),
    _c("create-version-bool", _create(version=True)),
    _c("create-clean-step-str", _create(clean_step="x")),
    _c("create-clean-step-object", _create(clean_step={"a": object()})),
    _c("create-last-error-int", _create(last_error=1)),
    _c("create-maintenance-reason-list", _create(maintenance_reason=["x"])),
    _c("create-resource-class-int", _create(resource_class=1)),
    _c("create-resource-class-nul", _create(resource_class="a\x00")),
    _c("create-power-interface-int", _create(power_interface=1)),
    _c("create-power-interface-unknown", _create(power_interface="nosuch"), DriverNotFound),
    _c("create-unknown-field", _create(foo=1)),
    # -- get / delete: identifiers ------------------------------------------------------
    _c("get-list", lambda x: x.conductor.get_node(["x"])),
    _c("get-none", lambda x: x.conductor.get_node(None)),
    _c("get-int", lambda x: x.conductor.get_node(1)),
    _c("get-dict", lambda x: x.conductor.get_node({"a": 1})),
    _c("get-empty", lambda x: x.conductor.get_node("")),
    _c("get-nul", lambda x: x.conductor.get_node("a\x00b")),
    _c("get-huge", lambda x: x.conductor.get_node("x" * 100_000)),
    _c("get-missing", lambda x: x.conductor.get_node("nosuch"), NodeNotFound),
    _c("delete-list", lambda x: x.conductor.delete_node(["x"])),
    _c("delete-none", lambda x: x.conductor.delete_node(None)),
    _c("delete-nul", lambda x: x.conductor.delete_node("a\x00b")),
    _c("delete-missing", lambda x: x.conductor.delete_node("nosuch"), NodeNotFound),
    _c("delete-active", lambda x: x.conductor.delete_node(x.u), ISR, start=states.ACTIVE),
    _c(
        "delete-protected",
        lambda x: x.conductor.delete_node(x.u),
        NodeProtected,
        start=states.ACTIVE,
        fields={"protected": True},
    ),
    # -- update_node ---------------------------------------------------------------------
    _c("update-name-list", _update(name=["a"])),
    _c("update-name-300", _update(name="n" * 300)),
    _c("update-name-nul", _update(name="a\x00")),
    _c("update-name-empty", _update(name="")),
    _c("update-name-other-uuid", lambda x: x.conductor.update_node(x.u, name=x.other.uuid)),
    _c("update-name-taken", _update(name="other")),
    _c("update-driver-info-object", _update(driver_info={"k": object()})),
    _c("update-driver-info-str", _update(driver_info="str")),
    _c("update-driver-info-deep", _update(driver_info=_deep(100_000))),
    _c("update-extra-deep", _update(extra=_deep(100_000))),
    _c("update-properties-set", _update(properties={"a": {1}})),
    _c("update-instance-info-str", _update(instance_info="x")),
    _c("update-instance-info-nan", _update(instance_info={"x": float("inf")})),
    _c("update-maintenance-yes", _update(maintenance="yes")),
    _c("update-retired-yes", _update(retired="yes")),
    _c("update-protected-yes", _update(protected="yes"), start=states.ACTIVE),
    _c("update-retired-available", _update(retired=True), InvalidState, start=states.AVAILABLE),
    _c("update-protected-manageable", _update(protected=True), InvalidState),
    _c("update-retired-reason-alone", _update(retired_reason="old")),
    _c("update-protected-reason-alone", _update(protected_reason="x"), start=states.ACTIVE),
    _c("update-uuid", _update(uuid=str(_uuid.uuid4()))),
    _c("update-provision-state", _update(provision_state=states.ACTIVE)),
    _c("update-version", _update(version=99)),
    _c("update-reservation", _update(reservation="me")),
    _c("update-unknown-field", _update(foo=1)),
    _c("update-driver-none", _update(driver=None)),
    _c("update-driver-unknown", _update(driver="nosuch"), DriverNotFound),
    _c("update-power-interface-unknown", _update(power_interface="nosuch"), DriverNotFound),
    _c("update-traits-str", _update(traits="x")),
    _c("update-traits-int", _update(traits=[1])),
    _c("update-created-at", _update(created_at=AWARE)),
    _c("update-maintenance-reason-int", _update(maintenance_reason=5)),
    _c("update-retired-reason-nul", _update(retired=True, retired_reason="a\x00")),
    _c("update-resource-class-list", _update(resource_class=["x"])),
    _c("update-automated-clean-str", _update(automated_clean="false")),
    _c("update-ident-list", lambda x: x.conductor.update_node(["x"], name="y")),
    _c("update-ident-none", lambda x: x.conductor.update_node(None, name="y")),
    _c("update-ident-deep", lambda x: x.conductor.update_node(_deep_list(10_000), name="y")),
    _c(
        "update-ident-deep-bad-field", lambda x: x.conductor.update_node(_deep_list(10_000), uuid=1)
    ),
    _c("get-deep", lambda x: x.conductor.get_node(_deep_list(100_000))),
    _c("update-name-urn-uuid", _update(name=f"urn:uuid:{_uuid.uuid4()}")),
    _c("update-ident-missing", lambda x: x.conductor.update_node("nosuch", name="y"), NodeNotFound),
    # -- verbs ---------------------------------------------------------------------------
    _c("verb-list", _verb(["manage"])),
    _c("verb-none", _verb(None)),
    _c("verb-int", _verb(1)),
    _c("verb-empty", _verb(""), ISR),
    _c("verb-unknown", _verb("explode"), ISR),
    _c("verb-ident-list", lambda x: x.conductor.do_provisioning_action(["x"], "manage")),
    _c("verb-ident-none", lambda x: x.conductor.do_provisioning_action(None, "manage")),
    _c("verb-wrong-state", _verb("deploy"), ISR),
    _c("verb-deploy-steps-with-manage", _verb("manage", deploy_steps=[])),
    _c("clean-no-steps", _verb("clean")),
    _c("clean-steps-str", _clean("x")),
    _c("clean-steps-empty", _clean([])),
    _c("clean-steps-dict", _clean({"interface": "vendor", "step": "step_a"})),
    _c("clean-steps-int-item", _clean([1])),
    _c("clean-step-int-key", _clean([{1: "a", "interface": "vendor", "step": "step_a"}])),
    _c("clean-step-args-set", _clean([_step("vendor", "with_args", size=1, label={1, 2})])),
    _c("clean-step-args-object", _clean([_step("vendor", "with_args", size=object())])),
    _c("clean-step-args-nan", _clean([_step("vendor", "with_args", size=float("nan"))])),
    _c("clean-step-args-deep", _clean([_step("vendor", "with_args", size=_deep(100_000))])),
    _c("clean-step-args-str", _clean([{"interface": "vendor", "step": "step_a", "args": "x"}])),
    _c("clean-step-args-int-key", _clean([{"interface": "vendor", "step": "a", "args": {1: 2}}])),
    _c("clean-step-iface-int", _clean([{"interface": 1, "step": "step_a"}])),
    _c("clean-step-name-list", _clean([{"interface": "vendor", "step": ["a"]}])),
    _c("clean-wait-nan", _clean(_wait(float("nan")))),
    _c("clean-wait-inf", _clean(_wait(float("inf")))),
    _c("clean-wait-1e12", _clean(_wait(1e12))),
    _c("clean-wait-negative", _clean(_wait(-1))),
    _c("clean-wait-str", _clean(_wait("10"))),
    _c("clean-wait-bool", _clean(_wait(True))),
    _c("clean-steps-and-runbook", _verb("clean", clean_steps=[_step("vendor", "a")], runbook="R")),
    _c("clean-runbook-unknown", _verb("clean", runbook="nosuch")),
    _c("clean-runbook-int", _verb("clean", runbook=1)),
    _c("clean-runbook-list", _verb("clean", runbook=["R"])),
    _c(
        "clean-disable-ramdisk-str",
        _verb("clean", clean_steps=[_step("vendor", "step_a")], disable_ramdisk="yes"),
    ),
    _c(
        "clean-in-maintenance",
        _clean([_step("vendor", "step_a")]),
        NodeInMaintenance,
        fields={"maintenance": True},
    ),
    _c("service-steps-set", _service([_step("vendor", "x", v={1})]), start=states.ACTIVE),
    _c("service-steps-str", _service("x"), start=states.ACTIVE),
    _c("service-wait-inf", _service(_wait(float("inf"))), start=states.ACTIVE),
    _c("service-no-steps", _verb("service"), start=states.ACTIVE),
    _c("deploy-steps-str", _deploy("x"), start=states.AVAILABLE),
    _c("deploy-steps-int-item", _deploy([1]), start=states.AVAILABLE),
    _c("deploy-step-priority-str", _deploy([_dstep("bios", "x", "high")]), start=states.AVAILABLE),
    _c(
        "deploy-step-priority-neg",
        _deploy([_dstep("deploy", "deploy", -1)]),
        start=states.AVAILABLE,
    ),
    _c("deploy-step-unknown", _deploy([_dstep("bios", "nosuch", 10)]), start=states.AVAILABLE),
    _c("deploy-step-twice", _deploy([_dstep("deploy", "deploy", 100)] * 2), start=states.AVAILABLE),
    _c("deploy-step-core-moved", _deploy([_dstep("deploy", "deploy", 5)]), start=states.AVAILABLE),
    _c(
        "deploy-step-args-set",
        _deploy([_dstep("deploy", "deploy", 100, v={1, 2})]),
        start=states.AVAILABLE,
    ),
    _c(
        "deploy-wait-nan",
        _deploy([_dstep("deploy", "wait", 10, seconds=float("nan"))]),
        start=states.AVAILABLE,
    ),
    _c(
        "deploy-wait-1e12",
        _deploy([_dstep("deploy", "wait", 10, seconds=1e12)]),
        start=states.AVAILABLE,
    ),
    _c(
        "deploy-instance-traits-str",
        _verb("deploy"),
        start=states.AVAILABLE,
        fields={"instance_info": {"traits": "CUSTOM_X"}},
    ),
    _c(
        "deploy-instance-traits-not-node",
        _verb("deploy"),
        start=states.AVAILABLE,
        fields={"instance_info": {"traits": ["CUSTOM_X"]}},
    ),
    _c("rescue-no-password", _verb("rescue"), start=states.ACTIVE),
    _c("rescue-password-int", _verb("rescue", rescue_password=1), start=states.ACTIVE),
    _c("rescue-password-blank", _verb("rescue", rescue_password="  "), start=states.ACTIVE),
    _c("rescue-password-nul", _verb("rescue", rescue_password="a\x00b"), start=states.ACTIVE),
    _c("provide-retired", _verb("provide"), IronicFSMError, fields={"retired": True}),
    # -- deploy templates and runbooks ---------------------------------------------------
    _c("template-none", lambda x: x.conductor.add_deploy_template("T", None)),
    _c("template-str", lambda x: x.conductor.add_deploy_template("T", "steps")),
    _c("template-int-item", lambda x: x.conductor.add_deploy_template("T", [1])),
    _c("template-int-key", lambda x: x.conductor.add_deploy_template("T", [{1: 2}])),
    _c("template-name-none", lambda x: x.conductor.add_deploy_template(None, [])),
    _c(
        "template-priority-str",
        lambda x: x.conductor.add_deploy_template("T", [_dstep("bios", "b1", "x")]),
    ),
    _c(
        "template-args-set",
        lambda x: x.conductor.add_deploy_template("T", [_dstep("bios", "b1", 1, v={1})]),
    ),
    _c("runbook-int-item", lambda x: x.conductor.add_runbook("R", [1])),
    _c("runbook-none", lambda x: x.conductor.add_runbook("R", None)),
    _c("runbook-str", lambda x: x.conductor.add_runbook("R", "steps")),
    _c("runbook-name-empty", lambda x: x.conductor.add_runbook("", [])),
    _c("runbook-wait-nan", lambda x: x.conductor.add_runbook("R", _wait(float("nan")))),
    _c(
        "runbook-traits-str",
        lambda x: x.conductor.add_runbook("R", [_step("vendor", "step_a")], traits="CUSTOM_X"),
    ),
    _c(
        "runbook-traits-int",
        lambda x: x.conductor.add_runbook("R", [_step("vendor", "step_a")], traits=[1]),
    ),
    # -- power ---------------------------------------------------------------------------
    _c("power-on-word", lambda x: x.conductor.set_power_state(x.u, "on")),
    _c("power-none", lambda x: x.conductor.set_power_state(x.u, None)),
    _c("power-list", lambda x: x.conductor.set_power_state(x.u, ["power on"])),
    _c("power-timeout-str", lambda x: x.conductor.set_power_state(x.u, states.POWER_ON, "x")),
    _c("power-timeout-negative", lambda x: x.conductor.set_power_state(x.u, states.POWER_ON, -1)),
    _c(
        "power-timeout-nan",
        lambda x: x.conductor.set_power_state(x.u, states.POWER_ON, float("nan")),
    ),
    _c("power-timeout-bool", lambda x: x.conductor.set_power_state(x.u, states.POWER_ON, True)),
    _c("power-ident-list", lambda x: x.conductor.set_power_state(["x"], states.POWER_ON)),
    _c(
        "power-while-waiting",
        lambda x: x.conductor.set_power_state(x.u, states.POWER_ON),
        ISR,
        start=states.CLEANWAIT,
    ),
    # -- continuation --------------------------------------------------------------------
    _c("continue-clean-manageable", lambda x: x.conductor.continue_node_clean(x.u), ISR),
    _c(
        "continue-deploy-active",
        lambda x: x.conductor.continue_node_deploy(x.u),
        ISR,
        start=states.ACTIVE,
    ),
    _c("continue-service-list", lambda x: x.conductor.continue_node_service(["x"])),
    _c("continue-rescue-none", lambda x: x.conductor.continue_node_rescue(None)),
    _c("continue-inspect-manageable", lambda x: x.conductor.continue_node_inspect(x.u), ISR),
    _c(
        "continue-inspect-inventory-str",
        lambda x: x.conductor.continue_node_inspect(x.u, "x"),
        start=states.INSPECTWAIT,
    ),
    _c(
        "continue-inspect-deep-inventory",
        lambda x: x.conductor.continue_node_inspect(x.u, _deep(100_000)),
        start=states.INSPECTWAIT,
    ),
    _c(
        "continue-inspect-deep-ident",
        lambda x: x.conductor.continue_node_inspect(_deep_list(10_000), {}),
        start=states.INSPECTWAIT,
    ),
    # -- listing and step queries --------------------------------------------------------
    _c("list-state-unknown", lambda x: x.conductor.list_nodes(provision_state="bogus")),
    _c("list-state-list", lambda x: x.conductor.list_nodes(provision_state=["x"])),
    _c("list-unknown-key", lambda x: x.conductor.list_nodes(foo=1)),
    _c("list-maintenance-yes", lambda x: x.conductor.list_nodes(maintenance="yes")),
    _c("list-retired-int", lambda x: x.conductor.list_nodes(retired=1)),
    _c("list-driver-int", lambda x: x.conductor.list_nodes(driver=1)),
    _c("list-uuid-bad", lambda x: x.conductor.list_nodes(uuid="nope")),
    _c("list-name-list", lambda x: x.conductor.list_nodes(name=["x"])),
    _c(
        "validate-service-steps-set",
        lambda x: x.conductor.validate_service_steps(x.u, [_step("vendor", "a", v={1})]),
        start=states.ACTIVE,
    ),
    _c(
        "validate-clean-steps-wait-inf",
        lambda x: x.conductor.validate_clean_steps(x.u, _wait(float("inf"))),
    ),
    _c("clean-steps-min-priority-str", lambda x: x.conductor.get_clean_steps(x.u, "x")),
    _c("validate-clean-steps-str", lambda x: x.conductor.validate_clean_steps(x.u, "x")),
    _c(
        "validate-deploy-steps-set",
        lambda x: x.conductor.validate_deploy_steps(x.u, [_dstep("deploy", "deploy", 100, v={1})]),
    ),
    _c("check-timeouts-str", lambda x: x.conductor.check_timeouts("now")),
    _c("check-timeouts-naive", lambda x: x.conductor.check_timeouts(datetime(2030, 1, 1))),
    # -- custom drivers raising anything -------------------------------------------------
    _driver("driver-set-power", _power(states.POWER_ON), DriverError, "power"),
    _driver("driver-reboot", _power(states.REBOOT), DriverError, "power"),
    _driver(
        "driver-validate-deploy", _verb("deploy"), DriverError, "validate", start=states.AVAILABLE
    ),
    _driver(
        "driver-get-clean-steps", lambda x: x.conductor.get_clean_steps(x.u), DriverError, "steps"
    ),
    _driver(
        "driver-validate-clean-steps",
        lambda x: x.conductor.validate_clean_steps(x.u, [_step("vendor", "explode")]),
        DriverError,
        "steps",
    ),
    # a driver failing in a flow: the node ends in the documented failure state, saved
    _driver("driver-step-raises", _clean([_step("vendor", "explode")]), states.CLEANFAIL),
    _driver("driver-step-names-node", _clean([_step("vendor", "names_node")]), states.CLEANFAIL),
    _driver(
        "driver-manual-clean-steps-raise",
        _clean([_step("vendor", "explode")]),
        states.CLEANFAIL,
        "steps",
    ),
    _driver("driver-inspect-raises", _verb("inspect"), states.INSPECTFAIL),
    _driver(
        "driver-verify-raises", _verb("manage"), states.ENROLL, "validate", start=states.ENROLL
    ),
    _driver(
        "driver-power-step-raises", _clean([_step("power", "power_on")]), states.CLEANFAIL, "power"
    ),
    _driver("driver-step-corrupts-record", _clean([_step("vendor", "corrupts")]), states.CLEANFAIL),
    _driver(
        "driver-deploy-step-raises",
        _deploy([_dstep("deploy", "leak_deploy", 150)]),
        states.DEPLOYFAIL,
        start=states.AVAILABLE,
    ),
    _driver("driver-take-over-raises", _verb("adopt"), states.ADOPTFAIL),
]


def _register(conductor: Conductor) -> None:
    conductor.register_hardware_type(
        HOSTILE_HW,
        build_hardware(
            power=HostilePower(),
            vendor=HostileVendor(),
            inspect=HostileInspect(),
            deploy=HostileDeploy(),
        ),
    )


def _records(store: Store) -> dict[str, tuple[str, str | None, int]]:
    return {n.uuid: (n.to_json(), n.reservation, n.version) for n in store.list()}


def classify(case: Case, store: Store) -> tuple[str, str]:
    """Run one case on ``store``; return (outcome, detail). ``ok`` is the only good outcome.

    A store that can no longer list its records after the call counts as
    a non-library exception: something unreadable was written.
    """
    try:
        return _classify(case, store)
    except Exception as exc:
        return "non-library", f"store unreadable afterwards: {type(exc).__name__}: {exc}"[:300]


def _classify(case: Case, store: Store) -> tuple[str, str]:
    conductor = make_conductor(store=store)
    _register(conductor)
    conductor.add_runbook("R", [_step("vendor", "step_a")])
    fields = {"driver_info": {"ipmi_password": PASSWORD}, **case.fields}
    node = conductor.create_node(
        driver=case.driver, provision_state=case.start, name="target", **fields
    )
    other = conductor.create_node(driver=TEST_HW, name="other")
    before = _records(store)
    ctx = Ctx(conductor, node, other)
    try:
        result = case.call(ctx)
    except IronicFSMError as exc:
        after = _records(store)
        if any(r[1] is not None for r in after.values()):
            return "left-reserved", repr(exc)
        if PASSWORD in str(exc):
            return "leaked-secret", str(exc)
        if case.raises is None:
            return "wrong-outcome", f"raised {exc!r}, expected state {case.state}"
        if after != before:
            return "changed-on-refusal", repr(exc)
        if not isinstance(exc, case.raises):
            return "wrong-type", f"{type(exc).__name__}: {exc}"
        if isinstance(exc, DriverError) and not isinstance(exc.__cause__, Exception):
            return "wrong-type", "DriverError without its cause"
        return "ok", type(exc).__name__
    except BaseException as exc:  # what this corpus measures
        after = _records(store)
        if any(r[1] is not None for r in after.values()):
            return "left-reserved", f"{type(exc).__name__}: {str(exc)[:200]}"
        return "non-library", f"{type(exc).__name__}: {str(exc)[:200]}"
    after = _records(store)
    if any(r[1] is not None for r in after.values()):
        return "left-reserved", "returned"
    if isinstance(result, Node) and (
        result.uuid not in after or result.to_json() != after[result.uuid][0]
    ):
        return "unsaved-success", f"returned {result.provision_state!r}"
    if case.state is None:
        return "accepted", f"returned {type(result).__name__}"
    stored = store.get(node.uuid)
    if stored.provision_state != case.state:
        return "wrong-outcome", f"stored {stored.provision_state!r}, expected {case.state!r}"
    if any(PASSWORD in (text or "") for text in (stored.last_error, stored.maintenance_reason)):
        return "leaked-secret", "in last_error or maintenance_reason"
    if stored.last_error is None or stored.last_error.count(node.uuid) > 1:
        return "wrong-outcome", f"last_error {stored.last_error!r}"
    return "ok", stored.provision_state


def test_corpus_is_large_and_unique() -> None:
    assert len(CASES) >= 150
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Callable[[str, str, str], None]:
    path = os.environ.get("HOSTILE_REPORT")

    def write(case_id: str, outcome: str, detail: str) -> None:
        if path:
            store_kind = request.node.callspec.params["store"]
            line = {"store": store_kind, "case": case_id, "outcome": outcome, "detail": detail}
            with open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")

    return write


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_input(case: Case, store: Store, report: Callable[[str, str, str], None]) -> None:
    outcome, detail = classify(case, store)
    report(case.id, outcome, detail)
    assert outcome == "ok", detail
