"""ironic_fsm.steps: decorators validated at decoration time (docs/steps.rst)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.steps import (
    INTERFACE_ORDER,
    RESERVED_STEPS,
    StepInfo,
    clean_step,
    deploy_step,
    service_step,
    step_id,
    step_infos,
    verify_step,
)

Decorator = Callable[..., Callable[[Callable[..., Any]], Callable[..., Any]]]

ALL_DECORATORS: list[tuple[str, Decorator]] = [
    ("clean", clean_step),
    ("deploy", deploy_step),
    ("service", service_step),
    ("verify", verify_step),
]
ARGS_DECORATORS = [d for d in ALL_DECORATORS if d[0] != "verify"]


def _ids(param: object) -> str:
    """A stable id: pytest asks for one per value, and a function's repr holds its address
    (two runs, or pytest-xdist's workers, would then collect different tests)."""
    return str(getattr(param, "__name__", param))


# -- priority --------------------------------------------------------------------


@pytest.mark.parametrize(("phase", "decorator"), ALL_DECORATORS, ids=_ids)
@pytest.mark.parametrize(
    ("bad", "shown"),
    [(-1, "-1"), ("10", "'10'"), (1.5, "1.5"), (None, "None"), (True, "True"), (False, "False")],
    ids=["negative", "str", "float", "None", "True", "False"],
)
def test_bad_priority_rejected(phase: str, decorator: Decorator, bad: object, shown: str) -> None:
    with pytest.raises(InvalidParameterValue) as info:
        decorator(priority=bad)
    assert shown in str(info.value)
    assert "priority" in str(info.value)


@pytest.mark.parametrize(("phase", "decorator"), ALL_DECORATORS, ids=_ids)
@pytest.mark.parametrize("good", [0, 1, 100, 2**40])
def test_good_priority_accepted(phase: str, decorator: Decorator, good: int) -> None:
    def step(self: object, task: object) -> None: ...

    decorated = decorator(priority=good)(step)
    assert decorated is step
    assert step_infos(step)[phase].priority == good  # type: ignore[index]


def test_bad_priority_rejected_in_class_body() -> None:
    with pytest.raises(InvalidParameterValue, match="-5"):

        class Broken:
            @clean_step(priority=-5)
            def step(self, task: object) -> None: ...


# -- abortable -----------------------------------------------------------------------


@pytest.mark.parametrize(("phase", "decorator"), ARGS_DECORATORS, ids=_ids)
@pytest.mark.parametrize(("bad", "shown"), [("yes", "'yes'"), (1, "1"), (None, "None")])
def test_bad_abortable_rejected(phase: str, decorator: Decorator, bad: object, shown: str) -> None:
    with pytest.raises(InvalidParameterValue) as info:
        decorator(priority=1, abortable=bad)
    assert "abortable" in str(info.value)
    assert shown in str(info.value)


def test_abortable_defaults() -> None:
    def a(self: object, task: object) -> None: ...

    clean_step(priority=1)(a)
    deploy_step(priority=1)(a)
    service_step()(a)
    infos = step_infos(a)
    assert infos["clean"].abortable is False
    assert infos["deploy"].abortable is True
    assert infos["service"].abortable is False


# -- argsinfo -----------------------------------------------------------------------


@pytest.mark.parametrize(("phase", "decorator"), ARGS_DECORATORS, ids=_ids)
@pytest.mark.parametrize(
    ("argsinfo", "named"),
    [
        (["x"], ["['x']", "argsinfo"]),
        ("args", ["'args'", "argsinfo"]),
        ({"size": "big"}, ["size", "'big'"]),
        ({"size": {"required": True}}, ["size", "description"]),
        ({"size": {}}, ["size", "description"]),
        ({"size": {"description": 42}}, ["size", "42", "description"]),
        ({"size": {"description": "d", "required": "yes"}}, ["size", "'yes'", "required"]),
        ({"size": {"description": "d", "default": 3}}, ["size", "default"]),
    ],
    ids=[
        "not-dict-list",
        "not-dict-str",
        "arg-not-dict",
        "no-description",
        "empty-arg",
        "description-not-str",
        "required-not-bool",
        "unknown-key",
    ],
)
def test_bad_argsinfo_rejected(
    phase: str, decorator: Decorator, argsinfo: object, named: list[str]
) -> None:
    with pytest.raises(InvalidParameterValue) as info:
        decorator(priority=1, argsinfo=argsinfo)
    for fragment in named:
        assert fragment in str(info.value)


@pytest.mark.parametrize(("phase", "decorator"), ARGS_DECORATORS, ids=_ids)
def test_good_argsinfo_kept(phase: str, decorator: Decorator) -> None:
    argsinfo = {
        "size": {"description": "Size in GiB", "required": True},
        "mode": {"description": "Mode"},
    }

    def step(self: object, task: object, size: int, mode: str = "x") -> None: ...

    decorator(priority=1, argsinfo=argsinfo)(step)
    info = step_infos(step)[phase]  # type: ignore[index]
    assert dict(info.argsinfo) == argsinfo
    # the declaration is copied: changing the caller's dict later changes nothing
    argsinfo["size"]["required"] = False
    assert info.argsinfo["size"]["required"] is True


@pytest.mark.parametrize(("phase", "decorator"), ARGS_DECORATORS, ids=_ids)
@pytest.mark.parametrize("empty", [None, {}])
def test_empty_argsinfo_accepted(phase: str, decorator: Decorator, empty: object) -> None:
    def step(self: object, task: object) -> None: ...

    decorator(priority=1, argsinfo=empty)(step)
    assert dict(step_infos(step)[phase].argsinfo) == {}  # type: ignore[index]


@pytest.mark.parametrize("decorator", [clean_step, service_step])
def test_requires_ramdisk_must_be_bool(decorator: Decorator) -> None:
    with pytest.raises(InvalidParameterValue, match="requires_ramdisk"):
        decorator(priority=1, requires_ramdisk="no")


# -- declarations ----------------------------------------------------------------------


def test_service_step_default_priority_is_zero() -> None:
    def step(self: object, task: object) -> None: ...

    service_step()(step)
    assert step_infos(step)["service"].priority == 0
    assert step_infos(step)["service"].requires_ramdisk is True


def test_clean_step_declaration() -> None:
    def erase(self: object, task: object) -> None: ...

    clean_step(priority=10, abortable=True, requires_ramdisk=False)(erase)
    info = step_infos(erase)["clean"]
    assert info == StepInfo(
        phase="clean", name="erase", priority=10, abortable=True, requires_ramdisk=False
    )


def test_several_decorators_keep_independent_attributes() -> None:
    class Iface:
        @clean_step(priority=1, abortable=True, requires_ramdisk=False)
        @service_step(priority=0, argsinfo={"a": {"description": "an arg"}})
        @deploy_step(priority=55, abortable=False)
        @verify_step(priority=3)
        def multi(self, task: object, a: int = 0) -> None: ...

    infos = step_infos(Iface.multi)
    assert set(infos) == {"clean", "service", "deploy", "verify"}
    assert (infos["clean"].priority, infos["clean"].abortable) == (1, True)
    assert infos["clean"].requires_ramdisk is False
    assert dict(infos["clean"].argsinfo) == {}
    assert (infos["service"].priority, infos["service"].abortable) == (0, False)
    assert infos["service"].requires_ramdisk is True
    assert dict(infos["service"].argsinfo) == {"a": {"description": "an arg"}}
    assert (infos["deploy"].priority, infos["deploy"].abortable) == (55, False)
    assert infos["verify"].priority == 3
    assert all(info.name == "multi" for info in infos.values())


def test_undecorated_function_has_no_steps() -> None:
    def plain(self: object, task: object) -> None: ...

    assert dict(step_infos(plain)) == {}


def test_as_dict_keys_per_phase() -> None:
    def s(self: object, task: object) -> None: ...

    clean_step(priority=2)(s)
    deploy_step(priority=3)(s)
    infos = step_infos(s)
    assert set(infos["clean"].as_dict("raid")) == {
        "interface", "step", "priority", "abortable", "argsinfo", "requires_ramdisk",
    }  # fmt: skip
    assert set(infos["deploy"].as_dict("raid")) == {
        "interface", "step", "priority", "abortable", "argsinfo",
    }  # fmt: skip
    assert infos["clean"].as_dict("raid")["interface"] == "raid"
    assert infos["deploy"].as_dict("raid")["step"] == "s"


def test_step_id() -> None:
    assert step_id({"interface": "deploy", "step": "deploy"}) == "deploy.deploy"
    assert step_id({"interface": "bios", "step": "apply_configuration", "args": {}}) == (
        "bios.apply_configuration"
    )


def test_reserved_steps() -> None:
    assert frozenset({"hold", "wait", "power_on", "power_off", "reboot"}) == RESERVED_STEPS


def test_interface_order_for_cleaning() -> None:
    order = INTERFACE_ORDER["clean"]
    ranked = sorted(order, key=order.__getitem__, reverse=True)
    assert ranked == ["vendor", "power", "management", "firmware", "deploy", "bios", "raid"]
    assert dict(INTERFACE_ORDER["deploy"]) == dict(order)
