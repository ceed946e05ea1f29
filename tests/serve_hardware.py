"""The hardware type ``serve-test`` that the service tests drive, and its step log.

Each step of the vendor interface appends ``<pid> <node> <step> start`` and
``... end`` to the file named by ``driver_info['log_path']`` (one ``write``
on an ``O_APPEND`` file: lines from several processes never interleave),
sleeping ``driver_info['step_seconds']`` in between, so that a process
killed mid-flow is often killed inside a step. ``async_clean`` returns
``clean wait``: the tests play the ramdisk agent and continue the node.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from pathlib import Path

import ironic_fsm
from ironic_fsm import states
from ironic_fsm.drivers.fake import fake_hardware
from ironic_fsm.interfaces import VendorInterface
from ironic_fsm.task import Task

NAME = "serve-test"
#: The steps that log, in the order a node runs them from enroll to active.
STEPS = ("record_clean", "async_clean", "record_deploy")
#: A user's deploy steps with Ironic's reserved ``wait`` step (woken by the timeout duty).
DEPLOY_STEPS = [{"interface": "deploy", "step": "wait", "args": {"seconds": 0.2}, "priority": 90}]


def _log(task: Task, step: str, what: str) -> None:
    line = f"{os.getpid()} {task.node.uuid} {step} {what}\n".encode()
    fd = os.open(task.node.driver_info["log_path"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _run(task: Task, step: str) -> None:
    _log(task, step, "start")
    time.sleep(float(task.node.driver_info.get("step_seconds", 0)))
    _log(task, step, "end")


class RecordingVendor(VendorInterface):
    """Steps that leave a trace of every run, by process."""

    @ironic_fsm.clean_step(priority=20, requires_ramdisk=False)
    def record_clean(self, task: Task) -> None:
        _run(task, "record_clean")

    @ironic_fsm.clean_step(priority=10, requires_ramdisk=False)
    def async_clean(self, task: Task) -> str:
        _run(task, "async_clean")
        return states.CLEANWAIT

    @ironic_fsm.deploy_step(priority=80)
    def record_deploy(self, task: Task) -> None:
        _run(task, "record_deploy")


def serve_test_hardware() -> ironic_fsm.HardwareType:
    """fake-hardware with the recording vendor interface."""
    base = fake_hardware()
    kinds = {kind: iface for kind, iface in base.interfaces() if kind != "vendor"}
    return ironic_fsm.HardwareType(vendor=RecordingVendor(), **kinds)  # type: ignore[arg-type]


class StepRuns:
    """The step log read back: for each (node, step), the runs as (pid, finished)."""

    def __init__(self, path: Path) -> None:
        self.runs: dict[tuple[str, str], list[tuple[int, bool]]] = defaultdict(list)
        open_runs: dict[tuple[int, str, str], int] = {}
        text = path.read_text() if path.exists() else ""
        for line in text.splitlines():
            pid_text, node, step, what = line.split()
            pid, key = int(pid_text), (node, step)
            if what == "start":
                open_runs[(pid, node, step)] = len(self.runs[key])
                self.runs[key].append((pid, False))
            else:
                index = open_runs.pop((pid, node, step))
                self.runs[key][index] = (pid, True)

    def pids(self) -> set[int]:
        return {pid for runs in self.runs.values() for pid, _ in runs}

    def problems(self, nodes: list[str], killed: frozenset[int] = frozenset()) -> list[str]:
        """Steps lost or run twice; a second run is allowed only after one in a killed process.

        A killed process may have finished a step without recording it (the
        record is the save after the step): its successor runs it again.
        Any other repeat means a recorded-complete step ran twice.
        """
        found = []
        for node in nodes:
            for step in STEPS:
                runs = self.runs.get((node, step), [])
                survivors = [run for run in runs if run[0] not in killed]
                if not any(done for _, done in runs):
                    found.append(f"{node} {step}: lost (runs {runs})")
                elif len(survivors) > 1 or len(runs) - len(survivors) > 1:
                    found.append(f"{node} {step}: ran twice (runs {runs})")
        return found

    def count(self, killed: frozenset[int] = frozenset()) -> tuple[int, int]:
        """(runs finished, runs repeated because a killed process left them unrecorded)."""
        finished = sum(done for runs in self.runs.values() for _, done in runs)
        repeated = sum(
            1
            for runs in self.runs.values()
            if len(runs) > 1 and any(pid in killed for pid, _ in runs)
        )
        return finished, repeated
