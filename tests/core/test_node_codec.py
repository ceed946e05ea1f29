"""The node codecs generated with ``exec`` agree with their plain reference, field by field.

:mod:`ironic_fsm._node_codec` builds the stores' codecs as straight-line
code and keeps a reference that does the same one field at a time. Here
both run on nodes that set every field of ``NODE_FIELDS`` to ordinary and
edge values, and on nodes with one bad value in one field: they must give
the same records, snapshots and nodes, and refuse the same values with the
same exception type.
"""

from __future__ import annotations

import uuid as _uuid
from collections import OrderedDict
from datetime import date, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from ironic_fsm import _node_codec
from ironic_fsm import node as node_module
from ironic_fsm.node import _LAYOUT, NODE_FIELDS, Node

NAMES = ("record", "raw", "build", "freeze", "thaw", "shapes_ok", "freeze_checked")
#: The codec the node and the stores run (built at import), and its reference.
GENERATED = SimpleNamespace(
    **dict(zip(NAMES, (getattr(node_module, f"_{n}") for n in NAMES), strict=True))
)
REFERENCE = SimpleNamespace(**dict(zip(NAMES, _node_codec.reference(_LAYOUT), strict=True)))
UTC = timezone.utc
T0 = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
INDIA = timezone(timedelta(hours=5, minutes=30))


class _Str(str):
    """A ``str`` subclass: JSON would give back a plain ``str``."""


class _Datetime(datetime):
    """A ``datetime`` subclass (freezegun and pendulum make such)."""


def _everything() -> Node:
    """A node with every field away from its default, at values near the edges."""
    text = {n: f'{n} ☃ \t"é' for n, shape in _LAYOUT.checks if shape == "optional text"}
    given = dict(
        uuid=str(_uuid.UUID(int=2**128 - 1)),
        name="rack1-u07~x.y_z",
        driver="fake-hardware",
        driver_info={"ipmi_address": "10.0.0.9", "ipmi_password": "s3cret", "": ""},
        driver_internal_info={"deep": [[[{"a": [None, True, False, 0, -1, 1.5]}]]]},
        properties={"cpus": 2**63 - 1, "memory_mb": -(2**63), "ratio": 1e308, "tiny": 5e-324},
        instance_info={"ünïcödé ☃": "😀", "escapes": '"\\\u2028\x01', "empty": {}},
        extra={"list": [], "nested": {"x": {"y": {"z": "w"}}}},
        traits=["CUSTOM_A", "C" * 255, "CUSTOM_Ü"],
        resource_class="",
        conductor_group="rack-1.a_b",
        provision_state="clean wait",
        maintenance=True,
        maintenance_reason="x" * 10_000,
        retired=True,
        protected=True,
        disable_power_off=True,
        automated_clean=False,
        clean_step={"interface": "deploy", "step": "erase", "args": {}, "priority": 10},
        deploy_step={},
        service_step={"step": "x", "args": {"n": None}},
        provision_updated_at=T0,
        created_at=datetime(1970, 1, 1, tzinfo=UTC),
        updated_at=T0.astimezone(INDIA),
        version=2**62,
        target_raid_config={"logical_disks": [{"size_gb": "MAX", "raid_level": "1"}]},
        raid_config={"logical_disks": []},
        description="A" * 4096,
        instance_uuid=str(_uuid.UUID(int=1)),
        secure_boot=True,
        network_data={"links": [], "networks": [], "services": []},
        parent_node=str(_uuid.UUID(int=2)),
        inspection_started_at=datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        inspection_finished_at=datetime(1, 1, 1, tzinfo=INDIA),
    )
    return Node(**(text | given))


#: Other values a store keeps, one field at a time, on top of ``_everything()``.
EDGES: list[tuple[str, Any]] = [
    ("name", None),
    ("name", ""),
    ("automated_clean", None),
    ("automated_clean", True),
    ("secure_boot", None),
    ("secure_boot", False),
    ("clean_step", None),
    ("deploy_step", None),
    ("service_step", {}),
    ("conductor_group", ""),
    ("traits", []),
    ("version", 0),
    ("provision_updated_at", None),
    ("created_at", None),
    ("maintenance", False),
    ("retired", False),
    ("protected", False),
    ("instance_uuid", None),
    ("parent_node", None),
]


def _nodes() -> list[tuple[str, Node]]:
    nodes = [("defaults", Node()), ("everything", _everything())]
    for name, value in EDGES:
        node = _everything()
        setattr(node, name, value)
        nodes.append((f"{name}={value!r}"[:40], node))
    return nodes


NODES = _nodes()
IDS = [label for label, _ in NODES]


def test_every_field_is_away_from_its_default() -> None:
    defaults, everything = Node(), _everything()
    same = [n for n in NODE_FIELDS if getattr(everything, n) == getattr(defaults, n)]
    assert same == [] or same == ["driver"]  # the one hardware type every node has


@pytest.mark.parametrize("node", [n for _, n in NODES], ids=IDS)
def test_records_agree(node: Node) -> None:
    record = GENERATED.record(node)
    assert list(record.items()) == list(REFERENCE.record(node).items())
    assert list(record) == list(NODE_FIELDS)
    assert list(GENERATED.raw(node).items()) == list(REFERENCE.raw(node).items())
    assert all(GENERATED.raw(node)[n] is getattr(node, n) for n in NODE_FIELDS)


@pytest.mark.parametrize("node", [n for _, n in NODES], ids=IDS)
def test_built_nodes_agree(node: Node) -> None:
    data = orjson.loads(orjson.dumps(GENERATED.record(node)))
    built, plain = GENERATED.build(dict(data)), REFERENCE.build(dict(data))
    assert type(built) is type(plain) is Node
    assert built == plain == node
    for name in NODE_FIELDS:
        assert type(getattr(built, name)) is type(getattr(plain, name)), name


@pytest.mark.parametrize("node", [n for _, n in NODES], ids=IDS)
def test_snapshots_agree(node: Node) -> None:
    snapshot = GENERATED.freeze(node)
    assert snapshot == REFERENCE.freeze(node)
    assert type(snapshot[0]) is tuple
    assert type(snapshot[1]) is bytes
    assert GENERATED.shapes_ok(node) is REFERENCE.shapes_ok(node) is True
    for since in (None, snapshot, GENERATED.freeze(Node())):
        assert GENERATED.freeze_checked(node, since) == REFERENCE.freeze_checked(node, since)
        assert GENERATED.freeze_checked(node, since) == snapshot
    thawed, plain = GENERATED.thaw(snapshot), REFERENCE.thaw(snapshot)
    assert thawed == plain == node
    for name in _LAYOUT.containers:  # new containers, never the node's own
        if getattr(node, name) is not None:
            assert getattr(thawed, name) is not getattr(node, name)
            assert getattr(plain, name) is not getattr(node, name)
    for name in _LAYOUT.scalars:  # immutable values, shared
        assert getattr(thawed, name) is getattr(node, name)


#: Per field, values of a shape no store keeps (assigned: assignment is not checked).
BAD: dict[str, list[Any]] = {
    "uuid": [str(_uuid.UUID(int=2**128 - 1)).upper(), _uuid.UUID(int=5), "not-a-uuid", None, ""],
    "conductor_group": ["Upper", None, 5, "a" * 256, "sp ace", _Str("x")],
    "traits": ["CUSTOM_X", [""], [5], ["x" * 256], ["a\x00"], ("CUSTOM_X",), None],
    "version": [-1, True, 1.0, "1", None],
}
#: The other fields' bad values, by their shape.
BAD_BY_SHAPE: dict[str, list[Any]] = {
    "optional text": [5, b"bytes", "a\x00b", _Str("x"), ["x"]],
    "text": ["", None, "a\x00", 5, _Str("x")],
    "dict": [None, [], "x", OrderedDict(a=1), ()],
    "optional dict": [[], "x", OrderedDict(), 0],
    "flag": [None, 1, 0, "true"],
    "optional flag": [1, 0, "yes"],
    "timestamp": [
        datetime(2031, 1, 1),
        "2031-01-01T00:00:00+00:00",
        date(2031, 1, 1),
        _Datetime(2031, 1, 1, tzinfo=UTC),
        0,
    ],
}
for _name, _shape in _LAYOUT.checks:
    if _name not in BAD:
        BAD[_name] = BAD_BY_SHAPE[_shape]
BAD_CASES = [(name, value) for name in NODE_FIELDS for value in BAD[name]]


def test_every_field_has_bad_values() -> None:
    assert set(BAD) == set(NODE_FIELDS)
    assert all(BAD[name] for name in NODE_FIELDS)


@pytest.mark.parametrize(
    ("name", "value"), BAD_CASES, ids=[f"{n}-{i}" for n in NODE_FIELDS for i in range(len(BAD[n]))]
)
def test_both_refuse_a_bad_shape(name: str, value: Any) -> None:
    good = _everything()
    stored = GENERATED.freeze(good)
    node = _everything()
    setattr(node, name, value)
    assert GENERATED.shapes_ok(node) is REFERENCE.shapes_ok(node) is False
    for since in (None, stored):
        assert GENERATED.freeze_checked(node, since) is None
        assert REFERENCE.freeze_checked(node, since) is None


@pytest.mark.parametrize(
    ("name", "value"), [(n, v) for n, v in BAD_CASES if n in _LAYOUT.scalars], ids=str
)
def test_both_skip_a_scalar_that_is_the_stored_object(name: str, value: Any) -> None:
    # What was stored was checked then: the same object is not checked again.
    node = _everything()
    setattr(node, name, value)
    since = GENERATED.freeze(node)
    assert since == REFERENCE.freeze(node)
    assert GENERATED.freeze_checked(node, since) == REFERENCE.freeze_checked(node, since) == since


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"x": value}
    return value


#: Container contents JSON would not give back as they are, or cannot write at all.
NOT_JSON: list[Any] = [
    {"x": float("nan")},
    {"x": float("inf")},
    {"x": (1, 2)},
    {1: "a"},
    {"x": {1, 2}},
    {"x": 2**70},
    {"x": _uuid.UUID(int=3)},
    {"x": T0},
    {"x": object()},
    _deep(300),
]


def _raised(call: Any, *args: Any) -> type[BaseException] | None:
    try:
        call(*args)
    except Exception as exc:
        return type(exc)
    return None


@pytest.mark.parametrize("name", [n for n in _LAYOUT.containers if n != "traits"])
@pytest.mark.parametrize("value", NOT_JSON, ids=lambda v: repr(v)[:20])
def test_both_raise_the_same_for_what_json_would_change(name: str, value: Any) -> None:
    node = _everything()
    setattr(node, name, value)
    raised = _raised(GENERATED.freeze, node)
    assert raised is not None
    assert raised is _raised(REFERENCE.freeze, node)
    for since in (None, GENERATED.freeze(_everything())):
        assert _raised(GENERATED.freeze_checked, node, since) is raised
        assert _raised(REFERENCE.freeze_checked, node, since) is raised


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.pop("shard"),
        lambda d: d.update(created_at="yesterday"),
        lambda d: d.update(updated_at=5),
    ],
    ids=["missing", "bad-timestamp", "not-text"],
)
def test_both_builds_refuse_the_same_records(change: Any) -> None:
    data = GENERATED.record(_everything())
    change(data)
    raised = _raised(GENERATED.build, dict(data))
    assert raised is not None
    assert raised is _raised(REFERENCE.build, dict(data))
