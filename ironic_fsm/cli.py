"""``ironic-fsm``: the node lifecycle from a shell, shaped like ``openstack baremetal node``.

Operators who know Ironic's client should not have to learn new words, so
the commands, options, output formats (``-f table|json|yaml|value|csv``,
``-c COLUMN``) and column names mirror it. Nodes live in a SQLite file (or
any database URL ``SQLStore`` accepts), so that successive invocations see
the same nodes; the conductor runs synchronously, so every provisioning
command returns once the node has settled, and ``--wait`` covers nodes
that another process continues.

Exit codes, so that scripts can tell outcomes apart:

* ``0``: done;
* ``1``: the request was refused or failed (any
  :class:`~ironic_fsm.exceptions.IronicFSMError`, an unreadable file, a
  flow that ended in a failure state, a ``--wait`` that timed out, an
  unexpected error);
* ``2``: bad usage (argparse's convention), including options given to a
  verb that cannot use them;
* ``130``: interrupted.

Every error is one line on standard error; a traceback is printed only
with ``--debug``. The formatter libraries (prettytable, PyYAML) and the
store are imported only by the commands that need them.
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
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, NoReturn

from ironic_fsm import states as s
from ironic_fsm.exceptions import (
    IronicFSMError,
    MissingDependency,
    NodeLocked,
    StepsNotAvailable,
)
from ironic_fsm.machine import LIFECYCLE
from ironic_fsm.node import NODE_FIELDS

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor
    from ironic_fsm.config import Config
    from ironic_fsm.history import HistoryEntry
    from ironic_fsm.node import Node

__all__ = ["CLIError", "default_db_path", "main", "resolve_db_url"]

PROG: Final = "ironic-fsm"

#: Environment variable naming the database when ``--db`` is not given.
DB_ENV: Final = "IRONIC_FSM_DB"
CONFIG_ENV: Final = "IRONIC_FSM_CONFIG"

#: Seconds between two looks at the node under ``--wait`` (as Ironic's client).
POLL_INTERVAL: float = 2.0

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


class CLIError(Exception):
    """A failure of the command line itself (unreadable file, missing program): exit code 1."""


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


def _one_line(message: str) -> str:
    """An error is one line, whatever drivers and databases put in their messages.

    A ``password=`` parameter (of a connection string, say) is masked on
    the way: an error is no place for a secret.
    """
    message = re.sub(r"(?i)(password=)[^&\s]*", r"\1******", message)
    return " ".join(message.split()) or "(no message)"


def _error(message: str) -> None:
    print(f"error: {_one_line(message)}", file=sys.stderr)


def _report_error(exc: IronicFSMError) -> None:
    """Print a library error, saying when simply retrying may work, on one line."""
    hint = ""
    if isinstance(exc, StepsNotAvailable):
        retry_after = getattr(exc, "retry_after", -1)
        if isinstance(retry_after, (int, float)) and retry_after >= 0:
            hint = f"the steps are not known yet; retry in {retry_after:g} seconds"
        else:
            hint = "the steps are not known yet; retry later"
    elif isinstance(exc, NodeLocked):
        hint = "the node is busy; this error is retryable, try the command again later"
    elif exc.retryable:
        hint = "this error is retryable; try the command again later"
    message = str(exc) or type(exc).__name__
    _error(f"{message} ({hint})" if hint else message)


# -- the database ---------------------------------------------------------------------


def default_db_path() -> Path:
    """Where nodes live by default: the user's data directory (XDG base directories).

    ``$XDG_DATA_HOME`` is honoured only when absolute, as the XDG
    specification asks; otherwise ``~/.local/share``.
    """
    base = os.environ.get("XDG_DATA_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "share"
    return root / "ironic_fsm" / "ironic_fsm.sqlite"


def _private_directory(path: Path) -> None:
    """Create ``path`` (and missing parents) readable by its owner only.

    The database holds BMC credentials. Our own directory is tightened
    even if it already existed with a looser mode; parents that existed
    are left alone (they are the user's).
    """
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made meanwhile by another command; checked below if it is ours
        os.chmod(directory, 0o700)  # mkdir's mode is filtered by the umask
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o700)


def resolve_db_url(db: str | None) -> str:
    """The database URL for ``--db`` (or ``$IRONIC_FSM_DB``, or the default file).

    A bare path becomes an absolute ``sqlite:///`` URL, so that the same
    database is used whatever the working directory of later commands.
    Only the default location's directory is created (mode 0700): a typo
    in an explicit path should fail, not create directories.
    """
    value = db or os.environ.get(DB_ENV) or ""
    if not value:
        path = default_db_path()
        _private_directory(path.parent)
        return f"sqlite:///{path}"
    if "://" in value:
        return value
    return f"sqlite:///{os.path.abspath(os.path.expanduser(value))}"


def _redact_url(url: str) -> str:
    # A PostgreSQL URL may carry a password, in the authority or the query; never echo it.
    url = re.sub(r"(://[^:/@]*:)[^@]*@", r"\1******@", url)
    return re.sub(r"(?i)(password=)[^&\s]*", r"\1******", url)


def _missing_driver(url: str, exc: ImportError) -> MissingDependency:
    """The store's database driver is absent: name the extra that brings it."""
    scheme = url.split("://", 1)[0].lower()
    extra = "postgres" if scheme.startswith("postgres") else "sql"
    return MissingDependency(
        f"the database {_redact_url(url)} needs a driver that is not installed "
        f"({exc.name or exc}): pip install 'ironic_fsm[{extra}]'",
        extra=extra,
    )


@contextmanager
def _open_conductor(args: argparse.Namespace) -> Iterator[Conductor]:
    """A conductor over the chosen database; the store is closed afterwards.

    The settings file is read first, so that a mistake in it never
    touches the database.
    """
    settings = _read_settings(getattr(args, "config", None))
    url = resolve_db_url(args.db)
    try:
        from ironic_fsm.stores import SQLStore  # the store's driver loads only here

        store = SQLStore(url)
    except IronicFSMError:
        raise
    except ImportError as exc:
        raise _missing_driver(url, exc) from exc
    except Exception as exc:
        raise CLIError(f"cannot open database {_redact_url(url)}: {exc}") from exc
    try:
        yield _settings_conductor(store, settings)
    finally:
        store.close()


# -- the settings file ----------------------------------------------------------------


class _Settings(NamedTuple):
    path: str
    config: Config
    runbooks: dict[str, tuple[list[dict[str, Any]], list[str]]]
    deploy_templates: dict[str, list[dict[str, Any]]]


def _kind(value: object) -> str:
    """A JSON value's type, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _check_steps(path: str, where: str, steps: object) -> list[dict[str, Any]]:
    if not isinstance(steps, list):
        raise CLIError(
            f"settings file {path}: {where}: expected a list of steps, got {_kind(steps)}"
        )
    for i, step in enumerate(steps):
        at = f"{where}[{i}]"
        if not isinstance(step, dict):
            raise CLIError(f"settings file {path}: {at}: expected a step object, got {_kind(step)}")
        for key in ("interface", "step"):
            if not isinstance(step.get(key), str):
                raise CLIError(
                    f"settings file {path}: {at}.{key}: expected a string, got "
                    f"{_kind(step.get(key)) if key in step else 'nothing'}"
                )
        if "args" in step and not isinstance(step["args"], dict):
            raise CLIError(
                f"settings file {path}: {at}.args: expected an object, got {_kind(step['args'])}"
            )
    return steps


def _check_object(path: str, where: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CLIError(f"settings file {path}: {where}: expected an object, got {_kind(value)}")
    return value


def _read_settings(path: str | None) -> _Settings | None:
    """Read and check the whole settings file; every mistake names its place in the file."""
    path = path or os.environ.get(CONFIG_ENV) or None
    if path is None:
        return None
    text, _ = _read_source(path, "--config")
    data = _parse_json(text, f"settings file {path}", "--config")
    if not isinstance(data, dict):
        raise CLIError(
            f"settings file {path}: expected a JSON object with the keys config, runbooks "
            f"and deploy_templates, got {_kind(data)}"
        )
    unknown = sorted(set(data) - {"config", "runbooks", "deploy_templates"})
    if unknown:
        raise CLIError(
            f"settings file {path}: unknown key(s) {', '.join(map(repr, unknown))}; the file "
            "may only have config, runbooks and deploy_templates"
        )
    options = _check_object(path, "config", data.get("config", {}))
    from ironic_fsm.config import Config

    try:
        config = Config(**options)
    except (IronicFSMError, TypeError, ValueError) as exc:
        raise CLIError(f"settings file {path}: config: {exc}") from exc
    runbooks: dict[str, tuple[list[dict[str, Any]], list[str]]] = {}
    for name, runbook in _check_object(path, "runbooks", data.get("runbooks", {})).items():
        where = f"runbooks.{name}"
        runbook = _check_object(path, where, runbook)
        extra = sorted(set(runbook) - {"steps", "traits"})
        if extra:
            raise CLIError(
                f"settings file {path}: {where}: unknown key(s) {', '.join(map(repr, extra))}; "
                "a runbook has steps and traits"
            )
        if "steps" not in runbook:
            raise CLIError(f"settings file {path}: {where}: needs a 'steps' list")
        steps = _check_steps(path, f"{where}.steps", runbook["steps"])
        traits = runbook.get("traits", [])
        if not isinstance(traits, list):
            raise CLIError(
                f"settings file {path}: {where}.traits: expected a list of strings, "
                f"got {_kind(traits)}"
            )
        for i, trait in enumerate(traits):
            if not isinstance(trait, str):
                raise CLIError(
                    f"settings file {path}: {where}.traits[{i}]: expected a string, "
                    f"got {_kind(trait)}"
                )
        runbooks[name] = (steps, traits)
    templates = {
        name: _check_steps(path, f"deploy_templates.{name}", steps)
        for name, steps in _check_object(
            path, "deploy_templates", data.get("deploy_templates", {})
        ).items()
    }
    return _Settings(path, config, runbooks, templates)


def _settings_conductor(store: Any, settings: _Settings | None) -> Conductor:
    from ironic_fsm.conductor import Conductor

    if settings is None:
        return Conductor(store=store)
    path = settings.path
    conductor = Conductor(store=store, config=settings.config)
    for name, (steps, traits) in settings.runbooks.items():
        try:
            conductor.add_runbook(name, steps, traits=traits)
        except (IronicFSMError, TypeError, ValueError) as exc:
            raise CLIError(f"settings file {path}: runbooks.{name}: {exc}") from exc
    for name, steps in settings.deploy_templates.items():
        try:
            conductor.add_deploy_template(name, steps)
        except (IronicFSMError, TypeError, ValueError) as exc:
            raise CLIError(f"settings file {path}: deploy_templates.{name}: {exc}") from exc
    return conductor


def configured_conductor(store: Any, path: str | None) -> Conductor:
    """A conductor with the operator's settings file (``--config`` or ``$IRONIC_FSM_CONFIG``).

    The file is JSON: ``{"config": {<Config options>}, "runbooks": {name:
    {"steps": [...], "traits": [...]}}, "deploy_templates": {name: [...]}}``,
    every part optional. Runbooks and templates live in this file, not in
    the database, so every command sees the same ones.
    """
    return _settings_conductor(store, _read_settings(path))


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


def _provision_state(text: str) -> str:
    """argparse type for ``--provision-state``: a filter on a state that cannot exist is a typo."""
    if text in LIFECYCLE.states:
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a provision state; the states are: "
        + ", ".join(repr(state) for state in LIFECYCLE.states)
    )


def _limit(text: str) -> int:
    """argparse type for ``node list --limit``: a count of nodes, 0 meaning no limit (as OSC)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a number of nodes (0 for no limit), got {text!r}"
        )
    return value


def _sort(text: str) -> tuple[str, str]:
    """argparse type for ``node list --sort KEY[:asc|desc]`` (OSC's spelling)."""
    from ironic_fsm.stores.base import SORT_DIRS, SORT_KEYS

    key, _, direction = text.partition(":")
    direction = direction or "asc"
    if key not in SORT_KEYS:
        raise argparse.ArgumentTypeError(
            f"cannot sort on {key!r}; the sort keys are: {', '.join(SORT_KEYS)}"
        )
    if direction not in SORT_DIRS:
        raise argparse.ArgumentTypeError(
            f"the sort direction is 'asc' or 'desc', not {direction!r}"
        )
    return key, direction


def _timeout(text: str) -> float:
    """argparse type for ``--wait [TIMEOUT]``: seconds, 0 meaning no limit."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, got {text!r}")
    return value


def _read_source(source: str, option: str) -> tuple[str, str]:
    """The text of ``source`` (a file, or ``-`` for standard input) and how to name it."""
    where = "standard input" if source == "-" else f"file {source!r}"
    try:
        if source == "-":
            if sys.stdin is None:  # started with standard input closed
                raise CLIError(f"{option}: standard input is closed")
            return sys.stdin.read(), where
        return Path(source).read_text(encoding="utf-8"), where
    except OSError as exc:
        raise CLIError(f"{option}: cannot read {where}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise CLIError(f"{option}: {where} is not UTF-8 text ({exc.reason})") from exc


def _parse_json(text: str, where: str, option: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CLIError(
            f"{option}: {where} is not valid JSON: {exc.msg} (line {exc.lineno}, column "
            f"{exc.colno})"
        ) from exc
    except RecursionError:
        raise CLIError(f"{option}: the JSON in {where} is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer longer than Python converts
        raise CLIError(f"{option}: {where} is not usable JSON: {exc}") from exc


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
        raise CLIError(f"{option}: expected a JSON list of steps, got {_kind(steps)}")
    return steps


def _usage_error(args: argparse.Namespace, message: str) -> NoReturn:
    """Report bad usage the argparse way (usage line, exit code 2)."""
    parser: argparse.ArgumentParser = args.parser
    parser.error(message)


# -- node commands ----------------------------------------------------------------------


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
    emit_one(args, _node_record(node))
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    filters: dict[str, Any] = {}
    for name in ("retired", "maintenance", "provision_state", "driver"):
        value = getattr(args, name)
        if value is not None:
            filters[name] = value
    sort_key, sort_dir = args.sort
    fields = _list_fields(args)
    with _open_conductor(args) as conductor:
        nodes = conductor.list_nodes(
            limit=args.limit or None,
            marker=args.marker,
            sort_key=sort_key,
            sort_dir=sort_dir,
            **filters,
        )
    records = [_node_record(node) for node in nodes]
    emit_list(
        args,
        [_field_label(field) for field in fields],
        [[record[field] for field in fields] for record in records],
    )
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        node = conductor.get_node(args.node)
    emit_one(args, _node_record(node, _show_fields(args)))
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
            raise CLIError(f"--target-raid-config: expected a JSON object, got {_kind(config)}")
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
        if args.wait is not None:
            settled = _wait_for(conductor, node, verb, args.wait)
            if settled is None:
                return 1
            node = settled
    return _report_outcome(node, verb)


def _settled(node: Node) -> bool:
    """Whether ``--wait`` may stop: nothing is in progress on the node any more."""
    state = node.provision_state
    return (
        LIFECYCLE.is_stable(state)
        or state in s.FAILURE_STATES
        or state in s.HOLD_STATES
        or state == s.ERROR
    )


def _wait_for(conductor: Conductor, node: Node, verb: str, timeout: float) -> Node | None:
    """Poll until the node settles (``--wait``); ``None`` after saying that time ran out.

    Another process (an embedding application, a conductor service)
    continues nodes left waiting for an asynchronous step; this only
    watches the shared database, as Ironic's client watches the API.
    """
    deadline = None if timeout == 0 else time.monotonic() + timeout
    while not _settled(node):
        if deadline is not None and time.monotonic() >= deadline:
            _error(
                f"node {_label(node)}: '{verb}' did not settle within {timeout:g} seconds; "
                f"it is in provision state '{node.provision_state}'"
            )
            return None
        pause = POLL_INTERVAL
        if deadline is not None:
            pause = max(0.0, min(pause, deadline - time.monotonic()))
        time.sleep(pause)
        node = conductor.get_node(node.uuid)
    return node


def _report_outcome(node: Node, verb: str) -> int:
    """Say where the node settled; a flow that ended in failure is exit code 1.

    The verb itself was accepted, but a script running ``ironic-fsm node
    clean ... && ironic-fsm node provide ...`` must not go on after a
    failed clean. A node back in ``enroll`` with ``last_error`` (its BMC
    could not be verified) failed too.
    """
    state = node.provision_state
    failed = state in s.FAILURE_STATES or state == s.ERROR
    if failed or (state == s.ENROLL and node.last_error):
        detail = f": {node.last_error}" if node.last_error else ""
        _error(f"node {_label(node)}: '{verb}' ended in provision state '{state}'{detail}")
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
    rows = []
    for step in steps:
        argsinfo = step.get("argsinfo") or {}
        rows.append(
            [
                step.get("interface"),
                step.get("step"),
                step.get("priority"),
                step.get("abortable"),
                step.get("requires_ramdisk"),
                Cell(", ".join(sorted(argsinfo)), argsinfo),
            ]
        )
    headers = ("Interface", "Step", "Priority", "Abortable", "Requires Ramdisk", "Arguments")
    emit_list(args, headers, rows)
    return 0


#: ``node history list`` columns, as ``openstack baremetal node history list``; ``--long``
#: adds the detail ones.
_HISTORY_COLUMNS: Final = ("UUID", "Created At", "Severity", "Event")
_HISTORY_LONG_COLUMNS: Final = (*_HISTORY_COLUMNS, "Event Type", "Conductor", "User")


def _history_record(entry: HistoryEntry) -> dict[str, object]:
    return {
        "uuid": entry.uuid,
        "created_at": entry.created_at.isoformat(),
        "severity": entry.severity,
        "event_type": entry.event_type,
        "event": entry.event,
        "conductor": entry.conductor,
        "user": entry.user,
    }


def _cmd_history_list(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        entries = conductor.get_node_history(args.node)
    rows: list[list[object]] = []
    for entry in entries:
        row: list[object] = [entry.uuid, entry.created_at.isoformat(), entry.severity, entry.event]
        if args.long:
            row += [entry.event_type, entry.conductor, entry.user]
        rows.append(row)
    emit_list(args, _HISTORY_LONG_COLUMNS if args.long else _HISTORY_COLUMNS, rows)
    return 0


def _cmd_history_get(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        entry = conductor.get_node_history_entry(args.node, args.event)
    emit_one(args, _history_record(entry))
    return 0


# -- lifecycle commands -------------------------------------------------------------------


#: ``conductor list`` columns, as ``openstack baremetal conductor list``; ``--long`` adds two.
_CONDUCTOR_COLUMNS: Final = ("Hostname", "Conductor Group", "Alive")
_CONDUCTOR_LONG_COLUMNS: Final = (*_CONDUCTOR_COLUMNS, "Drivers", "Updated At")


def _cmd_conductor_list(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        conductors = conductor.list_conductors()
    rows: list[list[object]] = []
    for info in conductors:
        row: list[object] = [info.hostname, info.conductor_group, info.alive]
        if args.long:
            types = list(info.hardware_types)
            when = info.updated_at.isoformat()
            row += [Cell(", ".join(types), types), Cell(when, when)]
        rows.append(row)
    emit_list(args, _CONDUCTOR_LONG_COLUMNS if args.long else _CONDUCTOR_COLUMNS, rows)
    return 0


def _cmd_states(args: argparse.Namespace) -> int:
    rows = []
    for state in LIFECYCLE.states:
        stable = LIFECYCLE.is_stable(state)
        events = list(LIFECYCLE.allowed_events(state))
        rows.append(
            [
                state,
                Cell("yes" if stable else "no", stable),
                LIFECYCLE.default_target(state),
                Cell(", ".join(events), events),
            ]
        )
    emit_list(args, ("State", "Stable", "Default Target", "Accepted Events"), rows)
    return 0


def _render_svg(dot_source: str) -> str:
    """Run Graphviz's ``dot``; the library has no renderer of its own and needs none."""
    dot = shutil.which("dot")
    if dot is None:
        raise CLIError(
            "-f svg needs Graphviz's 'dot' program, which is not on PATH; install "
            "Graphviz, or use -f dot and render it elsewhere"
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


# -- apply ----------------------------------------------------------------------------------

#: ``apply`` summary columns.
_APPLY_COLUMNS: Final = ("Name", "Provisioning State", "Wanted", "Result", "Last Error")


def _cmd_apply(args: argparse.Namespace) -> int:
    """Enroll, update and reconcile the nodes of a fleet file (see :mod:`ironic_fsm.fleetfile`)."""
    from ironic_fsm import fleetfile

    text, _ = _read_source(args.file, "FLEET_FILE")
    source = "standard input" if args.file == "-" else args.file
    try:
        with _open_conductor(args) as conductor:
            fleet = fleetfile.load_fleet(text, source=source, conductor=conductor)
            if args.dry_run:
                plan = fleetfile.plan_fleet(conductor, fleet)
                sys.stdout.write("".join(line + "\n" for line in fleetfile.plan_lines(plan, fleet)))
                return 0
            return _apply(args, conductor, fleet)
    except fleetfile.FleetFileError as exc:
        errors = exc.errors
        _error(f"{source}: {len(errors)} problem(s) in the fleet file; nothing was changed")
        for line in errors:
            print(f"  {_one_line(line)}", file=sys.stderr)
        return 1


def _apply(args: argparse.Namespace, conductor: Conductor, fleet: Any) -> int:
    from ironic_fsm import fleetfile

    applier = fleetfile.FleetApply(conductor, fleet, workers=args.workers)
    applier.enroll()
    deadline = None if not args.wait else time.monotonic() + args.wait
    timed_out = False
    while True:
        report = applier.round()
        print(report.line(), file=sys.stderr, flush=True)
        if args.wait is None or applier.settled:
            break
        if deadline is not None and time.monotonic() >= deadline:
            timed_out = True
            break
        if not report.verbs:  # everything busy elsewhere: look again later
            pause = POLL_INTERVAL
            if deadline is not None:
                pause = max(0.0, min(pause, deadline - time.monotonic()))
            time.sleep(pause)
    rows = [
        [
            status.name,
            status.state,
            status.wanted,
            status.result,
            status.last_error or status.note,
        ]
        for status in applier.summary()
    ]
    emit_list(args, _APPLY_COLUMNS, rows)
    if applier.created or applier.updated:
        print(
            f"{len(applier.created)} node(s) enrolled, {len(applier.updated)} updated",
            file=sys.stderr,
        )
    if applier.untouched:
        print(
            f"{len(applier.untouched)} node(s) in the store are not in the file and were left "
            "alone",
            file=sys.stderr,
        )
    if timed_out:
        _error(f"the fleet did not settle within {args.wait:g} seconds")
        return 1
    return 1 if applier.failed else 0


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


def _exit_code(code: object) -> int:
    """The int behind ``SystemExit.code`` (argparse uses 0 and 2)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _unexpected(exc: BaseException, debug: bool) -> int:
    """A bug or an unforeseen failure: one line, the traceback only with ``--debug``."""
    if debug:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    _error(
        f"unexpected {type(exc).__name__}: {exc}"
        + ("" if debug else " (run with --debug for the traceback)")
    )
    return 1


def main(argv: list[str] | None = None) -> int:
    """Run one command and return its exit code (the console script exits with it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # Known before parsing, so that a failure while building the parser obeys it too.
    debug = "--debug" in argv
    try:
        args = build_parser().parse_args(argv)
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
    except OSError as exc:
        # A file or directory the command needed: name it, without a traceback.
        where = f": {exc.filename}" if exc.filename else ""
        _error(f"{exc.strerror or exc}{where}")
        return 1
    except Exception as exc:
        return _unexpected(exc, debug)


if __name__ == "__main__":
    sys.exit(main())
