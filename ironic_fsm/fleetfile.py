"""Declarative fleet files: the nodes an operator wants, applied to a store.

A fleet file (YAML or JSON) lists nodes by name with the fields the
operator cares about and the stable state each should be in. Applying it
has three parts, each usable without the CLI:

* :func:`load_fleet` parses the text, substitutes ``${VAR}`` from the
  environment, checks it against the shipped JSON Schema
  (``fleetfile.schema.json``) and then semantically (drivers, interfaces,
  ``driver_info``, duplicate names, contradictions). Every problem is
  collected with its path in the file, so that one run shows them all and
  nothing is touched until the whole file is good.
* :func:`plan_fleet` compares the file with the store: what would be
  enrolled, which fields would change, and the verbs
  (:meth:`~ironic_fsm.machine.Lifecycle.path`) each node would go through.
  It writes nothing.
* :class:`FleetApply` enrolls and updates the records, then reconciles
  each node one verb per round through
  :meth:`~ironic_fsm.Conductor.reconcile`, nodes in parallel. It never
  sleeps: the caller decides how often to call :meth:`FleetApply.round`.

A field the file gives is the node's whole value (a dict is replaced, not
merged); a field it leaves out is left as the store has it. Nodes in the
store that the file does not name are left alone.

Substituted values are secrets by construction (that is why they are not in
the file): :meth:`FleetFile.scrub` replaces them in any text shown, and
secret keys (:mod:`ironic_fsm.masking`) never show their values.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import cache, partial
from importlib import resources
from typing import TYPE_CHECKING, Any, Final

import attrs

from ironic_fsm import states as s
from ironic_fsm._node_fields import json_kind as _kind
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    IronicFSMError,
    NodeLocked,
)
from ironic_fsm.interfaces import INTERFACE_KINDS
from ironic_fsm.masking import MASK, is_secret_key, scrub, secret_values
from ironic_fsm.node import Node

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor

__all__ = [
    "BAD_RESULTS",
    "FINAL_RESULTS",
    "FleetApply",
    "FleetFile",
    "FleetFileError",
    "NodeSpec",
    "NodeStatus",
    "Plan",
    "PlannedNode",
    "RoundReport",
    "load_fleet",
    "parse_fleet",
    "plan_lines",
    "plan_fleet",
    "schema",
]

SCHEMA_FILE: Final = "fleetfile.schema.json"

#: ``${NAME}``: an environment variable; ``$${`` writes a literal ``${``.
_ENV_REF: Final = re.compile(r"\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)\}")

#: File keys that are node fields of the same name.
_PLAIN_FIELDS: Final = (
    "driver",
    "driver_info",
    "properties",
    "instance_info",
    "extra",
    "traits",
    "resource_class",
    "automated_clean",
    "maintenance",
    "maintenance_reason",
)
#: File keys passed to reconcile, not stored on the node.
_VERB_ARGS: Final = ("deploy_steps", "rescue_password")

# Results of a node in an apply (NodeStatus.result).
THERE: Final = "there"
UNDERWAY: Final = "under way"
BUSY: Final = "busy"
FAILED: Final = "failed"
BLOCKED: Final = "blocked"
ERROR: Final = "error"
RECORDED: Final = "recorded"
#: Results after which a node is not reconciled again in this apply.
FINAL_RESULTS: Final = frozenset({THERE, FAILED, BLOCKED, ERROR, RECORDED})
#: Results that make an apply fail (exit status 1).
BAD_RESULTS: Final = frozenset({FAILED, BLOCKED, ERROR})


class FleetFileError(InvalidParameterValue):
    """The fleet file has problems; ``errors`` lists every one as ``path: message``."""

    errors: list[str]


# -- loading --------------------------------------------------------------------------------


@attrs.frozen
class NodeSpec:
    """One node of the file: its identity, the fields it states and how to reconcile it."""

    index: int
    name: str
    #: Node fields the file states (``interfaces`` flattened to ``<kind>_interface``).
    fields: Mapping[str, Any]
    wanted: str | None
    #: ``retired`` and ``retired_reason`` when stated (applied after the others).
    retirement: Mapping[str, Any]
    #: Arguments for reconcile (``deploy_steps``, ``rescue_password``).
    verb_args: Mapping[str, Any]

    @property
    def where(self) -> str:
        return f"nodes[{self.index}]"


@attrs.frozen
class FleetFile:
    """A checked fleet file."""

    source: str
    nodes: tuple[NodeSpec, ...]
    #: The values substituted from the environment: never shown.
    secrets: frozenset[str] = frozenset()

    def scrub(self, text: str) -> str:
        """``text`` without any substituted value (nor any secret of the file)."""
        return scrub(text, set(self.secrets)) if self.secrets else text


@cache
def _schema_text() -> str:
    return resources.files("ironic_fsm").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


def schema() -> dict[str, Any]:
    """The fleet file's JSON Schema, as shipped in the package (a fresh copy)."""
    data: dict[str, Any] = json.loads(_schema_text())
    return data


@cache
def _validator(pointer: str = "") -> Any:
    """A compiled validator for the schema, or for the sub-schema at ``pointer``.

    fastjsonschema, not jsonschema: it compiles the schema to Python and
    checks 10,000 nodes some 20 times faster, with no dependencies of its
    own (see ``benchmarks/bench_apply.py``). It stops at the first error,
    so a file that fails is checked again field by field
    (:func:`_schema_errors`) to report every error.
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


def _path(parts: Iterable[Any]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", str(part)):
            text += f".{part}" if text else str(part)
        else:
            text += f"[{json.dumps(part)}]"
    return text or "(top level)"


def parse_fleet(text: str, source: str = "<fleet file>") -> Any:
    """The data of a YAML or JSON fleet file.

    JSON (a ``.json`` file, or text that starts with ``{``) is read with
    orjson, 50 times faster than any YAML loader on a large fleet; text
    that is not JSON is YAML, read with PyYAML's C safe loader (the same
    safe loader as ``yaml.safe_load``, in C where libyaml is there).
    """
    is_json = source.endswith(".json")
    if is_json or text.lstrip().startswith("{"):
        orjson: Any = importlib.import_module("orjson")
        try:
            return orjson.loads(text)
        except ValueError as exc:
            if is_json:
                raise FleetFileError(
                    f"{source}: not valid JSON: {exc}", errors=[f"(file): not valid JSON: {exc}"]
                ) from None
            # A YAML flow mapping such as {nodes: [...]} is not JSON: read it as YAML.
    yaml: Any = importlib.import_module("yaml")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise FleetFileError(
            f"{source}: not valid YAML: {problem}{where}",
            errors=[f"(file): not valid YAML: {problem}{where}"],
        ) from None


def _substitute(data: Any, env: Mapping[str, str], errors: list[str]) -> tuple[Any, set[str]]:
    """``data`` with ``${VAR}`` replaced in every string value, and the values put in."""
    used: set[str] = set()

    def text(value: str, where: list[Any]) -> str:
        if "${" not in value:
            return value

        def one(match: re.Match[str]) -> str:
            if match.group(1):
                return match.group(0)[1:]  # $${X} is a literal ${X}
            name = match.group(2)
            found = env.get(name)
            if found is None:
                errors.append(f"{_path(where)}: environment variable {name} is not set")
                return ""
            if found:
                used.add(found)
            return found

        return _ENV_REF.sub(one, value)

    def walk(value: Any, where: list[Any]) -> Any:
        if isinstance(value, str):
            return text(value, where)
        if isinstance(value, dict):
            return {k: walk(v, [*where, k]) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, [*where, i]) for i, v in enumerate(value)]
        return value

    return walk(data, []), used


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
            _validator(f"{pointer}/properties/{name}".lstrip("/"))(item)
        except Exception as exc:  # fastjsonschema.JsonSchemaValueException
            if not hasattr(exc, "rule"):
                raise
            errors.append(_field_error([*where, name], exc))
    return errors


def _schema_errors(data: Any) -> tuple[list[str], set[Any] | None]:
    """Every schema error as ``path: message``, and the indexes of the nodes they are in.

    The second item is ``None`` when the file's shape is wrong above the nodes.
    """
    try:
        _validator()(data)
    except Exception as exc:  # fastjsonschema.JsonSchemaValueException
        if not hasattr(exc, "rule"):
            raise
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
    return [f"{_path(where)}: {message}" for where, message in found], bad


class _Checker:
    """The semantic checks the schema cannot make; drivers come from ``conductor``."""

    def __init__(self, conductor: Conductor | None, errors: list[str]) -> None:
        self.conductor = conductor
        self.errors = errors
        self._drivers: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}

    def add(self, where: str, message: str) -> None:
        self.errors.append(f"{where}: {message}")

    def spec(self, index: int, item: Mapping[str, Any], wanted_states: frozenset[str]) -> NodeSpec:
        where = f"nodes[{index}]"
        fields = {key: item[key] for key in _PLAIN_FIELDS if key in item}
        for kind, name in (item.get("interfaces") or {}).items():
            fields[f"{kind}_interface"] = name
        if "traits" in fields:
            fields["traits"] = list(fields["traits"])
        retirement = {k: item[k] for k in ("retired", "retired_reason") if k in item}
        wanted = item.get("wanted")
        if wanted is not None and wanted not in wanted_states:
            self.add(
                f"{where}.wanted",
                f"{wanted!r} is not a stable state of this lifecycle "
                f"({', '.join(sorted(wanted_states))})",
            )
        for flag in ("retired", "maintenance"):
            reason = f"{flag}_reason"
            if (item.get(reason) or None) is not None and item.get(flag) is not True:
                self.add(f"{where}.{reason}", f"needs {flag}: true")
        if item.get("retired") is True and wanted == s.AVAILABLE:
            self.add(
                f"{where}.retired",
                "a retired node is never provided, so it cannot be wanted 'available' "
                "(want 'manageable')",
            )
        if "rescue_password" in item and wanted != s.RESCUE:
            self.add(f"{where}.rescue_password", "is only used with wanted: rescue")
        if wanted == s.RESCUE and "rescue_password" not in item:
            self.add(f"{where}.rescue_password", "is required with wanted: rescue")
        self._node(where, item["name"], fields)
        return NodeSpec(
            index=index,
            name=item["name"],
            fields=fields,
            wanted=wanted,
            retirement=retirement,
            verb_args={key: item[key] for key in _VERB_ARGS if key in item},
        )

    def _node(self, where: str, name: str, fields: dict[str, Any]) -> None:
        try:
            node = Node(name=name, **fields)
        except InvalidParameterValue as exc:
            field = exc.details.get("field")
            at = f"{where}.{field}" if isinstance(field, str) and field.isidentifier() else where
            self.add(at, str(exc))
            return
        if self.conductor is None:
            return
        choices = tuple((kind, node.interface_name(kind)) for kind in INTERFACE_KINDS)
        key = (node.driver, choices)
        try:
            driver = self._drivers.get(key)
            if driver is None:
                # The conductor's own registry: types registered on it count too.
                driver = self._drivers[key] = self.conductor._driver_for(node)
        except IronicFSMError as exc:
            kind = exc.details.get("kind")
            at = f"{where}.interfaces.{kind}" if isinstance(kind, str) else f"{where}.driver"
            self.add(at, str(exc))
            return
        if "driver_info" in fields:
            self._driver_info(where, node, driver)

    def _driver_info(self, where: str, node: Node, driver: Any) -> None:
        """The driver's own ``driver_info`` checks, for drivers that say they are cheap."""
        from ironic_fsm.drivers.common import DriverInfoValidation

        for _, iface in driver.interfaces():
            if not isinstance(iface, DriverInfoValidation):
                continue
            try:
                iface.check_driver_info(node)
            except InvalidParameterValue as exc:
                missing = list(exc.details.get("missing") or [])
                invalid = list(exc.details.get("invalid") or [])
                for key in missing:
                    self.add(f"{where}.driver_info.{key}", f"is required by driver {node.driver!r}")
                _, _, detail = str(exc).partition("driver_info: ")
                for part in detail.split("; "):
                    key = next((k for k in invalid if part.startswith(f"{k} ")), None)
                    if key is not None:
                        self.add(f"{where}.driver_info.{key}", part[len(key) + 1 :])
                if not missing and not invalid:
                    self.add(f"{where}.driver_info", str(exc))
            except IronicFSMError as exc:  # e.g. the driver's library is not installed
                self.add(f"{where}.driver", str(exc))
            return


def load_fleet(
    text: str,
    *,
    source: str = "<fleet file>",
    env: Mapping[str, str] | None = None,
    conductor: Conductor | None = None,
) -> FleetFile:
    """Parse and check a whole fleet file; nothing is written anywhere.

    ``env`` supplies ``${VAR}`` values (default: ``os.environ``);
    ``conductor`` supplies the drivers and the lifecycle for the semantic
    checks (without one, drivers are not checked).

    Raises:
        FleetFileError: with ``errors``, every problem as ``path: message``,
            in file order; no substituted value appears in them.
    """
    import os

    data = parse_fleet(text, source)
    errors: list[str] = []
    data, used = _substitute(data, os.environ if env is None else env, errors)
    found, bad = _schema_errors(data)
    errors += found
    specs: list[NodeSpec] = []
    if bad is not None:
        # Semantic checks for every node the schema found nothing wrong with.
        checker = _Checker(conductor, errors)
        lifecycle = conductor.lifecycle if conductor is not None else None
        if lifecycle is None:
            from ironic_fsm.machine import LIFECYCLE

            lifecycle = LIFECYCLE
        wanted_states = frozenset(lifecycle.stable_states - {s.ERROR})
        seen: dict[str, int] = {}
        for index, item in enumerate(data["nodes"]):
            name = item.get("name") if isinstance(item, dict) else None
            if isinstance(name, str):
                first = seen.setdefault(name, index)
                if first != index:
                    errors.append(f"nodes[{index}].name: {name!r} is also nodes[{first}]")
                    continue
            if index not in bad:
                specs.append(checker.spec(index, item, wanted_states))
    if errors:
        # Only now, with errors to show: the file's secrets, to keep out of them.
        secrets = used | secret_values(data)
        errors = [scrub(error, secrets) for error in _in_file_order(errors)]
        raise FleetFileError(
            f"{source}: {len(errors)} problem(s); nothing was changed", errors=errors
        )
    return FleetFile(source=source, nodes=tuple(specs), secrets=frozenset(used))


def _in_file_order(errors: list[str]) -> list[str]:
    """Errors sorted by node (schema and semantic ones mixed), stable within a node."""

    def key(error: str) -> int:
        match = re.match(r"nodes\[(\d+)\]", error)
        return int(match.group(1)) if match else -1

    return sorted(errors, key=key)


# -- planning -------------------------------------------------------------------------------


def _changes(node: Node, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The stated fields whose value differs from the node's."""
    changed: dict[str, Any] = {}
    for key, value in fields.items():
        current = getattr(node, key)
        if key == "traits":
            if set(current) != set(value):
                changed[key] = value
        elif current != value:
            changed[key] = value
    return changed


def _describe(node: Node | None, changed: Mapping[str, Any]) -> list[str]:
    """Field names (and changed dict keys) of a change; never a value."""
    names = []
    for key, value in changed.items():
        if isinstance(value, dict):
            old = getattr(node, key) if node is not None else {}
            keys = sorted(k for k in {*old, *value} if old.get(k) != value.get(k))
            names.append(f"{key}({', '.join(keys)})" if keys else key)
        else:
            names.append(key)
    return names


@attrs.frozen
class PlannedNode:
    """What applying the file would do to one node."""

    spec: NodeSpec
    #: ``create``, ``update`` or ``unchanged``.
    action: str
    #: Field names that would be set (dict keys in parentheses); never values.
    fields: tuple[str, ...]
    state: str
    #: The verbs toward ``wanted``; ``None`` when there is no path now.
    verbs: tuple[str, ...] | None
    #: Why there are no verbs, or what will stop them.
    note: str | None = None


@attrs.frozen
class Plan:
    """The whole plan: one entry per node of the file, and the nodes left alone."""

    nodes: tuple[PlannedNode, ...]
    untouched: tuple[str, ...]

    def lines(self, scrub_text: Callable[[str], str] = str) -> list[str]:
        """The plan, one line per node and one for the nodes left alone."""
        out = []
        for item in self.nodes:
            spec = item.spec
            head = f"{item.action} {spec.name}"
            if item.fields:
                head += ": " + ", ".join(item.fields)
            if spec.wanted is None:
                tail = f"in {item.state!r}, no wanted state"
            elif item.verbs is None:
                tail = f"{item.state!r} -> {spec.wanted!r}: {item.note}"
            elif not item.verbs:
                tail = f"already {spec.wanted!r}"
            else:
                tail = f"{item.state!r} -> {spec.wanted!r} via {', '.join(item.verbs)}"
                if item.note:
                    tail += f" ({item.note})"
            out.append(scrub_text(f"{head}; {tail}"))
        if self.untouched:
            shown = ", ".join(self.untouched[:10])
            more = f" and {len(self.untouched) - 10} more" if len(self.untouched) > 10 else ""
            out.append(
                f"left alone: {len(self.untouched)} node(s) in the store are not in the file "
                f"({shown}{more})"
            )
        return out


def _node_index(conductor: Conductor) -> dict[str, Node]:
    return {node.name: node for node in conductor.list_nodes() if node.name is not None}


def plan_fleet(conductor: Conductor, fleet: FleetFile) -> Plan:
    """What applying ``fleet`` would do; reads the store once and writes nothing."""
    by_name = _node_index(conductor)
    lifecycle = conductor.lifecycle
    planned = []
    for spec in fleet.nodes:
        node = by_name.pop(spec.name, None)
        if node is None:
            state = s.ENROLL
            changed: dict[str, Any] = dict(spec.fields)
            changed.update({k: v for k, v in spec.retirement.items() if v not in (None, False)})
            action = "create"
        else:
            state = node.provision_state
            changed = _changes(node, {**spec.fields, **spec.retirement})
            action = "update" if changed else "unchanged"
        verbs: tuple[str, ...] | None = ()
        note = None
        if spec.wanted is not None:
            if node is not None and (
                node.reservation is not None or state not in lifecycle.resting_states
            ):
                verbs, note = None, "busy now; its path is known once it rests"
            else:
                try:
                    verbs = tuple(lifecycle.path(state, spec.wanted))
                except IronicFSMError as exc:
                    verbs, note = None, f"no path: {exc}"
            maintenance = spec.fields.get("maintenance", node.maintenance if node else False)
            retired = spec.retirement.get("retired", node.retired if node else False)
            if verbs and maintenance:
                note = "in maintenance: reconcile will not act on it"
            elif verbs and retired and "provide" in verbs:
                note = "retired: a retired node is never provided"
        planned.append(
            PlannedNode(
                spec=spec,
                action=action,
                fields=tuple(_describe(node, changed)),
                state=state,
                verbs=verbs,
                note=note,
            )
        )
    return Plan(nodes=tuple(planned), untouched=tuple(sorted(by_name)))


# -- applying -------------------------------------------------------------------------------


@attrs.define
class NodeStatus:
    """Where one node of the file stands in an apply."""

    name: str
    wanted: str | None
    uuid: str | None = None
    state: str | None = None
    last_error: str | None = None
    #: One of ``there``, ``under way``, ``busy``, ``failed``, ``blocked``,
    #: ``error`` (its record could not be written) and ``recorded`` (no wanted state).
    result: str = UNDERWAY
    #: Why it is blocked or in error (our words, scrubbed), or what is pending.
    note: str | None = None

    @property
    def final(self) -> bool:
        return self.result in FINAL_RESULTS


@attrs.frozen
class RoundReport:
    """One round of reconciling: its number, how many verbs it issued, the results."""

    number: int
    verbs: int
    counts: Mapping[str, int]
    total: int

    def line(self) -> str:
        there = self.counts.get(THERE, 0) + self.counts.get(RECORDED, 0)
        rest = ", ".join(
            f"{count} {result}"
            for result, count in sorted(self.counts.items())
            if result not in (THERE, RECORDED) and count
        )
        return (
            f"round {self.number}: {there}/{self.total} settled as wanted"
            + (f", {rest}" if rest else "")
            + f" ({self.verbs} verb(s) issued)"
        )


class FleetApply:
    """Apply a checked fleet file: records first, then one verb per node per round.

    ``workers`` nodes are reconciled at a time (threads; the conductor and
    its store are thread-safe). Nothing here sleeps or loops on its own.
    """

    def __init__(self, conductor: Conductor, fleet: FleetFile, *, workers: int = 8) -> None:
        self.conductor = conductor
        self.fleet = fleet
        self.workers = max(1, workers)
        self.status = {spec.name: NodeStatus(spec.name, spec.wanted) for spec in fleet.nodes}
        self._specs = {spec.name: spec for spec in fleet.nodes}
        self._pending_records: dict[str, dict[str, Any]] = {}
        self._pending_retire: dict[str, dict[str, Any]] = {}
        self.rounds = 0
        self.created: list[str] = []
        self.updated: list[str] = []
        self.untouched: tuple[str, ...] = ()

    # -- records ----------------------------------------------------------------------

    def enroll(self) -> None:
        """Create the missing nodes and update the fields that differ."""
        by_name = _node_index(self.conductor)
        for spec in self.fleet.nodes:
            node = by_name.pop(spec.name, None)
            if node is None:
                fields = {**spec.fields, **spec.retirement}
                self._write(spec, partial(self._create, spec.name, fields))
                continue
            changed = _changes(node, spec.fields)
            retire = _changes(node, spec.retirement)
            if retire.get("retired") is True and node.provision_state == s.AVAILABLE:
                # Ironic refuses to retire an available node: retire it once
                # reconcile has moved it on (toward manageable, say).
                if spec.wanted in (None, s.AVAILABLE):
                    self._fail(spec, ERROR, "cannot retire a node in 'available'; want manageable")
                    continue
                self._pending_retire[spec.name] = retire
                retire = {}
            changed.update(retire)
            self._record(spec, node)
            if changed:
                self._pending_records[spec.name] = changed
                self._write(spec, partial(self._update, spec.name, changed))
        self.untouched = tuple(sorted(by_name))

    def _create(self, name: str, fields: Mapping[str, Any]) -> Node:
        node = self.conductor.create_node(name=name, **fields)
        self.created.append(name)
        return node

    def _update(self, name: str, fields: Mapping[str, Any]) -> Node:
        node = self.conductor.update_node(name, **fields)
        self._pending_records.pop(name, None)
        self.updated.append(name)
        return node

    def _write(self, spec: NodeSpec, write: Callable[[], Node]) -> None:
        try:
            node = write()
        except NodeLocked as exc:
            self._fail(spec, BUSY, str(exc))
        except IronicFSMError as exc:
            self._fail(spec, ERROR, f"{type(exc).__name__}: {exc}")
        else:
            self._record(spec, node)

    def _record(self, spec: NodeSpec, node: Node) -> None:
        status = self.status[spec.name]
        status.uuid = node.uuid
        status.state = node.provision_state
        status.last_error = self.fleet.scrub(node.last_error) if node.last_error else None
        if status.result == BUSY:
            status.result, status.note = UNDERWAY, None
        if spec.wanted is None and spec.name not in self._pending_records:
            status.result = RECORDED

    def _fail(self, spec: NodeSpec, result: str, note: str) -> None:
        status = self.status[spec.name]
        status.result = result
        status.note = self.fleet.scrub(note)

    # -- rounds -----------------------------------------------------------------------

    @property
    def settled(self) -> bool:
        """Every node there, failed, blocked or in error: more rounds would change nothing."""
        return all(status.final for status in self.status.values())

    @property
    def failed(self) -> bool:
        """Whether any node ended failed, blocked or in error."""
        return any(status.result in BAD_RESULTS for status in self.status.values())

    def round(self) -> RoundReport:
        """Retry pending record writes, then issue at most one verb per node, in parallel."""
        self.rounds += 1
        for name, changed in list(self._pending_records.items()):
            spec = self._specs[name]
            if self.status[name].result == BUSY:
                self._write(spec, partial(self._update, name, changed))
        todo = [
            self._specs[name]
            for name, status in self.status.items()
            if not status.final and name not in self._pending_records
        ]
        verbs = 0
        if todo:
            with ThreadPoolExecutor(max_workers=min(self.workers, len(todo))) as pool:
                for issued in pool.map(self._reconcile, todo):
                    verbs += issued
        for name, retire in list(self._pending_retire.items()):
            status = self.status[name]
            if status.state not in (None, s.AVAILABLE) and status.result != BUSY:
                del self._pending_retire[name]
                self._write(self._specs[name], partial(self._update, name, retire))
        counts: dict[str, int] = {}
        for status in self.status.values():
            counts[status.result] = counts.get(status.result, 0) + 1
        return RoundReport(self.rounds, verbs, counts, len(self.status))

    def _reconcile(self, spec: NodeSpec) -> int:
        """One reconcile call; 1 if it issued a verb."""
        status = self.status[spec.name]
        assert spec.wanted is not None  # nodes without one are RECORDED
        try:
            before = self.conductor.get_node(spec.name)
            node = self.conductor.reconcile(spec.name, spec.wanted, **spec.verb_args)
        except NodeLocked as exc:
            status.result, status.note = BUSY, self.fleet.scrub(str(exc))
            return 0
        except IronicFSMError as exc:
            self._fail(spec, BLOCKED, f"not reconciled ({type(exc).__name__}): {exc}")
            return 0
        issued = int(node.version != before.version)
        self._record(spec, node)
        state = node.provision_state
        if state == spec.wanted and node.target_provision_state is None:
            status.result, status.note = THERE, None
        elif state in s.FAILURE_STATES or state == s.ERROR:
            status.result = FAILED
        elif issued and state == s.ENROLL and node.last_error:
            status.result = FAILED  # manage could not verify the BMC
        elif not issued:
            status.result = BUSY
        else:
            status.result = UNDERWAY
        return issued

    def summary(self) -> list[NodeStatus]:
        """Every node of the file, in file order."""
        return [self.status[spec.name] for spec in self.fleet.nodes]


def plan_lines(plan: Plan, fleet: FleetFile) -> list[str]:
    """The plan as text, substituted values scrubbed."""
    return plan.lines(fleet.scrub)
