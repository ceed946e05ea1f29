"""The output formats of Ironic's client (``-f``, ``-c``): tables, json, yaml, value, csv."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from ironic_fsm.cli.errors import _usage_error
from ironic_fsm.exceptions import (
    MissingDependency,
)
from ironic_fsm.node import NODE_FIELDS

if TYPE_CHECKING:
    from ironic_fsm.node import Node

# Column titles of node fields: python-ironicclient's where it has the
# field, the same style where it does not.
_FIELD_LABELS: Final = {
    "uuid": "UUID",
    "provision_state": "Provisioning State",
    "raid_config": "Current RAID configuration",
    "target_raid_config": "Target RAID configuration",
    "bios_interface": "BIOS Interface",
    "raid_interface": "RAID Interface",
}


def _field_label(field: str) -> str:
    return _FIELD_LABELS.get(field) or field.replace("_", " ").title()


#: ``node list`` columns: Ironic's client's, less ``Instance UUID`` (no such field here).
_LIST_FIELDS: Final = ("uuid", "name", "power_state", "provision_state", "maintenance")
#: ``node list --long``: every field, ordered by title as in Ironic's client.
_LONG_FIELDS: Final = tuple(sorted(NODE_FIELDS, key=_field_label))


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


def emit_one(args: argparse.Namespace, data: Mapping[str, object]) -> None:
    """Print one record (field, value) in the chosen ``-f`` format, fields sorted by name."""
    names = sorted(data)
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


def _node_record(node: Node, fields: Sequence[str] | None = None) -> dict[str, Any]:
    """The node's fields (or the ``--fields`` ones), secrets masked: this is a display."""
    data = node.to_dict(mask=True)
    return data if not fields else {field: data[field] for field in fields}


def _list_fields(args: argparse.Namespace) -> tuple[str, ...]:
    """Which node fields ``node list`` shows: the default few, ``--long`` or ``--fields``."""
    if args.fields:
        return tuple(dict.fromkeys(field for group in args.fields for field in group))
    return _LONG_FIELDS if args.long else _LIST_FIELDS


def _show_fields(args: argparse.Namespace) -> list[str] | None:
    groups: list[list[str]] | None = getattr(args, "fields", None)
    if not groups:
        return None
    return list(dict.fromkeys(field for group in groups for field in group))
