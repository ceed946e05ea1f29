"""Shared timing, table and summary helpers for the benchmark modules.

Only the standard library: ``time.perf_counter_ns`` for timing, ``tracemalloc``
for memory. Timed passes run with the garbage collector disabled (as
:mod:`timeit` does) and the cases of one comparison are interleaved, repeat
by repeat, so that a noisy neighbour slows every case alike. The figure
reported is the best pass; the median is shown beside it.
"""

from __future__ import annotations

import argparse
import gc
import math
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "Case",
    "Section",
    "SummaryRow",
    "Table",
    "Timing",
    "autosize",
    "print_summary",
    "run_alone",
    "fmt_bytes",
    "fmt_ns",
    "fmt_ratio",
    "measure",
    "measure_abba",
    "per_call",
    "traced_bytes",
]


@dataclass
class Case:
    """One timed operation.

    ``run`` performs ``ops`` operations in one pass; ``reset`` (untimed)
    restores whatever a pass consumed, e.g. machines moved by an event.
    """

    name: str
    run: Callable[[], object]
    ops: int
    reset: Callable[[], object] | None = None


@dataclass(frozen=True)
class Timing:
    """Nanoseconds per operation over the repeats of one case."""

    name: str
    best_ns: float
    median_ns: float
    ops: int
    repeats: int


def _one_pass(case: Case) -> float:
    if case.reset is not None:
        case.reset()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        case.run()
        elapsed = time.perf_counter_ns() - start
    finally:
        if gc_was_enabled:
            gc.enable()
    return elapsed / case.ops


def measure(cases: Sequence[Case], repeats: int, warmup: int = 1) -> dict[str, Timing]:
    """Time every case ``repeats`` times, interleaved; return ns per operation."""
    for _ in range(warmup):
        for case in cases:
            _one_pass(case)
    samples: dict[str, list[float]] = {case.name: [] for case in cases}
    for _ in range(repeats):
        for case in cases:
            samples[case.name].append(_one_pass(case))
    return {
        case.name: Timing(
            name=case.name,
            best_ns=min(samples[case.name]),
            median_ns=statistics.median(samples[case.name]),
            ops=case.ops,
            repeats=repeats,
        )
        for case in cases
    }


def measure_abba(
    pair: tuple[Case, Case], repeats: int, warmup: int = 1
) -> list[tuple[float, float]]:
    """ns per operation of both cases of ``pair``, pass by pass, in ABBA order.

    For a ratio of two cases that share a store: whichever runs second inherits the
    background work of the one before it (on PostgreSQL, WAL flushes, the checkpointer,
    autovacuum), so each goes first in half of the passes.
    """
    for _ in range(warmup):
        for case in pair:
            _one_pass(case)
    passes = []
    for index in range(repeats):
        if index % 2:
            second = _one_pass(pair[1])
            passes.append((_one_pass(pair[0]), second))
        else:
            first = _one_pass(pair[0])
            passes.append((first, _one_pass(pair[1])))
    return passes


def autosize(make: Callable[[int], Case], target_ms: float, max_units: int) -> Case:
    """The case ``make(units)`` whose pass takes about ``target_ms``.

    A unit is whatever ``make`` scales by (a lap of the lifecycle, a node);
    ``max_units`` caps it for cases whose set-up is slow.
    """
    probe_units = min(10, max_units)
    probe = make(probe_units)
    _one_pass(probe)  # warm up
    per_unit = _one_pass(probe) * probe.ops / probe_units
    units = max(1, min(max_units, math.ceil(target_ms * 1e6 / max(per_unit, 1.0))))
    return probe if units == probe_units else make(units)


def per_call(name: str, call: Callable[[], object]) -> Callable[[int], Case]:
    """The factory for :func:`autosize` of a case that times ``call`` per call: a pass of
    ``make(calls)`` calls it ``calls`` times in a bare loop."""

    def make(calls: int) -> Case:
        def run() -> None:
            for _ in range(calls):
                call()

        return Case(name, run, calls)

    return make


def traced_bytes(build: Callable[[], object]) -> tuple[int, object]:
    """Bytes still allocated after ``build()`` returns, and what it returned.

    The result is kept alive by the caller until it has been measured, so
    objects ``build`` creates and keeps count; temporaries do not.
    """
    gc.collect()
    started_here = not tracemalloc.is_tracing()
    if started_here:
        tracemalloc.start()
    try:
        gc.collect()
        before, _ = tracemalloc.get_traced_memory()
        kept = build()
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        if started_here:
            tracemalloc.stop()
    return after - before, kept


# -- formatting ----------------------------------------------------------------


def fmt_ns(ns: float) -> str:
    """``123 ns``, ``4.56 µs``, ``7.89 ms``."""
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.2f} µs"
    return f"{ns / 1_000_000:.2f} ms"


def fmt_bytes(n: float) -> str:
    """``0.25 B``, ``12 B``, ``3.4 KiB``, ``5.6 MiB``."""
    if abs(n) < 10:
        return f"{n:.2f} B"
    if abs(n) < 1024:
        return f"{n:.0f} B"
    if abs(n) < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def fmt_ratio(value: float) -> str:
    """``1.00x``, ``12.3x``, ``456x``; ``∞`` for a zero denominator."""
    if math.isinf(value) or math.isnan(value):
        return "∞"
    if value < 10:
        return f"{value:.2f}x"
    if value < 100:
        return f"{value:.1f}x"
    return f"{value:,.0f}x"


@dataclass
class Table:
    """A titled table of strings, printed with aligned columns."""

    title: str
    columns: Sequence[str]
    rows: list[Sequence[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        self.rows.append([str(c) for c in cells])

    def add_timings(
        self, cases: Sequence[Case], timings: Mapping[str, Timing], *baselines: float
    ) -> None:
        """One row per case: best, median, ops per pass, then its ratio to each baseline."""
        for case in cases:
            t = timings[case.name]
            self.add(
                case.name,
                fmt_ns(t.best_ns),
                fmt_ns(t.median_ns),
                f"{t.ops:,}",
                *(fmt_ratio(t.best_ns / base) for base in baselines),
            )

    def render(self) -> str:
        widths = [len(c) for c in self.columns]
        for row in self.rows:
            for i, cell in enumerate(row):
                widths[i] = max(widths[i], len(cell))

        def line(cells: Iterable[str]) -> str:
            parts = []
            for i, cell in enumerate(cells):
                # First column left-aligned (names), the rest right-aligned (figures).
                parts.append(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]))
            return "| " + " | ".join(parts) + " |"

        out = [f"### {self.title}", "", line(self.columns)]
        out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        out.extend(line(row) for row in self.rows)
        if self.notes:
            out.append("")
            out.extend(f"  * {note}" for note in self.notes)
        return "\n".join(out)


@dataclass(frozen=True)
class SummaryRow:
    """One figure for the final summary: what, measured, goal, and the verdict.

    ``passed`` is ``None`` for figures reported for context, without a goal.
    """

    figure: str
    measured: str
    goal: str
    passed: bool | None

    @property
    def verdict(self) -> str:
        if self.passed is None:
            return "info"
        return "PASS" if self.passed else "MISS"


@dataclass
class Section:
    """What one benchmark module reports."""

    title: str
    tables: list[Table] = field(default_factory=list)
    summary: list[SummaryRow] = field(default_factory=list)
    seconds: float = 0.0

    def render(self) -> str:
        out = [f"## {self.title}  ({self.seconds:.1f} s)"]
        for table in self.tables:
            out.extend(["", table.render()])
        return "\n".join(out)


def print_summary(rows: Iterable[SummaryRow], indent: str = "") -> None:
    """The verdicts, one line each: what a benchmark run alone ends with."""
    for row in rows:
        print(f"{indent}{row.verdict:4}  {row.figure}: {row.measured} (goal {row.goal})")


def run_alone(run: Callable[[bool], Section], doc: str | None) -> None:
    """``python bench_x.py [--quick]``: the module's section and its verdicts."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    args = parser.parse_args()
    section = run(args.quick)
    print(section.render())
    print()
    print_summary(section.summary)
