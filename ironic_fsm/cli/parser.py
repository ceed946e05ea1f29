"""The argparse tables: every command, option and help text of ``ironic-fsm``."""

from __future__ import annotations

import argparse
from typing import Final

from ironic_fsm.cli.apply import _cmd_apply
from ironic_fsm.cli.argtypes import _boolean, _key_value, _limit, _provision_state, _sort, _timeout
from ironic_fsm.cli.conductors import _cmd_conductor_list
from ironic_fsm.cli.database import DB_ENV
from ironic_fsm.cli.history import _cmd_history_get, _cmd_history_list
from ironic_fsm.cli.lifecycle import _cmd_diagram, _cmd_states
from ironic_fsm.cli.nodes import (
    _cmd_create,
    _cmd_delete,
    _cmd_list,
    _cmd_power,
    _cmd_set,
    _cmd_show,
    _cmd_unset,
)
from ironic_fsm.cli.output import _CSV_QUOTING, _LIST_FORMATS, _SHOW_FORMATS
from ironic_fsm.cli.serve import add_serve_parser
from ironic_fsm.cli.settings import CONFIG_ENV
from ironic_fsm.cli.verbs import _VERB_OPTIONS, _VERBS, _cmd_clean_steps, _cmd_verb
from ironic_fsm.node import NODE_FIELDS

PROG: Final = "ironic-fsm"


# -- the parser -----------------------------------------------------------------------------


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


def _add_fields(container: argparse._ActionsContainer) -> None:
    container.add_argument(
        "--fields",
        nargs="+",
        action="append",
        choices=NODE_FIELDS,
        metavar="FIELD",
        help="only these node fields (repeatable); one of: " + ", ".join(NODE_FIELDS),
    )


def _add_node_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("node", metavar="NODE", help="name or UUID of the node")


def _build_verb(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
    verb: str,
    help_text: str,
) -> None:
    short = help_text[0].lower() + help_text[1:].rstrip(".")
    p = sub.add_parser(verb, parents=[common], help=short, description=help_text)
    _add_node_arg(p)

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
        "--rescue-password",
        metavar="PASSWORD",
        required=verb == "rescue",
        help=hidden("rescue_password", "the password for the rescue ramdisk (required)"),
    )
    p.add_argument(
        "--wait",
        nargs="?",
        type=_timeout,
        const=0.0,
        metavar="TIMEOUT",
        help="wait until the node settles (stable, held or failed), for at most TIMEOUT "
        "seconds (default 0: no limit); for nodes that another process continues",
    )
    p.set_defaults(func=_cmd_verb, verb=verb, parser=p)


def _build_node(
    top: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    node = top.add_parser(
        "node", help="manage nodes", description="Create, inspect and provision nodes."
    )
    sub = node.add_subparsers(dest="node_command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "create",
        parents=[common],
        help="enroll a new node",
        description="Enroll a new node (provision state 'enroll') and show it.",
    )
    p.add_argument("--name", help="a unique name for the node")
    p.add_argument("--uuid", help="the node's UUID (default: a new one)")
    p.add_argument(
        "--driver", default="fake-hardware", help="hardware type (default: fake-hardware)"
    )
    p.add_argument(
        "--driver-info",
        metavar="KEY=VALUE",
        type=_key_value,
        action="append",
        dest="driver_info",
        help="driver_info entry; repeatable",
    )
    p.add_argument(
        "--property",
        metavar="KEY=VALUE",
        type=_key_value,
        action="append",
        dest="properties",
        help="properties entry; repeatable",
    )
    p.add_argument(
        "--extra",
        metavar="KEY=VALUE",
        type=_key_value,
        action="append",
        help="extra entry; repeatable",
    )
    p.add_argument("--resource-class", help="the node's resource class")
    p.add_argument(
        "--trait", metavar="TRAIT", action="append", dest="traits", help="a trait; repeatable"
    )
    _add_output(p, many=False)
    p.set_defaults(func=_cmd_create, parser=p)

    p = sub.add_parser("list", parents=[common], help="list nodes", description="List nodes.")
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--retired", dest="retired", action="store_const", const=True, help="only retired nodes"
    )
    group.add_argument(
        "--no-retired",
        "--unretired",
        dest="retired",
        action="store_const",
        const=False,
        help="only nodes that are not retired",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--maintenance",
        dest="maintenance",
        action="store_const",
        const=True,
        help="only nodes in maintenance",
    )
    group.add_argument(
        "--no-maintenance",
        dest="maintenance",
        action="store_const",
        const=False,
        help="only nodes not in maintenance",
    )
    p.add_argument(
        "--provision-state",
        metavar="STATE",
        type=_provision_state,
        help="only nodes in this provision state (see 'ironic-fsm states')",
    )
    p.add_argument("--driver", help="only nodes of this hardware type")
    p.add_argument(
        "--limit",
        metavar="N",
        type=_limit,
        default=0,
        help="show at most N nodes (default 0: every node)",
    )
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
    _add_output(p, many=True)
    p.set_defaults(func=_cmd_list, parser=p, retired=None, maintenance=None)

    p = sub.add_parser(
        "show",
        parents=[common],
        help="show a node",
        description="Show every field of a node (secrets masked).",
    )
    _add_node_arg(p)
    _add_fields(p)
    _add_output(p, many=False)
    p.set_defaults(func=_cmd_show, parser=p)

    p = sub.add_parser(
        "set",
        parents=[common],
        help="set node fields",
        description="Set node fields; KEY=VALUE options are merged into the existing dict.",
    )
    _add_node_arg(p)
    p.add_argument("--retired", action="store_true", help="retire the node")
    p.add_argument("--retired-reason", metavar="REASON", help="why the node is retired")
    p.add_argument("--maintenance", action="store_true", help="put the node in maintenance")
    p.add_argument("--maintenance-reason", metavar="REASON", help="why it is in maintenance")
    p.add_argument("--protected", action="store_true", help="protect an active node")
    p.add_argument("--protected-reason", metavar="REASON", help="why the node is protected")
    p.add_argument("--name", help="a new name")
    p.add_argument("--driver", help="a new hardware type")
    p.add_argument("--resource-class", help="a new resource class")
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
    for flag, dest in (
        ("--driver-info", "driver_info"),
        ("--property", "properties"),
        ("--extra", "extra"),
        ("--instance-info", "instance_info"),
    ):
        p.add_argument(
            flag,
            metavar="KEY=VALUE",
            type=_key_value,
            action="append",
            dest=dest,
            help=f"set a {dest} entry; repeatable",
        )
    p.set_defaults(func=_cmd_set, parser=p)

    p = sub.add_parser(
        "unset",
        parents=[common],
        help="unset node fields",
        description="Unset node fields; KEY options remove keys from the dict.",
    )
    _add_node_arg(p)
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
        ("--target-raid-config", None, "clear the target RAID configuration"),
    )
    for flag, switch_dest, text in switches:
        if switch_dest is None:
            p.add_argument(flag, action="store_true", help=text)
        else:
            p.add_argument(flag, dest=switch_dest, action="store_true", help=text)
    for flag, dest in (
        ("--driver-info", "driver_info"),
        ("--property", "properties"),
        ("--extra", "extra"),
        ("--instance-info", "instance_info"),
    ):
        p.add_argument(
            flag, metavar="KEY", action="append", dest=dest, help=f"remove a {dest} key; repeatable"
        )
    p.set_defaults(func=_cmd_unset, parser=p)

    p = sub.add_parser(
        "delete",
        parents=[common],
        help="delete nodes",
        description="Delete node records (allowed in enroll, manageable, available, adopt failed).",
    )
    p.add_argument("nodes", metavar="NODE", nargs="+", help="name or UUID of a node")
    p.set_defaults(func=_cmd_delete, parser=p)

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
        p = power_sub.add_parser(action, parents=[common], help=text, description=text)
        _add_node_arg(p)
        if action != "on":
            p.add_argument("--soft", action="store_true", help="ask the OS to do it gracefully")
        p.set_defaults(func=_cmd_power, parser=p, soft=False)

    for verb, text in _VERBS.items():
        _build_verb(sub, common, verb, text)

    p = sub.add_parser(
        "clean-steps",
        parents=[common],
        help="list a node's clean steps",
        description="List the clean steps the node's interfaces offer, highest priority first.",
    )
    _add_node_arg(p)
    p.add_argument(
        "--min-priority",
        metavar="N",
        type=int,
        default=0,
        help="only steps with at least this priority (default: 0, all)",
    )
    _add_output(p, many=True)
    p.set_defaults(func=_cmd_clean_steps, parser=p)

    history = sub.add_parser(
        "history",
        help="what happened to a node",
        description="A node's history: failures, maintenance, takeovers, refused verbs.",
    )
    history_sub = history.add_subparsers(dest="history_command", metavar="COMMAND", required=True)
    p = history_sub.add_parser(
        "list",
        parents=[common],
        help="list a node's history, oldest first",
        description="List a node's history entries, oldest first.",
    )
    _add_node_arg(p)
    p.add_argument(
        "--long", action="store_true", help="also show the event type, conductor and user"
    )
    _add_output(p, many=True)
    p.set_defaults(func=_cmd_history_list, parser=p)
    p = history_sub.add_parser(
        "get",
        parents=[common],
        help="show one history entry",
        description="Show one entry of a node's history, by its UUID.",
    )
    _add_node_arg(p)
    p.add_argument("event", metavar="EVENT_UUID", help="the entry's UUID")
    _add_output(p, many=False)
    p.set_defaults(func=_cmd_history_get, parser=p)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; built per call so that tests get a fresh one."""
    from ironic_fsm import __version__

    db_help = (
        f"database URL or SQLite file path (default: ${DB_ENV}, else "
        f"$XDG_DATA_HOME/ironic_fsm/ironic_fsm.sqlite)"
    )
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="OpenStack Ironic's node lifecycle, from the command line.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    config_help = (
        f"JSON settings file: Config options, runbooks, deploy templates (default: ${CONFIG_ENV})"
    )
    debug_help = "print the traceback of an unexpected error"
    parser.add_argument("--db", metavar="URL", help=db_help)
    parser.add_argument("--config", metavar="FILE", help=config_help)
    parser.add_argument("--debug", action="store_true", help=debug_help)
    # Leaf commands accept --db too (after the command, where people type it);
    # SUPPRESS keeps them from overwriting a --db given before the command.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="URL", default=argparse.SUPPRESS, help=db_help)
    common.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS, help=config_help)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=debug_help)

    top = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _build_node(top, common)

    conductor = top.add_parser(
        "conductor",
        help="see the conductors sharing the database",
        description="See the conductors registered in the database.",
    )
    conductor_sub = conductor.add_subparsers(
        dest="conductor_command", metavar="COMMAND", required=True
    )
    p = conductor_sub.add_parser(
        "list",
        parents=[common],
        help="list conductors",
        description="List the conductors registered in the database, alive or not: alive is "
        "online and heard from within heartbeat_timeout (see --config).",
    )
    p.add_argument("--long", action="store_true", help="also show drivers and the last heartbeat")
    _add_output(p, many=True)
    p.set_defaults(func=_cmd_conductor_list, parser=p)
    add_serve_parser(top, common)

    p = top.add_parser(
        "states",
        help="list the lifecycle's states",
        description="List every provision state: stable or not, default target, accepted events.",
    )
    _add_output(p, many=True)
    p.set_defaults(func=_cmd_states, parser=p)

    p = top.add_parser(
        "diagram",
        help="draw the lifecycle",
        description="Draw the lifecycle as Graphviz DOT, Mermaid, or SVG (needs 'dot').",
    )
    p.add_argument(
        "-f",
        "--format",
        choices=("dot", "mermaid", "svg"),
        default="dot",
        help="diagram format (default: dot)",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=_cmd_diagram, parser=p)

    p = top.add_parser(
        "apply",
        parents=[common],
        help="enroll, update and reconcile the nodes of a fleet file",
        description="Apply a declarative fleet file (YAML or JSON; see docs/fleet-file.rst): "
        "the whole file is checked first, then missing nodes are enrolled, fields that differ "
        "updated, and each node reconciled one verb per round toward its wanted state. "
        "${VAR} in a string value is read from the environment and never shown.",
    )
    p.add_argument("file", metavar="FLEET_FILE", help="the fleet file, or '-' for standard input")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (creates, updated fields, verbs) and change nothing",
    )
    p.add_argument(
        "--wait",
        nargs="?",
        type=_timeout,
        const=0.0,
        metavar="TIMEOUT",
        help="keep reconciling until every node is where it is wanted, failed or blocked, for "
        "at most TIMEOUT seconds (default 0: no limit); without it, one round",
    )
    p.add_argument(
        "--workers",
        metavar="N",
        type=int,
        default=8,
        help="nodes reconciled at a time (default: 8)",
    )
    _add_output(p, many=True)
    p.set_defaults(func=_cmd_apply, parser=p)

    p = top.add_parser(
        "demo",
        help="run a fleet of emulated BMCs through the lifecycle",
        description="Start emulated IPMI and Redfish BMCs on 127.0.0.1, enroll them in a "
        "SQLite store and drive every node through its lifecycle (Redfish: inspect, BIOS "
        "and RAID clean steps; IPMI: power and boot device only), retiring two; shows "
        "progress live. Needs the 'demo' extra: pip install 'ironic_fsm[demo]'.",
    )
    from ironic_fsm import demo

    demo.add_arguments(p)
    p.set_defaults(func=demo.run, parser=p)
    return parser
