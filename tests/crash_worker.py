"""A conductor process that the crash test kills with SIGKILL in the middle of a step.

Run as ``python tests/crash_worker.py DB_URL NODE_UUID``: it runs a manual
clean of four steps on the node. Each step appends ``start <name>`` and
``end <name>`` to the file named by ``driver_info['log_path']``; step ``c``
prints READY and blocks while the file ``driver_info['hang_flag']`` exists,
which is where the test kills the process.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from helpers import recording_step

import ironic_fsm
from ironic_fsm.drivers.fake import fake_hardware
from ironic_fsm.interfaces import VendorInterface
from ironic_fsm.stores import SQLStore
from ironic_fsm.task import Task

STEPS = ("a", "b", "c", "d")


def _record(task: Task, line: str) -> None:
    with open(task.node.driver_info["log_path"], "a", encoding="utf-8") as log:
        log.write(line + "\n")


def _step(task: Task, name: str) -> None:
    _record(task, f"start {name}")
    if name == "c":
        flag = Path(task.node.driver_info["hang_flag"])
        if flag.exists():
            print("READY", flush=True)
            while flag.exists():  # test code: wait to be killed
                time.sleep(0.05)
    _record(task, f"end {name}")


class CrashVendor(VendorInterface):
    """Four idempotent clean steps that log what they do."""

    a = recording_step("a", ironic_fsm.clean_step(priority=0), record=_step)
    b = recording_step("b", ironic_fsm.clean_step(priority=0), record=_step)
    c = recording_step("c", ironic_fsm.clean_step(priority=0), record=_step)
    d = recording_step("d", ironic_fsm.clean_step(priority=0), record=_step)


def crash_hardware() -> ironic_fsm.HardwareType:
    """fake-hardware with the logging vendor interface."""
    base = fake_hardware()
    kinds = {kind: iface for kind, iface in base.interfaces() if kind != "vendor"}
    return ironic_fsm.HardwareType(vendor=CrashVendor(), **kinds)  # type: ignore[arg-type]


def conductor(url: str) -> ironic_fsm.Conductor:
    """A conductor on the shared database that knows the crash hardware type."""
    c = ironic_fsm.Conductor(store=SQLStore(url))
    c.register_hardware_type("crash-hardware", crash_hardware())
    return c


def main(url: str, uuid: str) -> None:
    steps = [{"interface": "vendor", "step": name, "args": {}} for name in STEPS]
    conductor(url).do_provisioning_action(uuid, "clean", clean_steps=steps)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
