"""``redfish``: node management through a Redfish BMC, built on sushy.

One module per concern: :mod:`.driver_info` (the keys and their checks),
:mod:`.session` (sushy, the cached connections, error mapping, waits), and
one module per interface: :mod:`.power`, :mod:`.management`, :mod:`.boot`,
:mod:`.deploy`, :mod:`.bios`, :mod:`.raid`, :mod:`.inspect`,
:mod:`.rescue`, :mod:`.firmware`. The names below are the package's public
face (the entry points in ``pyproject.toml`` point here).

Every interface of the hardware type reads the node's ``driver_info``
(see :data:`DRIVER_INFO`), talks to the BMC through one cached
:class:`sushy.Sushy` connection per BMC and credentials, and turns sushy's
errors into :class:`~ironic_fsm.exceptions.HardwareError` subclasses whose
messages name the node and the BMC address, never the password.

sushy is an optional dependency (``pip install ironic_fsm[redfish]``): it is
imported on first use, and :func:`redfish_hardware` raises
:class:`~ironic_fsm.exceptions.MissingDependency` without it.

Why the connection settings have their own defaults: sushy's own (10
retries 3 s apart, a 60 s read timeout) make one dead BMC block a worker
for up to ten minutes. Here a refused connection fails in about a second
and a silent BMC within ``read_timeout x retries`` (20 s by default).

What the interfaces record on the node:

* ``driver_internal_info['redfish_bios_settings']``: the BIOS attributes
  as last read (after every BIOS step, or :meth:`RedfishBIOS.cache_bios_settings`).
* ``raid_config``: the volumes :meth:`RedfishRAID.create_configuration`
  made, each logical disk with ``controller``, ``volume_id``,
  ``physical_disks`` and the real ``size_gb``.
* ``properties``: ``memory_mb``, ``cpus``, ``cpu_arch``, ``local_gb``
  where the BMC reports them, ``capabilities`` (``boot_mode``) and
  ``macs``, the NIC MAC addresses (lower case, sorted).
* ``driver_internal_info['redfish_firmware']``: BIOS and BMC versions after
  a firmware update, and the updates applied.
* ``driver_internal_info['redfish_persistent_boot_device']``: on BMCs that
  offer only one-time boot overrides, the persistent boot device, set
  again before each boot.

What the BMC says wins over what the Redfish schema allows: settings it
reports as rejected, the virtual media actions, reset types, boot targets
and modes it offers, the NICs and processors it reports enabled (see the
"What real BMCs do that the schema doesn't say" section of the docs).
"""

from __future__ import annotations

from ironic_fsm.drivers.common import bmc_hardware
from ironic_fsm.drivers.redfish.bios import BIOSSettingsRejected, RedfishBIOS
from ironic_fsm.drivers.redfish.boot import RedfishBoot, RedfishHttpsBoot
from ironic_fsm.drivers.redfish.deploy import RedfishDeploy
from ironic_fsm.drivers.redfish.driver_info import DRIVER_INFO, RedfishInfo, parse_driver_info
from ironic_fsm.drivers.redfish.firmware import RedfishFirmware
from ironic_fsm.drivers.redfish.inspect import RedfishInspect
from ironic_fsm.drivers.redfish.management import (
    BOOT_DEVICE_MAP,
    PERSISTENT_BOOT_DEVICE_KEY,
    RedfishManagement,
)
from ironic_fsm.drivers.redfish.power import RedfishPower
from ironic_fsm.drivers.redfish.raid import RedfishRAID
from ironic_fsm.drivers.redfish.rescue import RedfishRescue
from ironic_fsm.drivers.redfish.session import _sushy as _sushy  # the tests clear its cache
from ironic_fsm.drivers.redfish.session import clear_connection_cache
from ironic_fsm.drivers.redfish.vendor import RedfishVendor
from ironic_fsm.hardware import HardwareType

__all__ = [
    "BIOSSettingsRejected",
    "BOOT_DEVICE_MAP",
    "DRIVER_INFO",
    "PERSISTENT_BOOT_DEVICE_KEY",
    "RedfishBIOS",
    "RedfishBoot",
    "RedfishDeploy",
    "RedfishFirmware",
    "RedfishHttpsBoot",
    "RedfishInfo",
    "RedfishInspect",
    "RedfishManagement",
    "RedfishPower",
    "RedfishRAID",
    "RedfishRescue",
    "RedfishVendor",
    "clear_connection_cache",
    "parse_driver_info",
    "redfish_hardware",
]


def redfish_hardware() -> HardwareType:
    """The ``redfish`` hardware type (entry point factory).

    Raises:
        MissingDependency: sushy is not installed (``pip install
            ironic_fsm[redfish]``).
    """
    _sushy()
    from ironic_fsm.drivers.generic import IPXEBoot, ManualManagement, PXEBoot, RamdiskDeploy

    # Virtual media first (Ironic's first is ipxe): the redfish deploy boots its ISO.
    return bmc_hardware(
        "Redfish BMCs through sushy: power, boot device, BIOS, RAID, inspection, "
        "virtual media (deploy and rescue) and firmware updates.",
        power=[("redfish", RedfishPower())],
        management=[("redfish", RedfishManagement()), ("noop", ManualManagement())],
        boot=[
            ("redfish-virtual-media", RedfishBoot()),
            ("ipxe", IPXEBoot()),
            ("pxe", PXEBoot()),
            ("redfish-https", RedfishHttpsBoot()),
        ],
        deploy=[("redfish", RedfishDeploy()), "direct", ("ramdisk", RamdiskDeploy())],
        bios=[("redfish", RedfishBIOS()), "no-bios"],
        raid=[("redfish", RedfishRAID()), "no-raid", "agent"],
        inspect=[("redfish", RedfishInspect()), "agent", "no-inspect"],
        rescue=[("redfish", RedfishRescue()), "no-rescue", "agent"],
        firmware=[("redfish", RedfishFirmware()), "no-firmware"],
        vendor=[("redfish", RedfishVendor()), "no-vendor"],
    )
