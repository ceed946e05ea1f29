"""``ironic-fsm``: the node lifecycle from a shell, shaped like ``openstack baremetal node``.

Operators who know Ironic's client should not have to learn new words, so
the commands mirror it (``node create``, ``node manage``, ``node clean
--clean-steps FILE``, ...). Nodes live in a SQLite file (or any database
URL ``SQLStore`` accepts), so that successive invocations see the same
nodes; the conductor runs synchronously, so every provisioning command
returns once the node has settled.

Exit codes, so that scripts can tell mistakes apart:

* ``0``: done;
* ``1``: the request was refused or failed (any
  :class:`~ironic_fsm.exceptions.IronicFSMError`, an unreadable steps file,
  a flow that ended in a failure state);
* ``2``: bad usage (argparse's convention), including options given to a
  verb that cannot use them.

Only the standard library is imported beyond ironic_fsm itself; SQLAlchemy
is loaded when a store is opened, never for ``--help``, ``states`` or
``diagram``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NoReturn

from ironic_fsm import states as s
from ironic_fsm.exceptions import IronicFSMError, NodeLocked, StepsNotAvailable
from ironic_fsm.machine import LIFECYCLE

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor
    from ironic_fsm.node import Node

__all__ = ["CLIError", "default_db_path", "format_table", "main", "resolve_db_url"]

PROG: Final = "ironic-fsm"

#: Environment variable naming the database when ``--db`` is not given.
DB_ENV: Final = "IRONIC_FSM_DB"
CONFIG_ENV: Final = "IRONIC_FSM_CONFIG"

# The provisioning verbs offered as ``node VERB NODE``, in the order of the
# lifecycle, with the one-line help shown by ``node --help``.
_VERBS: Final = {
    "manage": "Move the node to manageable (verifying its BMC when coming from enroll).",
    "provide": "Make a manageable node available (running automated cleaning).",
    "inspect": "Inspect the node's hardware.",
    "clean": "Run manual cleaning steps on a manageable node.",
    "deploy": "Deploy an available node to active.",
    "undeploy": "Tear down an active node (then clean it back to available).",
    "rebuild": "Redeploy an active node.",
    "rescue": "Boot an active node into a rescue ramdisk.",
    "unrescue": "Return a rescued node to active.",
    "abort": "Abort cleaning, deploying, servicing, rescue or inspection.",
    "adopt": "Take over a node that is already deployed.",
    "service": "Run service steps on an active node.",
    "unhold": "Release a node held by a hold step.",
}

# Options of the provisioning verbs: which verbs may use each. Every verb
# accepts every option so that a misplaced one gets a clear message (and
# exit code 2) rather than argparse's terse "unrecognized arguments".
_VERB_OPTIONS: Final = {
    "clean_steps": ("--clean-steps", frozenset({"clean"})),
    "deploy_steps": ("--deploy-steps", frozenset({"deploy", "rebuild"})),
    "service_steps": ("--service-steps", frozenset({"service"})),
    "runbook": ("--runbook", frozenset({"clean", "service"})),
    "disable_ramdisk": ("--disable-ramdisk", frozenset({"clean", "service"})),
    "rescue_password": ("--rescue-password", frozenset({"rescue"})),
}

_POWER: Final = {
    "on": (s.POWER_ON, s.POWER_ON),
    "off": (s.POWER_OFF, s.SOFT_POWER_OFF),
    "reboot": (s.REBOOT, s.SOFT_REBOOT),
}

_LIST_COLUMNS: Final = (
    ("UUID", "uuid"),
    ("Name", "name"),
    ("Power State", "power_state"),
    ("Provisioning State", "provision_state"),
    ("Maintenance", "maintenance"),
    ("Retired", "retired"),
)


class CLIError(Exception):
    """A failure of the command line itself (unreadable file, missing program): exit code 1."""


# -- output -------------------------------------------------------------------------


def _cell(value: object) -> str:
    """How one value looks in a table: empty for None, JSON for containers, one line."""
    if value is None:
        return ""
    if isinstance(value, (dict, list, tuple)):
        text = json.dumps(value, sort_keys=True, default=str)
    else:
        text = str(value)
    return text.replace("\r", " ").replace("\n", " ")


def format_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Plain-text columns aligned with spaces, under a dashed rule.

    Plain text (no box drawing) so that the output greps, pipes to
    ``column``/``awk`` and reads the same in any terminal.
    """
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=False)).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(row) for row in cells)
    return "\n".join(out)


def _print_json(data: object) -> None:
    print(json.dumps(data, indent=2, default=str))


def _label(node: Node) -> str:
    """How messages name a node: its name (which the operator typed) and its UUID."""
    return f"{node.name} ({node.uuid})" if node.name else node.uuid


def _show_node(node: Node, fmt: str) -> None:
    """Print every field of ``node``, secrets masked (this is a display)."""
    data = node.to_dict(mask=True)
    if fmt == "json":
        _print_json(data)
    else:
        print(format_table(("Field", "Value"), sorted(data.items())))


def _error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def _hint(message: str) -> None:
    print(f"hint: {message}", file=sys.stderr)


def _report_error(exc: IronicFSMError) -> None:
    """Print a library error; tell the operator when simply retrying may work."""
    _error(str(exc))
    if isinstance(exc, StepsNotAvailable):
        retry_after = getattr(exc, "retry_after", -1)
        if isinstance(retry_after, (int, float)) and retry_after >= 0:
            _hint(f"the steps are not known yet; retry in {retry_after:g} seconds")
        else:
            _hint("the steps are not known yet; retry later")
    elif isinstance(exc, NodeLocked):
        _hint("the node is busy; this error is retryable, try the command again later")
    elif exc.retryable:
        _hint("this error is retryable; try the command again later")


# -- the database ---------------------------------------------------------------------


def default_db_path() -> Path:
    """Where nodes live by default: the user's data directory (XDG base directories).

    ``$XDG_DATA_HOME`` is honoured only when absolute, as the XDG
    specification asks; otherwise ``~/.local/share``.
    """
    base = os.environ.get("XDG_DATA_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "share"
    return root / "ironic_fsm" / "ironic_fsm.sqlite"


def resolve_db_url(db: str | None) -> str:
    """The database URL for ``--db`` (or ``$IRONIC_FSM_DB``, or the default file).

    A bare path becomes an absolute ``sqlite:///`` URL, so that the same
    database is used whatever the working directory of later commands.
    Only the default location's directory is created: a typo in an
    explicit path should fail, not create directories.
    """
    value = db or os.environ.get(DB_ENV) or ""
    if not value:
        path = default_db_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path}"
    if "://" in value:
        return value
    return f"sqlite:///{os.path.abspath(os.path.expanduser(value))}"


def _redact_url(url: str) -> str:
    # A PostgreSQL URL may carry a password; never echo it.
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1******@", url)


@contextmanager
def _open_conductor(args: argparse.Namespace) -> Iterator[Conductor]:
    """A conductor over the chosen database; the store is closed afterwards."""
    from ironic_fsm.stores import SQLStore  # loads SQLAlchemy: only here

    url = resolve_db_url(args.db)
    try:
        store = SQLStore(url)
    except IronicFSMError:
        raise
    except Exception as exc:
        raise CLIError(f"cannot open database {_redact_url(url)}: {exc}") from exc
    try:
        yield configured_conductor(store, getattr(args, "config", None))
    finally:
        store.close()


def configured_conductor(store: Any, path: str | None) -> Conductor:
    """A conductor with the operator's settings file (``--config`` or ``$IRONIC_FSM_CONFIG``).

    The file is JSON: ``{"config": {<Config options>}, "runbooks": {name:
    {"steps": [...], "traits": [...]}}, "deploy_templates": {name: [...]}}``,
    every part optional. Runbooks and templates live in this file, not in
    the database, so every command sees the same ones.
    """
    from ironic_fsm.conductor import Conductor
    from ironic_fsm.config import Config

    path = path or os.environ.get(CONFIG_ENV) or None
    if path is None:
        return Conductor(store=store)
    try:
        with open(path, encoding="utf-8") as handle:
            settings = json.load(handle)
    except OSError as exc:
        raise CLIError(f"cannot read the settings file {path}: {exc.strerror}") from exc
    except json.JSONDecodeError as exc:
        raise CLIError(
            f"the settings file {path} is not valid JSON (line {exc.lineno}, column "
            f"{exc.colno}): {exc.msg}"
        ) from exc
    unknown = sorted(set(settings) - {"config", "runbooks", "deploy_templates"})
    if not isinstance(settings, dict) or unknown:
        raise CLIError(
            f"the settings file {path} may only have the keys config, runbooks and "
            f"deploy_templates (found: {', '.join(unknown)})"
        )
    conductor = Conductor(store=store, config=Config(**settings.get("config", {})))
    for name, runbook in settings.get("runbooks", {}).items():
        if not isinstance(runbook, dict) or not isinstance(runbook.get("steps"), list):
            raise CLIError(f"{path}: runbook {name!r} needs a 'steps' list")
        conductor.add_runbook(name, runbook["steps"], traits=runbook.get("traits", ()))
    for name, steps in settings.get("deploy_templates", {}).items():
        if not isinstance(steps, list):
            raise CLIError(f"{path}: deploy template {name!r} must be a list of steps")
        conductor.add_deploy_template(name, steps)
    return conductor


# -- argument helpers -------------------------------------------------------------------


def _key_value(text: str) -> tuple[str, str]:
    """argparse type for ``KEY=VALUE``; the value stays a string, as in Ironic's client."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _boolean(text: str) -> bool:
    """argparse type for true/false flags such as ``--automated-clean``."""
    lowered = text.strip().lower()
    if lowered in ("true", "yes", "on", "1"):
        return True
    if lowered in ("false", "no", "off", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _read_source(source: str, option: str) -> tuple[str, str]:
    """The text of ``source`` (a file, or ``-`` for standard input) and how to name it."""
    if source == "-":
        return sys.stdin.read(), "standard input"
    try:
        return Path(source).read_text(encoding="utf-8"), f"file {source!r}"
    except OSError as exc:
        raise CLIError(f"{option}: cannot read file {source!r}: {exc.strerror or exc}") from exc


def _parse_json(text: str, where: str, option: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CLIError(
            f"{option}: invalid JSON in {where}: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from exc


def _load_json_arg(value: str, option: str) -> Any:
    """JSON given inline, as ``@FILE``, as ``-`` (stdin) or as the name of a file.

    Ironic's client accepts all of these; the file wins when a file of
    that name exists.
    """
    if value == "-" or value.startswith("@"):
        text, where = _read_source(value if value == "-" else value[1:], option)
        return _parse_json(text, where, option)
    if os.path.exists(value):
        text, where = _read_source(value, option)
        return _parse_json(text, where, option)
    if value.lstrip()[:1] in ("[", "{"):
        return _parse_json(value, "the argument", option)
    raise CLIError(f"{option}: no such file {value!r} (give a JSON file, '-' or inline JSON)")


def _load_steps(value: str, option: str) -> list[Any]:
    """A steps list from a file, stdin or inline JSON; anything but a list is refused."""
    steps = _load_json_arg(value, option)
    if not isinstance(steps, list):
        raise CLIError(
            f"{option}: expected a JSON list of steps, got {type(steps).__name__} from {value!r}"
        )
    return steps


def _usage_error(args: argparse.Namespace, message: str) -> NoReturn:
    """Report bad usage the argparse way (usage line, exit code 2)."""
    parser: argparse.ArgumentParser = args.parser
    parser.error(message)


# -- node commands ----------------------------------------------------------------------


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
    with _open_conductor(args) as conductor:
        node = conductor.create_node(**fields)
    _show_node(node, args.format)
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    filters: dict[str, Any] = {}
    for name in ("retired", "maintenance", "provision_state", "driver"):
        value = getattr(args, name)
        if value is not None:
            filters[name] = value
    with _open_conductor(args) as conductor:
        nodes = conductor.list_nodes(**filters)
    if args.format == "json":
        _print_json([node.to_dict(mask=True) for node in nodes])
    else:
        rows = [[getattr(node, field) for _, field in _LIST_COLUMNS] for node in nodes]
        print(format_table([title for title, _ in _LIST_COLUMNS], rows))
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        node = conductor.get_node(args.node)
    _show_node(node, args.format)
    return 0


_DICT_OPTIONS: Final = ("driver_info", "properties", "extra", "instance_info")


def _cmd_set(args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {}
    for flag in ("retired", "maintenance", "protected"):
        if getattr(args, flag):
            fields[flag] = True
    for name in (
        "retired_reason",
        "maintenance_reason",
        "protected_reason",
        "name",
        "driver",
        "resource_class",
        "automated_clean",
    ):
        value = getattr(args, name)
        if value is not None:
            fields[name] = value
    if args.target_raid_config is not None:
        config = _load_json_arg(args.target_raid_config, "--target-raid-config")
        if not isinstance(config, dict):
            raise CLIError(
                f"--target-raid-config: expected a JSON object, got {type(config).__name__}"
            )
        fields["target_raid_config"] = config
    updates = {name: getattr(args, name) for name in _DICT_OPTIONS if getattr(args, name)}
    if not fields and not updates:
        _usage_error(args, "nothing to set: give at least one option (see --help)")
    with _open_conductor(args) as conductor:
        if updates:
            # KEY=VALUE merges into the stored dict, as Ironic's client does with
            # JSON patch "add"; update_node takes whole fields, so read them first.
            current = conductor.get_node(args.node)
            for name, pairs in updates.items():
                merged = dict(getattr(current, name))
                merged.update(pairs)
                fields[name] = merged
        conductor.update_node(args.node, **fields)
    return 0


def _cmd_unset(args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {}
    for flag in ("retired", "maintenance", "protected"):
        if getattr(args, flag):
            fields[flag] = False
    for flag in (
        "retired_reason",
        "maintenance_reason",
        "protected_reason",
        "name",
        "resource_class",
        "automated_clean",
    ):
        if getattr(args, f"unset_{flag}"):
            fields[flag] = None
    if args.target_raid_config:
        fields["target_raid_config"] = {}
    removals = {name: getattr(args, name) for name in _DICT_OPTIONS if getattr(args, name)}
    if not fields and not removals:
        _usage_error(args, "nothing to unset: give at least one option (see --help)")
    with _open_conductor(args) as conductor:
        if removals:
            current = conductor.get_node(args.node)
            for name, keys in removals.items():
                # Removing a key that is not there is not an error, as in Ironic's client.
                remaining = dict(getattr(current, name))
                for key in keys:
                    remaining.pop(key, None)
                fields[name] = remaining
        conductor.update_node(args.node, **fields)
    return 0


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


def _cmd_verb(args: argparse.Namespace) -> int:
    verb: str = args.verb
    for dest, (option, verbs) in _VERB_OPTIONS.items():
        value = getattr(args, dest)
        if value not in (None, False) and verb not in verbs:
            allowed = " or ".join(f"'{v}'" for v in sorted(verbs))
            _usage_error(args, f"{option} can only be used with {allowed}, not with '{verb}'")
    for steps_option in ("clean_steps", "service_steps"):
        steps_verb = steps_option.split("_")[0]
        if verb == steps_verb and (getattr(args, steps_option) is None) == (args.runbook is None):
            _usage_error(
                args,
                f"'{verb}' needs exactly one of {_VERB_OPTIONS[steps_option][0]} FILE "
                "or --runbook NAME",
            )
    kwargs: dict[str, Any] = {
        "runbook": args.runbook,
        "disable_ramdisk": args.disable_ramdisk,
        "rescue_password": args.rescue_password,
    }
    for dest in ("clean_steps", "deploy_steps", "service_steps"):
        value = getattr(args, dest)
        kwargs[dest] = None if value is None else _load_steps(value, _VERB_OPTIONS[dest][0])
    with _open_conductor(args) as conductor:
        node = conductor.do_provisioning_action(args.node, verb, **kwargs)
    return _report_outcome(node, verb)


def _report_outcome(node: Node, verb: str) -> int:
    """Say where the node settled; a flow that ended in failure is exit code 1.

    The verb itself was accepted, but a script running ``ironic-fsm node
    clean ... && ironic-fsm node provide ...`` must not go on after a
    failed clean.
    """
    state = node.provision_state
    if state in s.FAILURE_STATES or state == s.ERROR:
        _error(f"node {_label(node)}: '{verb}' ended in provision state '{state}'")
        if node.last_error:
            print(f"last error: {node.last_error}", file=sys.stderr)
        return 1
    if state in s.WAIT_STATES:
        print(f"Node {_label(node)} is in '{state}', waiting for an asynchronous step")
    elif state in s.HOLD_STATES:
        print(f"Node {_label(node)} is in '{state}'; run 'node unhold' to go on")
    else:
        print(f"Node {_label(node)} is now in provision state '{state}'")
    return 0


def _cmd_clean_steps(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        steps = conductor.get_clean_steps(args.node, min_priority=args.min_priority)
    if args.format == "json":
        _print_json(steps)
        return 0
    rows = [
        [
            step.get("interface"),
            step.get("step"),
            step.get("priority"),
            step.get("abortable"),
            step.get("requires_ramdisk"),
            ", ".join(sorted(step.get("argsinfo") or {})),
        ]
        for step in steps
    ]
    headers = ("Interface", "Step", "Priority", "Abortable", "Requires Ramdisk", "Arguments")
    print(format_table(headers, rows))
    return 0


# -- lifecycle commands -------------------------------------------------------------------


def _cmd_states(args: argparse.Namespace) -> int:
    if args.format == "json":
        _print_json(
            [
                {
                    "state": state,
                    "stable": LIFECYCLE.is_stable(state),
                    "default_target": LIFECYCLE.default_target(state),
                    "events": list(LIFECYCLE.allowed_events(state)),
                }
                for state in LIFECYCLE.states
            ]
        )
    else:
        table = [
            (
                state,
                "yes" if LIFECYCLE.is_stable(state) else "no",
                LIFECYCLE.default_target(state),
                ", ".join(LIFECYCLE.allowed_events(state)),
            )
            for state in LIFECYCLE.states
        ]
        print(format_table(("State", "Stable", "Default Target", "Accepted Events"), table))
    return 0


def _render_svg(dot_source: str) -> str:
    """Run Graphviz's ``dot``; the library has no renderer of its own and needs none."""
    dot = shutil.which("dot")
    if dot is None:
        raise CLIError(
            "--format svg needs Graphviz's 'dot' program, which is not on PATH; install "
            "Graphviz, or use --format dot and render it elsewhere"
        )
    result = subprocess.run(
        [dot, "-Tsvg"], input=dot_source, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise CLIError(
            f"'dot -Tsvg' failed (exit code {result.returncode}): {result.stderr.strip()}"
        )
    return result.stdout


def _cmd_diagram(args: argparse.Namespace) -> int:
    if args.format == "mermaid":
        text = LIFECYCLE.to_mermaid()
    elif args.format == "svg":
        text = _render_svg(LIFECYCLE.to_dot())
    else:
        text = LIFECYCLE.to_dot()
    if not text.endswith("\n"):
        text += "\n"
    if args.output is None or args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CLIError(f"cannot write {args.output!r}: {exc.strerror or exc}") from exc
    return 0


# -- the parser -----------------------------------------------------------------------------


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f",
        "--format",
        choices=("table", "json"),
        default="table",
        help="output format (default: table)",
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
    _add_format(p)
    p.set_defaults(func=_cmd_create, parser=p)

    p = sub.add_parser("list", parents=[common], help="list nodes", description="List nodes.")
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "--retired", dest="retired", action="store_const", const=True, help="only retired nodes"
    )
    group.add_argument(
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
    p.add_argument("--provision-state", metavar="STATE", help="only nodes in this state")
    p.add_argument("--driver", help="only nodes of this hardware type")
    _add_format(p)
    p.set_defaults(func=_cmd_list, parser=p, retired=None, maintenance=None)

    p = sub.add_parser(
        "show",
        parents=[common],
        help="show a node",
        description="Show every field of a node (secrets masked).",
    )
    _add_node_arg(p)
    _add_format(p)
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
    _add_format(p)
    p.set_defaults(func=_cmd_clean_steps, parser=p)


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
    parser.add_argument("--db", metavar="URL", help=db_help)
    parser.add_argument("--config", metavar="FILE", help=config_help)
    # Leaf commands accept --db too (after the command, where people type it);
    # SUPPRESS keeps them from overwriting a --db given before the command.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="URL", default=argparse.SUPPRESS, help=db_help)
    common.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS, help=config_help)

    top = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _build_node(top, common)

    p = top.add_parser(
        "states",
        help="list the lifecycle's states",
        description="List every provision state: stable or not, default target, accepted events.",
    )
    _add_format(p)
    p.set_defaults(func=_cmd_states, parser=p)

    p = top.add_parser(
        "diagram",
        help="draw the lifecycle",
        description="Draw the lifecycle as Graphviz DOT, Mermaid, or SVG (needs 'dot').",
    )
    p.add_argument(
        "--format",
        choices=("dot", "mermaid", "svg"),
        default="dot",
        help="diagram format (default: dot)",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=_cmd_diagram, parser=p)

    p = top.add_parser(
        "demo",
        help="run a fleet of emulated BMCs through the lifecycle",
        description="Start emulated IPMI and Redfish BMCs on 127.0.0.1, enroll them in a "
        "SQLite store and take every node through manage, inspect, provide (with BIOS and "
        "RAID steps), deploy and undeploy, retiring two; shows progress live. Needs the "
        "'demo' extra: pip install 'ironic_fsm[demo]'.",
    )
    from ironic_fsm import demo

    demo.add_arguments(p)
    p.set_defaults(func=demo.run, parser=p)
    return parser


def _exit_code(code: object) -> int:
    """The int behind ``SystemExit.code`` (argparse uses 0 and 2)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    """Run one command and return its exit code (the console script exits with it)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        func: Callable[[argparse.Namespace], int] = args.func
        return func(args)
    except SystemExit as exc:  # argparse: --help, --version, bad usage
        return _exit_code(exc.code)
    except IronicFSMError as exc:
        _report_error(exc)
        return 1
    except CLIError as exc:
        _error(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Output piped into `head` and the like: stop quietly, as Unix tools do.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:
        # Database failures surface as SQLAlchemy errors; say so without a traceback.
        if type(exc).__module__.split(".")[0] == "sqlalchemy":
            _error(f"database error: {exc}")
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
