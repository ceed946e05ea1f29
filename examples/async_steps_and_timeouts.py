"""Asynchronous steps, abort, timeouts, wait and hold steps, and background execution.

Run it with ``python examples/async_steps_and_timeouts.py``. Time is
injected: the conductor reads a fake clock that the script moves forward,
so half an hour of waiting takes no time at all.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import ironic_fsm
from ironic_fsm import exceptions, states
from ironic_fsm.drivers import fake
from ironic_fsm.events import PROVISION_END, PROVISION_ERROR, Event
from ironic_fsm.interfaces import FirmwareInterface
from ironic_fsm.task import Task


class Clock:
    """A clock the script moves by hand (timezone-aware UTC, as the conductor wants)."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, 12, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


class BMCFirmware(FirmwareInterface):
    """Firmware updates that a BMC runs as a job: the step starts it and returns at once."""

    @ironic_fsm.clean_step(priority=0, abortable=True, requires_ramdisk=False)
    def flash(self, task: Task) -> str:
        task.node.driver_internal_info["bmc_job"] = "flash"
        return states.CLEANWAIT  # "not finished yet": the conductor waits for a callback

    @ironic_fsm.clean_step(priority=0, abortable=False, requires_ramdisk=False)
    def burn_in(self, task: Task) -> str:
        task.node.driver_internal_info["bmc_job"] = "burn-in"
        return states.CLEANWAIT


def bmc_hardware(vendor: fake.FakeVendor | None = None) -> ironic_fsm.HardwareType:
    """fake-hardware with the asynchronous firmware interface above."""
    return ironic_fsm.HardwareType(
        power=fake.FakePower(),
        management=fake.FakeManagement(),
        deploy=fake.FakeDeploy(),
        bios=fake.FakeBIOS(),
        raid=fake.FakeRAID(),
        vendor=vendor or fake.FakeVendor(),
        firmware=BMCFirmware(),
    )


def show(node: ironic_fsm.Node) -> None:
    """Print state, target, current step and error."""
    step = node.clean_step or {}
    where = f"{step['interface']}.{step['step']}" if step else "-"
    extra = " abort_after" if step.get("abort_after") else ""
    print(f"   {node.provision_state!r} target={node.target_provision_state!r} step={where}{extra}")
    if node.last_error:
        print(f"   last_error={node.last_error!r}")


FLASH = {"interface": "firmware", "step": "flash"}
BURN_IN = {"interface": "firmware", "step": "burn_in"}
WIPE = {"interface": "raid", "step": "delete_configuration"}


def synchronous_part() -> None:
    """Waiting, continuing, aborting and timing out, with a fake clock."""
    clock = Clock()
    conductor = ironic_fsm.Conductor(
        config=ironic_fsm.Config(clean_callback_timeout=600), clock=clock
    )
    conductor.register_hardware_type("bmc-async", bmc_hardware())
    node = conductor.create_node(name="n1", driver="bmc-async", provision_state="manageable")

    print("1. An asynchronous step leaves the node in 'clean wait':")
    show(conductor.do_provisioning_action("n1", "clean", clean_steps=[FLASH, WIPE]))
    print("   the BMC job finished; the host application calls continue_node_clean:")
    show(conductor.continue_node_clean("n1"))

    print("2. abort during an abortable step stops at once:")
    conductor.do_provisioning_action("n1", "clean", clean_steps=[FLASH, WIPE])
    show(conductor.do_provisioning_action("n1", "abort"))
    conductor.do_provisioning_action("n1", "manage")

    print("3. abort during a step that is not abortable waits for the step to end:")
    conductor.do_provisioning_action("n1", "clean", clean_steps=[BURN_IN, WIPE])
    show(conductor.do_provisioning_action("n1", "abort"))
    print("   when the step reports back, the clean fails instead of going on:")
    show(conductor.continue_node_clean("n1"))
    conductor.do_provisioning_action("n1", "manage")

    print("4. A callback that never comes: clean_callback_timeout=600 (seconds)")
    conductor.do_provisioning_action("n1", "clean", clean_steps=[FLASH])
    print("   check_timeouts at +599 s acts on:", conductor.check_timeouts(clock.advance(599)))
    print("   check_timeouts at +601 s acts on:", conductor.check_timeouts(clock.advance(2)))
    node = conductor.get_node("n1")
    show(node)
    print(f"   maintenance={node.maintenance} fault={node.fault!r}")
    conductor.do_provisioning_action("n1", "manage")
    conductor.update_node("n1", maintenance=False)

    print("5. A 'wait' step with seconds: check_timeouts resumes it when the time is up")
    wait = {"interface": "deploy", "step": "wait", "args": {"seconds": 300}}
    show(conductor.do_provisioning_action("n1", "clean", clean_steps=[wait, WIPE]))
    clock.advance(200)
    print("   at +200 s:", conductor.check_timeouts() or "nothing to do")
    clock.advance(101)
    print("   at +301 s:", len(conductor.check_timeouts()), "node resumed")
    show(conductor.get_node("n1"))

    print("6. A 'hold' step pauses until 'unhold'; holds never time out:")
    hold = {"interface": "deploy", "step": "hold"}
    show(conductor.do_provisioning_action("n1", "clean", clean_steps=[hold, WIPE]))
    clock.advance(30 * 24 * 3600)
    print("   thirty days later, check_timeouts acts on:", conductor.check_timeouts())
    show(conductor.do_provisioning_action("n1", "unhold"))


class GatedVendor(fake.FakeVendor):
    """A slow clean step: it runs until the script opens the gate."""

    gate = threading.Event()

    @ironic_fsm.clean_step(priority=10, requires_ramdisk=False)
    def burn_disks(self, task: Task) -> None:
        self.gate.wait(timeout=5)


def background_part() -> None:
    """With an executor, a verb returns after its first transition; the flow runs on."""
    print("7. With an executor the verb returns at once; listeners report the end:")
    settled = threading.Event()

    def on_event(event: Event) -> None:
        if event.name in (PROVISION_END, PROVISION_ERROR):
            print(f"   [{threading.current_thread().name}] {event.name} -> {event.state!r}")
            settled.set()

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="worker") as pool:
        conductor = ironic_fsm.Conductor(executor=pool, listeners=[on_event])
        conductor.register_hardware_type("gated", bmc_hardware(vendor=GatedVendor()))
        conductor.create_node(name="n2", driver="gated", provision_state="manageable")
        node = conductor.do_provisioning_action("n2", "provide")
        print(f"   provide returned: {node.provision_state!r}, reserved by {node.reservation}")

        # Another conductor (another holder) sharing the store finds the node busy.
        other = ironic_fsm.Conductor(store=conductor.store)
        other.register_hardware_type("gated", bmc_hardware(vendor=GatedVendor()))
        try:
            other.update_node("n2", extra={"note": "hello"})
        except exceptions.NodeLocked as exc:
            print(f"   another conductor: NodeLocked (retryable={exc.retryable})")

        GatedVendor.gate.set()  # let the slow step finish
        settled.wait(timeout=5)
    print(f"   finally: {conductor.get_node('n2').provision_state!r}")


def main() -> None:
    """Run both parts."""
    synchronous_part()
    background_part()


if __name__ == "__main__":
    main()
