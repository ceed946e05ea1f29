"""argparse types and readers of ``@file``/``-`` arguments: bad input fails before a store opens."""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import sys
from pathlib import Path
from typing import Any

from ironic_fsm._node_fields import conductor_group as _check_group
from ironic_fsm._node_fields import json_kind as _kind
from ironic_fsm.cli.errors import CLIError
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.machine import LIFECYCLE

# -- argument helpers -------------------------------------------------------------------


def _key_value(text: str) -> tuple[str, Any]:
    """argparse type for ``KEY=VALUE``: the value as JSON when it parses, else the text.

    That is what python-ironicclient does (``split_and_deserialize``), so
    ``--property cpus=32`` stores the number 32 through either CLI and one
    database never holds both ``32`` and ``"32"``; ``'x="32"'`` keeps text.
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.strip(), json.loads(value)
    except ValueError:
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


def _conductor_group(text: str) -> str:
    """argparse type for ``--conductor-group``: the node field's rule, so a typo fails at once."""
    try:
        return _check_group(text, "a conductor group")
    except InvalidParameterValue as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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


def _load_configdrive(value: str, option: str) -> Any:
    """A config drive as ``openstack baremetal node deploy --config-drive`` takes one.

    Inline JSON (an object: the drive's JSON form); a file holding that JSON,
    the drive's base64 text, or the image itself (gzipped and encoded here,
    the form the agent takes); else the text as given (a URL or base64).
    """
    if value.lstrip()[:1] == "{":
        return _parse_json(value, "the argument", option)
    if not os.path.isfile(value):
        return value
    try:
        with open(value, "rb") as source:
            data = source.read()
    except OSError as exc:
        raise CLIError(f"{option}: cannot read {value!r}: {exc.strerror}") from None
    text = data.decode("ascii", errors="replace").strip()
    if text[:1] == "{":
        return _parse_json(text, repr(value), option)
    if text and all(c.isalnum() or c in "+/=\n\r\t " for c in text):
        return text
    return base64.b64encode(gzip.compress(data)).decode("ascii")
