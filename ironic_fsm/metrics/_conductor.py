"""What the conductor does beyond its events: driver calls, heartbeats, takeovers, power sync.

:class:`ConductorMetrics` is the conductor's
:class:`~ironic_fsm.conductor.Observer`. Driver calls are on the flows' path
(a verify validates each interface, a deploy powers the node), so they are
timed into plain buckets under one lock, as :mod:`._flows` does; the rare
events (a heartbeat every ten seconds, a pass of the power sync) use
prometheus_client's own counters.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from time import perf_counter
from types import TracebackType
from typing import TYPE_CHECKING, Final

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from ironic_fsm.metrics._flows import Histogram, counter_family, histogram_family

if TYPE_CHECKING:
    from ironic_fsm.conductor.power_sync import PowerSyncReport

__all__ = ["CALL_BUCKETS", "POWER_SYNC_OUTCOMES", "ConductorMetrics"]

#: Driver call durations, seconds: an in-memory fake's microseconds to a BMC's minute.
CALL_BUCKETS: Final = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
#: The power sync report's fields counted, and what each means.
POWER_SYNC_OUTCOMES: Final = {
    "checked": "power read from the BMC",
    "discrepancies": "the BMC disagreed with the recorded power state",
    "forced": "corrected on the BMC (the recorded state set again)",
    "accepted": "corrected in the record (the BMC's state accepted)",
    "failed": "the read or the correction failed",
    "maintenance_set": "put into maintenance (fault 'power failure')",
    "recovered": "out of maintenance, the BMC readable again",
    "skipped": "left alone: reserved, changed or deleted since the scan",
}


class _Timed:
    """One driver call being timed (a context manager, one per call)."""

    __slots__ = ("_key", "_owner", "_started")

    def __init__(self, owner: ConductorMetrics, key: tuple[str, str, str]) -> None:
        self._owner = owner
        self._key = key
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = perf_counter()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._owner.record_call(self._key, perf_counter() - self._started, exc_type)


class ConductorMetrics(Collector):
    """The conductor's observer, and the collector of driver-call figures."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._lock = threading.Lock()
        self.calls: dict[tuple[str, str, str], Histogram] = {}
        self.errors: dict[tuple[str, str, str, str], int] = {}
        self._heartbeats = Counter(
            "ironic_fsm_conductor_heartbeats", "Heartbeats sent, by result (ok, failed).",
            ["result"], registry=registry,
        )  # fmt: skip
        self._recoveries = Counter(
            "ironic_fsm_conductor_recovery_passes",
            "Passes looking for nodes left reserved by dead conductors.", registry=registry,
        )  # fmt: skip
        self._takeovers = Counter(
            "ironic_fsm_conductor_takeovers",
            "Nodes taken over from dead conductors and resumed.", registry=registry,
        )  # fmt: skip
        self._power_passes = Counter(
            "ironic_fsm_power_sync_passes", "Power-state sync passes.", registry=registry
        )
        self._power_nodes = Counter(
            "ironic_fsm_power_sync_nodes",
            "Nodes of the power-state sync, by outcome: "
            + "; ".join(f"{name}: {meaning}" for name, meaning in POWER_SYNC_OUTCOMES.items()),
            ["outcome"], registry=registry,
        )  # fmt: skip
        for result in ("ok", "failed"):
            self._heartbeats.labels(result)
        for outcome in POWER_SYNC_OUTCOMES:
            self._power_nodes.labels(outcome)

    # -- the Observer protocol ----------------------------------------------------------------

    def driver_call(self, driver: str, kind: str, method: str) -> _Timed:
        return _Timed(self, (driver, kind, method))

    def heartbeat(self, ok: bool) -> None:
        self._heartbeats.labels("ok" if ok else "failed").inc()

    def took_over(self, uuids: Sequence[str]) -> None:
        self._recoveries.inc()
        if uuids:
            self._takeovers.inc(len(uuids))

    def power_synced(self, report: PowerSyncReport) -> None:
        self._power_passes.inc()
        for outcome in POWER_SYNC_OUTCOMES:
            found = getattr(report, outcome)
            if found:
                self._power_nodes.labels(outcome).inc(len(found))

    # -- driver calls ---------------------------------------------------------------------------

    def record_call(
        self, key: tuple[str, str, str], seconds: float, error: type[BaseException] | None
    ) -> None:
        with self._lock:
            histogram = self.calls.get(key)
            if histogram is None:
                histogram = self.calls[key] = Histogram(CALL_BUCKETS)
            histogram.observe(seconds)
            if error is not None:
                failed = (*key, error.__name__)
                self.errors[failed] = self.errors.get(failed, 0) + 1

    def collect(self) -> Iterator[Metric]:
        with self._lock:
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
                ["driver", "interface", "method", "error"], self.errors,
            )  # fmt: skip
