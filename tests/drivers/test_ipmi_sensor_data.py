"""Hardware sensors over IPMI: OpenIPMI's ``ipmi_sim`` with sensors in its SDR, read by pyghmi.

The simulator is given full sensor records and their readings; a sensor
pass reads the SDR repository and each sensor through the ``ipmi`` driver
(pyghmi), and the test finds the simulator's values in Ironic's IPMI shape,
in ironic-prometheus-exporter's gauges and in the notification.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from helpers import metric_samples

import ironic_fsm
from ironic_fsm import Config, states
from ironic_fsm.metrics import Metrics
from ironic_fsm.notifications import Notification, Notifier
from ironic_fsm.testing.ipmi_sim import SimBMC, start_sim

SENSORS = [
    {"number": 1, "name": "CPU Temp", "kind": "temperature", "value": 52},
    {"number": 2, "name": "Fan 1", "kind": "fan", "value": 4200},
    {"number": 3, "name": "PSU1 Power", "kind": "power", "value": 310},
    {"number": 4, "name": "Inlet Temp", "kind": "temperature", "value": 23},
]


def test_a_pass_reads_ipmi_sims_sdr_sensors_into_gauges_and_notifications(
    tmp_path: Path,
) -> None:
    with contextlib.ExitStack() as stack:
        sim = start_sim(tmp_path, sensors=SENSORS)
        stack.callback(sim.stop)
        check_a_pass(sim)


def check_a_pass(sim: SimBMC) -> None:
    conductor = ironic_fsm.Conductor(config=Config(send_sensor_data_workers=2))
    metrics = Metrics(conductor)
    told: list[Notification] = []
    notifier = Notifier(conductor, [told.append])
    info = {"ipmi_address": "127.0.0.1", "ipmi_port": sim.port, "ipmi_username": sim.user,
            "ipmi_password": sim.password, "ipmi_timeout": 20}  # fmt: skip
    node = conductor.create_node(name="ipmi-1", driver="ipmi", driver_info=info,
                                 provision_state=states.ACTIVE)  # fmt: skip
    try:
        report = conductor.send_sensor_data()
        assert notifier.flush(60)
    finally:
        notifier.stop()

    assert report.failed == ()
    (reading,) = report.readings
    sensors = reading.sensors
    assert sensors["Temperature"]["CPU Temp (0x1)"]["Sensor Reading"].startswith("52 ")
    assert sensors["Temperature"]["CPU Temp (0x1)"]["Sensor Reading"].endswith("degrees C")
    assert sensors["Temperature"]["Inlet Temp (0x4)"]["Sensor Reading"].startswith("23 ")
    assert sensors["Fan"]["Fan 1 (0x2)"]["Sensor Reading"].startswith("4200 ")
    assert sensors["Power Supply"]["PSU1 Power (0x3)"]["Sensor Reading"].startswith("310 ")
    assert {s["Status"] for kind in sensors.values() for s in kind.values()} == {"ok"}

    samples = metric_samples(metrics)
    cpu = {"node_name": "ipmi-1", "entity_id": "Processor", "sensor_id": "CPU Temp (0x1)"}
    assert samples[("baremetal_cpu_temp_celsius", frozenset(cpu.items()))] == 52
    inlet = {**cpu, "sensor_id": "Inlet Temp (0x4)"}
    assert samples[("baremetal_inlet_temp_celsius", frozenset(inlet.items()))] == 23
    fan = {"node_name": "ipmi-1", "entity_id": "Fan/cooling device", "sensor_id": "Fan 1 (0x2)"}
    assert samples[("baremetal_fan_1_rpm", frozenset(fan.items()))] == 4200
    assert not any(node.uuid in dict(labels).values() for _, labels in samples)

    (note,) = [n for n in told if n.event_type == "hardware.ipmi.metrics.update"]
    assert note.payload["node_uuid"] == node.uuid
    assert note.payload["payload"]["Fan"]["Fan 1 (0x2)"]["Sensor Reading"].startswith("4200 ")
