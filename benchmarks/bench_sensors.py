"""A sensor pass over many emulated Redfish systems, set beside the emulator's own cost.

Issue 23: "a sensor pass over 1,000 emulated Redfish systems with 1, 8 and
32 workers, as a ratio to the emulator's own per-request cost". One
emulator process (:mod:`ironic_fsm.testing.redfish_emulator`, sushy-tools
with the project's fake driver) serves 1,000 systems (100 with
``--quick``); a conductor on a MemoryStore holds one ``active`` ``redfish``
node per system and runs :meth:`~ironic_fsm.conductor.Conductor.send_sensor_data`
with ``send_sensor_data_workers`` 1, 8 and 32, each node read through sushy
as in service (its own client: the Redfish root, a session attempt, the
system, its chassis, ``Thermal``; what one node's read asks is counted
from the emulator's request log).

The emulator's own cost is plain HTTP: the same GETs (root, system,
chassis, ``Thermal``) of every system, one after the other on one
keep-alive ``requests`` session, timed per request. The ratio is the pass's
wall time per request it made over that per-request cost: 1 means the
pass cost what the emulator takes to answer, above 1 the client's share
(sushy, the driver, a connection per node), below 1 workers overlapping
requests. The machine's cores bound what more workers buy: the emulator
is one Python process.

Run alone: ``python benchmarks/bench_sensors.py [--quick]``
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from _harness import Section, SummaryRow, Table, run_alone

SYSTEMS = 1_000
QUICK_SYSTEMS = 100
WORKERS = (1, 8, 32)
#: One worker: the pass per request at most this many times the emulator's own cost.
GOAL_ONE_WORKER = 3.0
#: More workers: the pass at most this share of the one-worker pass.
GOAL_PARALLEL = 0.9


def _per_request(emulator: Any, systems: list[str], chassis: list[str]) -> tuple[float, int]:
    """Seconds per plain GET of what a read asks, over every system, and the GETs made."""
    import requests

    paths = ["/redfish/v1/"]
    paths += [f"/redfish/v1/Systems/{system}" for system in systems]
    paths += [f"/redfish/v1/Chassis/{c}" for c in chassis] + [
        f"/redfish/v1/Chassis/{c}/Thermal" for c in chassis
    ]
    session = requests.Session()
    session.auth = (emulator.user, emulator.password)
    try:
        for path in paths[:20]:  # warm-up: the connection, the emulator's first answers
            session.get(emulator.url + path, timeout=30).raise_for_status()
        wanted = [paths[0], *paths[1 : len(systems) + 1]]
        # Each system's own GETs, then its chassis and Thermal, as each read asks them.
        per_system = [(p, paths[-2], paths[-1]) for p in wanted[1:]] if chassis else []
        started = time.perf_counter()
        count = 0
        for system_path, chassis_path, thermal_path in per_system:
            for path in (paths[0], system_path, chassis_path, thermal_path):
                session.get(emulator.url + path, timeout=30).raise_for_status()
                count += 1
        return (time.perf_counter() - started) / count, count
    finally:
        session.close()


def _requests_per_read(emulator: Any, system: str) -> tuple[int, list[str]]:
    """What one node's read asks the emulator: the count, and its chassis."""
    import ironic_fsm
    from ironic_fsm import Config, states

    conductor = ironic_fsm.Conductor(config=Config(send_sensor_data_workers=1))
    info = emulator.driver_info(redfish_system_id=f"/redfish/v1/Systems/{system}")
    conductor.create_node(name="probe", driver="redfish", driver_info=info,
                          provision_state=states.ACTIVE)  # fmt: skip
    emulator.clear_requests_log()
    report = conductor.send_sensor_data()
    assert len(report.readings) == 1, report.failed
    log = emulator.requests_log()
    chassis = sorted({
        entry["path"].split("/")[4] for entry in log
        if entry["path"].startswith("/redfish/v1/Chassis/")
    })  # fmt: skip
    return len(log), chassis


def _pass(emulator: Any, systems: list[str], workers: int) -> tuple[float, int]:
    """Wall seconds of one pass over every system with ``workers``, and the nodes read."""
    import ironic_fsm
    from ironic_fsm import Config, states

    conductor = ironic_fsm.Conductor(
        config=Config(send_sensor_data_workers=workers, send_sensor_data_wait_timeout=3600)
    )
    for index, system in enumerate(systems):
        info = emulator.driver_info(redfish_system_id=f"/redfish/v1/Systems/{system}")
        conductor.create_node(name=f"sensors-{index:05d}", driver="redfish", driver_info=info,
                              provision_state=states.ACTIVE)  # fmt: skip
    started = time.perf_counter()
    report = conductor.send_sensor_data()
    seconds = time.perf_counter() - started
    assert not report.failed, report.failed[:3]
    assert all(r.sensors["Temperature"] for r in report.readings)
    return seconds, len(report.readings)


def measure(count: int, workers: tuple[int, ...]) -> dict[str, Any]:
    """Start one emulator of ``count`` systems; time the emulator alone, then each pass."""
    from ironic_fsm.testing.redfish_emulator import start_emulator

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        emulator = start_emulator(Path(tmp), extra_systems=count - 1, drives=None)
        try:
            boot = time.perf_counter() - started
            systems = sorted(emulator.state()["systems"])
            assert len(systems) == count, len(systems)
            per_read, chassis = _requests_per_read(emulator, systems[0])
            per_request, gets = _per_request(emulator, systems, chassis)
            passes = {w: _pass(emulator, systems, w) for w in workers}
        finally:
            emulator.stop()
    return {
        "boot": boot, "per_read": per_read, "per_request": per_request, "gets": gets,
        "passes": passes, "systems": count,
    }  # fmt: skip


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    found = measure(QUICK_SYSTEMS if quick else SYSTEMS, WORKERS)
    count, per_request, per_read = found["systems"], found["per_request"], found["per_read"]
    asked = count * per_read
    table = Table(
        f"A sensor pass over {count:,} emulated Redfish systems (one emulator process)",
        ["workers", "pass s", "nodes/s", "ms per request", "/ emulator's own", "/ 1 worker"],
    )
    one = found["passes"][WORKERS[0]][0]
    ratios: dict[int, float] = {}
    for workers, (seconds, read) in found["passes"].items():
        ratios[workers] = seconds / asked / per_request
        table.add(
            str(workers), f"{seconds:.2f}", f"{read / seconds:.0f}",
            f"{seconds / asked * 1e3:.2f}", f"{ratios[workers]:.2f}", f"{seconds / one:.2f}",
        )  # fmt: skip
    table.notes += [
        f"one read asks the emulator {per_read} requests (the Redfish root, a session attempt "
        f"the emulator refuses, the system, its chassis, Thermal): {asked:,} a pass",
        f"the emulator's own cost: {per_request * 1e3:.2f} ms per plain GET of the same "
        f"resources ({found['gets']:,} GETs, one after the other, one keep-alive session)",
        "/ emulator's own: the pass's time per request over that cost (1: the pass cost what "
        "the emulator takes; above: the client's share; below: requests overlapping)",
        f"the emulator started with {count:,} systems in {found['boot']:.1f} s; 2 cores shared",
    ]
    section = Section("Hardware sensors", [table])
    section.summary.append(
        SummaryRow(
            f"sensor pass over {count:,} Redfish systems, 1 worker / emulator's own cost",
            f"{ratios[1]:.2f}",
            f"<= {GOAL_ONE_WORKER:g}",
            ratios[1] <= GOAL_ONE_WORKER,
        )
    )
    for workers in WORKERS[1:]:
        share = found["passes"][workers][0] / one
        section.summary.append(
            SummaryRow(
                f"sensor pass, {workers} workers / 1 worker (/ emulator's own: "
                f"{ratios[workers]:.2f})",
                f"{share:.2f}",
                f"<= {GOAL_PARALLEL:g}",
                share <= GOAL_PARALLEL,
            )
        )
    section.seconds = time.perf_counter() - started
    return section


def main() -> None:
    run_alone(run, __doc__)


if __name__ == "__main__":
    main()
