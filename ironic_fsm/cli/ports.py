"""``port`` and ``port group``: a node's network ports, as ``openstack baremetal port``
and ``openstack baremetal port group``."""

from __future__ import annotations

import argparse
from typing import Any, Final

from ironic_fsm.cli.records import CliKind, Option
from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import ResourceNotFound
from ironic_fsm.records import Port, Portgroup, Record

__all__ = ["PORT", "PORTGROUP"]

_PORT_LONG: Final = (
    "uuid", "address", "created_at", "extra", "node_uuid", "category", "vendor",
    "local_link_connection", "portgroup_uuid", "pxe_enabled", "physical_network",
    "updated_at", "internal_info", "is_smartnic", "name",
)  # fmt: skip
_GROUP_LONG: Final = (
    "uuid", "address", "created_at", "extra", "standalone_ports_supported", "node_uuid",
    "name", "updated_at", "internal_info", "mode", "properties", "physical_network", "category",
)  # fmt: skip


def _common(word: str) -> tuple[Option, ...]:
    return (
        Option("--name", "name", f"a unique name for the {word}"),
        Option("--extra", "extra", "an extra entry; repeatable", kind="dict"),
        Option("--physical-network", "physical_network", "the physical network it is on"),
        Option("--node", "node", f"move the {word} to this node", create=False, unset=False),
        Option("--address", "address", "a new MAC address", create=False, unset=False),
        Option("--uuid", "uuid", f"the {word}'s UUID (default: a new one)", set=False,
               unset=False),
    )  # fmt: skip


_PORT_OPTIONS: Final = (
    *_common("port"),
    Option("--port-group", "portgroup", "UUID or name of its port group"),
    Option("--description", "description", "what the port is"),
    Option("--local-link-connection", "local_link_connection",
           "switch_id, port_id, switch_info, hostname...; repeatable", kind="dict", unset=False),
    Option("--pxe-enabled", "pxe_enabled", "the node may PXE boot through it (default)",
           kind="const", value=True, unset=False),
    Option("--pxe-disabled", "pxe_enabled", "the node does not PXE boot through it",
           kind="const", value=False, unset=False),
    Option("--is-smartnic", "is_smartnic", "the port is a Smart NIC", kind="const", value=True),
    Option("--vendor", "vendor", "the port's vendor", set=False, unset=False),
    Option("--category", "category", "the port's category", set=False, unset=False),
)  # fmt: skip
_GROUP_OPTIONS: Final = (
    *_common("port group"),
    Option("--mode", "mode", "the bond's mode (default: active-backup)", unset=False),
    Option("--property", "properties", "a bond property; repeatable", kind="dict"),
    Option("--support-standalone-ports", "standalone_ports_supported",
           "its ports may boot alone (the default)", kind="const", value=True, unset=False),
    Option("--unsupport-standalone-ports", "standalone_ports_supported",
           "its ports may not boot alone", kind="const", value=False, unset=False),
)  # fmt: skip


def _port_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("address", metavar="ADDRESS", help="the port's MAC address")
    p.add_argument("--node", dest="owner", required=True, metavar="NODE",
                   help="UUID or name of its node")  # fmt: skip


def _group_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--node", dest="owner", required=True, metavar="NODE",
                   help="UUID or name of its node")  # fmt: skip
    p.add_argument("--address", metavar="ADDRESS", help="the group's MAC address")


def _filters(p: argparse.ArgumentParser, group: bool) -> None:
    p.add_argument("--node", metavar="NODE", help="only this node's")
    p.add_argument("--address", metavar="ADDRESS", help="only the one with this MAC address")
    if not group:
        p.add_argument("--port-group", metavar="PORT_GROUP", help="only this group's ports")


def _port_listing(c: Conductor, args: argparse.Namespace, page: dict[str, Any]) -> list[Port]:
    return c.list_ports(node=args.node, address=args.address, portgroup=args.port_group, **page)


def _group_listing(c: Conductor, args: argparse.Namespace, page: dict[str, Any]) -> list[Portgroup]:
    return c.list_portgroups(node=args.node, address=args.address, **page)


def _by_address(listing: Any, ident: str, word: str) -> Record:
    found = listing(address=ident)
    if not found:
        raise ResourceNotFound(f"{word} with address {ident} could not be found.", ident=ident)
    return found[0]  # type: ignore[no-any-return]


def _port(c: Conductor, ident: str) -> Record:
    """A port by UUID or name, or by MAC address (what ``show --address`` gives)."""
    if ident.count(":") == 5:
        return _by_address(c.list_ports, ident, "Port")
    return c.get_port(ident)


def _group(c: Conductor, ident: str) -> Record:
    if ident.count(":") == 5:
        return _by_address(c.list_portgroups, ident, "Port group")
    return c.get_portgroup(ident)


def _create_group(c: Conductor, args: argparse.Namespace, fields: dict[str, Any]) -> Record:
    if args.address is not None:
        fields["address"] = args.address
    return c.create_portgroup(args.owner, **fields)


PORT: Final = CliKind(
    noun="port", columns=("uuid", "address"), long=_PORT_LONG,
    shown=(*_PORT_LONG, "description", "available_for_dynamic_portgroup"),
    options=_PORT_OPTIONS, get=_port,
    listing=_port_listing,
    create=lambda c, args, fields: c.create_port(args.address, args.owner, **fields),
    update=lambda c, uuid, fields: c.update_port(uuid, **fields),
    delete=lambda c, ident: c.delete_port(ident),
    create_arguments=_port_arguments, list_arguments=lambda p: _filters(p, False),
)  # fmt: skip
PORTGROUP: Final = CliKind(
    noun="port group", columns=("uuid", "address", "name"), long=_GROUP_LONG,
    shown=_GROUP_LONG, options=_GROUP_OPTIONS, get=_group, listing=_group_listing,
    create=_create_group, update=lambda c, uuid, fields: c.update_portgroup(uuid, **fields),
    delete=lambda c, ident: c.delete_portgroup(ident),
    create_arguments=_group_arguments, list_arguments=lambda p: _filters(p, True),
)  # fmt: skip
