"""The fleet as a scrape finds it: nodes by state, hardware type, group and fault; the conductor.

The node figures are a handful of ``GROUP BY`` counts on indexes
(:meth:`~ironic_fsm.Conductor.count_nodes`) and the registry's small table.
Their cost follows the indexes, not the records, but still grows with the
fleet (a tenth of a second at 100,000 nodes on a busy PostgreSQL), so a
scrape does not wait for them: it serves the last counts, and when they are
older than ``max_age`` seconds a thread reads them again for the next
scrape. Only the first scrape (or ``max_age=0``) reads them itself.
``ironic_fsm_node_counts_age_seconds`` says how old they are. A store that
does not answer turns ``ironic_fsm_store_up`` to 0 and leaves the node
figures out of that scrape, rather than failing it. The conductor's own
gauges (flows running, draining) are read at each scrape.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from time import monotonic
from typing import TYPE_CHECKING, Any, Final

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ironic_fsm.conductor.launcher import WORKING_STATES
from ironic_fsm.exceptions import IronicFSMError

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor

__all__ = ["NODE_COUNTS_MAX_AGE", "FleetCollector"]

#: Seconds the node counts are served before a thread reads them again.
NODE_COUNTS_MAX_AGE: Final = 10.0
#: Seconds between two counts of the nodes this conductor owns: a listing of every node's
#: hardware type and group, and a ring lookup each (about a second at 100,000 nodes).
OWNED_MAX_AGE: Final = 60.0

LOG = logging.getLogger("ironic_fsm.metrics")


def _gauge(name: str, documentation: str, label: str, counts: dict[Any, int]) -> Metric:
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for value, count in sorted(counts.items(), key=lambda item: str(item[0])):
        family.add_metric(["" if value is None else str(value)], count)
    return family


class FleetCollector(Collector):
    """Node counts (read again when older than ``max_age``) and the conductor's state."""

    def __init__(self, conductor: Conductor, max_age: float = NODE_COUNTS_MAX_AGE) -> None:
        self._conductor = conductor
        self._max_age = max_age
        self._lock = threading.Lock()
        #: The last counts read, as families, and when (monotonic); ``None``: none yet.
        self._counts: list[Metric] | None = None
        self._read_at = 0.0
        self._reader: threading.Thread | None = None
        #: The nodes this conductor owned when last counted, and when (monotonic).
        self._owned = 0
        self._owned_at: float | None = None

    def collect(self) -> Iterator[Metric]:
        conductor = self._conductor
        yield GaugeMetricFamily(
            "ironic_fsm_conductor_flows_running",
            "Flows this conductor runs now or has queued on its flow threads.",
            value=conductor.running(),
        )
        yield GaugeMetricFamily(
            "ironic_fsm_conductor_draining", "1 while this conductor drains (SIGTERM).",
            value=1 if conductor.draining else 0,
        )  # fmt: skip
        try:
            counts, read_at = self._current()
        except IronicFSMError as error:
            LOG.warning("Metrics: the store does not answer (%s)", type(error).__name__)
            yield GaugeMetricFamily(
                "ironic_fsm_store_up", "1 when the store answered the last count.", value=0
            )
            return
        yield from counts
        yield GaugeMetricFamily(
            "ironic_fsm_node_counts_age_seconds",
            "Seconds since the node counts served were read from the store.",
            value=max(0.0, monotonic() - read_at),
        )

    def _current(self) -> tuple[list[Metric], float]:
        """The counts to serve: the last ones (a thread reads newer ones when they are
        stale), or read here when there are none yet."""
        with self._lock:
            counts, read_at = self._counts, self._read_at
            if counts is not None and self._max_age > 0:
                stale = monotonic() - read_at >= self._max_age
                if stale and (self._reader is None or not self._reader.is_alive()):
                    self._reader = threading.Thread(
                        target=self._read_quietly, name="ironic-fsm-metrics-counts", daemon=True
                    )
                    self._reader.start()
                return counts, read_at
        return self._read(), monotonic()

    def _read(self) -> list[Metric]:
        counts = list(self._fleet(self._conductor))
        with self._lock:
            self._counts, self._read_at = counts, monotonic()
        return counts

    def _read_quietly(self) -> None:
        """A refresh in its thread: on failure, the next scrape reads (and says so) itself."""
        try:
            self._read()
        except IronicFSMError as error:
            LOG.warning("Metrics: the store does not answer (%s)", type(error).__name__)
            with self._lock:
                self._counts = None

    def _owned_now(self, conductor: Conductor) -> int:
        """The nodes this conductor's share of the hash rings holds, counted again when older
        than :data:`OWNED_MAX_AGE` (in the counts' own thread, after the first scrape)."""
        if self._owned_at is None or monotonic() - self._owned_at >= OWNED_MAX_AGE:
            owns = conductor.owns
            self._owned = sum(
                1
                for row in conductor.list_nodes(fields=("driver", "conductor_group"))
                if owns(row["uuid"], row["driver"], row["conductor_group"])
            )
            self._owned_at = monotonic()
        return self._owned

    def _fleet(self, conductor: Conductor) -> Iterator[Metric]:
        count = conductor.count_nodes
        states = count("provision_state")
        drivers = count("driver")
        groups = count("conductor_group")
        faults = count("fault", maintenance=True)
        held_states = count("provision_state", reserved=True)
        holders = count("reservation", reserved=True)
        alive = sum(1 for info in conductor.list_conductors() if info.alive)
        families = [
            _gauge("ironic_fsm_nodes", "Nodes by provision state.", "provision_state", states),
            _gauge("ironic_fsm_nodes_by_driver", "Nodes by hardware type.", "driver", drivers),
            _gauge(
                "ironic_fsm_nodes_by_conductor_group",
                "Nodes by conductor group (the empty string: the default group).",
                "conductor_group",
                groups,
            ),
            GaugeMetricFamily(
                "ironic_fsm_nodes_maintenance",
                "Nodes in maintenance.",
                value=sum(faults.values()),
            ),
            _gauge(
                "ironic_fsm_nodes_fault",
                "Nodes in maintenance with a fault, by fault.",
                "fault",
                {fault: n for fault, n in faults.items() if fault is not None},
            ),
            GaugeMetricFamily(
                "ironic_fsm_nodes_reserved",
                "Nodes held by a conductor now.",
                value=sum(holders.values()),
            ),
            GaugeMetricFamily(
                "ironic_fsm_work_queue_depth",
                "Nodes queued for a conductor: in a working state, held by none.",
                value=sum(
                    states.get(state, 0) - held_states.get(state, 0) for state in WORKING_STATES
                ),
            ),
            GaugeMetricFamily(
                "ironic_fsm_conductor_nodes_held",
                "Nodes this conductor holds now.",
                value=holders.get(conductor.holder, 0),
            ),
            GaugeMetricFamily(
                "ironic_fsm_conductor_nodes_owned",
                "Nodes whose work this conductor does (its share of the hash rings), "
                f"counted at most every {OWNED_MAX_AGE:g} s.",
                value=self._owned_now(conductor),
            ),
            GaugeMetricFamily(
                "ironic_fsm_conductors_alive", "Conductors alive in the registry.", value=alive
            ),
            GaugeMetricFamily(
                "ironic_fsm_store_up", "1 when the store answered the last count.", value=1
            ),
        ]
        yield from families
