"""``redfish`` deploy: boots the deploy ramdisk, then the instance from the local disk."""

from __future__ import annotations

import logging

from ironic_fsm import states
from ironic_fsm.drivers.common import power_on_or_reboot
from ironic_fsm.drivers.redfish.boot import RedfishBoot, _check_virtual_media
from ironic_fsm.drivers.redfish.driver_info import _info, _RedfishValidation
from ironic_fsm.interfaces import DeployInterface
from ironic_fsm.steps import deploy_step
from ironic_fsm.task import Task

__all__ = ["RedfishDeploy"]

LOG = logging.getLogger(__name__)


class RedfishDeploy(_RedfishValidation, DeployInterface):
    """Boots the node for its instance through the BMC.

    The core deploy step boots the deploy ramdisk once (virtual media when
    ``redfish_deploy_iso`` is set and the BMC offers it, otherwise PXE),
    powers the node on, and sets the local disk as the persistent boot
    device for the instance. Writing the image is the ramdisk's business,
    outside this library.
    """

    def validate(self, task: Task) -> None:
        """driver_info, and with a deploy ISO, a virtual CD/DVD the BMC can really drive."""
        super().validate(task)
        _check_virtual_media(task, "redfish_deploy_iso")

    @deploy_step(priority=100)
    def deploy(self, task: Task) -> str | None:
        node = task.node
        info = _info(task)
        boot = task.driver.boot
        ramdisk = "pxe"
        if info.deploy_iso and isinstance(boot, RedfishBoot) and boot.supports_virtual_media(task):
            boot.prepare_ramdisk(task, {})
            ramdisk = "cdrom"
        else:
            if info.deploy_iso:
                LOG.warning(
                    "Node %s: BMC %s offers no virtual media; booting the network instead",
                    node.uuid,
                    info.address,
                )
            task.driver.management.set_boot_device(task, "pxe", persistent=False)
        power_on_or_reboot(task)
        boot.prepare_instance(task)
        node.power_state = states.POWER_ON
        node.driver_internal_info["redfish_deploy"] = {"ramdisk_boot": ramdisk}
        return None

    def tear_down(self, task: Task) -> str | None:
        """Power off (if still on) and eject virtual media."""
        power = task.driver.power
        if power.get_power_state(task) != states.POWER_OFF:
            power.set_power_state(task, states.POWER_OFF)
        task.node.power_state = states.POWER_OFF
        task.driver.boot.clean_up_ramdisk(task)
        task.driver.boot.clean_up_instance(task)
        task.node.driver_internal_info.pop("redfish_deploy", None)
        return None
