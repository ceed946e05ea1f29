"""Interfaces chosen per node: what building a node's driver costs on every reserve.

Every reservation asks the registry for the node's driver
(``HardwareRegistry.driver_for``): the hardware type with the node's
``<kind>_interface`` choices applied, each unset kind at the configured
default. The driver is built once per (hardware type, chosen names) and
kept, so the cost per call is one attribute read of the thirteen fields and
a dictionary lookup.

Timed, per call:

* ``driver_for`` of a node that chose nothing (every kind at its default);
* ``driver_for`` of a node that chose three implementations
  (``pxe`` boot, ``ramdisk`` deploy, ``no-raid``);
* for comparison, building that driver afresh (``HardwareType.select``
  with the thirteen names): what every call would cost without the cache.

Run alone: ``python benchmarks/bench_interfaces.py [--quick]``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from _harness import (
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

from ironic_fsm import Conductor, Node
from ironic_fsm.interfaces import INTERFACE_KINDS

GOAL_NS = 2_000  # well under the cost of the reservation it is part of
DEFAULTS = "driver_for, every kind at its default"
CHOSEN = "driver_for, three kinds chosen"
UNCACHED = "select the same thirteen names afresh"


def _cases(conductor: Conductor) -> list[tuple[str, Callable[[], object]]]:
    registry = conductor._ctx.registry  # the conductor's own, as a reserve uses it
    plain = Node(driver="fake-hardware")
    chosen = Node(
        driver="fake-hardware", boot_interface="pxe", deploy_interface="ramdisk",
        raid_interface="no-raid",
    )  # fmt: skip
    hardware_type = registry.get("fake-hardware")
    names = dict(zip(INTERFACE_KINDS, registry.defaults("fake-hardware"), strict=True))
    names.update(boot="pxe", deploy="ramdisk", raid="no-raid")
    registry.driver_for(chosen)  # loads the plugins once, as the first reserve would

    return [
        (DEFAULTS, lambda: registry.driver_for(plain)),
        (CHOSEN, lambda: registry.driver_for(chosen)),
        (UNCACHED, lambda: hardware_type.select(names)),
    ]


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    conductor = Conductor()
    repeats = 3 if quick else 9
    target_ms = 5.0 if quick else 30.0
    cases = [
        autosize(per_call(name, call), target_ms, 1_000_000) for name, call in _cases(conductor)
    ]
    timings = measure(cases, repeats)
    uncached = timings[UNCACHED].best_ns
    table = Table(
        "A node's driver, per call",
        ("case", "best", "median", "ops/pass", "vs afresh"),
        notes=["thirteen interface kinds; fake-hardware with its plugins loaded"],
    )
    table.add_timings(cases, timings, uncached)
    worst = max(timings[DEFAULTS].best_ns, timings[CHOSEN].best_ns)
    section = Section("Interfaces chosen per node", [table])
    section.summary.append(
        SummaryRow(
            "node driver with interface choices (driver_for, cached)",
            f"{fmt_ns(worst)} ({fmt_ratio(uncached / worst)} faster than afresh)",
            f"< {fmt_ns(GOAL_NS)}",
            worst < GOAL_NS,
        )
    )
    section.seconds = time.perf_counter() - started
    return section


if __name__ == "__main__":
    run_alone(run, __doc__)
