"""Sensors the emulator's chassis reports: ``Thermal`` and ``Power`` with the readings a test gave.

Stock sushy-tools serves a fixed ``Thermal`` (a CPU at 41 °C, two fans) and
no ``Power``. With ``IRONIC_FSM_SENSORS`` in the emulator's config (what
``start_emulator(sensors=...)`` writes), or after ``POST /_peer/sensors``,
the first chassis serves these instead, and links its ``Power``::

    {"temperatures": [{"name": "CPU Temp", "context": "CPU", "celsius": 52.5,
                       "health": "OK"}],
     "fans": [{"name": "Fan 1", "context": "Backplane", "rpm": 4200, "health": "OK"}],
     "power_supplies": [{"name": "PSU 1", "watts": 310, "health": "Critical"}]}

Each sensor's ``MemberId`` is its index in its list, as in the DMTF mockups.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["SENSORS_KEY", "SensorTable", "install_sensors"]

#: The emulator config key holding the sensors to serve.
SENSORS_KEY = "IRONIC_FSM_SENSORS"


def _status(sensor: Mapping[str, Any]) -> dict[str, str]:
    return {"State": str(sensor.get("state", "Enabled")), "Health": str(sensor.get("health", "OK"))}


def _members(
    base: str,
    kind: str,
    listed: Iterable[Mapping[str, Any]],
    own: Callable[[int, Mapping[str, Any]], dict[str, Any]],
) -> list[dict[str, Any]]:
    """One array of a sensor resource: each member's id, name and status, and its own fields."""
    return [
        {"@odata.id": f"{base}#/{kind}/{index}", "MemberId": str(index), "Name": sensor["name"],
         "Status": _status(sensor), **own(index, sensor)}
        for index, sensor in enumerate(listed)
    ]  # fmt: skip


def _temperature(index: int, sensor: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "SensorNumber": int(sensor.get("number", index + 1)), "ReadingCelsius": sensor["celsius"],
        "PhysicalContext": sensor.get("context", "SystemBoard"), "MinReadingRangeTemp": 0,
        "MaxReadingRangeTemp": 120,
    }  # fmt: skip


def _fan(index: int, sensor: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "Reading": sensor["rpm"], "ReadingUnits": "RPM", "MinReadingRange": 0,
        "PhysicalContext": sensor.get("context", "Backplane"), "MaxReadingRange": 20000,
    }  # fmt: skip


def _supply(index: int, sensor: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "PowerCapacityWatts": sensor.get("capacity", 800), "LastPowerOutputWatts": sensor["watts"],
        "LineInputVoltage": sensor.get("volts", 230),
        "SerialNumber": sensor.get("serial", f"PSU{index:04d}"),
    }  # fmt: skip


def thermal(chassis: str, sensors: Mapping[str, Any]) -> dict[str, Any]:
    """A ``Thermal.v1_3_0`` document of the given temperatures and fans."""
    base = f"/redfish/v1/Chassis/{chassis}/Thermal"
    return {
        "@odata.type": "#Thermal.v1_3_0.Thermal", "@odata.id": base, "Id": "Thermal",
        "Name": "Thermal",
        "Temperatures": _members(base, "Temperatures", sensors.get("temperatures", ()),
                                 _temperature),
        "Fans": _members(base, "Fans", sensors.get("fans", ()), _fan),
    }  # fmt: skip


def power(chassis: str, sensors: Mapping[str, Any]) -> dict[str, Any]:
    """A ``Power.v1_5_0`` document of the given power supplies."""
    base = f"/redfish/v1/Chassis/{chassis}/Power"
    return {
        "@odata.type": "#Power.v1_5_0.Power", "@odata.id": base, "Id": "Power", "Name": "Power",
        "PowerSupplies": _members(base, "PowerSupplies", sensors.get("power_supplies", ()),
                                  _supply),
    }  # fmt: skip


class SensorTable:
    """The sensors served now (``None``: the stock ones); set at start or by ``/_peer/sensors``."""

    def __init__(self, sensors: Mapping[str, Any] | None) -> None:
        self._lock = threading.Lock()
        self._sensors = dict(sensors) if sensors else None

    def get(self) -> dict[str, Any] | None:
        with self._lock:
            return None if self._sensors is None else dict(self._sensors)

    def set(self, sensors: Mapping[str, Any]) -> None:
        with self._lock:
            self._sensors = dict(sensors)


def _json(doc: Any) -> Any:
    import flask  # the emulator's child only: a test process never needs it

    return flask.Response(json.dumps(doc), status=200, content_type="application/json")


def install_sensors(app: Any) -> SensorTable:
    """Serve the table's sensors on the emulator's ``app`` (before it serves), behind its auth."""
    import flask

    table = SensorTable(app.config.get(SENSORS_KEY))
    stock_thermal = app.view_functions["thermal_resource"]
    stock_chassis = app.view_functions["chassis_resource"]

    def thermal_resource(identity: str) -> Any:
        sensors = table.get()
        if sensors is None:
            return stock_thermal(identity=identity)
        app.chassis.uuid(identity)  # an unknown chassis: the stock 404
        return _json(thermal(identity, sensors))

    def power_resource(identity: str) -> Any:
        sensors = table.get()
        app.chassis.uuid(identity)
        return _json(power(identity, sensors or {}))

    def chassis_resource(identity: str) -> Any:
        response = stock_chassis(identity=identity)
        if flask.request.method != "GET" or table.get() is None:
            return response
        doc = json.loads(response.get_data())
        doc["Power"] = {"@odata.id": f"/redfish/v1/Chassis/{identity}/Power"}
        response.set_data(json.dumps(doc))
        return response

    app.view_functions["thermal_resource"] = thermal_resource
    app.view_functions["chassis_resource"] = chassis_resource
    app.add_url_rule(
        "/redfish/v1/Chassis/<identity>/Power", "peer_power_resource", power_resource,
        methods=["GET"],
    )  # fmt: skip
    return table
