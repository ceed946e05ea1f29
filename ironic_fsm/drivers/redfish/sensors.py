"""``redfish`` sensors: each chassis's ``Thermal`` and ``Power`` read through sushy.

The readings come back in Ironic's shape for Redfish (what
ironic-prometheus-exporter parses): by type (``Fan``, ``Temperature``,
``Power``, ``Drive``), then by a name unique on the BMC
(``<member>@<chassis>``; a power supply's ``<member>:<power>@<chassis>``),
each sensor a dict of sushy's field names with plain values (enums as their
Redfish strings). A chassis that lacks a resource, or answers it badly, has
none of those sensors: the others are still read. Ironic reads
``SimpleStorage`` for drives; a BMC without it reports none.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Final

from ironic_fsm.drivers.redfish.driver_info import _info
from ironic_fsm.drivers.redfish.session import _bmc, _get_system, _sushy, _value
from ironic_fsm.task import Task

__all__ = ["SENSOR_TYPES", "read_sensors"]

LOG = logging.getLogger(__name__)

#: The sensor types, in Ironic's order.
SENSOR_TYPES: Final = ("Fan", "Temperature", "Power", "Drive")
_FAN_FIELDS: Final = (
    "identity", "max_reading_range", "min_reading_range", "reading", "reading_units",
    "serial_number", "physical_context",
)  # fmt: skip
_TEMPERATURE_FIELDS: Final = (
    "identity", "max_reading_range_temp", "min_reading_range_temp", "reading_celsius",
    "physical_context", "sensor_number",
)  # fmt: skip
_POWER_FIELDS: Final = (
    "identity", "power_capacity_watts", "line_input_voltage", "last_power_output_watts",
    "serial_number",
)  # fmt: skip
_DRIVE_FIELDS: Final = ("identity", "model", "capacity_bytes", "failure_predicted")


def _plain(value: Any) -> Any:
    """A JSON-safe value: sushy's enums as their Redfish strings."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return _value(value)


def _sensor(resource: Any, fields: Iterable[str]) -> dict[str, Any]:
    found = {field: _plain(getattr(resource, field, None)) for field in fields}
    status = getattr(resource, "status", None)
    found["state"] = _plain(getattr(status, "state", None))
    found["health"] = _plain(getattr(status, "health", None))
    return found


def _thermal(chassis: Any, sensors: dict[str, dict[str, dict[str, Any]]]) -> None:
    thermal = chassis.thermal
    for fan in thermal.fans:
        sensors["Fan"][f"{fan.identity}@{chassis.identity}"] = _sensor(fan, _FAN_FIELDS)
    for temp in thermal.temperatures:
        sensors["Temperature"][f"{temp.identity}@{chassis.identity}"] = _sensor(
            temp, _TEMPERATURE_FIELDS
        )


def _power(chassis: Any, sensors: dict[str, dict[str, dict[str, Any]]]) -> None:
    power = chassis.power
    for supply in power.power_supplies:
        name = f"{supply.identity}:{power.identity}@{chassis.identity}"
        sensors["Power"][name] = _sensor(supply, _POWER_FIELDS)


def _drives(system: Any, sensors: dict[str, dict[str, dict[str, Any]]]) -> None:
    storage = system.simple_storage
    for member in storage.get_members():
        for drive in member.devices:
            name = f"{drive.identity}:{storage.identity}@{system.identity}"
            sensors["Drive"][name] = _sensor(drive, _DRIVE_FIELDS)


def read_sensors(task: Task) -> dict[str, dict[str, dict[str, Any]]]:
    """The node's sensors, by type; raises the driver's typed errors only for the system."""
    info = _info(task)
    sensors: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in SENSOR_TYPES}
    with _bmc(task, info, "read the system"):
        system = _get_system(info)
        chassis_list = list(system.chassis)
    errors = _sushy().exceptions.SushyError
    reads = [(chassis, part) for chassis in chassis_list for part in (_thermal, _power)]
    for chassis, read in reads:
        try:
            read(chassis, sensors)
        except (errors, AttributeError) as exc:  # sushy's plain AttributeError: no such link
            LOG.debug("Node %s: no %s sensors on chassis %s: %s", task.node.uuid,
                      read.__name__.strip("_"), chassis.identity, exc)  # fmt: skip
    try:
        _drives(system, sensors)
    except (errors, AttributeError) as exc:
        LOG.debug("Node %s: no drive sensors: %s", task.node.uuid, exc)
    return sensors
