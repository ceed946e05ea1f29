"""Ironic's generic implementations, and ``manual-management``: what works on any BMC, or none.

* boot ``pxe`` and ``ipxe``: the node network-boots the ramdisk (the boot
  device set to PXE, once, through the management interface) and boots
  the instance from its disk (persistently). The ramdisk parameters are
  recorded in ``driver_internal_info['boot_ramdisk']`` for whoever serves
  the network boot; there is no TFTP or HTTP server here.
* deploy ``ramdisk``: the instance *is* the ramdisk: no image is written,
  the node boots from the network and stays so.
* network ``flat``: every phase on the one flat network, so nothing to
  switch (the VIFs of the node's ports are the network's only business).
* management ``noop`` and the ``manual-management`` hardware type: the
  operator powers and boots the node by hand; setting a boot device is
  accepted and does nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from ironic_fsm.drivers.common import (
    GENERIC_CHOICES,
    Choices,
    boot_persistently,
    hardware,
    power_off,
)
from ironic_fsm.drivers.fake import FakeDeploy, FakeManagement, FakePower
from ironic_fsm.hardware import HardwareType
from ironic_fsm.interfaces import (
    BootInterface,
    DeployInterface,
    ManagementInterface,
    NetworkInterface,
)
from ironic_fsm.steps import deploy_step
from ironic_fsm.task import Task

__all__ = [
    "FlatNetwork",
    "IPXEBoot",
    "ManualManagement",
    "PXEBoot",
    "RamdiskDeploy",
    "manual_management",
]

#: Where the boot interfaces record what the network boot serves.
RAMDISK_KEY: Final = "boot_ramdisk"


class PXEBoot(BootInterface):
    """``pxe``: the ramdisk from the network (PXE, once), the instance from the local disk."""

    #: What serves the network boot: recorded with the ramdisk parameters.
    loader: ClassVar[str] = "pxe"

    def prepare_ramdisk(self, task: Task, ramdisk_params: Mapping[str, Any]) -> None:
        record = {"loader": self.loader, "params": dict(ramdisk_params)}
        task.node.driver_internal_info[RAMDISK_KEY] = record
        task.driver.management.set_boot_device(task, "pxe", persistent=False)

    def clean_up_ramdisk(self, task: Task) -> None:
        task.node.driver_internal_info.pop(RAMDISK_KEY, None)

    def prepare_instance(self, task: Task) -> None:
        task.driver.management.set_boot_device(task, "disk", persistent=True)


class IPXEBoot(PXEBoot):
    """``ipxe``: as ``pxe``, with iPXE serving the ramdisk."""

    loader = "ipxe"


class RamdiskDeploy(DeployInterface):
    """``ramdisk``: no image is written; the node boots a ramdisk from the network, for good."""

    @deploy_step(priority=100)
    def deploy(self, task: Task) -> str | None:
        task.driver.boot.prepare_ramdisk(task, dict(task.node.instance_info))
        boot_persistently(task, "pxe")
        return None

    def tear_down(self, task: Task) -> str | None:
        power_off(task)
        task.driver.boot.clean_up_ramdisk(task)
        return None


class FlatNetwork(NetworkInterface):
    """``flat``: the node stays on one network in every phase; nothing to switch."""


class ManualManagement(ManagementInterface):
    """``noop`` management: the operator sets boot devices; asking is accepted and ignored."""

    def get_supported_boot_devices(self, task: Task) -> list[str]:
        return ["pxe", "disk"]

    def set_boot_device(self, task: Task, device: str, persistent: bool = False) -> None:
        return None


def manual_management() -> HardwareType:
    """The ``manual-management`` hardware type (entry point factory).

    Power by the operator (``fake`` power records what was asked), no
    management (``noop``), boot and deploy as any generic type.
    """
    kinds: dict[str, Choices] = dict(GENERIC_CHOICES)
    kinds.update(
        power=[("fake", FakePower())],
        management=[("noop", ManualManagement()), ("fake", FakeManagement())],
        boot=[("ipxe", IPXEBoot()), ("pxe", PXEBoot())],
        deploy=["direct", ("ramdisk", RamdiskDeploy()), ("fake", FakeDeploy())],
        network=[("flat", FlatNetwork()), "noop"],
    )
    return hardware(
        "Power and boot device by the operator: for machines with no BMC ironic_fsm can reach.",
        kinds,
    )
