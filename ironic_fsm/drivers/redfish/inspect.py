"""``redfish`` inspection: properties from the system's inventory, out-of-band."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from ironic_fsm import states
from ironic_fsm.drivers.common import GIB, capabilities
from ironic_fsm.drivers.redfish.driver_info import (
    BOOT_MODES_REV,
    RedfishInfo,
    _info,
    _RedfishValidation,
)
from ironic_fsm.drivers.redfish.session import _bmc, _get_system, _sushy, _value
from ironic_fsm.interfaces import InspectInterface
from ironic_fsm.task import Task

__all__ = ["RedfishInspect"]

LOG = logging.getLogger(__name__)

T = TypeVar("T")

_ARCH_BY_INSTRUCTION_SET: Final[Mapping[str, str]] = {
    "x86-64": "x86_64",
    "x86": "i686",
    "IA-64": "ia64",
    "ARM-A64": "aarch64",
    "ARM-A32": "armv7l",
    "MIPS64": "mips64",
    "MIPS32": "mips",
    "PowerISA": "ppc64le",
}
_ARCH_BY_ARCHITECTURE: Final[Mapping[str, str]] = {
    "x86": "x86_64",
    "IA-64": "ia64",
    "ARM": "aarch64",
    "MIPS": "mips64",
    "Power": "ppc64le",
}


def _set_capability(node: Any, key: str, value: str) -> None:
    raw = node.properties.get("capabilities")
    if isinstance(raw, dict):
        raw[key] = value
        return
    caps = capabilities(node)
    caps[key] = value
    node.properties["capabilities"] = ",".join(f"{k}:{v}" for k, v in caps.items())


def _optional(task: Task, info: RedfishInfo, what: str, fn: Callable[[], T], default: T) -> T:
    """``fn()``, or ``default`` when the BMC does not offer (or fails to serve) that part.

    Inspection takes what the BMC reports: a missing link, a 404, or an
    error answer for one optional sub-resource costs that property, not
    the whole inspection. Authentication and connection errors still fail.
    """
    errors = _sushy().exceptions
    try:
        return fn()
    except (errors.MissingAttributeError, errors.ResourceNotFoundError):
        return default
    except errors.HTTPError as exc:
        if isinstance(exc, errors.AccessError):
            raise
        LOG.warning(
            "Node %s: BMC %s did not report the %s: HTTP %s",
            task.node.uuid,
            info.address,
            what,
            exc.status_code,
        )
        return default


def _enabled(resource: Any) -> bool:
    """Whether the BMC reports the resource enabled (or says nothing about its state).

    ``Status.State`` may be ``Disabled``, ``StandbyOffline``, ``Absent`` and
    more; Ironic takes only ``Enabled`` ones.
    """
    status = getattr(resource, "status", None)
    state = _value(getattr(status, "state", None)) if status is not None else None
    return state in (None, "Enabled")


#: Ids BMCs give the system-side NIC of the host interface, the USB LAN link to the BMC
#: itself (Lenovo XCC: ``ToManager``): never a NIC the node boots or is reached through.
_HOST_INTERFACE_IDS: Final = frozenset({"tomanager"})


def _host_interface_nics(system: Any) -> set[str]:
    """Paths of the system NICs its managers list as their host interfaces' (Redfish's way).

    sushy has no HostInterface resource: the three small documents are
    read through the system's own sushy connector, so sushy's errors,
    retries and timeouts apply.
    """
    conn = system._conn

    def get(path: Any) -> dict[str, Any]:
        doc = None
        if isinstance(path, str):
            with contextlib.suppress(ValueError):  # not JSON: nothing listed
                doc = conn.get(path).json()
        return doc if isinstance(doc, dict) else {}

    def links(doc: dict[str, Any]) -> list[Any]:
        return [m.get("@odata.id") for m in doc.get("Members") or [] if isinstance(m, dict)]

    found: set[str] = set()
    for manager in system.managers:
        collection = ((manager.json or {}).get("HostInterfaces") or {}).get("@odata.id")
        for member in links(get(collection)) if collection else []:
            nics = (get(member).get("HostEthernetInterfaces") or {}).get("@odata.id")
            found |= {str(p).rstrip("/") for p in links(get(nics)) if p} if nics else set()
    return found


def _node_nic(eth: Any, host_interface_nics: set[str]) -> bool:
    """Whether an EthernetInterface is one of the node's own, usable NICs."""
    if not eth.mac_address or not _enabled(eth):
        return False
    if str(eth.path).rstrip("/") in host_interface_nics:
        return False
    return str(eth.identity or "").lower() not in _HOST_INTERFACE_IDS


class RedfishInspect(_RedfishValidation, InspectInterface):
    """Properties from the system's inventory, synchronously (out-of-band).

    Sets ``memory_mb``, ``cpus``, ``cpu_arch`` and ``local_gb`` where the
    BMC reports them, ``macs`` (NIC MAC addresses, lower case, sorted) and
    the ``boot_mode`` capability; leaves other properties alone.
    """

    def _cpus(self, task: Task, info: RedfishInfo, system: Any) -> tuple[int | None, str | None]:
        def from_processors() -> tuple[int | None, str | None]:
            # Not sushy's ``summary``: it adds up every member, and real BMCs
            # list GPUs and accelerators as Processors too, and sockets that
            # are empty or disabled.
            count = 0
            arch = None
            for proc in system.processors.get_members():
                kind = _value(proc.processor_type)
                if kind not in (None, "CPU") or not _enabled(proc):
                    continue
                count += proc.total_threads or proc.total_cores or 0
                arch = arch or _ARCH_BY_INSTRUCTION_SET.get(_value(proc.instruction_set) or "")
                arch = arch or _ARCH_BY_ARCHITECTURE.get(_value(proc.processor_architecture) or "")
            return (count or None), arch

        unknown: tuple[int | None, str | None] = (None, None)
        count, arch = _optional(task, info, "processors", from_processors, unknown)
        if count is None:
            # Some BMCs give only the summary on the system itself.
            summary_count = (system.json.get("ProcessorSummary") or {}).get("Count")
            if isinstance(summary_count, int) and summary_count > 0:
                count = summary_count
        return count, arch

    def _disk_bytes(self, task: Task, info: RedfishInfo, system: Any) -> list[int]:
        def from_storage() -> list[int]:
            sizes: list[int] = []
            for storage in system.storage.get_members():
                volumes = [v.capacity_bytes for v in storage.volumes.get_members()]
                sizes += [v for v in volumes if v] or [
                    d.capacity_bytes for d in storage.drives if d.capacity_bytes
                ]
            return sizes

        def from_simple_storage() -> list[int]:
            return [
                dev.capacity_bytes
                for ss in system.simple_storage.get_members()
                for dev in ss.devices or []
                if dev.capacity_bytes
            ]

        return _optional(task, info, "storage", from_storage, []) or _optional(
            task, info, "simple storage", from_simple_storage, []
        )

    def inspect_hardware(self, task: Task) -> str:
        info = _info(task)
        node = task.node
        found: dict[str, Any] = {}
        with _bmc(task, info, "inspect hardware"):
            system = _get_system(info)
            memory = system.memory_summary
            if memory is not None and memory.size_gib:
                found["memory_mb"] = int(memory.size_gib) * 1024
            cpus, arch = self._cpus(task, info, system)
            if cpus:
                found["cpus"] = cpus
            if arch:
                found["cpu_arch"] = arch
            sizes = self._disk_bytes(task, info, system)
            if sizes:
                # Ironic's convention: the largest disk, minus 1 GiB for partitioning.
                found["local_gb"] = max(0, max(sizes) // GIB - 1)
            no_macs: list[str] = []
            host_nics = _optional(
                task, info, "host interfaces", lambda: _host_interface_nics(system), set[str]()
            )
            macs = _optional(
                task,
                info,
                "network interfaces",
                lambda: sorted(
                    {
                        str(eth.mac_address).lower()
                        for eth in system.ethernet_interfaces.get_members()
                        if _node_nic(eth, host_nics)
                    }
                ),
                no_macs,
            )
            mode = BOOT_MODES_REV.get(_value(system.boot.mode) or "")
        node.properties.update(found)
        if macs:
            node.properties["macs"] = macs
        if mode:
            _set_capability(node, "boot_mode", mode)
        LOG.info(
            "Node %s: inspected through BMC %s: %s, %d MAC(s)",
            node.uuid,
            info.address,
            found,
            len(macs),
        )
        return states.MANAGEABLE

    def abort(self, task: Task) -> None:
        """Nothing to abort: inspection is synchronous."""
