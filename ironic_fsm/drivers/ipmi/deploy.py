"""``disk-boot`` deploy: no image written; the node boots its own disk over IPMI."""

from __future__ import annotations

from ironic_fsm import states
from ironic_fsm.drivers.common import power_on_or_reboot
from ironic_fsm.interfaces import DeployInterface
from ironic_fsm.steps import deploy_step
from ironic_fsm.task import Task

__all__ = ["DiskBootDeploy"]


class DiskBootDeploy(DeployInterface):
    """Writes no image: boots the node from its own disk over IPMI.

    With it a whole lifecycle runs against a BMC: deploying makes the disk
    the persistent boot device and powers the node on (resetting it if it
    is already on, so that it boots from the disk); tearing down powers it
    off.
    """

    @deploy_step(priority=100)
    def deploy(self, task: Task) -> str | None:
        task.driver.management.set_boot_device(task, "disk", persistent=True)
        power_on_or_reboot(task)
        task.node.power_state = states.POWER_ON
        return None

    def tear_down(self, task: Task) -> str | None:
        task.driver.power.set_power_state(task, states.POWER_OFF)
        task.node.power_state = states.POWER_OFF
        return None
