"""``node create|list|show|set|unset|delete|power``: the node record itself."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from datetime import datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Final

from ironic_fsm import states as s
from ironic_fsm._node_fields import json_kind as _kind
from ironic_fsm.cli.argtypes import _conductor_group, _load_json_arg
from ironic_fsm.cli.database import _open_conductor
from ironic_fsm.cli.errors import CLIError, _report_error, _usage_error
from ironic_fsm.cli.output import (
    STEP_FIELDS,
    _column_value,
    _label,
    _list_fields,
    _node_record,
    _show_fields,
    emit_list,
    emit_one,
    with_defaults,
)
from ironic_fsm.exceptions import (
    IronicFSMError,
)
from ironic_fsm.masking import mask_secrets
from ironic_fsm.node import INTERFACE_KINDS

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor

_POWER: Final = {
    "on": (s.POWER_ON, s.POWER_ON),
    "off": (s.POWER_OFF, s.SOFT_POWER_OFF),
    "reboot": (s.REBOOT, s.SOFT_REBOOT),
}


def _cmd_create(args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {"driver": args.driver}
    if args.uuid is not None:
        fields["uuid"] = args.uuid
    if args.name is not None:
        fields["name"] = args.name
    if args.resource_class is not None:
        fields["resource_class"] = args.resource_class
    for option in ("driver_info", "properties", "extra"):
        pairs = getattr(args, option)
        if pairs:
            fields[option] = dict(pairs)
    if args.traits:
        fields["traits"] = list(dict.fromkeys(args.traits))
    fields.update(
        (name, getattr(args, name)) for name in _INTERFACE_FIELDS if getattr(args, name) is not None
    )
    if getattr(args, "conductor_group", None) is not None:
        fields["conductor_group"] = args.conductor_group
    with _open_conductor(args) as conductor:
        node = conductor.create_node(**fields)
        defaults = _interface_defaults(conductor, node.driver)
        host = conductor.conductor_of(node)
    emit_one(args, _node_record(node, defaults=defaults, conductor=host), ordered=True)
    return 0


def _interface_defaults(conductor: Conductor, driver: str) -> dict[str, str | None]:
    """The names of the interfaces ``driver`` uses by default (none for an unknown driver)."""
    try:
        return conductor.default_interfaces(driver)
    except IronicFSMError:
        return {}


def _cmd_list(args: argparse.Namespace) -> int:
    filters: dict[str, Any] = {}
    for name in (
        "retired", "maintenance", "provision_state", "driver", "conductor_group", "instance_name",
    ):  # fmt: skip
        value = getattr(args, name, None)
        if value is not None:
            filters[name] = value
    sort_key, sort_dir = args.sort
    columns, fields = _list_fields(args)
    with _open_conductor(args) as conductor:
        # Only the fields shown: the default few are columns, read without decoding a node.
        rows = conductor.list_nodes(
            limit=args.limit or None,
            marker=args.marker,
            sort_key=sort_key,
            sort_dir=sort_dir,
            fields=fields,
            **filters,
        )
        records = [_fields_record(row) for row in rows]
        if any(field.endswith("_interface") for field in fields):
            known: dict[str, dict[str, str | None]] = {}
            for record, row in zip(records, rows, strict=True):
                driver = row.get("driver")  # listed with the interfaces (--long)
                if driver is None:
                    continue
                if driver not in known:
                    known[driver] = _interface_defaults(conductor, driver)
                with_defaults(record, known[driver])
        if "conductor" in columns:  # --long: who does each node's work, as the API says
            for record in records:
                record["conductor"] = conductor.conductor_of(SimpleNamespace(**record))
    emit_list(
        args, columns, [[_column_value(record, column) for column in columns] for record in records]
    )
    return 0


def _fields_record(row: Mapping[str, Any]) -> dict[str, Any]:
    """A listed node's fields as :func:`_node_record` shows them: secrets masked, ISO times,
    no step as ``{}`` and a reservation by its host, as the API shows them."""
    shown = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}
    for step in STEP_FIELDS:
        if step in shown and shown[step] is None:
            shown[step] = {}
    if shown.get("reservation"):
        shown["reservation"] = shown["reservation"].split(":", 1)[0]
    return mask_secrets(shown)  # type: ignore[no-any-return]


def _cmd_show(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        node = conductor.get_node(args.node)
        defaults = _interface_defaults(conductor, node.driver)
        host = conductor.conductor_of(node)
    emit_one(args, _node_record(node, _show_fields(args), defaults, host), ordered=True)
    return 0


_DICT_OPTIONS: Final = ("driver_info", "properties", "extra", "instance_info")
#: The on/off fields of ``node set`` (True) and ``node unset`` (False).
_FLAGS: Final = ("retired", "maintenance", "protected")
#: The plain fields ``node unset`` clears; ``node set`` also sets the driver (never unset).
_UNSETTABLE: tuple[str, ...] = (
    "retired_reason",
    "maintenance_reason",
    "protected_reason",
    "name",
    "resource_class",
    "automated_clean",
    "instance_name",
)
_INTERFACE_FIELDS: Final = tuple(f"{kind}_interface" for kind in INTERFACE_KINDS)
_UNSETTABLE = (*_UNSETTABLE, *_INTERFACE_FIELDS)
_SETTABLE: Final = (*_UNSETTABLE[:4], "driver", *_UNSETTABLE[4:])


def _merged(stored: dict[str, Any], pairs: list[tuple[str, str]]) -> dict[str, Any]:
    return {**stored, **dict(pairs)}


def _without(stored: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    # Removing a key that is not there is not an error, as in Ironic's client.
    gone = set(keys)
    return {key: value for key, value in stored.items() if key not in gone}


def _update_node(
    args: argparse.Namespace,
    verb: str,
    fields: dict[str, Any],
    edit: Callable[[dict[str, Any], Any], dict[str, Any]],
) -> int:
    """Apply ``node set``/``node unset``: plain fields as given, dict options via ``edit``.

    ``update_node`` takes whole fields, so the stored dicts are read first
    and edited key by key.
    """
    changes = {name: getattr(args, name) for name in _DICT_OPTIONS if getattr(args, name)}
    if not fields and not changes:
        _usage_error(args, f"nothing to {verb}: give at least one option (see --help)")
    raid = fields.pop("target_raid_config", None)
    with _open_conductor(args) as conductor:
        if raid is not None:  # checked by the RAID interface, as Ironic's states/raid does
            conductor.set_target_raid_config(args.node, raid)
        if changes:
            current = conductor.get_node(args.node)
            for name, change in changes.items():
                fields[name] = edit(dict(getattr(current, name)), change)
        reset = getattr(args, "reset_interfaces", None)
        if fields or changes:
            conductor.update_node(args.node, reset_interfaces=reset, **fields)
    return 0


def _cmd_set(args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {flag: True for flag in _FLAGS if getattr(args, flag)}
    if getattr(args, "conductor_group", None) is not None:
        fields["conductor_group"] = args.conductor_group
    fields.update(
        (name, getattr(args, name)) for name in _SETTABLE if getattr(args, name) is not None
    )
    if args.target_raid_config is not None:
        config = _load_json_arg(args.target_raid_config, "--target-raid-config")
        if not isinstance(config, dict):
            raise CLIError(f"--target-raid-config: expected a JSON object, got {_kind(config)}")
        fields["target_raid_config"] = config
    # KEY=VALUE merges into the stored dict, as Ironic's client does with JSON patch "add".
    return _update_node(args, "set", fields, _merged)


def _cmd_unset(args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {flag: False for flag in _FLAGS if getattr(args, flag)}
    fields.update((name, None) for name in _UNSETTABLE if getattr(args, f"unset_{name}"))
    if getattr(args, "unset_conductor_group", False):
        fields["conductor_group"] = ""  # the default group, as Ironic's client unsets it
    if args.target_raid_config:
        fields["target_raid_config"] = {}
    return _update_node(args, "unset", fields, _without)


def _cmd_delete(args: argparse.Namespace) -> int:
    code = 0
    with _open_conductor(args) as conductor:
        for ident in args.nodes:
            # Each node on its own, as Ironic's client does: one refusal
            # does not stop the others, but the exit code reports it.
            try:
                conductor.delete_node(ident)
            except IronicFSMError as exc:
                _report_error(exc)
                code = 1
            else:
                print(f"Deleted node {ident}")
    return code


def _cmd_power(args: argparse.Namespace) -> int:
    hard, soft = _POWER[args.power_action]
    with _open_conductor(args) as conductor:
        node = conductor.set_power_state(args.node, soft if args.soft else hard)
    print(f"Node {_label(node)}: power state is {node.power_state}")
    return 0


#: ``--conductor-group`` per command: its help (``node unset`` takes it as a switch).
_GROUP_OPTION: Final[dict[Callable[[argparse.Namespace], int], str]] = {
    _cmd_create: "the conductor group whose conductors manage the node (default: '')",
    _cmd_list: "only nodes of this conductor group (any case)",
    _cmd_set: "move the node to this conductor group",
    _cmd_unset: "move the node back to the default conductor group ('')",
}


def add_node_options(parser: argparse.ArgumentParser, func: Callable[..., int]) -> None:
    """The options of the node command handled by ``func`` that are defined beside it.

    The parser calls it for every command it finishes: ``--conductor-group``
    for ``node create|list|set|unset``, checked as the node field is.
    """
    text = _GROUP_OPTION.get(func)
    if text is None:
        return
    if func is _cmd_unset:
        parser.add_argument(
            "--conductor-group", dest="unset_conductor_group", action="store_true", help=text
        )
    else:
        parser.add_argument("--conductor-group", metavar="GROUP", type=_conductor_group, help=text)
