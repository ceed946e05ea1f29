"""Inspection rules: what a rule may say, and running rules on what inspection found.

A rule (:class:`~ironic_fsm.records.InspectionRule`) has ``conditions``
(each an operator, ``op``, on ``args``; ``!op`` inverts it) and ``actions``
(each an operator on ``args``). Where every condition holds on a node's
inventory, the actions run on the node, in order. Operator names and their
arguments are Ironic's (1.96), so that rules move between the two.

``args`` is a list (the operator's arguments in order) or an object (by
name). Text arguments are formatted with ``{node.<field>}``,
``{inventory[...]}`` and ``{plugin_data[...]}`` before use (a field that
cannot be formatted is left as written, as Ironic leaves it). ``loop``
runs an operator once per item (``{item}``), and a condition's
``multiple`` (``any``, ``all``, ``first``, ``last``) says how the results
combine.
"""

from __future__ import annotations

import ipaddress
import itertools
import logging
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError
from ironic_fsm.node import Node

__all__ = [
    "ACTIONS",
    "CONDITIONS",
    "RuleFailed",
    "RuleOutcome",
    "apply_rules",
    "check_rule_steps",
    "copy_changes",
]

_LOG: Final = logging.getLogger("ironic_fsm.inspection_rules")


class RuleFailed(IronicFSMError):
    """A rule's ``fail`` action ran, or an operator could not run: inspection fails."""


#: Each condition operator: (required arguments, optional arguments).
CONDITIONS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "eq": (("values",), ("force_strings",)),
    "lt": (("values",), ("force_strings",)),
    "gt": (("values",), ("force_strings",)),
    "is-empty": (("value",), ()),
    "in-net": (("address", "subnet"), ()),
    "matches": (("value", "regex"), ()),
    "contains": (("value", "regex"), ()),
    "one-of": (("value",), ("values",)),
    "is-none": (("value",), ()),
    "is-true": (("value",), ()),
    "is-false": (("value",), ()),
}
#: Each action operator: (required arguments, optional arguments).
ACTIONS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "fail": (("msg",), ()),
    "set-attribute": (("path", "value"), ()),
    "extend-attribute": (("path", "value"), ("unique",)),
    "del-attribute": (("path",), ()),
    "add-trait": (("name",), ()),
    "remove-trait": (("name",), ()),
    "set-capability": (("name",), ("value",)),
    "unset-capability": (("name",), ()),
    "set-plugin-data": (("path", "value"), ()),
    "extend-plugin-data": (("path", "value"), ("unique",)),
    "unset-plugin-data": (("path",), ()),
    "log": (("msg",), ("level",)),
}
_MULTIPLE: Final = ("any", "all", "first", "last")
#: Node fields an action may not write (identity, state, what the conductor keeps).
_KEPT: Final = frozenset(
    {"uuid", "provision_state", "target_provision_state", "reservation", "version",
     "created_at", "updated_at", "driver_internal_info", "power_state"}
)  # fmt: skip


def _named(
    word: str, op: str, args: object, signature: tuple[tuple[str, ...], tuple[str, ...]]
) -> dict[str, Any]:
    """``args`` by name, checked against the operator's signature (Ironic's words)."""
    required, optional = signature
    if isinstance(args, list):
        if len(args) < len(required):
            missing = ", ".join(required[len(args) :])
            raise InvalidParameterValue(
                f"Invalid parameters for {word} operator {op}: missing required argument(s): "
                f"{missing}"
            )
        named = dict(zip(required + optional, args, strict=False))
        if len(args) > len(required) + len(optional):
            raise InvalidParameterValue(
                f"Invalid parameters for {word} operator {op}: too many arguments"
            )
        return named
    if not isinstance(args, dict):
        raise InvalidParameterValue(
            f"Invalid parameters for {word} operator {op}: args must be either a list or dictionary"
        )
    problems = []
    missing_names = sorted(set(required) - set(args))
    unexpected = sorted(set(args) - set(required) - set(optional))
    if missing_names:
        problems.append(f"missing required argument(s): {', '.join(missing_names)}")
    if unexpected:
        problems.append(f"unexpected argument(s): {', '.join(unexpected)}")
    if problems:
        raise InvalidParameterValue(
            f"Invalid parameters for {word} operator {op}: {'; '.join(problems)}"
        )
    return dict(args)


def _check_step(word: str, index: int, step: object, table: Mapping[str, Any]) -> list[str]:
    """The problems of one condition or action (none: it is valid)."""
    if not isinstance(step, dict):
        return [f"{word} {index} must be an object with 'op' and 'args'"]
    known = {"op", "args", "loop", "multiple"} if word == "condition" else {"op", "args", "loop"}
    missing = sorted({"op", "args"} - set(step))
    if missing:
        return [f"{word} {index}: {', '.join(repr(m) for m in missing)} is a required property"]
    op = step["op"]
    name = op[1:] if isinstance(op, str) and word == "condition" and op.startswith("!") else op
    if not isinstance(name, str) or name not in table:
        kind = "condition" if word == "condition" else "action"
        return [f"Unsupported {kind} operator: {op}"]
    problems: list[str] = []
    if word == "condition" and step.get("multiple", "any") not in _MULTIPLE:
        problems.append(f"{word} {index}: multiple must be one of {', '.join(_MULTIPLE)}")
    if not isinstance(step.get("loop", []), (list, dict)):
        problems.append(f"{word} {index}: loop must be a list or an object")
    if word == "action" and set(step) - known:
        pass  # extra keys are the operator's business, as in Ironic
    if not isinstance(step["args"], (list, dict)):
        problems.append(f"{word} {index}: args must be a list or an object")
    else:
        try:
            _named(word, name, step["args"], table[name])
        except InvalidParameterValue as error:
            problems.append(str(error))
    if word == "condition" and name in ("matches", "contains"):
        problems += _regex_problems(step["args"])
    return problems


def _regex_problems(args: object) -> list[str]:
    regex = args[1] if isinstance(args, list) and len(args) > 1 else None
    if isinstance(args, dict):
        regex = args.get("regex")
    if isinstance(regex, str) and "{" not in regex:
        try:
            re.compile(regex)
        except re.error as error:
            return [f"invalid regular expression: {error}"]
    return []


def check_rule_steps(conditions: object, actions: object) -> tuple[list[Any], list[Any]]:
    """The rule's conditions and actions, checked as Ironic checks them (all problems named).

    ``conditions`` may be ``None`` (none); ``actions`` must hold at least one.
    """
    problems: list[str] = []
    if conditions is None:
        conditions = []
    if not isinstance(conditions, list):
        problems.append("conditions must be a list")
        conditions = []
    if not isinstance(actions, list) or not actions:
        problems.append("actions must be a list of at least one action")
        actions = actions if isinstance(actions, list) else []
    for index, condition in enumerate(conditions):
        problems += _check_step("condition", index, condition, CONDITIONS)
    for index, action in enumerate(actions):
        problems += _check_step("action", index, action, ACTIONS)
    if len(problems) == 1:
        raise InvalidParameterValue(problems[0])
    if problems:
        raise InvalidParameterValue(f"Multiple validation errors occurred: {'; '.join(problems)}")
    return conditions, actions


# -- running rules ---------------------------------------------------------------------


class _NodeView:
    """``{node.<field>}`` in a rule's text: the node's fields, read only."""

    def __init__(self, node: Node) -> None:
        self._node = node

    def __getattr__(self, name: str) -> Any:
        return getattr(self._node, name)


def _format(value: Any, context: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        try:
            return value.format(**context)
        except (AttributeError, KeyError, ValueError, IndexError, TypeError):
            _LOG.warning("Inspection rule: %r cannot be formatted; used as written", value)
            return value
    if isinstance(value, list):
        return [_format(item, context) for item in value]
    if isinstance(value, dict):
        return {_format(k, context): _format(v, context) for k, v in value.items()}
    return value


def _compare(op: Callable[[Any, Any], bool]) -> Callable[..., bool]:
    def check(values: Any, force_strings: bool = False) -> bool:
        if not isinstance(values, list):
            raise RuleFailed(f"Expected a list of values to compare, got {values!r}")
        if force_strings:
            values = [str(v) for v in values]
        try:
            return all(op(a, b) for a, b in itertools.pairwise(values))
        except TypeError as error:
            raise RuleFailed(f"Cannot compare {values!r}: {error}") from None

    return check


def _truth(value: Any, wanted: bool) -> bool:
    if isinstance(value, bool):
        return value is wanted
    if isinstance(value, (int, float)):
        return bool(value) is wanted
    if isinstance(value, str):
        return value.lower() in (("yes", "true") if wanted else ("no", "false"))
    return value is None and not wanted


def _in_net(address: Any, subnet: Any) -> bool:
    try:
        return ipaddress.ip_address(str(address)) in ipaddress.ip_network(str(subnet), False)
    except ValueError as error:
        raise RuleFailed(f"invalid value: {error}") from None


def _search(value: Any, regex: Any, whole: bool) -> bool:
    try:
        pattern = re.compile(regex if not whole or regex.endswith("$") else regex + "$")
    except (re.error, AttributeError) as error:
        raise RuleFailed(f"invalid regular expression: {error}") from None
    found = pattern.match(str(value)) if whole else pattern.search(str(value))
    return found is not None


_CHECKS: Final[dict[str, Callable[..., bool]]] = {
    "eq": _compare(operator.eq),
    "lt": _compare(operator.lt),
    "gt": _compare(operator.gt),
    "is-empty": lambda value: str(value) in ("", "None", "[]", "{}"),
    "in-net": _in_net,
    "matches": lambda value, regex: _search(value, regex, True),
    "contains": lambda value, regex: _search(value, regex, False),
    "one-of": lambda value, values=(): value in values,
    "is-none": lambda value: str(value) == "None",
    "is-true": lambda value: _truth(value, True),
    "is-false": lambda value: _truth(value, False),
}


@attrs.define
class RuleOutcome:
    """What running the rules did: the node and plugin data as changed, the rules that ran."""

    node: Node
    plugin_data: dict[str, Any]
    applied: list[str] = attrs.field(factory=list)


def _path(node_or_data: Any, path: str) -> tuple[Any, str]:
    """The container of ``path``'s last part (``/properties/cpus``: properties, "cpus")."""
    parts = [p for p in path.strip("/").split("/") if p]
    if not parts:
        raise RuleFailed(f"Invalid path {path!r}")
    if isinstance(node_or_data, Node):
        if parts[0] in _KEPT or not hasattr(node_or_data, parts[0]):
            raise RuleFailed(f"Inspection rules cannot change the node's {parts[0]}")
        if len(parts) == 1:
            return node_or_data, parts[0]
        target = getattr(node_or_data, parts[0])
        parts = parts[1:]
    else:
        target = node_or_data
    for part in parts[:-1]:
        if not isinstance(target, dict):
            raise RuleFailed(f"Invalid path {path!r}: {part} is not an object")
        target = target.setdefault(part, {})
    if not isinstance(target, dict):
        raise RuleFailed(f"Invalid path {path!r}")
    return target, parts[-1]


def _set(container: Any, key: str, value: Any) -> None:
    if isinstance(container, Node):
        try:
            setattr(container, key, value)
        except (TypeError, ValueError, IronicFSMError) as error:
            raise RuleFailed(f"Cannot set {key}: {error}") from None
    else:
        container[key] = value


def _get(container: Any, key: str) -> Any:
    return getattr(container, key) if isinstance(container, Node) else container.get(key)


def _delete(container: Any, key: str) -> None:
    if isinstance(container, Node):
        _set(container, key, None)
    else:
        container.pop(key, None)


def _extend(container: Any, key: str, value: Any, unique: bool = False) -> None:
    current = list(_get(container, key) or [])
    if not (unique and value in current):
        current.append(value)
    _set(container, key, current)


def _capabilities(node: Node) -> dict[str, str]:
    raw = node.properties.get("capabilities") or ""
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    pairs = (item.split(":", 1) for item in str(raw).split(",") if ":" in item)
    return {k: v for k, v in pairs}


def _set_capabilities(node: Node, caps: Mapping[str, str]) -> None:
    node.properties = {
        **node.properties,
        "capabilities": ",".join(f"{k}:{v}" for k, v in caps.items()),
    }


def _act(op: str, args: dict[str, Any], node: Node, plugin_data: dict[str, Any]) -> None:
    """Run one action on the node (or its plugin data)."""
    if op == "fail":
        raise RuleFailed(str(args["msg"]))
    if op == "log":
        level = logging.getLevelName(str(args.get("level", "info")).upper())
        _LOG.log(level if isinstance(level, int) else logging.INFO, "%s", args["msg"])
    elif op in ("set-attribute", "extend-attribute", "del-attribute"):
        container, key = _path(node, args["path"])
        if op == "set-attribute":
            _set(container, key, args["value"])
        elif op == "extend-attribute":
            _extend(container, key, args["value"], bool(args.get("unique", False)))
        else:
            _delete(container, key)
    elif op in ("set-plugin-data", "extend-plugin-data", "unset-plugin-data"):
        container, key = _path(plugin_data, args["path"])
        if op == "set-plugin-data":
            container[key] = args["value"]
        elif op == "extend-plugin-data":
            _extend(container, key, args["value"], bool(args.get("unique", False)))
        else:
            container.pop(key, None)
    elif op == "add-trait":
        node.traits = (
            [*node.traits, args["name"]] if args["name"] not in node.traits else node.traits
        )
    elif op == "remove-trait":
        node.traits = [t for t in node.traits if t != args["name"]]
    else:
        caps = _capabilities(node)
        if op == "set-capability":
            caps[str(args["name"])] = str(args.get("value"))
        else:
            caps.pop(str(args["name"]), None)
        _set_capabilities(node, caps)


def _holds(condition: dict[str, Any], context: dict[str, Any]) -> bool:
    op = condition["op"]
    inverted = op.startswith("!")
    name = op[1:] if inverted else op
    loop = condition.get("loop") or []
    items = [loop] if isinstance(loop, dict) else list(loop)
    results = []
    for item in items or [None]:
        scope = context if item is None else {**context, "item": item}
        args = _named("condition", name, _format(condition["args"], scope), CONDITIONS[name])
        if item is not None and name in ("eq", "lt", "gt"):
            args["force_strings"] = True
        results.append(_CHECKS[name](**args) is not inverted)
    multiple = condition.get("multiple", "any")
    if multiple == "all":
        return all(results)
    if multiple == "first":
        return results[0]
    if multiple == "last":
        return results[-1]
    return any(results)


def apply_rules(
    rules: list[Any], node: Node, inventory: Mapping[str, Any], plugin_data: dict[str, Any]
) -> RuleOutcome:
    """Run ``rules`` (:class:`~ironic_fsm.records.InspectionRule`) on ``node``, highest
    ``priority`` first (then creation order): each whose conditions all hold runs its
    actions. Raises :class:`RuleFailed` for a ``fail`` action or an operator that cannot
    run; the node given is never changed (the outcome holds a changed copy).
    """
    changed = attrs.evolve(node)
    changed.properties = dict(node.properties)
    changed.traits = list(node.traits)
    outcome = RuleOutcome(changed, plugin_data)
    ordered = sorted(enumerate(rules), key=lambda pair: (-pair[1].priority, pair[0]))
    for _, rule in ordered:
        context = {"node": _NodeView(changed), "inventory": inventory, "plugin_data": plugin_data}
        if not all(_holds(condition, context) for condition in rule.conditions):
            continue
        for action in rule.actions:
            loop = action.get("loop") or []
            items = [loop] if isinstance(loop, dict) else list(loop)
            for item in items or [None]:
                scope = context if item is None else {**context, "item": item}
                args = _named("action", action["op"], _format(action["args"], scope),
                              ACTIONS[action["op"]])  # fmt: skip
                _act(action["op"], args, changed, plugin_data)
        outcome.applied.append(rule.uuid)
    return outcome


def copy_changes(changed: Node, node: Node) -> None:
    """Set on ``node`` each field the rules changed on its copy ``changed`` (never those
    the conductor keeps: identity, states, reservation)."""
    for field in attrs.fields(Node):
        if field.name in _KEPT:
            continue
        value = getattr(changed, field.name)
        if value != getattr(node, field.name):
            setattr(node, field.name, value)
