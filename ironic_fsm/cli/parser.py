"""The argparse tables: every command, option and help text of ``ironic-fsm``."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Final

from ironic_fsm.cli import (
    allocations,
    chassis,
    inspection_rules,
    node_extras,
    ports,
    records,
    volumes,
)
from ironic_fsm.cli.apply import _cmd_apply
from ironic_fsm.cli.argtypes import _boolean, _key_value, _limit, _provision_state, _sort, _timeout
from ironic_fsm.cli.conductors import _cmd_conductor_list
from ironic_fsm.cli.database import DB_ENV
from ironic_fsm.cli.history import _cmd_history_get, _cmd_history_list
from ironic_fsm.cli.inventory import _cmd_inventory
from ironic_fsm.cli.lifecycle import _cmd_diagram, _cmd_states
from ironic_fsm.cli.nodes import (
    _cmd_create,
    _cmd_delete,
    _cmd_list,
    _cmd_power,
    _cmd_set,
    _cmd_show,
    _cmd_unset,
    add_node_options,
)
from ironic_fsm.cli.output import _CSV_QUOTING, _LIST_FORMATS, _SHOW_FORMATS, SHOW_COLUMNS
from ironic_fsm.cli.serve import add_serve_parser
from ironic_fsm.cli.settings import CONFIG_ENV
from ironic_fsm.cli.verbs import _VERB_OPTIONS, _VERBS, _cmd_clean_steps, _cmd_verb
from ironic_fsm.node import INTERFACE_KINDS, NODE_FIELDS

PROG: Final = "ironic-fsm"


# -- the parser -----------------------------------------------------------------------------

_Sub = argparse._SubParsersAction  # the type of ``add_subparsers()``'s result

# The node's dict fields that ``create``, ``set`` and ``unset`` edit key by key: (flag, dest).
_DICT_OPTIONS: Final = (
    ("--driver-info", "driver_info"),
    ("--property", "properties"),
    ("--extra", "extra"),
    ("--instance-info", "instance_info"),
)


#: The words of the commands whose help is long: command -> (its line in the list of its
#: parent's commands, the description its own ``--help`` starts with).
_HELP: Final = {
    "node create": ("enroll a new node",
                    "Enroll a new node (provision state 'enroll') and show it."),
    "node show": ("show a node", "Show every field of a node (secrets masked)."),
    "node set": ("set node fields",
                 "Set node fields; KEY=VALUE options are merged into the existing dict."),
    "node unset": ("unset node fields",
                   "Unset node fields; KEY options remove keys from the dict."),
    "node delete": ("delete nodes", "Delete node records (allowed in enroll, manageable, "
                    "available, adopt failed)."),
    "node clean-steps": ("list a node's clean steps", "List the clean steps the node's "
                         "interfaces offer, highest priority first."),
    "node inventory": ("save a node's inventory", "Write what the node's last inspection "
                       "reported (its inventory and plugin data) as JSON, as 'openstack "
                       "baremetal node inventory save' does."),
    "node history list": ("list a node's history, oldest first",
                          "List a node's history entries, oldest first."),
    "node history get": ("show one history entry",
                         "Show one entry of a node's history, by its UUID."),
    "conductor list": ("list conductors", "List the conductors registered in the database, "
                       "alive or not: alive is online and heard from within "
                       "heartbeat_timeout (see --config)."),
    "states": ("list the lifecycle's states", "List every provision state: stable or not, "
               "default target, accepted events."),
    "diagram": ("draw the lifecycle",
                "Draw the lifecycle as Graphviz DOT, Mermaid, or SVG (needs 'dot')."),
    "apply": ("enroll, update and reconcile the nodes of a fleet file", "Apply a declarative "
              "fleet file (YAML or JSON; see docs/fleet-file.rst): the whole file is checked "
              "first, then missing nodes are enrolled, fields that differ updated, and each "
              "node reconciled one verb per round toward its wanted state. ${VAR} in a string "
              "value is read from the environment and never shown."),
    "demo": ("run a fleet of emulated BMCs through the lifecycle", "Start emulated IPMI and "
             "Redfish BMCs on 127.0.0.1, enroll them in a SQLite store and drive every node "
             "through its lifecycle (Redfish: inspect, BIOS and RAID clean steps; IPMI: power "
             "and boot device only), retiring two; shows progress live. Needs the 'demo' "
             "extra: pip install 'ironic_fsm[demo]'."),
}  # fmt: skip


def _add_output(parser: argparse.ArgumentParser, *, many: bool) -> None:
    """The output options of Ironic's client (cliff's): ``-f``, ``-c``, ``--noindent``...

    ``many`` is for commands that print rows (they also offer csv);
    the others print one record as (field, value) pairs.
    """
    group = parser.add_argument_group("output formatters")
    formats = _LIST_FORMATS if many else _SHOW_FORMATS
    group.add_argument(
        "-f",
        "--format",
        choices=formats,
        default="table",
        help="the output format (default: table)",
    )
    group.add_argument(
        "-c",
        "--column",
        dest="columns",
        metavar="COLUMN",
        action="append",
        default=[],
        help="only this column; repeat for more (the order stays the output's)",
    )
    group.add_argument("--noindent", action="store_true", help="json: print on one line")
    if many:
        group.add_argument(
            "--print-empty",
            action="store_true",
            help="table: print the header even when there are no rows",
        )
        group.add_argument(
            "--quote",
            dest="quote_mode",
            choices=_CSV_QUOTING,
            default="nonnumeric",
            help="csv: which values to quote (default: nonnumeric)",
        )


def _add_fields(
    container: argparse._ActionsContainer, choices: Sequence[str] = NODE_FIELDS
) -> None:
    container.add_argument(
        "--fields",
        nargs="+",
        action="append",
        choices=choices,
        metavar="FIELD",
        help="only these node fields (repeatable); one of: " + ", ".join(choices),
    )


def _add_node_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("node", metavar="NODE", help="name or UUID of the node")


def _leaf(
    sub: _Sub[argparse.ArgumentParser],
    name: str,
    parents: list[argparse.ArgumentParser],
    text: str,
    description: str,
    *,
    node: bool = False,
) -> argparse.ArgumentParser:
    """One command that runs something; ``node`` gives it the NODE argument first."""
    p = sub.add_parser(name, parents=parents, help=text, description=description)
    if node:
        _add_node_arg(p)
    return p


def _finish(
    p: argparse.ArgumentParser,
    func: Callable[..., int],
    *,
    many: bool | None = None,
    **defaults: object,
) -> None:
    """The output options last (``many`` as in `_add_output`; None: none), then the handler."""
    add_node_options(p, func)  # --conductor-group for node create|list|set|unset
    if many is not None:
        _add_output(p, many=many)
    p.set_defaults(func=func, parser=p, **defaults)


def _add_wait(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument("--wait", nargs="?", type=_timeout, const=0.0, metavar="TIMEOUT", help=text)


def _add_number(
    p: argparse.ArgumentParser,
    flag: str,
    default: int,
    text: str,
    kind: Callable[[str], int] = int,
) -> None:
    """An option that takes a whole number ``N`` (read by ``kind``), ``default`` without it."""
    p.add_argument(flag, metavar="N", type=kind, default=default, help=text)


def _add_dict_options(
    p: argparse.ArgumentParser,
    options: tuple[tuple[str, str], ...],
    text: str,
    *,
    key_value: bool,
) -> None:
    """One repeatable option per dict field; ``text`` is formatted with the field's dest."""
    for flag, dest in options:
        if key_value:
            p.add_argument(
                flag,
                metavar="KEY=VALUE",
                type=_key_value,
                action="append",
                dest=dest,
                help=text.format(dest),
            )
        else:
            p.add_argument(flag, metavar="KEY", action="append", dest=dest, help=text.format(dest))


def _add_tristate(
    p: argparse.ArgumentParser, dest: str, yes_help: str, no_help: str, *no_flags: str
) -> None:
    """``--DEST`` or one of ``no_flags``: only nodes with, or without, a flag (default: both)."""
    group = p.add_mutually_exclusive_group()
    flag = "--" + dest
    group.add_argument(flag, dest=dest, action="store_const", const=True, help=yes_help)
    group.add_argument(*no_flags, dest=dest, action="store_const", const=False, help=no_help)


def _build_verb(
    sub: _Sub[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
    verb: str,
    help_text: str,
) -> None:
    short = help_text[0].lower() + help_text[1:].rstrip(".")
    p = _leaf(sub, verb, [common], short, help_text, node=True)

    def hidden(dest: str, text: str) -> str:
        # Options a verb cannot use are accepted (to explain the mistake) but not advertised.
        return text if verb in _VERB_OPTIONS[dest][1] else argparse.SUPPRESS

    # No argparse groups here: argparse cannot lay out a usage line mixing
    # grouped and hidden options, so "one of" rules are checked in _cmd_verb.
    steps_help = "a JSON list of {} steps: a file, '-' for standard input, or inline JSON"
    for dest, text in (
        ("clean_steps", steps_help.format("clean")),
        ("deploy_steps", steps_help.format("deploy")),
        ("service_steps", steps_help.format("service")),
        ("runbook", "the name of a runbook registered with the conductor"),
    ):
        metavar = "NAME" if dest == "runbook" else "FILE"
        p.add_argument(_VERB_OPTIONS[dest][0], dest=dest, metavar=metavar, help=hidden(dest, text))
    p.add_argument(
        "--disable-ramdisk",
        action="store_true",
        help=hidden("disable_ramdisk", "run the steps without booting the ramdisk"),
    )
    p.add_argument(
        "--config-drive",
        dest="configdrive",
        metavar="DRIVE",
        help=hidden(
            "configdrive",
            "the config drive: a JSON object (inline or a file) to build it from, a file of "
            "the image or its base64 text, or a URL",
        ),
    )
    p.add_argument(
        "--rescue-password",
        metavar="PASSWORD",
        required=verb == "rescue",
        help=hidden("rescue_password", "the password for the rescue ramdisk (required)"),
    )
    _add_wait(
        p,
        "wait until the node settles (stable, held or failed), for at most TIMEOUT "
        "seconds (default 0: no limit); for nodes that another process continues",
    )
    _finish(p, _cmd_verb, verb=verb)


def _build_create(sub: _Sub[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = _leaf(sub, "create", [common], *_HELP["node create"])
    p.add_argument("--name", help="a unique name for the node")
    p.add_argument("--uuid", help="the node's UUID (default: a new one)")
    p.add_argument(
        "--driver", default="fake-hardware", help="hardware type (default: fake-hardware)"
    )
    _add_dict_options(p, _DICT_OPTIONS[:3], "{} entry; repeatable", key_value=True)
    p.add_argument("--resource-class", help="the node's resource class")
    p.add_argument(
        "--trait", metavar="TRAIT", action="append", dest="traits", help="a trait; repeatable"
    )
    _add_interface_options(p, "the {} interface implementation (default: the driver's)")
    _finish(p, _cmd_create, many=False)


def _add_interface_options(p: argparse.ArgumentParser, text: str) -> None:
    """``--<kind>-interface NAME`` for every interface kind, as ``openstack baremetal``."""
    for kind in sorted(INTERFACE_KINDS):
        p.add_argument(f"--{kind}-interface", metavar="NAME", help=text.format(kind))


def _build_list(sub: _Sub[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = _leaf(sub, "list", [common], "list nodes", "List nodes.")
    _add_tristate(
        p,
        "retired",
        "only retired nodes",
        "only nodes that are not retired",
        "--no-retired",
        "--unretired",
    )
    _add_tristate(
        p,
        "maintenance",
        "only nodes in maintenance",
        "only nodes not in maintenance",
        "--no-maintenance",
    )
    p.add_argument(
        "--provision-state",
        metavar="STATE",
        type=_provision_state,
        help="only nodes in this provision state (see 'ironic-fsm states')",
    )
    p.add_argument("--driver", help="only nodes of this hardware type")
    p.add_argument("--instance-name", metavar="NAME", help="only nodes with this instance name")
    _add_number(p, "--limit", 0, "show at most N nodes (default 0: every node)", _limit)
    p.add_argument(
        "--marker",
        metavar="UUID",
        help="start after the node with this UUID (the last one of the previous page)",
    )
    p.add_argument(
        "--sort",
        metavar="KEY[:DIR]",
        type=_sort,
        default=("created_at", "asc"),
        help="sort on KEY (created_at, updated_at, uuid, name, provision_state, "
        "provision_updated_at, driver), DIR asc (default) or desc",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--long", action="store_true", help="show every field")
    _add_fields(group)
    _finish(p, _cmd_list, many=True, retired=None, maintenance=None)


def _build_set_unset(sub: _Sub[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = _leaf(sub, "set", [common], *_HELP["node set"], node=True)
    p.add_argument("--retired", action="store_true", help="retire the node")
    p.add_argument("--retired-reason", metavar="REASON", help="why the node is retired")
    p.add_argument("--maintenance", action="store_true", help="put the node in maintenance")
    p.add_argument("--maintenance-reason", metavar="REASON", help="why it is in maintenance")
    p.add_argument("--protected", action="store_true", help="protect an active node")
    p.add_argument("--protected-reason", metavar="REASON", help="why the node is protected")
    p.add_argument("--name", help="a new name")
    p.add_argument("--driver", help="a new hardware type")
    p.add_argument("--resource-class", help="a new resource class")
    p.add_argument("--instance-name", metavar="NAME", help="the name of the node's instance")
    p.add_argument(
        "--automated-clean",
        metavar="true|false",
        type=_boolean,
        help="enable or disable automated cleaning for this node",
    )
    p.add_argument(
        "--target-raid-config",
        metavar="JSON|@FILE",
        help="the target RAID configuration: inline JSON, @FILE, FILE or '-'",
    )
    _add_dict_options(p, _DICT_OPTIONS, "set a {} entry; repeatable", key_value=True)
    _add_interface_options(p, "a new {} interface implementation")
    p.add_argument(
        "--reset-interfaces",
        action="store_true",
        default=None,
        help="with --driver: reset the interfaces not given to the new driver's defaults",
    )
    _finish(p, _cmd_set)

    p = _leaf(sub, "unset", [common], *_HELP["node unset"], node=True)
    # (flag, dest or None for argparse's default, help): one switch per field.
    switches: tuple[tuple[str, str | None, str], ...] = (
        ("--retired", None, "unretire the node"),
        ("--retired-reason", "unset_retired_reason", "clear the retired reason"),
        ("--maintenance", None, "take the node out of maintenance"),
        ("--maintenance-reason", "unset_maintenance_reason", "clear the maintenance reason"),
        ("--protected", None, "unprotect the node"),
        ("--protected-reason", "unset_protected_reason", "clear the protected reason"),
        ("--name", "unset_name", "clear the name"),
        ("--resource-class", "unset_resource_class", "clear the resource class"),
        (
            "--automated-clean",
            "unset_automated_clean",
            "follow the conductor's automated_clean setting again",
        ),
        ("--instance-name", "unset_instance_name", "clear the instance name"),
        ("--target-raid-config", None, "clear the target RAID configuration"),
        *(
            (f"--{kind}-interface", f"unset_{kind}_interface", f"reset the {kind} interface")
            for kind in sorted(INTERFACE_KINDS)
        ),
    )
    for flag, switch_dest, text in switches:
        if switch_dest is None:
            p.add_argument(flag, action="store_true", help=text)
        else:
            p.add_argument(flag, dest=switch_dest, action="store_true", help=text)
    _add_dict_options(p, _DICT_OPTIONS, "remove a {} key; repeatable", key_value=False)
    _finish(p, _cmd_unset)


def _build_node(top: _Sub[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    node = top.add_parser(
        "node", help="manage nodes", description="Create, inspect and provision nodes."
    )
    sub = node.add_subparsers(dest="node_command", metavar="COMMAND", required=True)
    _build_create(sub, common)
    _build_list(sub, common)

    p = _leaf(sub, "show", [common], *_HELP["node show"], node=True)
    _add_fields(p, SHOW_COLUMNS)
    _finish(p, _cmd_show, many=False)
    _build_set_unset(sub, common)

    p = _leaf(sub, "delete", [common], *_HELP["node delete"])
    p.add_argument("nodes", metavar="NODE", nargs="+", help="name or UUID of a node")
    _finish(p, _cmd_delete)

    power = sub.add_parser(
        "power",
        help="power a node on or off, or reboot it",
        description="Change a node's power state through its power interface.",
    )
    power_sub = power.add_subparsers(dest="power_action", metavar="ACTION", required=True)
    for action, text in (
        ("on", "power the node on"),
        ("off", "power the node off"),
        ("reboot", "reboot the node"),
    ):
        p = _leaf(power_sub, action, [common], text, text, node=True)
        if action != "on":
            p.add_argument("--soft", action="store_true", help="ask the OS to do it gracefully")
        _finish(p, _cmd_power, soft=False)

    for verb, text in _VERBS.items():
        _build_verb(sub, common, verb, text)

    p = _leaf(sub, "clean-steps", [common], *_HELP["node clean-steps"], node=True)
    _add_number(p, "--min-priority", 0, "only steps with at least this priority (default: 0, all)")
    _finish(p, _cmd_clean_steps, many=True)
    _build_history(sub, common)
    p = _leaf(sub, "inventory", [common], *_HELP["node inventory"], node=True)
    p.add_argument("--file", metavar="FILE", help="write it here instead of standard output")
    _finish(p, _cmd_inventory)
    node_extras.build(sub, common, _leaf, _finish)


def _build_history(sub: _Sub[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    history = sub.add_parser(
        "history",
        help="what happened to a node",
        description="A node's history: failures, maintenance, takeovers, refused verbs.",
    )
    history_sub = history.add_subparsers(dest="history_command", metavar="COMMAND", required=True)
    p = _leaf(history_sub, "list", [common], *_HELP["node history list"], node=True)
    p.add_argument(
        "--long", action="store_true", help="also show the event type, conductor and user"
    )
    _finish(p, _cmd_history_list, many=True)
    p = _leaf(history_sub, "get", [common], *_HELP["node history get"], node=True)
    p.add_argument("event", metavar="EVENT_UUID", help="the entry's UUID")
    _finish(p, _cmd_history_get, many=False)


def _build_records(
    sub: _Sub[argparse.ArgumentParser], common: argparse.ArgumentParser, kind: records.CliKind
) -> None:
    """``create``, ``list``, ``show``, ``set``, ``unset`` and ``delete`` of one kind."""
    noun, metavar, handlers = kind.noun, kind.metavar, records.commands(kind)
    p = _leaf(sub, "create", [common], f"create a {noun}", f"Create a {noun} and show it.")
    kind.create_arguments(p)
    records.add_options(p, kind, "create")
    _finish(p, handlers["create"], many=False)
    p = _leaf(sub, "list", [common], f"list {noun}s", f"List {noun}s.")
    kind.list_arguments(p)
    p.add_argument("--long", action="store_true", help="show every field")
    p.add_argument(
        "--fields", nargs="+", action="append", choices=kind.shown, metavar="FIELD",
        help="only these fields (repeatable)",
    )  # fmt: skip
    p.add_argument("--limit", type=_limit, default=1000, help="at most this many (0: all)")
    p.add_argument("--marker", metavar="UUID", help="the UUID of the previous page's last one")
    p.add_argument("--sort", metavar="KEY[:asc|desc]", help="sort key and direction")
    _finish(p, handlers["list"], many=True)
    p = _leaf(sub, "show", [common], f"show a {noun}", f"Show a {noun}.")
    p.add_argument("ident", metavar=metavar, help="its UUID or name (or MAC address)")
    if "address" in kind.columns:
        p.add_argument("--address", action="store_true", help=f"{metavar} is a MAC address")
    p.add_argument(
        "--fields", nargs="+", action="append", choices=kind.shown, metavar="FIELD",
        help="only these fields (repeatable)",
    )  # fmt: skip
    _finish(p, handlers["show"], many=False)
    for verb, stage in (("set", "set"), ("unset", "unset")):
        p = _leaf(sub, verb, [common], f"{verb} {noun} fields", f"{verb.title()} {noun} fields.")
        p.add_argument("ident", metavar=metavar, help="its UUID or name")
        records.add_options(p, kind, stage)
        _finish(p, handlers[verb])
    p = _leaf(sub, "delete", [common], f"delete {noun}s", f"Delete {noun}s.")
    p.add_argument("idents", nargs="+", metavar=metavar, help="a UUID or name")
    _finish(p, handlers["delete"])


#: The commands of the records beside nodes: (words, help, what, kind); ``port group`` goes
#: under ``port``, as in ``openstack baremetal``.
_RESOURCES: Final = (
    (("port",), "manage nodes' network ports", "Manage nodes' network ports.", ports.PORT),
    (("port", "group"), "manage port groups", "Manage port groups (bonds).", ports.PORTGROUP),
    (("chassis",), "manage chassis", "Manage chassis (groups of nodes).", chassis.CHASSIS),
    (("allocation",), "allocate nodes", "Ask for nodes, and give them back.",
     allocations.ALLOCATION),
    (("volume",), "manage volume records", "Manage nodes' volume connectors and targets.",
     None),
    (("volume", "connector"), "manage volume connectors", "Manage volume connectors.",
     volumes.CONNECTOR),
    (("volume", "target"), "manage volume targets", "Manage volume targets.", volumes.TARGET),
    (("inspection",), "manage inspection rules", "Manage inspection rules.", None),
    (("inspection", "rule"), "manage inspection rules",
     "Manage the rules run on what inspection finds.", inspection_rules.INSPECTION_RULE),
)  # fmt: skip


def _build_resources(top: _Sub[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """``port [group]`` and ``chassis``: as ``openstack baremetal``'s."""
    subs: dict[tuple[str, ...], _Sub[argparse.ArgumentParser]] = {(): top}
    for words, text, description, kind in _RESOURCES:
        parser = subs[words[:-1]].add_parser(words[-1], help=text, description=description)
        dest = "_".join(words) + "_command"
        subs[words] = parser.add_subparsers(dest=dest, metavar="COMMAND", required=True)
        if kind is not None:  # None: a word that only groups commands (``volume``)
            _build_records(subs[words], common, kind)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; built per call so that tests get a fresh one."""
    from ironic_fsm import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="OpenStack Ironic's node lifecycle, from the command line.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    # Leaf commands accept --db too (after the command, where people type it);
    # SUPPRESS keeps them from overwriting a --db given before the command.
    common = argparse.ArgumentParser(add_help=False)
    for container, default in ((parser, None), (common, argparse.SUPPRESS)):
        _add_global_options(container, default)

    top = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _build_node(top, common)
    _build_resources(top, common)

    conductor = top.add_parser(
        "conductor",
        help="see the conductors sharing the database",
        description="See the conductors registered in the database.",
    )
    conductor_sub = conductor.add_subparsers(
        dest="conductor_command", metavar="COMMAND", required=True
    )
    p = _leaf(conductor_sub, "list", [common], *_HELP["conductor list"])
    p.add_argument("--long", action="store_true", help="also show drivers and the last heartbeat")
    _finish(p, _cmd_conductor_list, many=True)
    add_serve_parser(top, common)

    p = _leaf(top, "states", [], *_HELP["states"])
    _finish(p, _cmd_states, many=True)

    p = _leaf(top, "diagram", [], *_HELP["diagram"])
    p.add_argument(
        "-f",
        "--format",
        choices=("dot", "mermaid", "svg"),
        default="dot",
        help="diagram format (default: dot)",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    _finish(p, _cmd_diagram)
    _build_apply(top, common)

    p = _leaf(top, "demo", [], *_HELP["demo"])
    from ironic_fsm import demo

    demo.add_arguments(p)
    _finish(p, demo.run)
    return parser


def _add_global_options(container: argparse.ArgumentParser, default: str | None) -> None:
    """--db, --config and --debug, before the command (``default`` None) or after it."""
    db_help = (
        f"database URL or SQLite file path (default: ${DB_ENV}, else "
        f"$XDG_DATA_HOME/ironic_fsm/ironic_fsm.sqlite)"
    )
    config_help = (
        f"JSON settings file: Config options, runbooks, deploy templates (default: ${CONFIG_ENV})"
    )
    container.add_argument("--db", metavar="URL", default=default, help=db_help)
    store_help = (
        "the application's own store instead of a database: a callable "
        "MODULE:FACTORY that returns an ironic_fsm.stores.Store (e.g. a KeyValueStore)"
    )
    container.add_argument("--store", metavar="MODULE:FACTORY", default=default, help=store_help)
    container.add_argument("--config", metavar="FILE", default=default, help=config_help)
    debug_help = "print the traceback of an unexpected error"
    container.add_argument(
        "--debug", action="store_true", default=default or False, help=debug_help
    )


def _build_apply(top: _Sub[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = _leaf(top, "apply", [common], *_HELP["apply"])
    p.add_argument("file", metavar="FLEET_FILE", help="the fleet file, or '-' for standard input")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (creates, updated fields, verbs) and change nothing",
    )
    _add_wait(
        p,
        "keep reconciling until every node is where it is wanted, failed or blocked, for "
        "at most TIMEOUT seconds (default 0: no limit); without it, one round",
    )
    _add_number(p, "--workers", 8, "nodes reconciled at a time (default: 8)")
    _finish(p, _cmd_apply, many=True)
