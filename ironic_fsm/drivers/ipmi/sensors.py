"""``ipmi`` sensors: the BMC's SDR repository and each sensor's reading, through pyghmi.

The readings come back in Ironic's shape for IPMI (what ipmitool's
``sdr -v`` gives Ironic, and ironic-prometheus-exporter parses): by sensor
type (``Temperature``, ``Fan``, ``Power Supply``...), then by
``'<name> (0x<number>)'``, each sensor a dict of ipmitool's field names
(``Sensor ID``, ``Entity ID``, ``Sensor Type (Threshold)``, ``Sensor
Reading`` such as ``'52 (+/- 0.5) degrees C'``, ``Status``: ``ok``,
``nc``, ``cr``, ``nr`` or ``ns``). A sensor the BMC says does not exist
(completion code 0xCB) is left out, as pyghmi does.
"""

from __future__ import annotations

from typing import Any, Final

from ironic_fsm.drivers.ipmi.driver_info import parse_driver_info
from ironic_fsm.drivers.ipmi.session import _Connection
from ironic_fsm.task import Task

__all__ = ["read_sensors"]

#: pyghmi's units -> ipmitool's words.
_UNITS: Final = {"°C": "degrees C", "°F": "degrees F", "W": "Watts", "V": "Volts", "A": "Amps"}
#: pyghmi's health bits -> ipmitool's status: ok, non-critical, critical, non-recoverable.
_STATUS: Final = ((4, "nr"), (2, "cr"), (1, "nc"))
#: Get Sensor Reading (netfn sensor/event, command 0x2D), and "sensor not present".
_GET_READING: Final = {"netfn": 0x04, "command": 0x2D}
_NOT_PRESENT: Final = 0xCB


def _reading(value: float | None, imprecision: float | None, units: str) -> str:
    if value is None:
        return "No Reading"
    shown = _UNITS.get(units, units)
    return f"{value:g} (+/- {imprecision or 0:g}) {shown}".rstrip()


def _status(reading: Any) -> str:
    if reading.unavailable:
        return "ns"
    for bit, status in _STATUS:
        if reading.health & bit:
            return status
    return "ok"


def _read_all(command: Any) -> list[tuple[Any, Any]]:
    """Each SDR entry with its reading: pyghmi's own loop (``get_sensor_data``), kept
    here because its readings do not carry the sensor's number and entity."""
    command.init_sdr()
    sdr = command._sdr  # pyghmi's parsed repository: the numbers and entities live there
    found = []
    for number in sdr.get_sensor_numbers():
        entry = sdr.sensors[number]
        answer = command.raw_command(rslun=entry.sensor_lun, data=(entry.sensor_number,),
                                     **_GET_READING)  # fmt: skip
        if "error" in answer:
            if answer.get("code") == _NOT_PRESENT:
                continue
            raise RuntimeError(f"Get Sensor Reading {entry.sensor_number}: {answer['error']}")
        found.append((entry, entry.decode_sensor_reading(command, answer["data"])))
    return found


def read_sensors(task: Task) -> dict[str, dict[str, dict[str, Any]]]:
    """The node's threshold and discrete sensors, by type, within the driver's deadline."""
    node = task.node
    info = parse_driver_info(node)
    with _Connection(node, info) as bmc:
        pairs = bmc.call("read the sensors", _read_all)
    sensors: dict[str, dict[str, dict[str, Any]]] = {}
    for entry, reading in pairs:
        sensor_id = f"{reading.name} (0x{entry.sensor_number:x})"
        sensors.setdefault(str(reading.type), {})[sensor_id] = {
            "Sensor ID": sensor_id,
            "Entity ID": f"{entry.entity}",
            "Sensor Type (Threshold)": f"{reading.type}",
            "Sensor Reading": _reading(reading.value, reading.imprecision, reading.units),
            "Status": _status(reading),
        }
    return sensors
