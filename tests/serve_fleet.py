"""A fleet of real ``serve`` processes for the service tests, and the operator that drives it.

:class:`ServeFleet` starts ``tests/serve_worker.py serve`` processes on one
database with short periods (heartbeat 0.5 s, dead after 3 s), signals and
kills them, and reads their logs. :func:`drive` plays the operator and the
ramdisk agent from the test process: it issues each node's next verb
through a hand-off conductor (the services do the work) until every node
is active, failed, or time is up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from procs import stop_processes
from serve_hardware import DEPLOY_STEPS, NAME, serve_test_hardware

import ironic_fsm
from ironic_fsm import states
from ironic_fsm.exceptions import InvalidStateRequested, NodeLocked, StoreUnavailable
from ironic_fsm.stores import SQLStore

HERE = Path(__file__).resolve().parent
WORKER = HERE / "serve_worker.py"
#: The service periods of these tests (Ironic's names).
CONFIG = {
    "heartbeat_interval": 0.5,
    "heartbeat_timeout": 3,
    "check_provision_state_interval": 0.2,
    "sync_power_state_interval": 0,
    "node_history_cleanup_interval": 0,
}
#: What the operator does next, by provision state.
_NEXT = {
    states.ENROLL: "manage",
    states.MANAGEABLE: "provide",
    states.AVAILABLE: "deploy",
}


class ServeFleet:
    """``serve`` processes on one database, stopped (SIGKILL if need be) on exit."""

    def __init__(
        self,
        url: str,
        tmp: Path,
        *,
        workers: int = 4,
        poll: float = 0.2,
        hosts: bool = False,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.url = url
        #: The services' Config: :data:`CONFIG` and these.
        self.config = {**CONFIG, **(config or {})}
        self.tmp = tmp
        self.workers = workers
        self.poll = poll
        #: Each process as a host of its own (``host-N``): a dead one is then known only
        #: by its heartbeat, as across machines, not by its process id.
        self.hosts = hosts
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, *extra: str) -> subprocess.Popen[bytes]:
        index = len(self.procs)
        config = dict(self.config, host=f"host-{index}") if self.hosts else self.config
        settings = self.tmp / f"serve-{index}.json"
        settings.write_text(json.dumps({"config": config}))
        err = open(self.tmp / f"serve-{index}.err", "wb")  # noqa: SIM115 - the process owns it
        proc = subprocess.Popen(
            [
                sys.executable, str(WORKER), "serve", "--db", self.url,
                "--config", str(settings), "--workers", str(self.workers),
                "--poll-interval", str(self.poll), "--graceful-shutdown-timeout", "20",
                *extra,
            ],
            stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        err.close()
        self.procs.append(proc)
        return proc

    def start_many(self, conductor: ironic_fsm.Conductor, count: int) -> None:
        """Start ``count`` processes and wait until all are alive in the registry."""
        for _ in range(count):
            self.start()
        self.wait_alive(conductor, count)

    def stderr(self, proc: subprocess.Popen[bytes]) -> str:
        return (self.tmp / f"serve-{self.procs.index(proc)}.err").read_text()

    def alive(self, conductor: ironic_fsm.Conductor) -> int:
        return sum(info.alive for info in conductor.list_conductors())

    def wait_alive(self, conductor: ironic_fsm.Conductor, count: int, timeout: float = 60) -> None:
        wait_for(lambda: self.alive(conductor) >= count, timeout, f"{count} live conductors")

    def stop_all(self) -> None:
        stop_processes(self.procs, timeout=30)


@contextmanager
def serve_fleet(url: str, tmp: Path, **kwargs: Any) -> Iterator[ServeFleet]:
    fleet = ServeFleet(url, tmp, **kwargs)
    try:
        yield fleet
    finally:
        fleet.stop_all()


def wait_for(check: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def operator(url: str) -> ironic_fsm.Conductor:
    """The test's own conductor: hands every verb's work to the services."""
    conductor = ironic_fsm.Conductor(
        store=SQLStore(url), config=ironic_fsm.Config(**CONFIG), hand_off=True
    )
    conductor.register_hardware_type(NAME, serve_test_hardware())
    return conductor


def enroll(
    conductor: ironic_fsm.Conductor, count: int, log: Path, step_seconds: float
) -> list[str]:
    info = {"log_path": str(log), "step_seconds": step_seconds}
    return [conductor.create_node(driver=NAME, driver_info=info).uuid for _ in range(count)]


def fleet_nodes(
    url: str, tmp: Path, count: int, step_seconds: float
) -> tuple[ironic_fsm.Conductor, list[str], Path]:
    """The operator's conductor, ``count`` enrolled nodes, and their step log."""
    log = tmp / "steps.log"
    conductor = operator(url)
    return conductor, enroll(conductor, count, log, step_seconds), log


def drive(
    conductor: ironic_fsm.Conductor,
    nodes: list[str],
    timeout: float,
    during: Callable[[dict[str, str]], None] | None = None,
) -> dict[str, str]:
    """Move every node on toward active; the final provision state of each.

    ``during`` sees the states of each round (a test kills a process there).
    Stops early when every node is listed, and active or failed.
    """
    wanted = set(nodes)
    deadline = time.monotonic() + timeout
    seen: dict[str, str] = {}
    while time.monotonic() < deadline:
        try:
            rows = conductor.list_nodes(driver=NAME)
        except StoreUnavailable:  # a test restarting the database: wait for it
            time.sleep(0.1)
            continue
        seen = {n.uuid: n.provision_state for n in rows if n.uuid in wanted}
        if during is not None:
            during(seen)
        if len(seen) == len(wanted) and all(
            v == states.ACTIVE or v in states.FAILURE_STATES for v in seen.values()
        ):
            break
        for node in rows:
            if node.uuid in wanted and node.reservation is None:
                _next(conductor, node.uuid, node.provision_state)
        time.sleep(0.1)
    return seen


def _next(conductor: ironic_fsm.Conductor, uuid: str, state: str) -> None:
    try:
        if state == states.CLEANWAIT:
            conductor.continue_node_clean(uuid)  # the ramdisk agent's call-back
        elif state in _NEXT:
            steps = DEPLOY_STEPS if state == states.AVAILABLE else None
            kwargs = {"deploy_steps": steps} if steps else {}
            conductor.do_provisioning_action(uuid, _NEXT[state], **kwargs)
    except (NodeLocked, InvalidStateRequested, StoreUnavailable):
        pass  # a service moved it on meanwhile (or the database is away): see next round
