"""``node passthru|bios|console|vmedia|indicator ...``: what the API serves beside the
lifecycle, shaped like ``openstack baremetal node ...`` (same columns, same fields).

``passthru list``, ``bios setting list|show`` and ``console show`` print
what python-ironicclient prints; ``vmedia`` and ``indicator`` have no
client command of Ironic 39's time, so they follow the API's own words.
The parser builds them with :func:`build` and the helpers it is handed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, Final

from ironic_fsm.cli.argtypes import _key_value
from ironic_fsm.cli.database import _open_conductor
from ironic_fsm.cli.output import emit_list, emit_one
from ironic_fsm.conductor.node_media import DEVICE_TYPES, DOWNLOAD_SOURCES

__all__ = ["build"]

#: ``openstack baremetal node passthru list``'s columns.
_PASSTHRU_COLUMNS: Final = (
    "Name", "Supported HTTP methods", "Async", "Description", "Response is attachment",
)  # fmt: skip
#: ``openstack baremetal node bios setting list [--long]``'s columns (field names).
_BIOS_COLUMNS: Final = ("name", "value")
_BIOS_LONG: Final = (
    "name", "value", "attribute_type", "allowable_values", "lower_bound", "min_length",
    "max_length", "read_only", "reset_required", "unique", "upper_bound",
)  # fmt: skip

Leaf = Callable[..., argparse.ArgumentParser]
Finish = Callable[..., None]


def _cmd_passthru_list(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        methods = conductor.list_vendor_passthru_methods(args.node)
    rows = [[name, ", ".join(info["http_methods"]), info["async"], info["description"],
             info["attach"]] for name, info in methods.items()]  # fmt: skip
    emit_list(args, _PASSTHRU_COLUMNS, rows)
    return 0


def _cmd_passthru_call(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        result = conductor.vendor_passthru(
            args.node, args.method, args.http_method, dict(args.arg or ())
        )
    if result.value is not None:  # an asynchronous one answers nothing
        value = result.value
        sys.stdout.write(value.decode() if isinstance(value, bytes) else json.dumps(value))
        sys.stdout.write("\n")
    return 0


def _bios_row(setting: Any, columns: tuple[str, ...]) -> list[Any]:
    return [getattr(setting, column) for column in columns]


def _cmd_bios_list(args: argparse.Namespace) -> int:
    columns = _BIOS_LONG if args.long else _BIOS_COLUMNS
    with _open_conductor(args) as conductor:
        settings = conductor.list_bios_settings(args.node)
    emit_list(args, columns, [_bios_row(s, columns) for s in settings])
    return 0


def _cmd_bios_show(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        setting = conductor.get_bios_setting(args.node, args.setting_name)
    shown = dict(zip(_BIOS_LONG, _bios_row(setting, _BIOS_LONG), strict=True))
    shown.update(created_at=_stamp(setting.created_at), updated_at=_stamp(setting.updated_at))
    emit_one(args, shown)
    return 0


def _stamp(when: Any) -> str | None:
    return None if when is None else str(when.isoformat())


def _cmd_console(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        if args.console_action == "show":
            emit_one(args, conductor.get_console(args.node))
        else:
            conductor.set_console_mode(args.node, args.console_action == "enable")
    return 0


def _cmd_vmedia(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        if args.vmedia_action == "attach":
            conductor.attach_virtual_media(
                args.node, args.device_type, args.image_url, args.image_download_source
            )
        else:
            conductor.detach_virtual_media(args.node, args.device_types)
    return 0


def _cmd_indicator(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        if args.indicator_action == "list":
            found = conductor.list_indicators(args.node)
            rows = [
                [f"{name}@{component}", info.get("readonly", False),
                 ", ".join(info.get("states", ()))]
                for component, names in found.items()
                for name, info in names.items()
            ]  # fmt: skip
            emit_list(args, ("Indicator", "Read only", "States"), rows)
        elif args.indicator_action == "show":
            emit_one(args, {"state": conductor.get_indicator_state(args.node, args.indicator)})
        else:
            conductor.set_indicator_state(args.node, args.indicator, args.state)
    return 0


def build(sub: Any, common: argparse.ArgumentParser, leaf: Leaf, finish: Finish) -> None:
    """Add the commands to ``node``'s subparsers ``sub`` (``leaf``/``finish``: the parser's)."""
    _build_passthru(sub, common, leaf, finish)
    _build_bios(sub, common, leaf, finish)
    group = _group(sub, "console", "enable, disable or show a node's console",
                   "Start or stop the node's console; show whether it runs and where.")  # fmt: skip
    for action, text in (("enable", "start the console"), ("disable", "stop the console"),
                         ("show", "whether the console runs, and where to reach it")):  # fmt: skip
        p = leaf(group, action, [common], text, text.capitalize() + ".", node=True)
        finish(p, _cmd_console, many=False if action == "show" else None, console_action=action)
    _build_vmedia(sub, common, leaf, finish)
    _build_indicator(sub, common, leaf, finish)


def _group(sub: Any, name: str, text: str, description: str) -> Any:
    parser = sub.add_parser(name, help=text, description=description)
    return parser.add_subparsers(dest=f"{name}_action", metavar="ACTION", required=True)


def _build_passthru(sub: Any, common: argparse.ArgumentParser, leaf: Leaf, finish: Finish) -> None:
    group = _group(sub, "passthru", "list or call a node's vendor methods",
                   "The vendor pass-through methods of the node's vendor interface.")  # fmt: skip
    p = leaf(group, "list", [common], "list the node's vendor methods",
             "List the node's vendor pass-through methods.", node=True)  # fmt: skip
    finish(p, _cmd_passthru_list, many=True)
    p = leaf(group, "call", [common], "call a vendor method",
             "Call a vendor method; print what a synchronous one returns (JSON).",
             node=True)  # fmt: skip
    p.add_argument("method", metavar="METHOD", help="the vendor method")
    p.add_argument("--arg", metavar="KEY=VALUE", type=_key_value, action="append",
                   help="an argument of the method; repeatable")  # fmt: skip
    p.add_argument("--http-method", default="POST", choices=("POST", "PUT", "GET", "DELETE",
                                                            "PATCH"),
                   help="the HTTP method it is called with (default: POST)")  # fmt: skip
    finish(p, _cmd_passthru_call)


#: Commands of a group: name, what it does, positional arguments (dest, metavar, help),
#: ``many`` (rows, one record, or no output: None) and handler.
Leaves = tuple[
    tuple[str, str, tuple[tuple[str, str, str], ...], bool | None,
          Callable[[argparse.Namespace], int]], ...
]  # fmt: skip

_INDICATOR_ARG: Final = ("indicator", "INDICATOR", "INDICATOR@COMPONENT, e.g. led@system")


def _leaves(group: Any, common: argparse.ArgumentParser, leaf: Leaf, finish: Finish,
            table: Leaves) -> dict[str, argparse.ArgumentParser]:  # fmt: skip
    """Each command of ``table`` on the NODE argument; its parser by name (for more options)."""
    made = {}
    for name, text, positional, many, func in table:
        p = made[name] = leaf(group, name, [common], text, text.capitalize() + ".", node=True)
        for dest, metavar, help_text in positional:
            p.add_argument(dest, metavar=metavar, help=help_text)
        finish(p, func, many=many)
    return made


def _build_bios(sub: Any, common: argparse.ArgumentParser, leaf: Leaf, finish: Finish) -> None:
    bios = sub.add_parser(
        "bios", help="a node's BIOS settings",
        description="The node's BIOS settings, as last read or applied.",
    )  # fmt: skip
    setting = bios.add_subparsers(dest="bios_command", metavar="COMMAND", required=True)
    group = _group(setting, "setting", "list or show BIOS settings", "A node's BIOS settings.")
    made = _leaves(group, common, leaf, finish, (
        ("list", "list the node's BIOS settings", (), True, _cmd_bios_list),
        ("show", "show one BIOS setting", (("setting_name", "SETTING", "its name"),), False,
         _cmd_bios_show),
    ))  # fmt: skip
    made["list"].add_argument("--long", action="store_true", help="every field of each setting")


def _build_vmedia(sub: Any, common: argparse.ArgumentParser, leaf: Leaf, finish: Finish) -> None:
    group = _group(sub, "vmedia", "attach or detach a node's virtual media",
                   "Insert an image into the node's virtual media, or eject it.")  # fmt: skip
    p = leaf(group, "attach", [common], "insert an image",
             "Insert an image into a virtual media device of the node.", node=True)  # fmt: skip
    p.add_argument("device_type", metavar="DEVICE_TYPE", choices=DEVICE_TYPES,
                   help=", ".join(DEVICE_TYPES))  # fmt: skip
    p.add_argument("image_url", metavar="IMAGE_URL", help="where the image is")
    p.add_argument("--image-download-source", default="local", choices=DOWNLOAD_SOURCES,
                   help="who serves it to the BMC (default: local)")  # fmt: skip
    finish(p, _cmd_vmedia)
    p = leaf(group, "detach", [common], "eject images",
             "Eject the node's virtual media (every device type unless named).",
             node=True)  # fmt: skip
    p.add_argument("--device-type", dest="device_types", action="append",
                   choices=DEVICE_TYPES, help="only this device type; repeatable")  # fmt: skip
    finish(p, _cmd_vmedia)


def _build_indicator(sub: Any, common: argparse.ArgumentParser, leaf: Leaf, finish: Finish) -> None:
    group = _group(sub, "indicator", "list, show or set a node's indicators",
                   "The node's indicators (LEDs), named INDICATOR@COMPONENT.")  # fmt: skip
    _leaves(group, common, leaf, finish, (
        ("list", "list the node's indicators", (), True, _cmd_indicator),
        ("show", "show an indicator's state", (_INDICATOR_ARG,), False, _cmd_indicator),
        ("set", "set an indicator's state",
         (_INDICATOR_ARG, ("state", "STATE", "one of the states it takes")), None,
         _cmd_indicator),
    ))  # fmt: skip
