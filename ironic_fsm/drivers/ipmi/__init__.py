"""``ipmi``: power and boot device over IPMI (pyghmi), with a deadline on every BMC call.

One module per concern: :mod:`.driver_info` (the keys and their checks),
:mod:`.session` (pyghmi's session, deadlines, error mapping),
:mod:`.workers` (the threads pyghmi calls run in), and one module per
interface: :mod:`.power`, :mod:`.management`, :mod:`.vendor`,
:mod:`.deploy`. The names below are the package's public face (the entry
points in ``pyproject.toml`` point here).

One driver operation (read the power state, change it and wait for the
change, set the boot device, ...) logs in once, makes its calls and logs
out: real BMCs have only a handful of session slots, and a session left
open is one fewer for the operator's own tools. Every call has a deadline,
``driver_info['ipmi_timeout']``, because pyghmi has none.

``driver_info`` keys: ``ipmi_address``, ``ipmi_username``,
``ipmi_password`` (required), ``ipmi_port`` (623), ``ipmi_timeout`` (10 s),
``ipmi_power_wait`` (30 s), ``ipmi_reset_wait`` (60 s),
``ipmi_boot_mode`` (``uefi`` or ``bios``) and ``ipmi_cipher_suite`` (3 or 17).

pyghmi is imported on first use; without it the hardware type raises
:class:`~ironic_fsm.exceptions.MissingDependency` naming the ``ipmi`` extra.
"""

from __future__ import annotations

from ironic_fsm.drivers.common import bmc_hardware
from ironic_fsm.drivers.ipmi.deploy import DiskBootDeploy
from ironic_fsm.drivers.ipmi.driver_info import COMMON_PROPERTIES, IPMIInfo, parse_driver_info
from ironic_fsm.drivers.ipmi.management import BOOT_DEVICE_TO_PYGHMI, IPMIManagement
from ironic_fsm.drivers.ipmi.power import IPMIPower
from ironic_fsm.drivers.ipmi.session import _Connection as _Connection  # for the wire tests
from ironic_fsm.drivers.ipmi.session import _session_class as _session_class  # likewise
from ironic_fsm.drivers.ipmi.vendor import IPMIVendor
from ironic_fsm.hardware import HardwareType

__all__ = [
    "BOOT_DEVICE_TO_PYGHMI",
    "COMMON_PROPERTIES",
    "DiskBootDeploy",
    "IPMIInfo",
    "IPMIManagement",
    "IPMIPower",
    "IPMIVendor",
    "ipmi_hardware",
    "parse_driver_info",
]


def ipmi_hardware() -> HardwareType:
    """The ``ipmi`` hardware type (entry point factory).

    Raises:
        MissingDependency: pyghmi is not installed (``pip install ironic_fsm[ipmi]``).
    """
    IPMIPower.check_loadable()
    from ironic_fsm.drivers.generic import IPXEBoot, ManualManagement, PXEBoot, RamdiskDeploy

    return bmc_hardware(
        "Power and boot device over IPMI (pyghmi); deploys by booting the disk.",
        power=[("ipmitool", IPMIPower())],
        management=[("ipmitool", IPMIManagement()), ("noop", ManualManagement())],
        boot=[("ipxe", IPXEBoot()), ("pxe", PXEBoot())],
        # disk-boot first: it deploys with no ramdisk agent (Ironic's first is direct).
        deploy=[("disk-boot", DiskBootDeploy()), "direct", ("ramdisk", RamdiskDeploy())],
        vendor=[("ipmitool", IPMIVendor()), "no-vendor"],
    )
