"""What an agent's inventory tells about its machine: properties, and the ports to make.

IPA posts the machine's inventory (``cpu``, ``memory``, ``disks``,
``interfaces``, ``boot``...) at inspection. Ironic's inspection hooks read
four properties from it (``cpus``, ``memory_mb``, ``cpu_arch``,
``local_gb``) and make ports from its interfaces as ``[inspector]add_ports``
says: ``all`` of them, the ``active`` ones (with an IP address), only the
``pxe`` one (the interface the ramdisk booted from; every valid one when
the inventory names none), or none (``disabled``). The ports the node has
already are then brought in line as ``[inspector]keep_ports`` and
``update_pxe_enabled`` say (:func:`port_changes`): ``all`` are kept, or
only those whose MAC the inventory has (``present``), or only those
``add_ports`` would have made (``added``); each kept port's
``pxe_enabled`` follows the interface the ramdisk booted from, and its
``client-id`` the inventory's. Pure functions: the inspect interface and
the conductor apply what they return.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from ironic_fsm.agent.macs import normalize_mac
from ironic_fsm.exceptions import InvalidParameterValue

__all__ = [
    "ADD_PORTS",
    "KEEP_PORTS",
    "PortChange",
    "PortWanted",
    "check_inventory",
    "port_changes",
    "ports_wanted",
    "properties_from",
]

#: Ironic's ``[inspector]add_ports`` values.
ADD_PORTS: Final = ("all", "active", "pxe", "disabled")
#: Ironic's ``[inspector]keep_ports`` values.
KEEP_PORTS: Final = ("all", "present", "added")
_GIB: Final = 1024**3
#: IPA's smallest root disk when it guesses one (``utils.guess_root_disk``).
_SMALLEST_ROOT: Final = 4 * _GIB


@attrs.frozen
class PortWanted:
    """A port inspection asks for: its MAC, whether the machine PXE boots from it, extra."""

    address: str
    pxe_enabled: bool
    extra: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class PortChange:
    """What inspection does to a port the node has: delete it, or set these fields."""

    address: str
    delete: bool = False
    pxe_enabled: bool | None = None
    client_id: str | None = None


@attrs.frozen
class _Interface:
    name: str
    address: str
    pxe: bool
    ip: str | None
    client_id: str | None


def check_inventory(node: str | None, inventory: object) -> dict[str, Any]:
    """The inventory if it has what Ironic asks of one: a non-empty ``interfaces`` list
    whose entries carry a string ``mac_address``; else :class:`InvalidParameterValue`."""
    if not isinstance(inventory, dict):
        raise InvalidParameterValue("The inventory must be a JSON object", node=node)
    interfaces = inventory.get("interfaces")
    if not isinstance(interfaces, list) or not interfaces:
        raise InvalidParameterValue(
            "The inventory must have a non-empty list of interfaces", node=node
        )
    for interface in interfaces:
        if not isinstance(interface, dict) or not isinstance(interface.get("mac_address"), str):
            raise InvalidParameterValue(
                "Each interface of the inventory must be an object with a mac_address string",
                node=node,
            )
    return inventory


def _failed(node: str, what: str, value: object) -> InvalidParameterValue:
    return InvalidParameterValue(
        f"Inventory has malformed or missing {what} information: {value!r} for node {node}.",
        node=node,
    )


def properties_from(
    node: str, inventory: Mapping[str, Any], plugin_data: Mapping[str, Any]
) -> dict[str, Any]:
    """``cpus``, ``memory_mb``, ``cpu_arch`` and ``local_gb`` as Ironic's hooks set them.

    ``cpus`` only when the agent counted some; ``local_gb`` from the root
    disk the agent chose (``plugin_data["root_disk"]``, else the smallest
    disk of 4 GiB or more, as IPA guesses), whole GiB less one for the
    partition table, 0 without one.
    """
    cpu = inventory.get("cpu")
    memory = inventory.get("memory")
    found: dict[str, Any] = {}
    try:
        count = int((cpu or {}).get("count") or 0)
    except (TypeError, ValueError, AttributeError):
        raise _failed(node, "CPU", cpu) from None
    if count > 0:
        found["cpus"] = count
    try:
        found["memory_mb"] = int(memory["physical_mb"])  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        raise _failed(node, "memory", memory) from None
    architecture = cpu.get("architecture") if isinstance(cpu, dict) else None
    if not isinstance(architecture, str) or not architecture:
        raise _failed(node, "CPU architecture", cpu)
    found["cpu_arch"] = architecture
    found["local_gb"] = _local_gb(plugin_data.get("root_disk") or _root_disk(inventory))
    return found


def _root_disk(inventory: Mapping[str, Any]) -> Mapping[str, Any] | None:
    disks = [
        disk
        for disk in inventory.get("disks") or ()
        if isinstance(disk, dict) and isinstance(disk.get("size"), int)
    ]
    big = sorted((d for d in disks if d["size"] >= _SMALLEST_ROOT), key=lambda d: d["size"])
    return big[0] if big else None


def _local_gb(root_disk: object) -> int:
    size = root_disk.get("size") if isinstance(root_disk, dict) else None
    whole = size // _GIB if isinstance(size, int) else 0
    return whole - 1 if whole > 0 else 0


def _pxe_mac(inventory: Mapping[str, Any]) -> str | None:
    """The MAC the machine booted from (``boot.pxe_interface``; pxelinux's ``01-aa-..``)."""
    boot = inventory.get("boot")
    mac = boot.get("pxe_interface") if isinstance(boot, dict) else None
    if not isinstance(mac, str) or not mac:
        return None
    if "-" in mac:
        mac = mac.split("-", 1)[1].replace("-", ":")
    return normalize_mac(mac)


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address.split("%")[0]).is_loopback
    except ValueError:
        return False


def _interfaces(inventory: Mapping[str, Any]) -> list[_Interface]:
    """Every interface with a name and a valid MAC (Ironic's ``all_interfaces``)."""
    pxe_mac = _pxe_mac(inventory)
    found = []
    for interface in inventory.get("interfaces") or ():
        name = interface.get("name")
        mac = normalize_mac(str(interface.get("mac_address") or ""))
        if not name or mac is None:
            continue
        ip = interface.get("ipv4_address") or interface.get("ipv6_address")
        client_id = interface.get("client_id")
        found.append(_Interface(str(name), mac, mac == pxe_mac, str(ip) if ip else None,
                                str(client_id) if client_id else None))  # fmt: skip
    return found


def ports_wanted(inventory: Mapping[str, Any], add_ports: str) -> list[PortWanted]:
    """The ports ``add_ports`` asks for from the inventory's valid interfaces (named, with a
    valid MAC, not loopback); none for ``disabled``."""
    if add_ports not in ADD_PORTS:
        raise InvalidParameterValue(f"add_ports must be one of {', '.join(ADD_PORTS)}")
    if add_ports == "disabled":
        return []
    return list(_valid(inventory, add_ports).values())


def _valid(inventory: Mapping[str, Any], add_ports: str) -> dict[str, PortWanted]:
    """The interfaces ``add_ports`` keeps (Ironic's ``valid_interfaces``), by MAC."""
    pxe_known = _pxe_mac(inventory) is not None
    wanted: dict[str, PortWanted] = {}
    for interface in _interfaces(inventory):
        ip = interface.ip
        if interface.name == "lo" or (ip and _is_loopback(ip)):
            continue
        if add_ports == "pxe" and pxe_known and not interface.pxe:
            continue
        if add_ports == "active" and not ip:
            continue
        extra = {"client-id": interface.client_id} if interface.client_id else {}
        wanted.setdefault(interface.address, PortWanted(interface.address, interface.pxe, extra))
    return wanted


def port_changes(
    inventory: Mapping[str, Any],
    ports: Sequence[tuple[str, bool, Mapping[str, Any]]],
    *,
    add_ports: str,
    keep_ports: str,
    update_pxe_enabled: bool,
) -> list[PortChange]:
    """What inspection changes of the node's ``ports`` (address, pxe_enabled, extra).

    ``keep_ports``: ``all`` keeps every port; ``present`` only those whose
    MAC some interface has; ``added`` only those ``add_ports`` asks for (when
    either set is empty, every port is kept, as Ironic does). With
    ``update_pxe_enabled`` a kept port's ``pxe_enabled`` says whether the
    ramdisk booted from it; a ``client_id`` the inventory reports replaces
    the port's ``extra['client-id']``.
    """
    if keep_ports not in KEEP_PORTS:
        raise InvalidParameterValue(f"keep_ports must be one of {', '.join(KEEP_PORTS)}")
    every = _interfaces(inventory)
    expected: set[str] = set()
    if keep_ports == "present":
        expected = {interface.address for interface in every}
    elif keep_ports == "added":
        expected = set(_valid(inventory, add_ports)) if add_ports in ADD_PORTS else set()
    pxe_macs = {interface.address for interface in every if interface.pxe}
    client_ids = {interface.address: interface.client_id for interface in every}
    changes = []
    for address, pxe_enabled, extra in ports:
        if expected and address not in expected:
            changes.append(PortChange(address, delete=True))
            continue
        pxe = address in pxe_macs
        new_pxe = pxe if update_pxe_enabled and pxe != pxe_enabled else None
        client_id = client_ids.get(address)
        new_client = client_id if client_id and client_id != extra.get("client-id") else None
        if new_pxe is not None or new_client is not None:
            changes.append(PortChange(address, pxe_enabled=new_pxe, client_id=new_client))
    return changes
