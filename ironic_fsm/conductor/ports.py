"""Ports: a node's network interfaces, found by MAC address (the agent's lookup).

Each method checks everything before the store is touched, so a refused
call changes nothing; the store keeps addresses and names unique
(:class:`~ironic_fsm.exceptions.ResourceExists`, nothing written).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import attrs

from ironic_fsm.conductor.common import check_ident, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.records import (
    Shelf,
    check_dict,
    check_flag,
    check_known,
    check_text,
    new_uuid,
    normalize_mac,
)
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    InvalidState,
    NodeNotFound,
    ResourceNotFound,
)
from ironic_fsm.node import Node, is_uuid_like
from ironic_fsm.records import Port, Portgroup
from ironic_fsm.stores.base import RecordQuery

__all__ = ["PORT_FIELDS", "Ports"]

#: What a caller may set on a port (``node`` and ``portgroup`` by UUID or name).
PORT_FIELDS: Final = frozenset(
    {
        "address", "node", "name", "portgroup", "pxe_enabled", "local_link_connection",
        "physical_network", "is_smartnic", "extra", "internal_info", "description", "vendor",
        "category", "available_for_dynamic_portgroup",
    }
)  # fmt: skip
_LINK_KEYS: Final = frozenset(
    {"port_id", "switch_id", "hostname", "switch_info", "network_type",
     "vtep-logical-switch", "vtep-physical-switch"}
)  # fmt: skip
#: An OpenFlow datapath ID: what a switch_id may be when it is not a MAC address.
_DATAPATH_DIGITS: Final = 16


def _switch_id(value: str) -> str:
    lowered = value.lower()
    try:
        return normalize_mac(lowered, "switch_id")
    except InvalidParameterValue:
        digits = lowered.replace(":", "")
        if len(digits) == _DATAPATH_DIGITS and all(c in "0123456789abcdef" for c in digits):
            return lowered
    raise InvalidParameterValue(
        f"Invalid local_link_connection: switch_id {shown(value)} is neither a MAC address "
        "nor an OpenFlow datapath ID",
        field="local_link_connection",
    )


def check_local_link(value: object, smartnic: bool) -> dict[str, Any]:
    """Ironic's shapes of ``local_link_connection``: a switch port, a smart NIC's host,
    an unmanaged link, an OVN VTEP, or nothing."""
    link = check_dict(value, "local_link_connection", "Port")
    problems = [f"unknown key {k!r}" for k in sorted(set(link) - _LINK_KEYS)]
    problems += [f"{k} must be a string" for k, v in sorted(link.items()) if type(v) is not str]
    if link.get("network_type", "managed") not in ("managed", "unmanaged"):
        problems.append("network_type must be managed or unmanaged")
    vtep = {"vtep-logical-switch", "vtep-physical-switch"} & set(link)
    if len(vtep) == 1:
        problems.append("vtep-logical-switch and vtep-physical-switch go together")
    keys = set(link)
    shaped = (
        not link
        or {"port_id", "switch_id"} <= keys
        or {"port_id", "hostname"} <= keys
        or link.get("network_type") == "unmanaged"
        or {"port_id", "vtep-logical-switch", "vtep-physical-switch"} <= keys
    )
    if not shaped:
        problems.append("it needs port_id and switch_id (or hostname for a smart NIC)")
    if smartnic and not {"port_id", "hostname"} <= keys:
        raise InvalidParameterValue(
            "Smart NIC port must have port_id and hostname in local_link_connection",
            field="local_link_connection",
        )
    if problems:
        raise InvalidParameterValue(
            f"Invalid local_link_connection: {'; '.join(problems)}", field="local_link_connection"
        )
    if "switch_id" in link:
        link = {**link, "switch_id": _switch_id(link["switch_id"])}
    return link


class Ports:
    """Create, read, change and delete ports; find a node by its ports' addresses."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._ports = Shelf(ctx, Port)
        self._groups = Shelf(ctx, Portgroup)

    def _node(self, ident: object) -> Node:
        return self._ctx.caps.store.get(check_ident(ident))

    # -- reading ---------------------------------------------------------------------

    def get_port(self, ident: str) -> Port:
        """The port with this UUID or name; ``ResourceNotFound`` if none."""
        return self._ports.find(ident)

    def list_ports(
        self,
        *,
        node: str | None = None,
        address: str | None = None,
        portgroup: str | None = None,
        shard: Iterable[str] | None = None,
        limit: int | None = None,
        marker: str | None = None,
        sort_key: str = "id",
        sort_dir: str = "asc",
    ) -> list[Port]:
        """One page of ports, by creation unless ``sort_key`` says otherwise.

        ``node`` and ``portgroup`` are a UUID or name (an unknown one is
        ``NodeNotFound`` / ``ResourceNotFound``); ``address`` a MAC address
        (any case); ``shard`` the shards whose nodes' ports are wanted.
        """
        filters: dict[str, Any] = {}
        if node is not None:
            filters["node_uuid"] = self._node(node).uuid
        if portgroup is not None:
            filters["portgroup_uuid"] = self._groups.find(portgroup).uuid
        if address is not None:
            filters["address"] = normalize_mac(address)
        if shard is not None:
            wanted = list(shard)
            nodes = self._ctx.caps.list_page(shard=wanted) if len(wanted) == 1 else [
                n for name in wanted for n in self._ctx.caps.list_page(shard=name)
            ]  # fmt: skip
            filters["node_uuid"] = tuple(n.uuid for n in nodes)
        query = RecordQuery(filters, limit, marker, sort_key, sort_dir)
        return self._ports.page(query)

    def node_by_addresses(self, addresses: Iterable[str]) -> Node:
        """The node whose ports have these MAC addresses (the agent's lookup).

        Raises:
            NodeNotFound: no port has any of them.
            InvalidState: they belong to ports of several nodes.
        """
        macs = sorted({normalize_mac(a, "addresses") for a in addresses})
        if not macs:
            raise InvalidParameterValue("A lookup needs at least one MAC address")
        query = RecordQuery({"address": tuple(macs)})
        owners = {port.node_uuid for port in self._ports.page(query)}
        if not owners:
            raise NodeNotFound(
                f"Node with MAC address(es) {', '.join(macs)} could not be found.",
                addresses=macs,
            )
        if len(owners) > 1:
            raise InvalidState(
                f"MAC addresses {', '.join(macs)} belong to ports of several nodes: "
                f"{', '.join(sorted(owners))}",
                nodes=sorted(owners),
            )
        return self._ctx.caps.store.get(owners.pop())

    # -- writing ---------------------------------------------------------------------

    def create_port(self, address: str, node: str, *, uuid: str | None = None,
                    **fields: Any) -> Port:  # fmt: skip
        """A new port of ``node`` (UUID or name) with MAC ``address``.

        Raises:
            InvalidParameterValue: a field is wrong (the message names it).
            NodeNotFound: no such node.
            ResourceExists: another port has the address, name or UUID.
        """
        port = Port(uuid=new_uuid(Port, uuid), address="", node_uuid="")
        return self._ports.add(self._apply(port, {"address": address, "node": node, **fields}))

    def update_port(self, ident: str, **fields: Any) -> Port:
        """Change some of a port's fields (those of :data:`PORT_FIELDS`); all or nothing."""
        port = self.get_port(ident)
        return self._ports.replace(self._apply(port, fields))

    def delete_port(self, ident: str) -> None:
        self._ports.delete(self.get_port(ident))

    def _apply(self, port: Port, fields: dict[str, Any]) -> Port:
        """``port`` with ``fields`` set, every one checked, and the combination too."""
        check_known(fields, PORT_FIELDS, "port")
        changes: dict[str, Any] = {}
        for field, value in fields.items():
            changes.update(self._checked(field, value))
        new = attrs.evolve(port, **changes)
        if new.is_smartnic or "local_link_connection" in changes:
            new.local_link_connection = check_local_link(new.local_link_connection, new.is_smartnic)
        if new.portgroup_uuid is not None and (
            "portgroup_uuid" in changes or "node_uuid" in changes or "pxe_enabled" in changes
        ):
            self._check_group(new)
        return new

    def _checked(self, field: str, value: Any) -> dict[str, Any]:
        word = "Port"
        if field == "address":
            return {"address": normalize_mac(value)}
        if field == "node":
            return {"node_uuid": self._node(value).uuid}
        if field == "portgroup":
            if value is None:
                return {"portgroup_uuid": None}
            return {"portgroup_uuid": self._groups.find(value).uuid}
        if field == "name":
            name = check_text(value, "name", word)
            if name is not None and is_uuid_like(name):
                raise InvalidParameterValue(f"Port name {name!r} looks like a UUID", field=field)
            return {"name": name}
        if field in ("pxe_enabled", "is_smartnic", "available_for_dynamic_portgroup"):
            return {field: check_flag(value, field, word)}
        if field in ("extra", "internal_info", "local_link_connection"):
            return {field: check_dict(value, field, word)}
        if field == "physical_network":
            return {field: check_text(value, field, word, most=64)}
        most = {"description": 255, "vendor": 32, "category": 80}[field]
        return {field: check_text(value, field, word, most=most, empty=True)}

    def _check_group(self, port: Port) -> None:
        """A port joins a group of its own node; a PXE port only one that takes standalone
        ports (Ironic's two rules)."""
        assert port.portgroup_uuid is not None
        try:
            group = self._groups.records.get_record(Portgroup, port.portgroup_uuid)
        except ResourceNotFound:
            raise InvalidParameterValue(
                f"Portgroup {port.portgroup_uuid} could not be found.", field="portgroup_uuid"
            ) from None
        if group.node_uuid != port.node_uuid:
            raise InvalidParameterValue(
                "Port can not be added to a portgroup belonging to a different node.",
                field="portgroup_uuid",
            )
        if port.pxe_enabled and not group.standalone_ports_supported:
            raise InvalidState(
                f"Port group {group.uuid} doesn't support standalone ports. This port cannot "
                "be a member of that portgroup as the port's 'pxe_enabled' field is True.",
                portgroup=group.uuid,
            )
