"""A sensor pass over many emulated Redfish systems, set beside the emulator's own cost.

Issue 23: "a sensor pass over 1,000 emulated Redfish systems with 1, 8 and
32 workers, as a ratio to the emulator's own per-request cost". Emulator
processes (:mod:`ironic_fsm.testing.redfish_emulator`, sushy-tools with the
project's fake driver) serve 1,000 systems, 100 each (40 systems, one
emulator, with ``--quick``): sushy-tools answers a system or chassis GET in
a time that grows with the systems it holds (their links list them all),
~20 ms at 100, so that 1,000 in one process would measure its lists. A
conductor on a MemoryStore holds one ``active`` ``redfish`` node per system
and runs :meth:`~ironic_fsm.conductor.Conductor.send_sensor_data` with
``send_sensor_data_workers`` 1, 8 and 32, each node read through sushy as
in service (its own client: the Redfish root, a session attempt, the
system, its chassis, ``Thermal``; what one node's read asks is counted
from the emulator's request log).

The emulator's own cost is plain HTTP: the same GETs (root, system,
chassis, ``Thermal``) of the first 25 systems of each emulator, one after
the other on one keep-alive ``requests`` session, timed per system. The
ratio is the pass's wall time per node over that cost: 1 means the pass
cost what the emulator takes to answer those GETs, above 1 the client's
share (sushy, the driver, its refused session attempt, a connection per
node), below 1 reads overlapping. The machine's cores bound what more workers buy:
the emulators and the conductor share them.

Run alone: ``python benchmarks/bench_sensors.py [--quick]``
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

from _harness import Section, SummaryRow, Table, run_alone

SYSTEMS = 1_000
#: Systems one emulator serves: sushy-tools answers a system or chassis GET in time that
#: grows with the systems it holds (its links list them all), ~20 ms at 100.
PER_EMULATOR = 100
QUICK_SYSTEMS = 40
WORKERS = (1, 8, 32)
#: Systems of each emulator whose resources are read again by plain GETs.
SAMPLE = 25
#: One worker: the pass per node at most this many times the emulator's own cost.
GOAL_ONE_WORKER = 3.0
#: More workers: the pass at most this share of the one-worker pass.
GOAL_PARALLEL = 0.9

_Target = tuple[Any, str]  # an emulator, one of its systems


def _emulator_cost(peers: list[tuple[Any, list[str]]], chassis: str) -> tuple[float, int]:
    """Seconds of plain GETs of what a read asks (the root, the system, its chassis and
    Thermal) per system, over the first :data:`SAMPLE` systems of each emulator, and the
    GETs made."""
    import requests

    elapsed, count, read = 0.0, 0, 0
    for emulator, systems in peers:
        session = requests.Session()
        session.auth = (emulator.user, emulator.password)
        shared = ["/redfish/v1/", f"/redfish/v1/Chassis/{chassis}",
                  f"/redfish/v1/Chassis/{chassis}/Thermal"]  # fmt: skip
        try:
            for path in shared:  # warm-up: the connection, the emulator's first answers
                session.get(emulator.url + path, timeout=60).raise_for_status()
            started = time.perf_counter()
            for system in systems[:SAMPLE]:
                read += 1
                for path in (shared[0], f"/redfish/v1/Systems/{system}", *shared[1:]):
                    session.get(emulator.url + path, timeout=60).raise_for_status()
                    count += 1
            elapsed += time.perf_counter() - started
        finally:
            session.close()
    return elapsed / read, count


def _requests_per_read(emulator: Any, system: str) -> tuple[int, str]:
    """What one node's read asks the emulator: the count, and the system's chassis."""
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
    chassis = {entry["path"].split("/")[4] for entry in log
               if entry["path"].startswith("/redfish/v1/Chassis/")}  # fmt: skip
    assert len(chassis) == 1, chassis
    return len(log), chassis.pop()


def _pass(targets: list[_Target], workers: int) -> tuple[float, int]:
    """Wall seconds of one pass over every system with ``workers``, and the nodes read."""
    import ironic_fsm
    from ironic_fsm import Config, states

    conductor = ironic_fsm.Conductor(
        config=Config(send_sensor_data_workers=workers, send_sensor_data_wait_timeout=3600)
    )
    for index, (emulator, system) in enumerate(targets):
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
    """Start emulators for ``count`` systems (:data:`PER_EMULATOR` each); time plain GETs
    of them, then a pass with each number of ``workers``."""
    from ironic_fsm.testing.redfish_emulator import start_emulator

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        started = time.perf_counter()
        peers: list[tuple[Any, list[str]]] = []
        for first in range(0, count, PER_EMULATOR):
            size = min(PER_EMULATOR, count - first)
            emulator = start_emulator(Path(tmp), extra_systems=size - 1, drives=None)
            stack.callback(emulator.stop)
            peers.append((emulator, sorted(emulator.state()["systems"])))
        boot = time.perf_counter() - started
        targets = [(emulator, system) for emulator, systems in peers for system in systems]
        assert len(targets) == count, len(targets)
        per_read, chassis = _requests_per_read(*targets[0])
        per_node, gets = _emulator_cost(peers, chassis)
        passes = {w: _pass(targets, w) for w in workers}
    return {
        "boot": boot, "per_read": per_read, "per_node": per_node, "gets": gets,
        "passes": passes, "systems": count, "emulators": len(peers),
    }  # fmt: skip


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    found = measure(QUICK_SYSTEMS if quick else SYSTEMS, WORKERS)
    count, per_node, per_read = found["systems"], found["per_node"], found["per_read"]
    table = Table(
        f"A sensor pass over {count:,} emulated Redfish systems "
        f"({found['emulators']} emulator process(es) of up to {PER_EMULATOR})",
        ["workers", "pass s", "nodes/s", "ms per node", "/ emulator's own", "/ 1 worker"],
    )
    one = found["passes"][WORKERS[0]][0]
    ratios: dict[int, float] = {}
    for workers, (seconds, read) in found["passes"].items():
        ratios[workers] = seconds / count / per_node
        table.add(
            str(workers), f"{seconds:.2f}", f"{read / seconds:.0f}",
            f"{seconds / count * 1e3:.1f}", f"{ratios[workers]:.2f}", f"{seconds / one:.2f}",
        )  # fmt: skip
    table.notes += [
        f"one read asks the emulator {per_read} requests (the Redfish root, a session attempt "
        "the emulator refuses, the system, its chassis, Thermal)",
        f"the emulator's own cost: {per_node * 1e3:.1f} ms a system for plain GETs of the "
        f"root, the system, its chassis and Thermal ({per_node / 4 * 1e3:.1f} ms a GET; "
        f"{found['gets']:,} GETs of {SAMPLE} systems an emulator, one after the other, one "
        "keep-alive session an emulator)",
        "/ emulator's own: the pass's time per node over that cost (1: the pass cost what the "
        "emulator takes to answer those GETs; above: the client's share, sushy's session "
        "attempt included; below: reads overlapping)",
        f"the emulators started in {found['boot']:.1f} s; the machine's cores are shared by "
        "the emulators and the conductor",
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
