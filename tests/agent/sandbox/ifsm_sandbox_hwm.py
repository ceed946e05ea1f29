"""The sandbox's hardware manager: IPA's own, shown one loop device and one fake NIC.

Loaded by IPA through its entry point group ``ironic_python_agent.hardware_managers``
(the harness registers it in IPA's venv), and the only manager the launcher lets
IPA load. Subclassing ``GenericHardwareManager`` keeps IPA's real step lists and
its real erase and image-writing code; what is overridden is what would look at
or touch the machine: the disks IPA sees (only the allowed loop device), the
network interfaces (one with the node's port MAC), CPU, memory, BMC, firmware,
boot mode, LLDP, USB, the start-up probing (iSCSI, mdadm, IPMI modules,
multipath), pstore, UEFI NVRAM, log collection and the cache flush.

Runs in IPA's venv, inside the sandbox; configured by the launcher's environment:
``IFSM_SANDBOX_DISK`` (``/dev/loopN``), ``IFSM_SANDBOX_MAC``, ``IFSM_SANDBOX_IP``.
"""

from __future__ import annotations

import os
import subprocess

from ironic_python_agent import errors, hardware

MiB = 1024 * 1024


def _disk() -> str:
    return os.environ["IFSM_SANDBOX_DISK"]


def _size(device: str) -> int:
    with open(f"/sys/class/block/{os.path.basename(device)}/size") as sectors:
        return int(sectors.read().strip()) * 512


def _partitions(device: str) -> list[str]:
    """The loop device's partitions (``/dev/loopNp1``...), as the kernel lists them."""
    base = os.path.basename(device)
    try:
        names = sorted(n for n in os.listdir(f"/sys/class/block/{base}") if n.startswith(base))
    except OSError:
        return []
    return [f"/dev/{name}" for name in names]


class SandboxHardwareManager(hardware.GenericHardwareManager):
    HARDWARE_MANAGER_NAME = "ifsm_sandbox_hardware_manager"
    HARDWARE_MANAGER_VERSION = "1.0"

    def evaluate_hardware_support(self) -> int:
        return hardware.HardwareSupport.SERVICE_PROVIDER

    def initialize(self) -> None:
        # No iSCSI, md RAID assembly, IPMI modules, multipath or waiting for host disks.
        hardware.MULTIPATH_ENABLED = False

    # -- what IPA sees ------------------------------------------------------------------

    def _get_system_lshw_dict(self):  # type: ignore[no-untyped-def]
        return {}  # lshw would describe the machine; the methods below say all there is

    def list_network_interfaces(self) -> list[hardware.NetworkInterface]:
        # eth0 is the link to the host; IFSM_SANDBOX_EXTRA_MACS names more NICs (no
        # address, no link), which inspection reports for ports to be made of.
        extra = [mac for mac in os.environ.get("IFSM_SANDBOX_EXTRA_MACS", "").split(",") if mac]
        return [
            hardware.NetworkInterface(
                "eth0",
                os.environ["IFSM_SANDBOX_MAC"],
                ipv4_address=os.environ.get("IFSM_SANDBOX_IP"),
                has_carrier=True,
                vendor="0x1af4",
                product="0x0001",
            ),
            *(
                hardware.NetworkInterface(f"eth{n}", mac, has_carrier=False)
                for n, mac in enumerate(extra, start=1)
            ),
        ]

    def collect_lldp_data(self, interface_names=None):  # type: ignore[no-untyped-def]
        return {}

    def get_cpus(self) -> hardware.CPU:
        return hardware.CPU(
            model_name="ironic_fsm sandbox CPU", frequency="2000", count=2,
            architecture="x86_64", flags=["lm"], socket_count=1,
        )  # fmt: skip

    def get_memory(self) -> hardware.Memory:
        return hardware.Memory(total=4096 * MiB, physical_mb=4096)

    def list_block_devices(self, include_partitions=False, all_serial_and_wwn=False):  # type: ignore[no-untyped-def]
        disk = _disk()
        devices = [
            hardware.BlockDevice(
                name=disk, model="ironic_fsm sandbox loop", size=_size(disk), rotational=False,
                vendor="ironic_fsm", serial="ifsm-sandbox-disk",
            )
        ]  # fmt: skip
        if include_partitions:
            for part in _partitions(disk):
                devices.append(
                    hardware.BlockDevice(name=part, model="", size=_size(part), rotational=False)
                )
        return devices

    def get_os_install_device(self, permit_refresh=False):  # type: ignore[no-untyped-def]
        return _disk()

    def get_bmc_address(self) -> str:
        return "0.0.0.0"

    def get_bmc_v6address(self) -> str:
        return "::/0"

    def get_bmc_mac(self):  # type: ignore[no-untyped-def]
        raise errors.IncompatibleHardwareMethodError()

    def get_system_vendor_info(self) -> hardware.SystemVendorInfo:
        return hardware.SystemVendorInfo(
            product_name="ironic_fsm sandbox", serial_number="ifsm-0001",
            manufacturer="ironic_fsm",
            firmware=hardware.SystemFirmware(vendor="ironic_fsm", version="1", build_date="2026"),
        )  # fmt: skip

    def get_boot_info(self) -> hardware.BootInfo:
        return hardware.BootInfo(
            current_boot_mode="bios", pxe_interface=os.environ["IFSM_SANDBOX_MAC"]
        )

    def get_usb_devices(self) -> list[object]:
        return []

    # -- a step of the tests' own ----------------------------------------------------------

    def get_clean_steps(self, node, ports):  # type: ignore[no-untyped-def]
        """IPA's steps, and ``ifsm_mark_and_reboot`` (0: on request), which asks for a reboot."""
        return [
            *super().get_clean_steps(node, ports),
            {"step": "ifsm_mark_and_reboot", "priority": 0, "interface": "deploy",
             "reboot_requested": True, "abortable": True},
        ]  # fmt: skip

    def ifsm_mark_and_reboot(self, node, ports):  # type: ignore[no-untyped-def]
        """Notes that it ran (in the work folder, never on a disk); the conductor reboots."""
        with open(os.path.join(os.environ["HOME"], "marks.log"), "a") as marks:
            marks.write("ifsm_mark_and_reboot\n")

    # -- what IPA would do to the machine -------------------------------------------------

    def erase_pstore(self, node, ports):  # type: ignore[no-untyped-def]
        return None

    def clean_uefi_nvram(self, node, ports, match_patterns=None):  # type: ignore[no-untyped-def]
        return None

    def collect_system_logs(self, io_dict, file_list):  # type: ignore[no-untyped-def]
        return None

    def full_sync(self) -> None:
        # No /proc/sys/vm/drop_caches; the one device's buffers flushed.
        subprocess.run(["blockdev", "--flushbufs", _disk()], check=False)
