"""``disk-boot`` deploy: no image written; the node boots its own disk over IPMI."""

from __future__ import annotations

from ironic_fsm.drivers.common import boot_persistently, power_off
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
        boot_persistently(task, "disk")
        return None

    def tear_down(self, task: Task) -> str | None:
        power_off(task)
        return None
