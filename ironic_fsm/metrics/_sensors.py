"""Hardware sensors as ironic-prometheus-exporter's gauges, from the conductor's sensor passes.

The names and labels are the exporter's for Redfish readings, so that the
dashboards built on it work: ``baremetal_temp_<context>_celsius`` (the
reading), ``baremetal_fan_status``, ``baremetal_power_status`` and
``baremetal_drive_status`` (0 healthy, 1 not), each labelled ``node_name``,
``entity_id`` and ``sensor_id``; and ``baremetal_last_payload_timestamp_seconds``.
IPMI readings (``Sensor Reading`` texts) follow the exporter's IPMI names,
for its categories with numbers: ``baremetal_<sensor words>_celsius`` for a
temperature (``CPU Temp (0x1)``: ``baremetal_cpu_temp_celsius``),
``baremetal_fan_<unit>`` for a fan (``Fan 1 (0x2)``: ``baremetal_fan_1_rpm``),
``baremetal_power_<words>``, ``baremetal_<words>`` for a current.

Unlike the exporter, no node UUID or instance UUID is a label (issue 23:
bounded, readable labels): a node is its ``node_name``, and a node without a
name is left out of the gauges (its readings still reach the listeners and
notifications). Each pass replaces what the previous one left: a node that
failed or left this conductor shows no stale readings.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from ironic_fsm.conductor.sensors import SensorReading, SensorReport

__all__ = ["SensorMetrics", "gauges_of"]

_LABELS: Final = ["node_name", "entity_id", "sensor_id"]
#: (gauge name, help) of a Redfish sensor type's status gauge, and its entity when fixed.
_STATUS: Final = {
    "Fan": ("baremetal_fan_status", "Fan health (0: OK, 1: not)", None),
    "Power": ("baremetal_power_status", "Power supply health (0: OK, 1: not)", "PSU"),
    "Drive": ("baremetal_drive_status", "Drive health (0: OK, 1: not)", "HDD"),
}
#: An IPMI reading: a number, then its unit (``'52 (+/- 0) degrees C'``, ``'4200 RPM'``).
_IPMI_NUMBER: Final = re.compile(r"^\s*(-?\d+(?:\.\d+)?)")
_NOT_WORD: Final = re.compile(r"\W")
#: The exporter's IPMI categories with numeric readings: (prefix, suffix) of their names.
_IPMI_CATEGORIES: Final = {
    "temperature": ("baremetal_", "_celsius"), "fan": ("baremetal_", ""),
    "power": ("baremetal_power_", ""), "current": ("baremetal_", ""),
}  # fmt: skip
#: Samples of one pass: gauge name -> (help, [(labels, value)]).
Samples = dict[str, tuple[str, list[tuple[list[str], float]]]]


def _add(samples: Samples, name: str, doc: str, labels: list[str], value: float) -> None:
    samples.setdefault(name, (doc, []))[1].append((labels, value))


def _redfish(samples: Samples, node: str, sensors: Mapping[str, Mapping[str, Any]]) -> None:
    for sensor in sensors.get("Temperature", {}).values():
        context = str(sensor.get("physical_context") or "unknown")
        reading = sensor.get("reading_celsius")
        if reading is None:
            continue
        word = _NOT_WORD.sub("_", context.lower())
        name = f"baremetal_temp_{word}_celsius"
        _add(samples, name, f"{context} temperature reading, Celsius",
             [node, context, str(sensor.get("sensor_number"))], float(reading))  # fmt: skip
    for kind, (name, doc, entity) in _STATUS.items():
        for sensor_id, sensor in sensors.get(kind, {}).items():
            where = entity or str(sensor.get("physical_context") or "unknown")
            label = sensor_id if kind != "Fan" else str(sensor.get("identity"))
            _add(samples, name, doc, [node, where, label], 0.0 if sensor.get("health") == "OK"
                 else 1.0)  # fmt: skip


def _ipmi_name(category: str, entry: str, reading: str) -> str:
    """The exporter's IPMI gauge name for one sensor of ``category``: a fan's words with
    its number folded into ``fan`` and its unit; another's words less digits and the last."""
    prefix, suffix = _IPMI_CATEGORIES[category]
    unit = ""
    if category == "fan":
        words = re.sub(r"\(.*\)", "", re.sub(r"fan\d*[a-z]*", "fan", entry.lower())).split()
        label = "_".join(words)
        parts = reading.split()
        unit = f"_{parts[-1].lower()}" if len(parts) > 1 else ""
    else:
        words = re.sub(r"\d+", "", entry).lower().split()
        label = "_".join(words[:-1]).replace("-", "_")
    return _NOT_WORD.sub("_", f"{prefix}{label}{suffix}{unit}")


def _ipmi(samples: Samples, node: str, sensors: Mapping[str, Mapping[str, Any]]) -> None:
    for kind, readings in sensors.items():
        category = kind.lower()
        if category not in _IPMI_CATEGORIES:
            continue  # the exporter's categories only (a power supply's watts are not one)
        for sensor_id, sensor in readings.items():
            text = str(sensor.get("Sensor Reading", ""))
            found = _IPMI_NUMBER.match(text)
            if found is None or len(text.split()) < 2:
                continue  # a state (0h) or no reading: the exporter's 0/1 needs the SDR's meaning
            name = _ipmi_name(category, sensor_id, text)
            entity, shown = (
                str(sensor.get("Entity ID", "")),
                str(sensor.get("Sensor ID", sensor_id)),
            )
            labels = [node, entity, shown]
            _add(samples, name, f"IPMI {kind} sensor reading", labels, float(found.group(1)))


def gauges_of(readings: tuple[SensorReading, ...], timestamp: float) -> Samples:
    """The samples of one pass's readings (named nodes only)."""
    samples: Samples = {}
    for reading in readings:
        node = reading.node_name
        if not node:
            continue
        sensors = reading.sensors
        if any("Sensor Reading" in sensor for kind in sensors.values() for sensor in kind.values()):
            _ipmi(samples, node, sensors)
        else:
            _redfish(samples, node, sensors)
        doc = "When this node's sensors were last read (Unix time)"
        samples.setdefault("baremetal_last_payload_timestamp_seconds", (doc, []))[1].append(
            ([node], timestamp)
        )
    return samples


class SensorMetrics(Collector):
    """The gauges of the last sensor pass, and counters of all of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._samples: Samples = {}
        self.passes = 0
        #: Nodes read, by (hardware type, result: ``ok`` or ``failed``).
        self.reads: dict[tuple[str, str], int] = {}

    def update(self, report: SensorReport, timestamp: float) -> None:
        """Replace the gauges with this pass's readings; count its reads."""
        samples = gauges_of(report.readings, timestamp)
        with self._lock:
            self._samples = samples
            self.passes += 1
            for reading in report.readings:
                key = (reading.driver, "ok")
                self.reads[key] = self.reads.get(key, 0) + 1
            for _, driver, _ in report.failed:
                key = (driver, "failed")
                self.reads[key] = self.reads.get(key, 0) + 1

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            samples, passes, reads = self._samples, self.passes, dict(self.reads)
        for name, (doc, values) in sorted(samples.items()):
            labels = ["node_name"] if name.endswith("_timestamp_seconds") else _LABELS
            family = GaugeMetricFamily(name, doc, labels=labels)
            for label_values, value in values:
                family.add_metric(label_values, value)
            yield family
        counted = CounterMetricFamily("ironic_fsm_sensor_passes", "Sensor passes run.")
        counted.add_metric([], passes)
        yield counted
        reads_family = CounterMetricFamily(
            "ironic_fsm_sensor_reads", "Nodes whose sensors were read, by hardware type and "
            "result (ok, failed: a BMC that failed or did not answer in time).",
            labels=["driver", "result"],
        )  # fmt: skip
        for (driver, result), count in sorted(reads.items()):
            reads_family.add_metric([driver, result], count)
        yield reads_family
