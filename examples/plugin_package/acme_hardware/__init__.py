"""The ``acme`` hardware type: fake power and boot, plus Acme's own clean step.

A plugin is an ordinary package that declares entry points; ironic_fsm
finds it through stevedore. Nothing needs registering by hand.
"""

from __future__ import annotations

import ironic_fsm
from ironic_fsm.drivers.fake import FakeDeploy, FakeManagement, FakePower
from ironic_fsm.interfaces import VendorInterface
from ironic_fsm.task import Task


class AcmeVendor(VendorInterface):
    """Acme's BMC can wipe its own event log."""

    @ironic_fsm.clean_step(priority=5, requires_ramdisk=False)
    def clear_event_log(self, task: Task) -> None:
        """Counted in driver_internal_info, so a test can see it ran."""
        info = task.node.driver_internal_info
        info["acme_event_log_cleared"] = info.get("acme_event_log_cleared", 0) + 1


def acme_hardware() -> ironic_fsm.HardwareType:
    """The entry point: a factory returning the hardware type."""
    return ironic_fsm.HardwareType(
        power=FakePower(),
        management=FakeManagement(),
        deploy=FakeDeploy(),
        vendor=AcmeVendor(),
        description="Acme servers (example plugin)",
    )
