"""The node's codecs, generated once from its fields, beside a plain reference of each.

Every store read and write runs one of them: the JSON record the SQL stores
keep (``record``, ``raw``, ``build``) and the snapshot
:class:`~ironic_fsm.stores.MemoryStore` keeps (``freeze``, ``thaw``,
``shapes_ok``, ``freeze_checked``). The generated versions are straight-line
code built with :func:`exec`, one line per field: no loop, no ``getattr``,
each field read once. That costs a fraction of a loop over the fields or of
attrs' ``__init__`` with its validators.

The rules the generated code relies on, written here because nothing else
would say them:

* a snapshot's scalar fields (text, numbers, flags, datetimes) are immutable
  once checked, so ``freeze_checked`` skips the check of a scalar that is the
  very object (``is``) the snapshot it was read from holds: it was checked
  when that snapshot was stored;
* the containers (dicts and the traits list) always go through JSON, which
  both copies them and refuses what JSON would not give back equal;
* ``build`` and ``thaw`` check nothing: ``build``'s caller checks what it
  built (:meth:`~ironic_fsm.node.Node.from_json`), and a snapshot was checked
  when it was frozen.

:func:`reference` does the same in plain Python, one field at a time; it
runs only in the tests, which hold the generated code to it on every field.
The layout of the fields comes from :mod:`ironic_fsm.node`, which sits above.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

import orjson

from ironic_fsm._node_fields import _CANONICAL_UUID, STORED_GROUP, _good_trait

__all__ = ["NOT_EXACT", "Codec", "Layout", "Snapshot", "dumps", "generate", "reference"]

#: A node as :class:`~ironic_fsm.stores.MemoryStore` keeps it: the values of the fields
#: that are not containers (immutable: strings, numbers, datetimes), and the containers
#: as JSON bytes.
Snapshot = tuple[tuple[Any, ...], bytes]

NOT_EXACT: Final = (
    "a value would not read back as it is (NaN or infinity, a tuple, a datetime, "
    "an enum, a UUID or another value JSON does not keep)"
)

#: Dataclasses inside a dict are not JSON: orjson must not write them.
_DUMPS_OPTIONS: Final = orjson.OPT_PASSTHROUGH_DATACLASS


def _datetime_subclass(value: Any) -> str:
    """orjson writes :class:`datetime` itself, but not its subclasses (freezegun's, pendulum's).

    Anywhere but in a timestamp field, the read-back check refuses what this writes.
    """
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def dumps(value: Any) -> bytes:
    """orjson's text for ``value``; its recursion limit as :class:`RecursionError`."""
    try:
        return orjson.dumps(value, default=_datetime_subclass, option=_DUMPS_OPTIONS)
    except orjson.JSONEncodeError as exc:
        if "Recursion limit" in str(exc):
            raise RecursionError(str(exc)) from exc
        raise


class Layout:
    """What the codecs are built from: the record class and its fields, by kind.

    ``cls``: the record class (:class:`~ironic_fsm.node.Node`), slotted, its
    assignment unchecked. ``fields``: every field, in declaration order (the
    order of a JSON record's keys). ``datetimes``: the fields holding a
    timezone-aware datetime (ISO 8601 text in JSON). ``containers``: the
    fields holding a dict or a list, which a snapshot keeps as JSON, in this
    order. ``checks``: each field once, with the name of its shape in
    :data:`SHAPES`, in checking order. ``scalars``: the fields that are not
    containers, in declaration order.

    (A plain class, not a named tuple or attrs: both cost the import more.)
    """

    __slots__ = ("checks", "cls", "containers", "datetimes", "fields", "scalars")

    def __init__(
        self,
        cls: type,
        fields: tuple[str, ...],
        datetimes: frozenset[str],
        containers: tuple[str, ...],
        checks: tuple[tuple[str, str], ...],
    ) -> None:
        self.cls, self.fields, self.datetimes = cls, fields, datetimes
        self.containers, self.checks = containers, checks
        self.scalars = tuple(name for name in fields if name not in containers)


#: One codec's functions, in this order (:func:`generate` and :func:`reference` give the same):
#:
#: * ``record``: the node as a JSON-safe dict (datetimes as ISO 8601 text), containers shared;
#: * ``raw``: the node as a dict of its own values (datetimes kept), containers shared;
#: * ``build``: a node from a record of every field, unchecked (``KeyError``: a field missing);
#: * ``freeze``: the node's snapshot, if its containers read back equal (raises otherwise);
#: * ``thaw``: a new node, with new containers, from a snapshot;
#: * ``shapes_ok``: whether every field has a shape a store can write and read back;
#: * ``freeze_checked``: ``freeze`` after ``shapes_ok``, skipping the scalars the stored
#:   snapshot ``since`` holds; ``None``: a check failed.
Codec = tuple[
    Callable[[Any], dict[str, Any]],
    Callable[[Any], dict[str, Any]],
    Callable[[dict[str, Any]], Any],
    Callable[[Any], Snapshot],
    Callable[[Snapshot], Any],
    Callable[[Any], bool],
    Callable[[Any, Snapshot | None], Snapshot | None],
]


# -- the shapes a store can keep: each as generated code's test and as a plain one ----------

#: Each shape: the generated code's test for a bad value (over ``{v}``), and the plain one.
SHAPES: Final[dict[str, tuple[str, Callable[[Any], bool]]]] = {}


def _shape(name: str, generated: str) -> Callable[[Callable[[Any], bool]], Callable[[Any], bool]]:
    """Register the plain test below as the shape ``name``, beside its generated text."""

    def register(plain: Callable[[Any], bool]) -> Callable[[Any], bool]:
        SHAPES[name] = (generated, plain)
        return plain

    return register


@_shape("optional text", '{v} is not None and (type({v}) is not str or "\\x00" in {v})')
def _bad_optional_text(v: Any) -> bool:
    if v is None:
        return False
    return type(v) is not str or "\x00" in v


@_shape("text", 'type({v}) is not str or not {v} or "\\x00" in {v}')
def _bad_text(v: Any) -> bool:
    return type(v) is not str or v == "" or "\x00" in v


@_shape("dict", "type({v}) is not dict")
def _bad_dict(v: Any) -> bool:
    return type(v) is not dict


@_shape("optional dict", "{v} is not None and type({v}) is not dict")
def _bad_optional_dict(v: Any) -> bool:
    return v is not None and type(v) is not dict


@_shape("flag", "{v} is not True and {v} is not False")
def _bad_flag(v: Any) -> bool:
    return v is not True and v is not False


@_shape("optional flag", "{v} is not None and {v} is not True and {v} is not False")
def _bad_optional_flag(v: Any) -> bool:
    return v is not None and _bad_flag(v)


@_shape("timestamp", "{v} is not None and (type({v}) is not datetime or {v}.tzinfo is None)")
def _bad_timestamp(v: Any) -> bool:
    if v is None:
        return False
    return type(v) is not datetime or v.tzinfo is None


@_shape("version", "type({v}) is not int or {v} < 0")
def _bad_version(v: Any) -> bool:
    return type(v) is not int or v < 0


@_shape("uuid", "type({v}) is not str or not canonical({v})")
def _bad_uuid(v: Any) -> bool:
    return type(v) is not str or _CANONICAL_UUID.fullmatch(v) is None


@_shape("group", "type({v}) is not str or not group({v})")
def _bad_group(v: Any) -> bool:
    return type(v) is not str or STORED_GROUP.fullmatch(v) is None


@_shape("traits", "type({v}) is not list or ({v} and not traits_ok({v}))")
def _bad_traits(v: Any) -> bool:
    if type(v) is not list:
        return True
    return any(not _good_trait(trait) for trait in v)


# -- the generated codec -------------------------------------------------------------------------


def generate(layout: Layout) -> Codec:
    """The codec as straight-line code, compiled once (what the stores run)."""
    record, raw, build = _generate_json(layout)
    freeze, thaw, shapes_ok, freeze_checked = _generate_snapshot(layout)
    return record, raw, build, freeze, thaw, shapes_ok, freeze_checked


def _generate_json(layout: Layout) -> tuple[Any, Any, Any]:
    """``record``, ``raw`` and ``build``: one dict display, or one line per field."""
    items = ", ".join(
        f"{name!r}: None if node.{name} is None else node.{name}.isoformat()"
        if name in layout.datetimes
        else f"{name!r}: node.{name}"
        for name in layout.fields
    )
    raw = ", ".join(f"{name!r}: node.{name}" for name in layout.fields)
    lines = ["def record(node):", f"    return {{{items}}}", "", "def raw(node):"]
    lines += [f"    return {{{raw}}}", "", "def build(data):"]
    lines.append("    node = new(Node)")
    for name in layout.fields:
        if name in layout.datetimes:
            lines.append(f"    value = data[{name!r}]")
            lines.append(f"    node.{name} = None if value is None else parse(value)")
        else:
            lines.append(f"    node.{name} = data[{name!r}]")
    lines.append("    return node")
    namespace: dict[str, Any] = {
        "Node": layout.cls,
        "new": object.__new__,
        "parse": datetime.fromisoformat,
    }
    exec(compile("\n".join(lines), "<ironic_fsm node codec>", "exec"), namespace)
    return namespace["record"], namespace["raw"], namespace["build"]


def _generate_snapshot(layout: Layout) -> tuple[Any, Any, Any, Any]:
    """``freeze``, ``thaw``, ``shapes_ok`` and ``freeze_checked``.

    ``freeze_checked(node, since)`` is ``freeze`` with the checks of
    ``shapes_ok``, reading each field once; a scalar that is the very object
    of the stored snapshot's ``since`` was checked when it was stored, so
    only the changed ones are checked again.
    """
    scalars, containers = layout.scalars, layout.containers
    held, olds, into = (", ".join(f"{p}{n}" for n in scalars) for p in ("v_", "o_", "node."))
    boxes, unboxed = (", ".join(f"{p}{n}" for n in containers) for p in ("v_", "node."))
    ok = ["def shapes_ok(node):"]
    checked = [
        "def freeze_checked(node, since):",
        f"    ({olds},) = fresh if since is None else since[0]",
    ]
    for name, shape in layout.checks:
        bad = SHAPES[shape][0]
        ok += [f"    v = node.{name}", f"    if {bad.format(v='v')}:", "        return False"]
        same = f"v_{name} is not o_{name} and " if name in scalars else ""
        checked += [f"    v_{name} = node.{name}", f"    if {same}({bad.format(v=f'v_{name}')}):"]
        checked.append("        return None")
    tail = [f"    boxes = [{boxes}]", "    blob = dumps(boxes)", "    if loads(blob) != boxes:"]
    tail += ["        raise ValueError(NOT_EXACT)", f"    return ({held},), blob", ""]
    read = [f"    v_{name} = node.{name}" for name in layout.fields]
    lines = [*ok, "    return True", "", *checked, *tail, "def freeze(node):", *read, *tail]
    lines += ["def thaw(snapshot):", "    node = new(Node)", f"    ({into},) = snapshot[0]"]
    lines += [f"    ({unboxed},) = loads(snapshot[1])", "    return node"]
    namespace: dict[str, Any] = {
        "Node": layout.cls,
        "new": object.__new__,
        "datetime": datetime,
        "canonical": _CANONICAL_UUID.fullmatch,
        "group": STORED_GROUP.fullmatch,
        "traits_ok": lambda traits: all(map(_good_trait, traits)),
        "dumps": dumps,
        "loads": orjson.loads,
        "NOT_EXACT": NOT_EXACT,
        "fresh": tuple(object() for _ in scalars),  # the same as no stored field
    }
    exec(compile("\n".join(lines), "<ironic_fsm node snapshot codec>", "exec"), namespace)
    return tuple(namespace[f] for f in ("freeze", "thaw", "shapes_ok", "freeze_checked"))


# -- the reference codec -------------------------------------------------------------------------


def reference(layout: Layout) -> Codec:
    """The codec in plain Python, a field at a time: what the generated one must equal."""
    scalars, containers = layout.scalars, layout.containers

    def record(node: Any) -> dict[str, Any]:
        out = {}
        for name in layout.fields:
            value = getattr(node, name)
            if name in layout.datetimes and value is not None:
                value = value.isoformat()
            out[name] = value
        return out

    def raw(node: Any) -> dict[str, Any]:
        return {name: getattr(node, name) for name in layout.fields}

    def build(data: dict[str, Any]) -> Any:
        node: Any = object.__new__(layout.cls)
        for name in layout.fields:
            value = data[name]
            if name in layout.datetimes and value is not None:
                value = datetime.fromisoformat(value)
            setattr(node, name, value)
        return node

    def freeze(node: Any) -> Snapshot:
        held = tuple(getattr(node, name) for name in scalars)
        boxes = [getattr(node, name) for name in containers]
        blob = dumps(boxes)
        if orjson.loads(blob) != boxes:
            raise ValueError(NOT_EXACT)
        return held, blob

    def thaw(snapshot: Snapshot) -> Any:
        node: Any = object.__new__(layout.cls)
        for name, value in zip(scalars, snapshot[0], strict=True):
            setattr(node, name, value)
        for name, value in zip(containers, orjson.loads(snapshot[1]), strict=True):
            setattr(node, name, value)
        return node

    def shapes_ok(node: Any) -> bool:
        return not any(SHAPES[shape][1](getattr(node, name)) for name, shape in layout.checks)

    def freeze_checked(node: Any, since: Snapshot | None) -> Snapshot | None:
        stored = dict(zip(scalars, since[0], strict=True)) if since is not None else {}
        for name, shape in layout.checks:
            value = getattr(node, name)
            if name in stored and value is stored[name]:
                continue  # checked when ``since`` was stored
            if SHAPES[shape][1](value):
                return None
        return freeze(node)

    return record, raw, build, freeze, thaw, shapes_ok, freeze_checked
