"""Hardware sensors over the wire: the Redfish emulator's Thermal and Power, read by a pass.

The emulator is given its readings; a sensor pass (Ironic's send_sensor_data)
reads them through sushy, and the test finds the same numbers in the
driver's answer, in the Prometheus gauges (parsed by prometheus_client's own
parser), in the listeners' events and in the notifications. A dead BMC is
counted and skipped without holding up the others.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import metric_samples

import ironic_fsm
from ironic_fsm import Config, states
from ironic_fsm.conductor.sensors import SensorEvent
from ironic_fsm.metrics import Metrics
from ironic_fsm.notifications import Notification, Notifier
from ironic_fsm.testing.redfish_emulator import Emulator, start_emulator

SENSORS = {
    "temperatures": [
        {"name": "CPU Temp", "context": "CPU", "celsius": 52.5, "number": 1},
        {"name": "Inlet Temp", "context": "Intake", "celsius": 23, "number": 2},
    ],
    "fans": [{"name": "Fan 1", "rpm": 4200}, {"name": "Fan 2", "rpm": 0, "health": "Critical"}],
    "power_supplies": [{"name": "PSU 1", "watts": 310}, {"name": "PSU 2", "watts": 0,
                                                          "health": "Warning"}],
}  # fmt: skip


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    peer = start_emulator(tmp_path, sensors=SENSORS)
    try:
        yield peer
    finally:
        peer.stop()


def test_a_pass_reads_the_emulators_sensors_into_gauges_events_and_notifications(
    emulator: Emulator,
) -> None:
    conductor = ironic_fsm.Conductor(config=Config(send_sensor_data_workers=4))
    metrics = Metrics(conductor)
    events: list[Any] = []
    conductor.add_listener(events.append)
    told: list[Notification] = []
    notifier = Notifier(conductor, [told.append])
    info = emulator.driver_info()
    good = conductor.create_node(name="rack1-node1", driver="redfish", driver_info=info,
                                 provision_state=states.ACTIVE, instance_uuid=None)  # fmt: skip
    dead = conductor.create_node(
        name="rack1-node2", driver="redfish", provision_state=states.ACTIVE,
        driver_info={**info, "redfish_address": "http://127.0.0.1:1"},
    )  # fmt: skip
    idle = conductor.create_node(name="spare", driver="redfish", driver_info=info,
                                 provision_state=states.AVAILABLE)  # fmt: skip

    report = conductor.send_sensor_data()

    assert [r.node for r in report.readings] == [good.uuid]  # not deployed: not read
    assert [(uuid, driver) for uuid, driver, _ in report.failed] == [(dead.uuid, "redfish")]
    assert "127.0.0.1:1" in report.failed[0][2]
    sensors = report.readings[0].sensors
    temps = {s["physical_context"]: s["reading_celsius"] for s in sensors["Temperature"].values()}
    assert temps == {"CPU": 52.5, "Intake": 23}
    assert sorted(s["reading"] for s in sensors["Fan"].values()) == [0, 4200]
    watts = {s["last_power_output_watts"]: s["health"] for s in sensors["Power"].values()}
    assert watts == {310: "OK", 0: "Warning"}

    samples = metric_samples(metrics)
    cpu = {"node_name": "rack1-node1", "entity_id": "CPU", "sensor_id": "1"}
    assert samples[("baremetal_temp_cpu_celsius", frozenset(cpu.items()))] == 52.5
    intake = {"node_name": "rack1-node1", "entity_id": "Intake", "sensor_id": "2"}
    assert samples[("baremetal_temp_intake_celsius", frozenset(intake.items()))] == 23
    power = {labels["sensor_id"]: v for (name, labels_set), v in samples.items()
             if name == "baremetal_power_status" for labels in [dict(labels_set)]}  # fmt: skip
    assert sorted(power.values()) == [0.0, 1.0]
    fans = sorted(v for (name, _), v in samples.items() if name == "baremetal_fan_status")
    assert fans == [0.0, 1.0]
    reads = {"driver": "redfish"}
    assert (
        samples[("ironic_fsm_sensor_reads_total", frozenset({**reads, "result": "ok"}.items()))]
        == 1
    )
    assert samples[("ironic_fsm_sensor_reads_total",
                    frozenset({**reads, "result": "failed"}.items()))] == 1  # fmt: skip
    every_label = {v for (_, labels) in samples for _, v in labels}
    assert not every_label & {good.uuid, dead.uuid, idle.uuid}

    sensor_events = [e for e in events if isinstance(e, SensorEvent)]
    assert [(e.name, e.node, e.node_name) for e in sensor_events] == [
        ("hardware.redfish.metrics.update", good.uuid, "rack1-node1")
    ]
    assert notifier.flush(60)
    notes = [n for n in told if n.event_type == "hardware.redfish.metrics.update"]
    assert len(notes) == 1
    payload = notes[0].payload
    assert payload["node_uuid"] == good.uuid
    assert payload["node_name"] == "rack1-node1"
    assert payload["event_type"] == "hardware.redfish.metrics"
    readings = payload["payload"]["Temperature"].values()
    assert sorted(s["reading_celsius"] for s in readings) == [23, 52.5]
    notifier.stop()

    # The BMC's readings change; the next pass replaces the gauges.
    emulator.set_sensors({"temperatures": [{"name": "CPU Temp", "context": "CPU",
                                            "celsius": 71, "number": 1}]})  # fmt: skip
    conductor.update_node(dead.uuid, maintenance=True)  # in maintenance: not read
    report = conductor.send_sensor_data()
    assert [r.node for r in report.readings] == [good.uuid]
    assert report.failed == ()
    samples = metric_samples(metrics)
    assert samples[("baremetal_temp_cpu_celsius", frozenset(cpu.items()))] == 71
    assert ("baremetal_temp_intake_celsius", frozenset(intake.items())) not in samples
    assert samples[("ironic_fsm_sensor_passes_total", frozenset())] == 2


def test_undeployed_nodes_are_read_when_asked_and_nameless_ones_stay_out_of_the_gauges(
    emulator: Emulator,
) -> None:
    conductor = ironic_fsm.Conductor(config=Config(send_sensor_data_for_undeployed_nodes=True))
    metrics = Metrics(conductor)
    nameless = conductor.create_node(driver="redfish", driver_info=emulator.driver_info(),
                                     provision_state=states.MANAGEABLE)  # fmt: skip
    report = conductor.send_sensor_data()
    assert [r.node for r in report.readings] == [nameless.uuid]
    samples = metric_samples(metrics)
    assert not [name for name, _ in samples if name.startswith("baremetal_temp_")]
    assert samples[("ironic_fsm_sensor_reads_total",
                    frozenset({"driver": "redfish", "result": "ok"}.items()))] == 1  # fmt: skip
