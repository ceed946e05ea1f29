"""A reconcile loop that handles both shapes of a failed clean.

Run it with ``python examples/reconcile_failures.py``. Three nodes on a
fake-hardware variant are to become ``available``; automated cleaning runs
two firmware steps on each:

* ``ok-1`` cleans and arrives;
* ``bad-1``'s disk check fails: a clean step that fails puts the node in
  ``clean failed`` **and in maintenance** (``fault = 'clean failure'``), as
  Ironic does, so the next ``reconcile`` raises ``NodeInMaintenance``. The
  loop cannot fix hardware: it reports the node for a human and stops
  trying;
* ``stuck-1``'s firmware job never finishes. The loop aborts a clean that
  waits too long: an abort leaves the node in ``clean failed`` **without**
  maintenance, so the next ``reconcile`` simply tries again (``manage``,
  then ``provide``) and never raises. The loop gives each node a budget of
  attempts and parks it when the budget is spent.

A flow that fails without maintenance in the call itself (with no executor,
a deploy whose step fails returns in ``deploy failed``) is counted the same
way: ``reconcile`` would retry it on the next call.
"""

from __future__ import annotations

from collections import Counter

import ironic_fsm
from ironic_fsm import exceptions, states
from ironic_fsm.drivers import fake
from ironic_fsm.interfaces import FirmwareInterface
from ironic_fsm.task import Task

WANTED = "available"
#: Rounds a node may wait in ``clean wait`` before the loop aborts its clean.
PATIENCE = 3
#: Failed attempts (aborted or failed cleans) before the loop parks a node.
ATTEMPTS = 2


class Firmware(FirmwareInterface):
    """Two automated clean steps whose outcome each node's properties decide."""

    @ironic_fsm.clean_step(priority=60, requires_ramdisk=False)
    def check_disks(self, task: Task) -> None:
        if task.node.properties.get("disks") == "failing":
            raise RuntimeError("disk 2 reports SMART errors")

    @ironic_fsm.clean_step(priority=50, abortable=True, requires_ramdisk=False)
    def flash(self, task: Task) -> str | None:
        if task.node.properties.get("bmc") == "hung":
            return states.CLEANWAIT  # the BMC job never reports back
        return None


def hardware() -> ironic_fsm.HardwareType:
    return ironic_fsm.HardwareType(
        power=fake.FakePower(), management=fake.FakeManagement(), deploy=fake.FakeDeploy(),
        vendor=fake.FakeVendor(), firmware=Firmware(),
    )  # fmt: skip


def main() -> dict[str, str]:
    """Reconcile the fleet; what became of each node."""
    conductor = ironic_fsm.Conductor()
    conductor.register_hardware_type("flaky", hardware())
    conductor.create_node(name="ok-1", driver="flaky", provision_state="manageable")
    conductor.create_node(
        name="bad-1", driver="flaky", provision_state="manageable", properties={"disks": "failing"}
    )
    conductor.create_node(
        name="stuck-1", driver="flaky", provision_state="manageable", properties={"bmc": "hung"}
    )
    outcome: dict[str, str] = {}
    waiting: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    pending = ["ok-1", "bad-1", "stuck-1"]
    for round_no in range(1, 50):
        for name in list(pending):
            try:
                node = conductor.reconcile(name, WANTED)
            except exceptions.NodeInMaintenance:
                # Shape 1: a failed step set maintenance. Only a human clears it.
                node = conductor.get_node(name)
                outcome[name] = f"needs a human ({node.fault}): {node.maintenance_reason}"
                pending.remove(name)
                continue
            if node.provision_state == WANTED:
                outcome[name] = f"{WANTED} after {round_no} round(s)"
                pending.remove(name)
            else:
                if node.provision_state == states.CLEANWAIT:
                    waiting[name] += 1
                    if waiting[name] >= PATIENCE:
                        waiting[name] = 0
                        node = conductor.do_provisioning_action(name, "abort")
                if node.provision_state in states.FAILURE_STATES and not node.maintenance:
                    # Shape 2: failed without maintenance (here, our own abort). The
                    # next reconcile would try again: count the attempt first.
                    failures[name] += 1
                    if failures[name] >= ATTEMPTS:
                        outcome[name] = f"parked after {failures[name]} attempts: {node.last_error}"
                        pending.remove(name)
        if not pending:
            break
    for name, text in sorted(outcome.items()):
        print(f"{name}: {text}")
    return outcome


if __name__ == "__main__":
    result = main()
    assert result["ok-1"].startswith("available"), result
    assert result["bad-1"].startswith("needs a human (clean failure)"), result
    assert result["stuck-1"].startswith("parked after 2 attempts"), result
