"""Reconcile's no-op: what an operator's loop pays per node that is already where it should be.

An operator's loop calls ``Conductor.reconcile(node, wanted)`` for every
node, every round; most nodes are already there. That call should cost a
store read plus a table lookup. Measured side by side, on a 1,000-node
MemoryStore (and, for context, a SQLite file):

(a)  the floor: ``store.get(uuid)`` alone;
(b)  ``conductor.reconcile(uuid, "active")`` of an active node;
(c)  the same by name;
(d)  ``reconcile`` of a busy node (reserved by another conductor);
(e)  ``conductor.get_node(uuid)`` plus ``LIFECYCLE.path`` by hand, as a
     loop without ``reconcile`` would do it.

Goal (issue 12): (b) < 20 µs per call on MemoryStore.

Run alone: ``python benchmarks/bench_reconcile.py [--quick]``.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _harness import Case, Section, SummaryRow, Table, fmt_ns, fmt_ratio, measure, run_alone

from ironic_fsm import LIFECYCLE, Conductor
from ironic_fsm.stores import MemoryStore, SQLStore

GOAL_US = 20.0
FLEET = 1_000
HOLDER = "elsewhere.example:1:x"

FLOOR = "(a) store.get(uuid) (floor)"
THERE = "(b) reconcile(uuid, 'active'), already there"
BY_NAME = "(c) reconcile(name, 'active'), already there"
BUSY = "(d) reconcile(uuid, 'active'), reserved elsewhere"
BY_HAND = "(e) get_node(uuid) + LIFECYCLE.path by hand"


def _fleet(conductor: Conductor) -> tuple[list[str], list[str], str]:
    """``FLEET`` active nodes (UUIDs, names) and one more reserved by another holder."""
    nodes = [
        conductor.create_node(
            name=f"node-{i:04d}", driver="fake-hardware", provision_state="active"
        )
        for i in range(FLEET)
    ]
    busy = conductor.create_node(name="busy", driver="fake-hardware", provision_state="available")
    conductor.store.reserve(busy.uuid, HOLDER)
    return [n.uuid for n in nodes], [str(n.name) for n in nodes], busy.uuid


def _cases(conductor: Conductor, calls: int) -> list[Case]:
    uuids, names, busy = _fleet(conductor)
    picks = [uuids[i % len(uuids)] for i in range(calls)]
    named = [names[i % len(names)] for i in range(calls)]
    get, reconcile = conductor.store.get, conductor.reconcile

    def by_hand() -> None:
        for uuid in picks:
            LIFECYCLE.path(conductor.get_node(uuid).provision_state, "active")

    def loop(call: Callable[[str], Any], idents: list[str]) -> Callable[[], None]:
        def run() -> None:
            for ident in idents:
                call(ident)

        return run

    for uuid in picks[:10]:  # the figure is for a node that really is there
        assert reconcile(uuid, "active").provision_state == "active"
    assert reconcile(busy, "active").reservation == HOLDER
    return [
        Case(FLOOR, loop(get, picks), calls),
        Case(THERE, loop(lambda ident: reconcile(ident, "active"), picks), calls),
        Case(BY_NAME, loop(lambda ident: reconcile(ident, "active"), named), calls),
        Case(BUSY, loop(lambda ident: reconcile(ident, "active"), [busy] * calls), calls),
        Case(BY_HAND, by_hand, calls),
    ]


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    calls = 2_000 if quick else 10_000
    repeats = 5 if quick else 9
    section = Section("Reconcile: a node already there")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        sql = SQLStore(f"sqlite:///{Path(tmp) / 'reconcile.sqlite'}")
        try:
            for kind, store, n in (
                ("MemoryStore", MemoryStore(), calls),
                ("SQLite", sql, calls // 10),
            ):
                cases = _cases(Conductor(store=store), n)
                timings = measure(cases, repeats)
                results[kind] = timings
                floor = timings[FLOOR].best_ns
                table = Table(
                    f"{kind}: one call, {FLEET:,} active nodes",
                    ["case", "best", "median", "calls/pass", "vs floor"],
                )
                table.add_timings(cases, timings, floor)
                section.tables.append(table)
        finally:
            sql.close()

    memory = results["MemoryStore"]
    there_us = memory[THERE].best_ns / 1_000
    section.tables[0].notes += [
        "reconcile of a node already there: check the identifier, one store get, "
        "compare the state with wanted; no reservation, no write, no event",
        f"best of {repeats} passes, interleaved, GC off during a pass",
    ]
    section.summary += [
        SummaryRow(
            "reconcile, node already there (MemoryStore)",
            fmt_ns(memory[THERE].best_ns),
            f"< {GOAL_US:.0f} µs",
            there_us < GOAL_US,
        ),
        SummaryRow(
            "reconcile already there / store.get (MemoryStore)",
            fmt_ratio(memory[THERE].best_ns / memory[FLOOR].best_ns),
            "-",
            None,
        ),
        SummaryRow(
            "reconcile, node already there (SQLite file)",
            fmt_ns(results["SQLite"][THERE].best_ns),
            "-",
            None,
        ),
    ]
    section.seconds = time.perf_counter() - started
    return section


if __name__ == "__main__":
    run_alone(run, __doc__)
