"""The output formats of Ironic's client (``-f``, ``-c``): tables, json, yaml, value, csv."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from ironic_fsm._unstored import UNSTORED_FIELDS
from ironic_fsm.cli.errors import _usage_error
from ironic_fsm.exceptions import (
    MissingDependency,
)
from ironic_fsm.node import NODE_FIELDS

if TYPE_CHECKING:
    from ironic_fsm.node import Node

# Columns are named by their fields, as python-ironicclient 6 prints and takes
# them (``-c provision_state``), in its order.

#: ``node list`` columns: ``openstack baremetal node list``'s.
_LIST_FIELDS: Final = (
    "uuid", "name", "instance_uuid", "power_state", "provision_state", "maintenance",
)  # fmt: skip
#: ``node list --long``: the client's detailed columns, in its order
#: (python-ironicclient 6.3, ``NODE_DETAILED_RESOURCE``).
LONG_COLUMNS: Final = (
    "allocation_uuid", "automated_clean", "bios_interface", "boot_interface", "boot_mode",
    "chassis_uuid", "clean_step", "conductor", "conductor_group", "console_enabled",
    "console_interface", "created_at", "raid_config", "deploy_interface", "deploy_step",
    "description", "disable_power_off", "driver", "driver_info", "driver_internal_info",
    "extra", "fault", "firmware_interface", "health", "inspect_interface",
    "inspection_finished_at", "inspection_started_at", "instance_info", "instance_name",
    "instance_uuid", "last_error", "lessee", "maintenance", "maintenance_reason",
    "management_interface", "name", "network_data", "network_interface", "owner",
    "parent_node", "power_interface", "power_state", "properties", "protected",
    "protected_reason", "provision_updated_at", "provision_state", "raid_interface",
    "rescue_interface", "reservation", "resource_class", "retired", "retired_reason",
    "secure_boot", "storage_interface", "target_power_state", "target_provision_state",
    "target_raid_config", "traits", "uuid", "updated_at", "vendor_interface",
)  # fmt: skip
#: The stored fields among them (read from the store); the others are not kept here.
_LONG_FIELDS: Final = tuple(field for field in LONG_COLUMNS if field in NODE_FIELDS)
#: What the others show: Ironic's value for a node without them (no conductor: none runs here).
_NOT_STORED: Final = {**UNSTORED_FIELDS, "conductor": None}


# -- output -------------------------------------------------------------------------

_LIST_FORMATS: Final = ("table", "json", "yaml", "value", "csv")
_SHOW_FORMATS: Final = ("table", "json", "yaml", "value")
_CSV_QUOTING: Final = ("all", "minimal", "none", "nonnumeric")


class Cell(NamedTuple):
    """A value people read one way (table, value, csv) and programs another (json, yaml)."""

    human: str
    machine: Any


def _text(value: object) -> str:
    """How a value reads in a table, ``value`` or ``csv`` output: one string."""
    if isinstance(value, Cell):
        return value.human
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _machine(value: object) -> Any:
    return value.machine if isinstance(value, Cell) else value


def _import_formatter(module: str, package: str) -> Any:
    """The formatter library; a core dependency, but say so plainly if it is gone."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(
            f"this output format needs {package}, which is not installed: pip install {package}",
            extra="core",
        ) from exc


def _pretty_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    prettytable = _import_formatter("prettytable", "prettytable")
    table = prettytable.PrettyTable(list(headers))
    table.align = "l"
    for row in rows:
        table.add_row([_text(value) for value in row])
    # Numbers read better right-aligned, as Ironic's client shows them.
    if rows:
        for header, value in zip(headers, rows[0], strict=True):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                table.align[header] = "r"
    return str(table.get_string())


def _dump_json(data: object, args: argparse.Namespace) -> str:
    indent = None if getattr(args, "noindent", False) else 2
    return json.dumps(data, indent=indent, default=str)


def _dump_yaml(data: object) -> str:
    yaml = _import_formatter("yaml", "PyYAML")
    return str(yaml.safe_dump(data, default_flow_style=False, allow_unicode=True))


def _pick_columns(
    args: argparse.Namespace, names: Sequence[str], rows: Sequence[Sequence[object]]
) -> tuple[list[str], list[list[object]]]:
    """The ``-c`` columns, in the output's order as cliff does; an unknown one is bad usage."""
    wanted: list[str] = getattr(args, "columns", None) or []
    if not wanted:
        return list(names), [list(row) for row in rows]
    unknown = [name for name in wanted if name not in names]
    if unknown:
        _usage_error(
            args,
            f"-c/--column: no column {unknown[0]!r} here; the columns are: "
            + ", ".join(repr(name) for name in names),
        )
    keep = [i for i, name in enumerate(names) if name in wanted]
    return [names[i] for i in keep], [[row[i] for i in keep] for row in rows]


def emit_list(
    args: argparse.Namespace, headers: Sequence[str], rows: Sequence[Sequence[object]]
) -> None:
    """Print rows in the chosen ``-f`` format, as Ironic's client prints its lists."""
    headers, table = _pick_columns(args, headers, rows)
    fmt: str = args.format
    out = sys.stdout
    if fmt == "table":
        if table or args.print_empty:
            out.write(_pretty_table(headers, table) + "\n")
    elif fmt in ("json", "yaml"):
        data = [
            {header: _machine(value) for header, value in zip(headers, row, strict=True)}
            for row in table
        ]
        out.write(_dump_json(data, args) + "\n" if fmt == "json" else _dump_yaml(data))
    elif fmt == "value":
        for row in table:
            out.write(" ".join(_text(value) for value in row) + "\n")
    else:
        import csv

        # csv.QUOTE_ALL, QUOTE_MINIMAL, QUOTE_NONE or QUOTE_NONNUMERIC, as cliff's --quote.
        quoting = getattr(csv, f"QUOTE_{args.quote_mode.upper()}")
        # The escape character lets --quote none write any value instead of failing.
        writer = csv.writer(out, quoting=quoting, escapechar="\\", lineterminator="\n")
        writer.writerow(headers)
        for row in table:
            writer.writerow(
                [
                    _text(value) if isinstance(value, (Cell, dict, list, tuple)) else value
                    for value in row
                ]
            )


def emit_one(args: argparse.Namespace, data: Mapping[str, object], ordered: bool = False) -> None:
    """Print one record (field, value) in the chosen ``-f`` format: fields sorted by name, or
    in ``data``'s own order when ``ordered`` (a node, in the order the client prints it)."""
    names = list(data) if ordered else sorted(data)
    fields, (values,) = _pick_columns(args, names, [[data[name] for name in names]])
    fmt: str = args.format
    out = sys.stdout
    if fmt == "table":
        out.write(_pretty_table(("Field", "Value"), list(zip(fields, values, strict=True))))
        out.write("\n")
    elif fmt in ("json", "yaml"):
        record = {name: _machine(value) for name, value in zip(fields, values, strict=True)}
        out.write(_dump_json(record, args) + "\n" if fmt == "json" else _dump_yaml(record))
    else:
        for value in values:
            out.write(_text(value) + "\n")


def _label(node: Node) -> str:
    """How messages name a node: its name (which the operator typed) and its UUID."""
    return f"{node.name} ({node.uuid})" if node.name else node.uuid


#: ``node show``'s fields, in the order Ironic's API returns them and
#: ``openstack baremetal node show`` prints them (1.115).
SHOW_COLUMNS: Final = (
    "uuid", "driver", "driver_info", "properties", "extra", "instance_info", "chassis_uuid",
    "instance_uuid", "maintenance", "maintenance_reason", "provision_state",
    "target_provision_state", "provision_updated_at", "power_state", "target_power_state",
    "console_enabled", "last_error", "reservation", "created_at", "updated_at",
    "driver_internal_info", "name", "inspection_started_at", "inspection_finished_at",
    "clean_step", "raid_config", "target_raid_config", "network_interface", "resource_class",
    "boot_interface", "deploy_interface", "inspect_interface", "management_interface",
    "power_interface", "raid_interface", "vendor_interface", "console_interface",
    "storage_interface", "traits", "rescue_interface", "bios_interface", "fault", "deploy_step",
    "conductor_group", "automated_clean", "protected", "protected_reason", "owner",
    "description", "allocation_uuid", "retired", "retired_reason", "lessee", "network_data",
    "boot_mode", "secure_boot", "shard", "parent_node", "firmware_interface", "service_step",
    "disable_power_off", "instance_name", "health", "conductor",
)  # fmt: skip
#: Steps Ironic shows as ``{}`` when none runs.
STEP_FIELDS: Final = ("clean_step", "deploy_step", "service_step")


def _node_record(
    node: Node,
    fields: Sequence[str] | None = None,
    defaults: Mapping[str, str | None] | None = None,
    conductor: str | None = None,
) -> dict[str, Any]:
    """The node as ``openstack baremetal node show`` prints it (or its ``--fields``), secrets
    masked: this is a display, so it shows what the API shows, not the record's own layout.

    ``defaults``: the name of each interface kind the node's hardware type
    uses by default, shown where the node names none (as the API shows it).
    ``conductor``: the host doing the node's work (``Conductor.conductor_of``).
    """
    data = node.to_dict(mask=True)
    with_defaults(data, defaults)
    for step in STEP_FIELDS:
        if data.get(step) is None:
            data[step] = {}
    data["reservation"] = data["reservation"] and data["reservation"].split(":", 1)[0]
    data["conductor"] = conductor
    shown = {name: data[name] if name in data else _NOT_STORED[name] for name in SHOW_COLUMNS}
    if not fields:
        return shown
    return {name: value for name, value in shown.items() if name in fields}  # the API's order


def with_defaults(record: dict[str, Any], defaults: Mapping[str, str | None] | None) -> None:
    """Fill each ``<kind>_interface`` left unset in ``record`` with its default's name."""
    for kind, name in (defaults or {}).items():
        field = f"{kind}_interface"
        if field in record and record[field] is None:
            record[field] = name


def _list_fields(args: argparse.Namespace) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``node list``'s columns and the stored fields they read: the default few,
    ``--long`` (some not stored here) or ``--fields``."""
    if args.fields:
        fields = tuple(dict.fromkeys(field for group in args.fields for field in group))
        return fields, fields
    return (LONG_COLUMNS, _LONG_FIELDS) if args.long else (_LIST_FIELDS, _LIST_FIELDS)


def _column_value(record: Mapping[str, Any], column: str) -> Any:
    """A listed node's value in ``column``: stored, or what Ironic shows for one not kept here."""
    return record[column] if column in record else _NOT_STORED[column]


def _show_fields(args: argparse.Namespace) -> list[str] | None:
    groups: list[list[str]] | None = getattr(args, "fields", None)
    if not groups:
        return None
    return list(dict.fromkeys(field for group in groups for field in group))
