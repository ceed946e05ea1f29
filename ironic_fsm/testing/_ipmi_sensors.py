"""Sensors for ``ipmi_sim``: full sensor records in its SDR repository, and their readings.

``start_sim(sensors=...)`` gives the simulator threshold sensors, each one
a type 01h Full Sensor Record (IPMI 2.0, section 43.1) added with
``main_sdr_add`` and a sensor with its raw reading (``sensor_add``,
``sensor_set_value``). A sensor is given as::

    {"number": 1, "name": "CPU Temp", "kind": "temperature", "value": 52}

``kind`` picks the sensor type, the entity and the unit (``temperature``:
degrees C on the processor; ``fan``: RPM on a fan device; ``voltage``;
``power``: watts on a power supply). The value is linear in the raw byte:
``value = m * raw`` with ``m`` chosen so that it fits (a fan's RPM in
steps of 50), so a value must be a multiple of its kind's ``m``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["KINDS", "emulator_commands"]

#: kind -> (sensor type, entity id, base unit, m)
KINDS: Final[Mapping[str, tuple[int, int, int, int]]] = {
    "temperature": (0x01, 0x03, 1, 1),  # Temperature, Processor, degrees C
    "voltage": (0x02, 0x07, 4, 1),  # Voltage, System Board, Volts
    "fan": (0x04, 0x1D, 18, 50),  # Fan, Fan Device, RPM
    "power": (0x08, 0x0A, 6, 10),  # Power Supply, Power Supply, Watts
}
_OWNER: Final = 0x20


def _full_record(record_id: int, sensor: Mapping[str, Any]) -> bytes:
    """The SDR bytes of one threshold sensor."""
    sensor_type, entity, unit, m = KINDS[sensor["kind"]]
    name = str(sensor["name"]).encode("ascii")[:16]
    body = bytes([
        _OWNER, 0x00, int(sensor["number"]),  # key: owner, LUN, sensor number
        entity, 0x01,  # entity id, instance
        0x7F, 0x68,  # initialisation: scanning and events on; capabilities: readable thresholds
        sensor_type, 0x01,  # sensor type; event/reading type: threshold
        0x00, 0x00, 0x00, 0x00, 0x3F, 0x3F,  # event masks; readable/settable thresholds
        0x00, unit, 0x00,  # unsigned, no rate; base unit; no modifier
        0x00, m & 0xFF, (m >> 8) << 6, 0x00, 0x00, 0x00, 0x00,  # linear, M, B 0, accuracy, exps
        0x00, 0x00, 0x00, 0x00, 0xFF, 0x00,  # flags, nominal, normal max/min, sensor max/min
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  # thresholds (none)
        0x00, 0x00, 0x00, 0x00, 0x00,  # hysteresis, reserved, OEM
        0xC0 | len(name),  # ID string: 8-bit ASCII
    ]) + name  # fmt: skip
    return bytes([record_id & 0xFF, record_id >> 8, 0x51, 0x01, len(body)]) + body


def emulator_commands(sensors: Iterable[Mapping[str, Any]]) -> str:
    """``ipmi_sim`` emulator commands adding ``sensors`` to the BMC at 0x20 (before
    ``mc_enable``)."""
    lines = []
    for record_id, sensor in enumerate(sensors, start=1):
        sensor_type, _, _, m = KINDS[sensor["kind"]]
        raw, rest = divmod(int(sensor["value"]), m)
        if rest or not 0 <= raw <= 0xFF:
            raise ValueError(f"{sensor['name']}: {sensor['value']} is not a multiple of {m} "
                             "in one byte")  # fmt: skip
        data = " ".join(f"0x{byte:02x}" for byte in _full_record(record_id, sensor))
        number = int(sensor["number"])
        lines += [
            f"main_sdr_add 0x{_OWNER:02x} {data}",
            f"sensor_add 0x{_OWNER:02x} 0 {number} 0x{sensor_type:02x} 0x01",
            f"sensor_set_value 0x{_OWNER:02x} 0 {number} {raw} 0",
        ]
    return "".join(f"{line}\n" for line in lines)
