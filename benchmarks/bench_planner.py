"""Step planning: automated clean plans and manual clean validation.

A hardware type with 7 cleaning interfaces (vendor, power, management,
firmware, deploy, bios, raid), each a class generated with ``type()`` and
20 methods decorated with :func:`ironic_fsm.clean_step` (a quarter at
priority 0, the rest at priorities that are distinct within each interface
and shared across interfaces, so that the interface tie-break is used;
half take arguments, some required).

Timed, per call, once the classes exist:

* ``plan_automated_clean(gather_steps('clean', ht, task), overrides=...,
  disallowed=...)``, and the plan alone on steps gathered beforehand;
* ``validate_user_steps('clean', steps, <20 requested steps>)``;
* a naive baseline that rediscovers the steps on every call by walking
  ``inspect.getmembers`` over each interface instance, which is what Ironic
  does when an interface is instantiated (``BaseInterface.__new__``), and
  then plans or validates the same way.

Run alone: ``python benchmarks/bench_planner.py [--quick]``.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

from _harness import (
    Case,
    Section,
    SummaryRow,
    Table,
    autosize,
    fmt_ns,
    fmt_ratio,
    measure,
    per_call,
    run_alone,
)

from ironic_fsm import Config, HardwareType, Node, Task, clean_step, planner
from ironic_fsm.conductor import plans
from ironic_fsm.interfaces import INTERFACE_CLASSES, BaseInterface
from ironic_fsm.steps import INTERFACE_ORDER, step_infos

GOAL_PLAN_NS = 50_000  # an automated clean plan, once the interface classes are known
KINDS: tuple[str, ...] = tuple(INTERFACE_ORDER["clean"])
STEPS_PER_INTERFACE = 20

OVERRIDES: dict[str, int] = {
    "vendor.vendor_step_00": 95,  # enable a priority-0 step
    "raid.raid_step_04": 15,  # enable another
    "power.power_step_01": 0,  # disable
    "bios.bios_step_02": 0,  # disable
    "deploy.deploy_step_03": 500,  # move to the front
}
DISALLOWED: tuple[str, ...] = (
    "vendor.send_raw",
    "management.management_step_05",
    "firmware.firmware_step_06",
)


def _priority(index: int) -> int:
    return 0 if index % 4 == 0 else 10 * (STEPS_PER_INTERFACE - index)


def _argsinfo(index: int) -> dict[str, dict[str, Any]] | None:
    if index % 2 == 0:
        return None
    return {
        "mode": {"description": "how thoroughly", "required": index % 3 == 0},
        "passes": {"description": "how many times"},
    }


def _step_method(kind: str, index: int) -> Callable[..., Any]:
    def step(self: BaseInterface, task: Task, **kwargs: Any) -> None:
        return None

    step.__name__ = step.__qualname__ = f"{kind}_step_{index:02d}"
    decorate = clean_step(
        priority=_priority(index), abortable=index % 3 == 0, argsinfo=_argsinfo(index)
    )
    decorated: Callable[..., Any] = decorate(step)
    return decorated


def build_hardware_type() -> HardwareType:
    """7 interfaces x 20 clean steps, classes generated with ``type()``."""
    interfaces: dict[str, BaseInterface] = {}
    for kind in KINDS:
        base = INTERFACE_CLASSES[kind]
        namespace: dict[str, Any] = {
            f"{kind}_step_{i:02d}": _step_method(kind, i) for i in range(STEPS_PER_INTERFACE)
        }
        cls = type(f"Bench{base.__name__}", (base,), namespace)
        interfaces[kind] = cls()
    return HardwareType(**interfaces)


def user_clean_steps() -> list[dict[str, Any]]:
    """A 20-step manual clean: 18 driver steps (some with arguments) and 2 reserved ones."""
    steps: list[dict[str, Any]] = []
    for n in range(18):
        kind = KINDS[n % len(KINDS)]
        index = (n * 3) % STEPS_PER_INTERFACE
        if f"{kind}.{kind}_step_{index:02d}" in DISALLOWED:
            index += 1
        args: dict[str, Any] = {}
        if _argsinfo(index) is not None:
            args = {"mode": "quick", "passes": 1}
        steps.append({"interface": kind, "step": f"{kind}_step_{index:02d}", "args": args})
    steps.insert(5, {"interface": "power", "step": "wait", "args": {"seconds": 5}})
    steps.insert(12, {"interface": "power", "step": "reboot"})
    return steps


def naive_gather(driver: HardwareType) -> list[dict[str, Any]]:
    """Rediscover the clean steps by walking every interface instance's methods."""
    steps: list[dict[str, Any]] = []
    for kind in INTERFACE_ORDER["clean"]:
        iface = getattr(driver, kind)
        for _name, method in inspect.getmembers(iface, inspect.ismethod):
            info = step_infos(method).get("clean")
            if info is not None:
                steps.append(info.as_dict(iface.interface_type))
    return steps


PLAN = "plan_automated_clean (steps gathered beforehand)"
GATHER_PLAN = "gather_steps + plan_automated_clean"
GATHER = "gather_steps alone"
KNOWN = "plan_automated_clean_for (classes known; what the conductor calls)"
NAIVE_PLAN = "naive: getmembers discovery + plan_automated_clean"
VALIDATE = "validate_user_steps, 20 steps (steps gathered beforehand)"
GATHER_VALIDATE = "gather_steps + validate_user_steps, 20 steps"
NAIVE_VALIDATE = "naive: getmembers discovery + validate_user_steps"


def _cases(driver: HardwareType, task: Task) -> list[Callable[[int], Case]]:
    gathered = plans.gather_steps("clean", driver, task)
    requested = user_clean_steps()
    gather_steps = plans.gather_steps
    plan = planner.plan_automated_clean
    plan_for = plans.plan_automated_clean_for
    validate = planner.validate_user_steps
    overrides, disallowed = OVERRIDES, DISALLOWED

    return [
        per_call(PLAN, lambda: plan(gathered, overrides=overrides, disallowed=disallowed)),
        per_call(
            GATHER_PLAN,
            lambda: plan(
                gather_steps("clean", driver, task), overrides=overrides, disallowed=disallowed
            ),
        ),
        per_call(GATHER, lambda: gather_steps("clean", driver, task)),
        per_call(
            KNOWN,
            lambda: plan_for(driver, task, overrides=overrides, disallowed=disallowed),
        ),
        per_call(
            NAIVE_PLAN,
            lambda: plan(naive_gather(driver), overrides=overrides, disallowed=disallowed),
        ),
        per_call(VALIDATE, lambda: validate("clean", gathered, requested, disallowed=disallowed)),
        per_call(
            GATHER_VALIDATE,
            lambda: validate(
                "clean", gather_steps("clean", driver, task), requested, disallowed=disallowed
            ),
        ),
        per_call(
            NAIVE_VALIDATE,
            lambda: validate("clean", naive_gather(driver), requested, disallowed=disallowed),
        ),
    ]


def _check(driver: HardwareType, task: Task) -> tuple[int, int, int]:
    """The workload is what it claims to be; returns (steps, planned, validated)."""
    steps = plans.gather_steps("clean", driver, task)
    planner.check_priority_conflicts("clean", steps, overrides=OVERRIDES)
    planned = planner.plan_automated_clean(steps, overrides=OVERRIDES, disallowed=DISALLOWED)
    naive = planner.plan_automated_clean(
        naive_gather(driver), overrides=OVERRIDES, disallowed=DISALLOWED
    )
    if planned != naive:
        raise AssertionError("naive discovery plans differently from gather_steps")
    known = plans.plan_automated_clean_for(driver, task, overrides=OVERRIDES, disallowed=DISALLOWED)
    if known != planned:
        raise AssertionError("plan_automated_clean_for plans differently")
    if len(steps) != len(KINDS) * STEPS_PER_INTERFACE:
        raise AssertionError(f"expected {len(KINDS) * STEPS_PER_INTERFACE} steps, got {len(steps)}")
    validated = planner.validate_user_steps(
        "clean", steps, user_clean_steps(), disallowed=DISALLOWED
    )
    if len(validated) != 20:
        raise AssertionError(f"manual clean kept {len(validated)} of 20 steps")
    return len(steps), len(planned), len(validated)


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    driver = build_hardware_type()
    task = Task(node=Node(), driver=driver, config=Config())
    n_steps, n_planned, n_validated = _check(driver, task)
    repeats = 3 if quick else 9
    target_ms = 8.0 if quick else 40.0
    cases = [autosize(make, target_ms, 100_000) for make in _cases(driver, task)]
    timings = measure(cases, repeats)

    gather_plan = timings[GATHER_PLAN].best_ns
    known = timings[KNOWN].best_ns
    validate = timings[GATHER_VALIDATE].best_ns
    table = Table(
        f"Planning a clean: {len(KINDS)} interfaces x {STEPS_PER_INTERFACE} steps "
        f"({n_steps} steps, {n_planned} in the automated plan, {n_validated} requested manually)",
        ["operation", "best / call", "median", "calls/pass", "/ gather+plan", "/ gather+validate"],
    )
    table.add_timings(cases, timings, gather_plan, validate)
    table.notes += [
        f"overrides {len(OVERRIDES)} steps (2 enabled from priority 0, 2 disabled, 1 moved); "
        f"{len(DISALLOWED)} disallowed",
        "the naive rows rediscover steps per call (inspect.getmembers on each interface "
        "instance); Ironic pays this once per interface instantiation",
        f"best of {repeats} interleaved passes (gc disabled while timing)",
    ]

    naive_ratio = timings[NAIVE_PLAN].best_ns / gather_plan
    section = Section("3. Planning", [table])
    section.summary += [
        SummaryRow(
            "automated clean plan, interface classes known",
            fmt_ns(known),
            f"< {fmt_ns(GOAL_PLAN_NS)}",
            known < GOAL_PLAN_NS,
        ),
        SummaryRow("gather + plan_automated_clean, from scratch", fmt_ns(gather_plan), "-", None),
        SummaryRow("plan_automated_clean alone", fmt_ns(timings[PLAN].best_ns), "-", None),
        SummaryRow("naive discovery + plan / gather + plan", fmt_ratio(naive_ratio), "-", None),
        SummaryRow(
            "validate_user_steps, 20 steps (pre-gathered / with gather)",
            f"{fmt_ns(timings[VALIDATE].best_ns)} / {fmt_ns(validate)}",
            "-",
            None,
        ),
        SummaryRow(
            "naive discovery + validate / gather + validate",
            fmt_ratio(timings[NAIVE_VALIDATE].best_ns / validate),
            "-",
            None,
        ),
    ]
    section.seconds = time.perf_counter() - started
    return section


if __name__ == "__main__":
    run_alone(run, __doc__)
