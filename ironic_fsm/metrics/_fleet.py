"""The fleet as a scrape finds it: nodes by state, hardware type, group and fault; the conductor.

Read from the store at each scrape, never kept: a handful of ``GROUP BY``
counts on indexes (:meth:`~ironic_fsm.Conductor.count_nodes`), whose cost
does not grow with the fleet's records, and the registry's small table.
A store that does not answer turns ``ironic_fsm_store_up`` to 0 and leaves
the node figures out of that scrape, rather than failing it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ironic_fsm.conductor.launcher import WORKING_STATES
from ironic_fsm.exceptions import IronicFSMError

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor

__all__ = ["FleetCollector"]

LOG = logging.getLogger("ironic_fsm.metrics")


def _gauge(name: str, documentation: str, label: str, counts: dict[Any, int]) -> Metric:
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for value, count in sorted(counts.items(), key=lambda item: str(item[0])):
        family.add_metric(["" if value is None else str(value)], count)
    return family


class FleetCollector(Collector):
    """Node counts and this conductor's state, read at each scrape."""

    def __init__(self, conductor: Conductor) -> None:
        self._conductor = conductor

    def collect(self) -> Iterator[Metric]:
        conductor = self._conductor
        running = GaugeMetricFamily(
            "ironic_fsm_conductor_flows_running",
            "Flows this conductor runs now or has queued on its flow threads.",
            value=conductor.running(),
        )
        yield running
        yield GaugeMetricFamily(
            "ironic_fsm_conductor_draining", "1 while this conductor drains (SIGTERM).",
            value=1 if conductor.draining else 0,
        )  # fmt: skip
        try:
            yield from self._fleet(conductor)
        except IronicFSMError as error:
            LOG.warning("Metrics: the store does not answer (%s)", type(error).__name__)
            yield GaugeMetricFamily(
                "ironic_fsm_store_up", "1 when the store answered this scrape.", value=0
            )

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
                "ironic_fsm_conductors_alive", "Conductors alive in the registry.", value=alive
            ),
            GaugeMetricFamily(
                "ironic_fsm_store_up", "1 when the store answered this scrape.", value=1
            ),
        ]
        yield from families
