"""``redfish`` rescue: boots a rescue environment, and the instance again afterwards."""

from __future__ import annotations

from ironic_fsm import states
from ironic_fsm.drivers.common import power_on_or_reboot
from ironic_fsm.drivers.redfish.boot import RedfishBoot, _check_virtual_media
from ironic_fsm.drivers.redfish.driver_info import _info, _RedfishValidation
from ironic_fsm.interfaces import RescueInterface
from ironic_fsm.task import Task

__all__ = ["RedfishRescue"]


class RedfishRescue(_RedfishValidation, RescueInterface):
    """Boots a rescue environment through the BMC, and the instance again afterwards.

    With ``redfish_rescue_iso`` and a BMC that offers virtual media, the ISO
    is inserted and booted once; otherwise the node boots from the network,
    where the operator's rescue service answers. The rescue ramdisk has no
    call-back here, so rescuing completes when the node has been booted.
    """

    def validate(self, task: Task) -> None:
        """driver_info, and with a rescue ISO, a virtual CD/DVD the BMC can really drive."""
        super().validate(task)
        _check_virtual_media(task, "redfish_rescue_iso")

    def rescue(self, task: Task) -> str:
        info = _info(task)
        boot = task.driver.boot
        if info.rescue_iso and isinstance(boot, RedfishBoot) and boot.supports_virtual_media(task):
            boot.boot_iso(task, info.rescue_iso, "redfish_rescue_iso")
            how = "cdrom"
        else:
            task.driver.management.set_boot_device(task, "pxe", persistent=False)
            how = "pxe"
        _power_cycle(task)
        task.node.driver_internal_info["redfish_rescue"] = {"boot": how}
        return states.RESCUE

    def unrescue(self, task: Task) -> str:
        self.clean_up(task)
        task.driver.management.set_boot_device(task, "disk", persistent=True)
        _power_cycle(task)
        return states.ACTIVE

    def clean_up(self, task: Task) -> None:
        """Eject the rescue ISO, if any."""
        task.driver.boot.clean_up_ramdisk(task)
        task.node.driver_internal_info.pop("redfish_rescue", None)


def _power_cycle(task: Task) -> None:
    """Reboot the node if it is on, power it on if not."""
    power_on_or_reboot(task)
    task.node.power_state = states.POWER_ON
