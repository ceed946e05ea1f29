"""``port create|list|show|set|unset|delete``: a node's network ports.

Shaped like ``openstack baremetal port``: the same options and columns
(named by their fields, as python-ironicclient 6 prints them), and the
conductor's answer (:meth:`Conductor.create_port` and friends), so the CLI,
the library and the API agree.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, Final

from ironic_fsm.cli.argtypes import _key_value
from ironic_fsm.cli.database import _open_conductor
from ironic_fsm.cli.output import emit_list, emit_one
from ironic_fsm.exceptions import ResourceNotFound
from ironic_fsm.records import Port, Record

#: ``port list`` columns, and ``--long``'s (python-ironicclient's, in its order).
PORT_COLUMNS: Final = ("uuid", "address")
PORT_LONG_COLUMNS: Final = (
    "uuid", "address", "created_at", "extra", "node_uuid", "category", "vendor",
    "local_link_connection", "portgroup_uuid", "pxe_enabled", "physical_network",
    "updated_at", "internal_info", "is_smartnic", "name",
)  # fmt: skip
#: Every field ``port show`` prints.
PORT_SHOW_FIELDS: Final = (*PORT_LONG_COLUMNS, "description")


def record_fields(record: Record) -> dict[str, Any]:
    """A record's fields as the API shows them: times in ISO 8601."""
    shown = record.to_dict()
    for name in ("created_at", "updated_at"):
        value = shown[name]
        shown[name] = None if value is None else value.isoformat()
    return shown


def _pairs(values: list[tuple[str, Any]] | None) -> dict[str, Any]:
    return dict(values or ())


def _cmd_port_create(args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {}
    for name in ("uuid", "name", "physical_network", "description", "vendor", "category"):
        value = getattr(args, name, None)
        if value is not None:
            fields[name] = value
    if args.port_group is not None:
        fields["portgroup"] = args.port_group
    if args.extra:
        fields["extra"] = _pairs(args.extra)
    if args.local_link_connection:
        fields["local_link_connection"] = _pairs(args.local_link_connection)
    if args.pxe_enabled is not None:
        fields["pxe_enabled"] = args.pxe_enabled
    if args.is_smartnic:
        fields["is_smartnic"] = True
    with _open_conductor(args) as conductor:
        port = conductor.create_port(args.address, args.node, **fields)
    emit_one(args, _shown(port, None))
    return 0


def _shown(port: Port, fields: list[str] | None) -> dict[str, Any]:
    record = record_fields(port)
    names = fields or PORT_SHOW_FIELDS
    return {name: record.get(name) for name in names}


def _cmd_port_list(args: argparse.Namespace) -> int:
    columns = (
        tuple(dict.fromkeys(f for group in args.fields for f in group))
        if args.fields
        else PORT_LONG_COLUMNS
        if args.long
        else PORT_COLUMNS
    )
    sort_key, _, sort_dir = (args.sort or "id").partition(":")
    with _open_conductor(args) as conductor:
        ports = conductor.list_ports(
            node=args.node, address=args.address, portgroup=args.port_group,
            limit=args.limit or None, marker=args.marker, sort_key=sort_key,
            sort_dir=sort_dir or "asc",
        )  # fmt: skip
    records = [record_fields(port) for port in ports]
    emit_list(args, columns, [[record.get(c) for c in columns] for record in records])
    return 0


def _find(conductor: Any, ident: str, by_address: bool) -> Port:
    if not by_address:
        port: Port = conductor.get_port(ident)
        return port
    found = conductor.list_ports(address=ident)
    if not found:
        raise ResourceNotFound(f"Port with address {ident} could not be found.", ident=ident)
    return found[0]  # type: ignore[no-any-return]


def _cmd_port_show(args: argparse.Namespace) -> int:
    fields = list(dict.fromkeys(f for group in args.fields for f in group)) if args.fields else None
    with _open_conductor(args) as conductor:
        port = _find(conductor, args.port, args.by_address)
    emit_one(args, _shown(port, fields))
    return 0


def _set_fields(args: argparse.Namespace, port: Port) -> dict[str, Any]:
    """``port set``: the options given, dicts merged into the port's."""
    fields: dict[str, Any] = {}
    for name in ("address", "node", "name", "physical_network", "description"):
        value = getattr(args, name, None)
        if value is not None:
            fields[name] = value
    if args.port_group is not None:
        fields["portgroup"] = args.port_group
    for name in ("extra", "local_link_connection"):
        if getattr(args, name):
            fields[name] = {**getattr(port, name), **_pairs(getattr(args, name))}
    if args.pxe_enabled is not None:
        fields["pxe_enabled"] = args.pxe_enabled
    if args.is_smartnic:
        fields["is_smartnic"] = True
    return fields


def _unset_fields(args: argparse.Namespace, port: Port) -> dict[str, Any]:
    """``port unset``: the fields cleared, the ``--extra`` keys removed."""
    fields: dict[str, Any] = {
        name: None
        for name in ("name", "physical_network", "description")
        if getattr(args, f"unset_{name}")
    }
    if args.extra:
        fields["extra"] = {k: v for k, v in port.extra.items() if k not in args.extra}
    if args.port_group:
        fields["portgroup"] = None
    if args.is_smartnic:
        fields["is_smartnic"] = False
    return fields


def _change(args: argparse.Namespace, fields_of: Callable[..., dict[str, Any]]) -> int:
    with _open_conductor(args) as conductor:
        port = conductor.get_port(args.port)
        fields = fields_of(args, port)
        if fields:
            conductor.update_port(port.uuid, **fields)
    return 0


def _cmd_port_delete(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        for ident in args.ports:
            conductor.delete_port(ident)
            print(f"Deleted port {ident}")
    return 0


def add_port_options(p: argparse.ArgumentParser, *, creating: bool) -> None:
    """The options ``port create`` and ``port set`` share (OSC's names)."""
    p.add_argument("--name", help="a unique name for the port")
    p.add_argument("--port-group", metavar="PORT_GROUP", help="UUID or name of its port group")
    p.add_argument("--physical-network", metavar="NAME", help="the physical network it is on")
    p.add_argument("--description", help="what the port is")
    p.add_argument(
        "--local-link-connection", metavar="KEY=VALUE", action="append",
        type=_key_value, help="switch_id, port_id, switch_info, hostname...; repeatable",
    )  # fmt: skip
    p.add_argument(
        "--extra", metavar="KEY=VALUE", action="append", type=_key_value,
        help="extra entry; repeatable",
    )  # fmt: skip
    pxe = p.add_mutually_exclusive_group()
    pxe.add_argument(
        "--pxe-enabled",
        dest="pxe_enabled",
        action="store_const",
        const=True,
        help="the node may PXE boot through this port (the default)",
    )
    pxe.add_argument("--pxe-disabled", dest="pxe_enabled", action="store_const", const=False,
                     help="the node does not PXE boot through this port")  # fmt: skip
    p.add_argument("--is-smartnic", action="store_true", help="the port is a Smart NIC")
    if creating:
        p.add_argument("--uuid", help="the port's UUID (default: a new one)")
        p.add_argument("--vendor", help="the port's vendor")
        p.add_argument("--category", help="the port's category")
    else:
        p.add_argument("--address", help="a new MAC address")
        p.add_argument("--node", metavar="NODE", help="move the port to this node")


COMMANDS: Final = {
    "create": _cmd_port_create,
    "list": _cmd_port_list,
    "show": _cmd_port_show,
    "set": lambda args: _change(args, _set_fields),
    "unset": lambda args: _change(args, _unset_fields),
    "delete": _cmd_port_delete,
}
