"""The shipped JSON Schema, compiled once, and every error it finds named by its path."""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Any, Final

from ironic_fsm._node_fields import json_kind as _kind
from ironic_fsm.masking import MASK, is_secret_key

SCHEMA_FILE: Final = "fleetfile.schema.json"


@cache
def _schema_text() -> str:
    return resources.files("ironic_fsm").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


def schema() -> dict[str, Any]:
    """The fleet file's JSON Schema, as shipped in the package (a fresh copy)."""
    data: dict[str, Any] = json.loads(_schema_text())
    return data


def _invalid() -> type[Exception]:
    """fastjsonschema's "value does not fit" error, loaded with fastjsonschema itself."""
    error: type[Exception] = importlib.import_module("fastjsonschema").JsonSchemaValueException
    return error


@cache
def validator(pointer: str = "") -> Any:
    """A compiled validator for the schema, or for the sub-schema at ``pointer``.

    fastjsonschema, not jsonschema: it compiles the schema to Python and
    checks 10,000 nodes some 20 times faster, with no dependencies of its
    own (see ``benchmarks/bench_apply.py``). It stops at the first error,
    so a file that fails is checked again field by field
    (:func:`schema_errors`) to report every error.
    """
    fastjsonschema: Any = importlib.import_module("fastjsonschema")
    root = schema()
    if not pointer:
        return fastjsonschema.compile(root)
    part: Any = root
    for key in pointer.split("/"):
        part = part[key]
    # The root's $id as base, so that "#/definitions/..." resolves in this document.
    sub = {"$id": root["$id"], **part, "definitions": root["definitions"]}
    return fastjsonschema.compile(sub)


def path_text(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", str(part)):
            text += f".{part}" if text else str(part)
        else:
            text += f"[{json.dumps(part)}]"
    return text or "(top level)"


def _field_error(where: list[Any], exc: Any) -> tuple[list[Any], str]:
    """A fastjsonschema error on a value at ``where``, as (path, message in our words)."""
    path = [*where, *exc.path[1:]]
    if exc.rule == "type":
        expected = exc.rule_definition
        names = expected if isinstance(expected, list) else [expected]
        return path, f"expected {' or '.join(names)}, got {_kind(exc.value)}"
    if exc.rule == "enum":
        shown = MASK if is_secret_key(path[-1]) else repr(exc.value)
        return path, f"must be one of {', '.join(map(str, exc.rule_definition))}, not {shown}"
    _, _, text = str(exc.message).partition(" ")
    return path, text or str(exc.message)


def _object_errors(
    where: list[Any], value: Any, spec: Mapping[str, Any], pointer: str
) -> list[tuple[list[Any], str]]:
    """Every error of an object against a schema with ``properties``: per field."""
    if not isinstance(value, dict):
        return [(where, f"expected object, got {_kind(value)}")]
    errors: list[tuple[list[Any], str]] = []
    known = spec.get("properties", {})
    for name in spec.get("required", ()):
        if name not in value:
            errors.append(([*where, name], "is required"))
    for name, item in value.items():
        if name not in known:
            errors.append(([*where, name], f"is not a known field (known: {', '.join(known)})"))
            continue
        try:
            validator(f"{pointer}/properties/{name}".lstrip("/"))(item)
        except _invalid() as exc:
            errors.append(_field_error([*where, name], exc))
    return errors


def schema_errors(data: Any) -> tuple[list[str], set[Any] | None]:
    """Every schema error as ``path: message``, and the indexes of the nodes they are in.

    The second item is ``None`` when the file's shape is wrong above the nodes.
    """
    try:
        validator()(data)
    except _invalid():
        pass
    else:
        return [], set()
    root = schema()
    # The top level field by field, less its node list, which is walked node by node.
    nodes = data.get("nodes") if isinstance(data, dict) else None
    top = {k: v for k, v in data.items() if k != "nodes"} if isinstance(data, dict) else data
    found = [
        error
        for error in _object_errors([], top, root, "")
        if not (error[0] == ["nodes"] and error[1] == "is required" and nodes is not None)
    ]
    if isinstance(data, dict) and "nodes" in data and not isinstance(nodes, list):
        found.append((["nodes"], f"expected array, got {_kind(nodes)}"))
    bad: set[Any] | None = None
    if isinstance(nodes, list):
        bad = set()
        node_schema = root["definitions"]["node"]
        for index, item in enumerate(nodes):
            errors = _object_errors(["nodes", index], item, node_schema, "definitions/node")
            if errors:
                bad.add(index)
                found += errors
    return [f"{path_text(where)}: {message}" for where, message in found], bad
