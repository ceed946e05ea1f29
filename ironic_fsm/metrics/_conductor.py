"""What the conductor does beyond its flows: heartbeats, takeovers, power sync.

:class:`ConductorMetrics` is the conductor's
:class:`~ironic_fsm.conductor.Observer`. These are rare (a heartbeat every
ten seconds, a pass of the power sync), so they use prometheus_client's own
counters; driver calls, on the flows' path, are counted by :mod:`._flows`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from prometheus_client import CollectorRegistry, Counter

from ironic_fsm.metrics._agent import AgentMetrics
from ironic_fsm.metrics._sensors import SensorMetrics

if TYPE_CHECKING:
    from ironic_fsm.conductor.power_sync import PowerSyncReport
    from ironic_fsm.conductor.sensors import SensorReport

__all__ = ["POWER_SYNC_OUTCOMES", "ConductorMetrics"]

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


class ConductorMetrics:
    """The conductor's observer: its counters live in the registry it is given."""

    def __init__(
        self, registry: CollectorRegistry, sensors: SensorMetrics, agents: AgentMetrics
    ) -> None:
        self._sensors = sensors
        self._agents = agents
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

    def heartbeat(self, ok: bool) -> None:
        self._heartbeats.labels("ok" if ok else "failed").inc()

    def took_over(self, uuids: Sequence[str]) -> None:
        self._recoveries.inc()
        if uuids:
            self._takeovers.inc(len(uuids))

    def agent_heartbeat(self, outcome: str) -> None:
        self._agents.heartbeat(outcome)

    def sensors_read(self, report: SensorReport) -> None:
        self._sensors.update(report, time.time())

    def power_synced(self, report: PowerSyncReport) -> None:
        self._power_passes.inc()
        for outcome in POWER_SYNC_OUTCOMES:
            found = getattr(report, outcome)
            if found:
                self._power_nodes.labels(outcome).inc(len(found))
