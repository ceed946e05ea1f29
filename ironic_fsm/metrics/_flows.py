"""Flows, steps and driver calls as the conductor notes them: counts, outcomes, durations.

:class:`FlowMetrics` is the conductor's tally
(:class:`~ironic_fsm.conductor.Tally`). The flows append plain tuples to its
queue (each save's pending events in one ``extend``, each driver call's
timing): no :class:`~ironic_fsm.events.Event` is built for it, and nothing
is looked up. The queue is folded into plain counters and histogram
buckets when a scrape reads them, or when it holds :data:`FOLD_AT` items.
Durations come from the events' own timestamps (the conductor's clock), so
folding later changes nothing.

A flow runs from a stable state to the next stable or failure state
(``manage``: enroll -> verifying -> manageable; ``undeploy``: active ->
deleting -> cleaning -> available is one flow). Its *phase* is the
working state it started in; its outcome is ``succeeded``, ``failed``,
``aborted`` (by request) or ``timed_out`` (a wait ran out: Ironic's
"Timeout reached" errors). A flow this conductor picked up mid-way (after a
takeover, or queued by another process) counts its outcome, not its
duration.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections import defaultdict, deque
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any, Final, TypeVar

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from ironic_fsm import states as s
from ironic_fsm.conductor.context import DRIVER_CALL, SAVED, Pending
from ironic_fsm.events import (
    PROVISION_END,
    PROVISION_ERROR,
    PROVISION_START,
    STEP_END,
    STEP_FAIL,
    STEP_START,
)

__all__ = [
    "CALL_BUCKETS", "FLOW_BUCKETS", "FOLD_AT", "STEP_BUCKETS", "FlowMetrics", "Histogram",
    "histogram_family",
]  # fmt: skip

#: Items queued before a flow folds them itself (no scrape came meanwhile): few, so that
#: they die young (a longer queue kept them through garbage collections, measured slower
#: on bench_metrics).
FOLD_AT: Final = 256
#: Flow durations, seconds: a fake node's milliseconds to a firmware update's hours.
FLOW_BUCKETS: Final = (0.01, 0.1, 1, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400)
#: Driver call durations, seconds: an in-memory fake's microseconds to a BMC's minute.
CALL_BUCKETS: Final = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
#: Step durations, seconds.
STEP_BUCKETS: Final = (0.001, 0.01, 0.1, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
#: In-flight flows and steps remembered at most (a node deleted mid-flow is never ended).
_IN_FLIGHT_CAP: Final = 500_000
#: Values a series holds unbinned at most (no scrape came meanwhile).
_BIN_AT: Final = 4096
#: A wait or hold state's working state: the phase of a flow first seen waiting.
_PHASE: Final = {
    s.CLEANWAIT: s.CLEANING, s.CLEANHOLD: s.CLEANING, s.DEPLOYWAIT: s.DEPLOYING,
    s.DEPLOYHOLD: s.DEPLOYING, s.INSPECTWAIT: s.INSPECTING, s.RESCUEWAIT: s.RESCUING,
    s.SERVICEWAIT: s.SERVICING, s.SERVICEHOLD: s.SERVICING,
}  # fmt: skip
#: Where a flow may start or end: the stable states and the failure states.
_SETTLED: Final = frozenset(s.STABLE_STATES) | frozenset(s.FAILURE_STATES)
_TIMEOUT_PREFIX: Final = "Timeout reached"
_Labels = TypeVar("_Labels", bound=tuple[str, ...])


class Histogram:
    """One labelled histogram series: per-bucket counts (not cumulative), sum and count.

    Values wait in :attr:`pending` (a list append is all a fold pays per value)
    and are put in their buckets together (:meth:`bin`: one sort, one
    ``bisect`` per bound, one ``sum``, all in C) before anyone reads them. A
    series of durations takes :class:`~datetime.timedelta` values, as two
    timestamps give them, against bounds made timedeltas too: no value is
    converted to seconds one at a time.
    """

    __slots__ = ("_limits", "_zero", "bounds", "counts", "pending", "total")

    def __init__(self, bounds: tuple[float, ...], *, durations: bool = False) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one: above every bound (+Inf)
        self.total = 0.0
        self.pending: list[Any] = []
        self._zero: Any = timedelta(0) if durations else 0.0
        self._limits: tuple[Any, ...] = (
            tuple(timedelta(seconds=bound) for bound in bounds) if durations else bounds
        )

    def bin(self) -> None:
        """Put the pending values in their buckets (a negative one counts as zero)."""
        values = self.pending
        if not values:
            return
        self.pending = []
        values.sort()
        zero = self._zero
        if values[0] < zero:
            values = [max(value, zero) for value in values]
        counts, below = self.counts, 0
        for index, limit in enumerate(self._limits):
            upto = bisect_right(values, limit)
            counts[index] += upto - below
            below = upto
        counts[-1] += len(values) - below
        total = sum(values, zero)
        self.total += total.total_seconds() if isinstance(total, timedelta) else total

    def buckets(self) -> list[tuple[str, float]]:
        """Cumulative ``(le, count)`` pairs, ``+Inf`` last, as the exposition wants them."""
        self.bin()
        out, running = [], 0
        bounds = (*map(str, map(float, self.bounds)), "+Inf")
        for bound, count in zip(bounds, self.counts, strict=True):
            running += count
            out.append((bound, float(running)))
        return out


def _outcome(event: str | None, error: str | None) -> str:
    """How a flow that went into a failure state ended."""
    if event == s.ABORT_EVENT:
        return "aborted"
    if (error or "").startswith(_TIMEOUT_PREFIX):
        return "timed_out"
    return "failed"


def _series(
    series: dict[_Labels, Histogram], labels: _Labels, bounds: tuple[float, ...], durations: bool
) -> Histogram:
    """The labelled series, made on its first value."""
    histogram = series.get(labels)
    if histogram is None:
        histogram = series[labels] = Histogram(bounds, durations=durations)
    return histogram


class FlowMetrics(Collector):
    """Tally and collector: flows, steps and driver calls as counters and histograms.

    Register it on a :class:`~prometheus_client.CollectorRegistry` and hand it
    to :meth:`~ironic_fsm.conductor.Conductor.count_with`
    (:class:`~ironic_fsm.metrics.Metrics` does both).
    """

    def __init__(self) -> None:
        #: What the flows appended and no fold has counted yet (the Tally protocol).
        self.items: deque[Any] = deque()
        self.fold_at = FOLD_AT
        self._fold_lock = threading.Lock()
        #: Flows in progress: node -> (phase, start time or None when picked up mid-way).
        self._flows: dict[str, tuple[str, datetime | None]] = {}
        #: Steps in progress: node -> start time.
        self._steps: dict[str, datetime | None] = {}
        self.started: defaultdict[str, int] = defaultdict(int)
        self.outcomes: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.durations: dict[tuple[str, str], Histogram] = {}
        self.step_outcomes: defaultdict[tuple[str, str, str, str], int] = defaultdict(int)
        self.step_durations: dict[tuple[str, str, str], Histogram] = {}
        self.transitions: defaultdict[str, int] = defaultdict(int)
        self.calls: dict[tuple[str, str, str], Histogram] = {}
        self.call_errors: defaultdict[tuple[str, str, str, str], int] = defaultdict(int)

    def fold(self) -> None:
        """Count the queued items (thread-safe: one folder at a time, appends go on)."""
        with self._fold_lock:
            self._fold()
            for series in (self.durations, self.step_durations, self.calls):
                for histogram in series.values():
                    if len(histogram.pending) >= _BIN_AT:
                        histogram.bin()
            for remembered in (self._flows, self._steps):
                while len(remembered) > _IN_FLIGHT_CAP:
                    del remembered[next(iter(remembered))]

    def _fold(self) -> None:
        # The common items are counted inline: a fold pays per item what the flow saved.
        items, flows, steps, entered = self.items, self._flows, self._steps, self.transitions
        durations, calls = self.durations, self.calls
        take, settled, saved = items.popleft, _SETTLED, None
        while items:
            item = take()
            try:
                name = item[0]
            except TypeError:
                continue  # an Event built for listeners (a power event): not counted here
            # The conductor notes the names' own constants: identity tells them apart.
            if name is PROVISION_START:
                node, state = item[1], item[5]
                entered[state] += 1
                if item[3] in settled:  # from a stable or failure state: a flow begins
                    phase = _PHASE.get(state, state)
                    flows[node] = (phase, item[9])
                    self.started[phase] += 1
                elif node not in flows:  # a flow going on that another process started
                    flows[node] = (_PHASE.get(state, state), None)
            elif name is SAVED:
                saved = item[1]
            elif name is PROVISION_END:
                entered[item[5]] += 1
                flow = flows.pop(item[1], None)
                if flow is None or flow[1] is None:
                    self._finish(item, flow, "succeeded")
                    continue
                key = (flow[0], "succeeded")
                self.outcomes[key] += 1
                series = durations.get(key) or _series(durations, key, FLOW_BUCKETS, True)
                series.pending.append(item[9] - flow[1])
            elif name is STEP_START:
                steps[item[1]] = item[9] or saved
            elif name is STEP_END or name is STEP_FAIL:
                self._step_end(item, steps.pop(item[1], None), item[9] or saved)
            elif name is DRIVER_CALL:
                series = calls.get(item[1]) or _series(calls, item[1], CALL_BUCKETS, False)
                series.pending.append(item[2])
                if item[3] is not None:
                    self.call_errors[item[1] + (item[3],)] += 1
            elif name is PROVISION_ERROR:
                entered[item[5]] += 1
                self._finish(item, flows.pop(item[1], None), _outcome(item[4], item[8]))

    # -- folding ---------------------------------------------------------------------------

    def _finish(
        self, item: Pending, flow: tuple[str, datetime | None] | None, outcome: str
    ) -> None:
        previous, end = item[3], item[9]
        if flow is None:
            if previous in _SETTLED:
                return  # settled to settled (manage from a failure state): no flow ran
            state = previous or "unknown"
            flow = (_PHASE.get(state, state), None)  # picked up mid-way
        phase, started = flow
        key = (phase, outcome)
        self.outcomes[key] += 1
        if started is not None and end is not None:
            _series(self.durations, key, FLOW_BUCKETS, True).pending.append(end - started)

    def _step_end(self, item: Pending, started: datetime | None, end: datetime | None) -> None:
        state, step = item[5], item[7]
        phase = _PHASE.get(state, state)
        # A planned step always names its interface and step (:mod:`ironic_fsm.steps`).
        labels: tuple[str, str, str] = (
            (phase, step["interface"], step["step"]) if step else (phase, "None", "None")
        )
        counted = (*labels, "succeeded" if item[0] is STEP_END else "failed")
        self.step_outcomes[counted] += 1
        if started is not None and end is not None:
            durations = self.step_durations
            series = durations.get(labels) or _series(durations, labels, STEP_BUCKETS, True)
            series.pending.append(end - started)

    # -- the collector: what a scrape reads --------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        self.fold()
        with self._fold_lock:  # a consistent picture: no fold half-way through
            yield from self._families()

    def _families(self) -> Iterator[Metric]:
        yield counter_family(
            "ironic_fsm_flows_started", "Flows started, by phase (the working state entered).",
            ["phase"], self.started,
        )  # fmt: skip
        yield counter_family(
            "ironic_fsm_flows", "Flows ended, by phase and outcome "
            "(succeeded, failed, aborted, timed_out).", ["phase", "outcome"], self.outcomes,
        )  # fmt: skip
        yield histogram_family(
            "ironic_fsm_flow_duration_seconds",
            "Flow durations from their first working state to a stable or failure state.",
            ["phase", "outcome"], self.durations,
        )  # fmt: skip
        yield counter_family(
            "ironic_fsm_steps", "Steps ended, by phase, interface, step and outcome.",
            ["phase", "interface", "step", "outcome"], self.step_outcomes,
        )  # fmt: skip
        yield histogram_family(
            "ironic_fsm_step_duration_seconds",
            "Step durations, asynchronous steps up to their callback.",
            ["phase", "interface", "step"], self.step_durations,
        )  # fmt: skip
        yield counter_family(
            "ironic_fsm_provision_state_changes",
            "Provision-state transitions, by the state entered.", ["state"], self.transitions,
        )  # fmt: skip
        yield histogram_family(
            "ironic_fsm_driver_call_duration_seconds",
            "Calls of hardware interfaces (BMC operations), by hardware type, "
            "interface and method.",
            ["driver", "interface", "method"], self.calls,
        )  # fmt: skip
        yield counter_family(
            "ironic_fsm_driver_call_errors",
            "Calls of hardware interfaces that raised, by hardware type, interface, "
            "method and error class.",
            ["driver", "interface", "method", "error"], self.call_errors,
        )  # fmt: skip


_Key = TypeVar("_Key", bound=str | tuple[str, ...])


def counter_family(
    name: str, documentation: str, labels: list[str], counts: dict[_Key, int]
) -> CounterMetricFamily:
    """A counter family, a sample for each of ``counts``: keyed by its label's value, or
    by the tuple of its labels' values."""
    family = CounterMetricFamily(name, documentation, labels=labels)
    for key, count in sorted(counts.items()):
        family.add_metric([key] if isinstance(key, str) else list(key), count)
    return family


def histogram_family(
    name: str, documentation: str, labels: list[str], series: dict[_Labels, Histogram]
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, documentation, labels=labels)
    for values, histogram in sorted(series.items()):
        family.add_metric(list(values), histogram.buckets(), histogram.total)
    return family
