"""``port``, ``port group``, ``chassis``...: the records beside nodes, one set of commands each.

Every kind has ``create``, ``list``, ``show``, ``set``, ``unset`` and
``delete``, shaped like ``openstack baremetal``'s: the same options and
columns (named by their fields, as python-ironicclient 6 prints them). A
:class:`CliKind` says what is a kind's own; the conductor answers (so the
CLI, the library and the API agree).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, Final

import attrs

from ironic_fsm.cli.argtypes import _boolean, _key_value, _load_json_arg
from ironic_fsm.cli.database import _open_conductor
from ironic_fsm.cli.output import emit_list, emit_one
from ironic_fsm.conductor import Conductor
from ironic_fsm.records import Record

__all__ = ["CliKind", "Option", "add_options", "commands", "record_fields"]

#: How a value option's text is read, by its kind (text otherwise).
_TYPES: Final[dict[str, Callable[[str], Any]]] = {"int": int, "bool": _boolean}


@attrs.frozen
class Option:
    """One option of ``create`` and ``set``: ``--flag`` sets ``field``.

    ``kind`` is ``text`` (a value; ``unset`` clears it), ``dict`` (``K=V``,
    repeatable; merged by ``set``, keys removed by ``unset``), ``list`` (a
    value, repeatable: ``--trait``), ``int`` (a number), ``bool`` (``true`` or
    ``false``), ``json`` (inline JSON, ``@FILE``, ``FILE`` or ``-``), or a
    constant (``const``: the flag stores ``value``, as ``--pxe-disabled``).
    """

    flag: str
    field: str
    help: str
    kind: str = "text"
    value: Any = None
    create: bool = True
    set: bool = True
    unset: bool = True

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


@attrs.frozen
class CliKind:
    """What is one kind's own on the command line.

    Attributes:
        noun: Its words (``port group``) and argument name (``PORT_GROUP``).
        columns: ``list``'s columns; ``long``: ``--long``'s; ``shown``: ``show``'s fields.
        options: The options of ``create`` and ``set`` (and what ``unset`` clears).
        get: The record by the argument's value.
        listing: One page for ``list``'s options and paging keywords.
        create: A new record of ``create``'s arguments and fields.
        update: The record with these fields changed.
        delete: Deletes the record.
        create_arguments: Adds ``create``'s own arguments (a port's ADDRESS and --node).
        list_arguments: Adds ``list``'s filters.
    """

    noun: str
    columns: tuple[str, ...]
    long: tuple[str, ...]
    shown: tuple[str, ...]
    options: tuple[Option, ...]
    get: Callable[[Conductor, str], Record]
    listing: Callable[[Conductor, argparse.Namespace, dict[str, Any]], list[Any]]
    create: Callable[[Conductor, argparse.Namespace, dict[str, Any]], Record]
    update: Callable[[Conductor, str, dict[str, Any]], Record]
    delete: Callable[[Conductor, str], None]
    create_arguments: Callable[[argparse.ArgumentParser], None]
    list_arguments: Callable[[argparse.ArgumentParser], None]

    @property
    def metavar(self) -> str:
        return self.noun.upper().replace(" ", "_")


def record_fields(record: Record) -> dict[str, Any]:
    """A record's fields as the API shows them: times in ISO 8601."""
    shown = record.to_dict()
    for name in ("created_at", "updated_at"):
        value = shown[name]
        shown[name] = None if value is None else value.isoformat()
    return shown


def _given(kind: CliKind, args: argparse.Namespace, stage: str) -> dict[str, Any]:
    """The fields ``create`` or ``set`` options name (dicts as given, not merged)."""
    fields: dict[str, Any] = {}
    for option in kind.options:
        if not getattr(option, stage):
            continue
        value = getattr(args, option.dest, None)
        if value is None or value is False:
            continue
        if option.kind == "dict":
            value = dict(value)
        elif option.kind == "const":
            value = option.value
        elif option.kind == "json":
            value = _load_json_arg(value, option.flag)
        fields[option.field] = value
    return fields


def _names(groups: list[list[str]] | None) -> list[str] | None:
    return list(dict.fromkeys(f for group in groups for f in group)) if groups else None


def _shown(kind: CliKind, record: Record, fields: list[str] | None) -> dict[str, Any]:
    data = record_fields(record)
    return {name: data.get(name) for name in fields or kind.shown}


def _create(kind: CliKind, args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        record = kind.create(conductor, args, _given(kind, args, "create"))
    emit_one(args, _shown(kind, record, None))
    return 0


def _list(kind: CliKind, args: argparse.Namespace) -> int:
    columns = _names(args.fields) or (kind.long if args.long else kind.columns)
    sort_key, _, sort_dir = (args.sort or "id").partition(":")
    page = dict(limit=args.limit or None, marker=args.marker, sort_key=sort_key,
                sort_dir=sort_dir or "asc")  # fmt: skip
    with _open_conductor(args) as conductor:
        records = [record_fields(r) for r in kind.listing(conductor, args, page)]
    emit_list(args, columns, [[record.get(c) for c in columns] for record in records])
    return 0


def _show(kind: CliKind, args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        record = kind.get(conductor, args.ident)
    emit_one(args, _shown(kind, record, _names(args.fields)))
    return 0


def _set(kind: CliKind, args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        record = kind.get(conductor, args.ident)
        fields = _given(kind, args, "set")
        for option in kind.options:
            if option.kind == "dict" and option.field in fields:
                fields[option.field] = {**getattr(record, option.field), **fields[option.field]}
        if fields:
            kind.update(conductor, record.uuid, fields)
    return 0


def _unset(kind: CliKind, args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        record = kind.get(conductor, args.ident)
        fields: dict[str, Any] = {}
        for option in kind.options:
            value = getattr(args, f"unset_{option.dest}", None)
            if not option.unset or not value:
                continue
            if option.kind == "dict":
                kept = getattr(record, option.field)
                fields[option.field] = {k: v for k, v in kept.items() if k not in value}
            else:
                fields[option.field] = not option.value if option.kind == "const" else None
        if fields:
            kind.update(conductor, record.uuid, fields)
    return 0


def _delete(kind: CliKind, args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        for ident in args.idents:
            kind.delete(conductor, ident)
            print(f"Deleted {kind.noun} {ident}")
    return 0


def commands(kind: CliKind) -> dict[str, Callable[[argparse.Namespace], int]]:
    """The handlers of ``create``, ``list``, ``show``, ``set``, ``unset`` and ``delete``."""
    handlers = {
        "create": _create, "list": _list, "show": _show, "set": _set, "unset": _unset,
        "delete": _delete,
    }  # fmt: skip
    return {name: _bound(handler, kind) for name, handler in handlers.items()}


def _bound(
    handler: Callable[[CliKind, argparse.Namespace], int], kind: CliKind
) -> Callable[[argparse.Namespace], int]:
    return lambda args: handler(kind, args)


def add_options(p: argparse.ArgumentParser, kind: CliKind, stage: str) -> None:
    """``create``'s, ``set``'s or ``unset``'s options of ``kind``."""
    for option in kind.options:
        if not getattr(option, stage):
            continue
        if stage == "unset":
            if option.kind == "dict":
                p.add_argument(option.flag, dest=f"unset_{option.dest}", metavar="KEY",
                               action="append", help=f"remove this {option.field} key")  # fmt: skip
            else:
                p.add_argument(option.flag, dest=f"unset_{option.dest}", action="store_true",
                               help=f"unset {option.field}")  # fmt: skip
        elif option.kind == "dict":
            p.add_argument(option.flag, metavar="KEY=VALUE", type=_key_value, action="append",
                           help=option.help)  # fmt: skip
        elif option.kind == "const":
            p.add_argument(option.flag, action="store_true", help=option.help)
        elif option.kind == "list":
            p.add_argument(option.flag, dest=option.dest, metavar=option.field.upper(),
                           action="append", help=option.help)  # fmt: skip
        else:
            p.add_argument(option.flag, metavar=option.field.upper(), help=option.help,
                           type=_TYPES.get(option.kind, str))  # fmt: skip
