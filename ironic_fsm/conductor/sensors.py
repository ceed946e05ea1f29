"""Hardware sensors, as Ironic's ``send_sensor_data`` periodic task collects them.

Each pass reads the sensors of this conductor's own nodes (its share of the
ring) through their management interface's ``get_sensors_data``, at most
``send_sensor_data_workers`` BMCs at once, and nothing is reserved: a
reading changes no record, so a node at work is read too (Ironic takes a
shared lock). As Ironic, only deployed nodes (``active``) are read unless
``send_sensor_data_for_undeployed_nodes``, and never a node in maintenance.

A BMC that fails is counted and skipped; one slower than
``send_sensor_data_wait_timeout`` is left to its worker and counted as
failed, so a pass never stalls on one BMC. Each node read is told to the
listeners as a :class:`SensorEvent` (``hardware.<driver>.metrics.update``,
the readings in Ironic's shape) and the whole pass to the observer
(metrics: ironic-prometheus-exporter's gauges).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from ironic_fsm import states as s
from ironic_fsm.conductor.common import describe_exc, scrub_node
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.jobs import emit
from ironic_fsm.events import Event
from ironic_fsm.node import Node

__all__ = ["SENSORS_UPDATE", "SensorData", "SensorEvent", "SensorReading", "SensorReport"]

LOG = logging.getLogger("ironic_fsm.conductor")

#: The event (and notification) type of one node's readings: ``hardware.<driver>.metrics.update``.
SENSORS_UPDATE: Final = "hardware.{driver}.metrics.update"


@attrs.frozen
class SensorReading:
    """One node's readings from one pass."""

    node: str
    node_name: str | None
    driver: str
    #: Ironic's shape: sensor type -> sensor name -> its fields.
    sensors: Mapping[str, Mapping[str, Mapping[str, Any]]]


@attrs.frozen
class SensorReport:
    """What one pass of :meth:`SensorData.send_sensor_data` read, and what failed."""

    readings: tuple[SensorReading, ...] = ()
    #: Nodes whose BMC failed or was too slow: ``(uuid, driver, why)``.
    failed: tuple[tuple[str, str, str], ...] = ()


@attrs.frozen(kw_only=True)
class SensorEvent(Event):
    """An :class:`~ironic_fsm.events.Event` carrying one node's sensor readings."""

    #: The node's hardware type.
    driver: str = ""
    #: The readings in Ironic's shape (sensor type -> sensor name -> fields).
    sensors: Mapping[str, Mapping[str, Mapping[str, Any]]] = attrs.field(factory=dict)


class SensorData:
    """The sensor pass of one conductor: it reads, the listeners and observer hear."""

    def __init__(self, ctx: Context, owns: Callable[[str, str, str], bool]) -> None:
        self._ctx = ctx
        self._owns = owns

    def send_sensor_data(self) -> SensorReport:
        """Read the sensors of this conductor's eligible nodes; see the module's description."""
        owns = self._owns
        nodes = [n for n in self._candidates() if owns(n.uuid, n.driver, n.conductor_group)]
        outcomes = self._read_all(nodes)
        readings = tuple(found for found in outcomes if isinstance(found, SensorReading))
        failed = tuple(found for found in outcomes if isinstance(found, tuple))
        report = SensorReport(readings=readings, failed=failed)
        if self._ctx.listeners:
            now = self._ctx.clock()
            for reading in readings:
                emit(self._ctx, _event(reading, now))
        if self._ctx.observer is not None:
            self._ctx.observer.sensors_read(report)
        return report

    def _candidates(self) -> list[Node]:
        config = self._ctx.config
        filters: dict[str, Any] = {"maintenance": False}
        if not config.send_sensor_data_for_undeployed_nodes:
            filters["provision_state"] = s.ACTIVE
        return list(self._ctx.caps.store.list(**filters))

    def _read_all(self, nodes: list[Node]) -> list[SensorReading | tuple[str, str, str]]:
        """Each node's outcome, read by at most ``send_sensor_data_workers`` threads."""
        if not nodes:
            return []
        from concurrent.futures import ThreadPoolExecutor, wait  # import ironic_fsm stays light

        config = self._ctx.config
        pool = ThreadPoolExecutor(
            max_workers=min(config.send_sensor_data_workers, len(nodes)),
            thread_name_prefix="sensors",
        )
        try:
            futures = {pool.submit(self._read, node): node for node in nodes}
            done, _ = wait(futures, timeout=config.send_sensor_data_wait_timeout)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)  # a stuck BMC keeps only its worker
        outcomes: list[SensorReading | tuple[str, str, str]] = []
        for future, node in futures.items():
            if future in done:
                outcomes.append(future.result())
            else:
                why = f"no answer within {config.send_sensor_data_wait_timeout:g} s"
                LOG.warning("Node %s: sensor data not read: %s", node.uuid, why)
                outcomes.append((node.uuid, node.driver, why))
        return outcomes

    def _read(self, node: Node) -> SensorReading | tuple[str, str, str]:
        try:
            task = self._ctx.task_for(node)
            sensors = task.driver.management.get_sensors_data(task)
        except Exception as exc:  # any BMC's failure is that node's, never the pass's
            why = scrub_node(node, describe_exc(exc))
            LOG.warning("Node %s: sensor data not read: %s", node.uuid, why)
            return (node.uuid, node.driver, why)
        return SensorReading(node=node.uuid, node_name=node.name, driver=node.driver,
                             sensors=sensors)  # fmt: skip


def _event(reading: SensorReading, now: Any) -> SensorEvent:
    return SensorEvent(
        name=SENSORS_UPDATE.format(driver=reading.driver), node=reading.node,
        node_name=reading.node_name, previous_state=None, event=None, state="", target=None,
        timestamp=now, driver=reading.driver, sensors=reading.sensors,
    )  # fmt: skip
