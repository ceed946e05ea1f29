"""Flows and steps from the conductor's events: counts, outcomes and duration histograms.

:class:`FlowMetrics` is a listener. It only queues each event (a deque
append: the flow that emitted it pays nothing more); the queue is folded
into plain counters and histogram buckets when a scrape reads them, or
when it holds :data:`FOLD_AT` events. Durations come from the events' own
timestamps (the conductor's clock), so folding later changes nothing.

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
from bisect import bisect_left
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import Final, TypeVar

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from ironic_fsm import states as s
from ironic_fsm.events import (
    PROVISION_END,
    PROVISION_ERROR,
    PROVISION_START,
    STEP_END,
    STEP_FAIL,
    STEP_START,
    Event,
)

__all__ = [
    "FLOW_BUCKETS", "FOLD_AT", "STEP_BUCKETS", "FlowMetrics", "Histogram", "histogram_family",
]  # fmt: skip

#: Events queued before the listener folds them itself (no scrape came meanwhile): few, so
#: that they die young (a longer queue kept them through garbage collections, measured
#: slower on bench_metrics).
FOLD_AT: Final = 256
#: Flow durations, seconds: a fake node's milliseconds to a firmware update's hours.
FLOW_BUCKETS: Final = (0.01, 0.1, 1, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400)
#: Step durations, seconds.
STEP_BUCKETS: Final = (0.001, 0.01, 0.1, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
#: In-flight flows and steps remembered at most (a node deleted mid-flow is never ended).
_IN_FLIGHT_CAP: Final = 500_000
#: A wait or hold state's working state: the phase of a flow first seen waiting.
_WORKING_OF: Final = {
    s.CLEANWAIT: s.CLEANING, s.CLEANHOLD: s.CLEANING, s.DEPLOYWAIT: s.DEPLOYING,
    s.DEPLOYHOLD: s.DEPLOYING, s.INSPECTWAIT: s.INSPECTING, s.RESCUEWAIT: s.RESCUING,
    s.SERVICEWAIT: s.SERVICING, s.SERVICEHOLD: s.SERVICING,
}  # fmt: skip
#: Where a flow may start or end: the stable states and the failure states.
_SETTLED: Final = frozenset(s.STABLE_STATES) | frozenset(s.FAILURE_STATES)
_TIMEOUT_PREFIX: Final = "Timeout reached"


class Histogram:
    """One labelled histogram series: per-bucket counts (not cumulative), sum and count."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one: above every bound (+Inf)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    def buckets(self) -> list[tuple[str, float]]:
        """Cumulative ``(le, count)`` pairs, ``+Inf`` last, as the exposition wants them."""
        out, running = [], 0
        bounds = (*map(str, map(float, self.bounds)), "+Inf")
        for bound, count in zip(bounds, self.counts, strict=True):
            running += count
            out.append((bound, float(running)))
        return out


def _phase(state: str | None) -> str:
    state = state or "unknown"
    return _WORKING_OF.get(state, state)


class FlowMetrics(Collector):
    """Listener and collector: flows and steps as counters and histograms.

    Register it on a :class:`~prometheus_client.CollectorRegistry` and add
    it as a conductor listener (:class:`~ironic_fsm.metrics.Metrics` does both).
    """

    def __init__(self) -> None:
        self._queue: deque[Event] = deque()
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
        self._handlers: dict[str, Callable[[Event], None]] = {
            PROVISION_START: self._start, PROVISION_END: self._end,
            PROVISION_ERROR: self._error, STEP_START: self._step_start,
            STEP_END: self._step_end, STEP_FAIL: self._step_end,
        }  # fmt: skip

    # -- the listener: what the flow pays ----------------------------------------------------

    def __call__(self, event: Event) -> None:
        queue = self._queue
        queue.append(event)
        if len(queue) >= FOLD_AT:
            self.fold()

    def fold(self) -> None:
        """Count the queued events (thread-safe: one folder at a time, appends go on)."""
        with self._fold_lock:
            queue, handlers = self._queue, self._handlers
            while queue:
                event = queue.popleft()
                handler = handlers.get(event.name)
                if handler is not None:
                    handler(event)
            for remembered in (self._flows, self._steps):
                while len(remembered) > _IN_FLIGHT_CAP:
                    del remembered[next(iter(remembered))]

    # -- folding ---------------------------------------------------------------------------

    def _start(self, event: Event) -> None:
        self.transitions[event.state] += 1
        if event.node in self._flows:
            return  # a flow going on: a wait, a hold, the next working state
        phase = _phase(event.state)
        fresh = event.previous_state in _SETTLED
        self._flows[event.node] = (phase, event.timestamp if fresh else None)
        if fresh:
            self.started[phase] += 1

    def _end(self, event: Event) -> None:
        self.transitions[event.state] += 1
        self._finish(event, "succeeded")

    def _error(self, event: Event) -> None:
        self.transitions[event.state] += 1
        if event.event == s.ABORT_EVENT:
            outcome = "aborted"
        elif (event.error or "").startswith(_TIMEOUT_PREFIX):
            outcome = "timed_out"
        else:
            outcome = "failed"
        self._finish(event, outcome)

    def _finish(self, event: Event, outcome: str) -> None:
        flow = self._flows.pop(event.node, None)
        if flow is None:
            if event.previous_state in _SETTLED:
                return  # settled to settled (manage from a failure state): no flow ran
            flow = (_phase(event.previous_state), None)  # picked up mid-way
        phase, started = flow
        key = (phase, outcome)
        self.outcomes[key] += 1
        _observe_span(self.durations, key, FLOW_BUCKETS, started, event.timestamp)

    def _step_start(self, event: Event) -> None:
        self._steps[event.node] = event.timestamp

    def _step_end(self, event: Event) -> None:
        step = event.step or {}
        labels = (_phase(event.state), str(step.get("interface")), str(step.get("step")))
        outcome = "succeeded" if event.name == STEP_END else "failed"
        key = (*labels, outcome)
        self.step_outcomes[key] += 1
        started = self._steps.pop(event.node, None)
        _observe_span(self.step_durations, labels, STEP_BUCKETS, started, event.timestamp)

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


_Labels = TypeVar("_Labels", bound=tuple[str, ...])


def _observe_span(
    histograms: dict[_Labels, Histogram], key: _Labels, bounds: tuple[float, ...],
    started: datetime | None, end: datetime | None,
) -> None:  # fmt: skip
    """Add the seconds from ``started`` to ``end`` to ``key``'s histogram (made on its first
    span); nothing when either time is unknown (a flow or step picked up mid-way)."""
    if started is None or end is None:
        return
    histogram = histograms.get(key)
    if histogram is None:
        histogram = histograms[key] = Histogram(bounds)
    histogram.observe(max(0.0, (end - started).total_seconds()))


_Key = TypeVar("_Key", bound=str | tuple[str, ...])


def counter_family(
    name: str, documentation: str, labels: list[str],
    series: Mapping[_Key, int],
) -> CounterMetricFamily:  # fmt: skip
    """A counter per label values: a tuple of them, or the one value of a single label."""
    family = CounterMetricFamily(name, documentation, labels=labels)
    for values, count in sorted(series.items()):
        family.add_metric([values] if isinstance(values, str) else list(values), count)
    return family


def histogram_family(
    name: str, documentation: str, labels: list[str], series: dict[_Labels, Histogram]
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, documentation, labels=labels)
    for values, histogram in sorted(series.items()):
        family.add_metric(list(values), histogram.buckets(), histogram.total)
    return family
