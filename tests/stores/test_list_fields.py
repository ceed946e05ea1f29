"""``fields`` on listing: only some fields of each node, without decoding records where it can.

On every store (memory, a SQLite file, the real PostgreSQL). That no record
is decoded is shown by records that cannot be decoded: a listing of column
fields still works on them, a listing that needs the record does not.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from helpers import SECRET

from ironic_fsm import Conductor
from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError
from ironic_fsm.node import Node
from ironic_fsm.stores import MemoryStore, SQLStore, Store
from ironic_fsm.stores import _memory_record as memory
from ironic_fsm.stores.base import COLUMN_FIELDS, NodeFields, list_fields

T0 = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=timezone.utc)
#: Fields kept in columns, a record-only field, and the two mixed.
COLUMNS_ONLY = ["name", "provision_state", "maintenance", "created_at", "conductor_group"]
RECORD_ONLY = ["driver_info", "last_error"]
FIELD_SETS = [
    COLUMNS_ONLY,
    RECORD_ONLY,
    [*COLUMNS_ONLY, *RECORD_ONLY],
    sorted(COLUMN_FIELDS),
    ["uuid"],
    [],
]


@pytest.fixture
def fleet(store: Store) -> tuple[Conductor, list[Node]]:
    conductor = Conductor(store=store)
    nodes = [
        conductor.create_node(
            name=f"node-{i}",
            driver_info={"ipmi_password": SECRET, "ipmi_address": f"10.0.0.{i}"},
            maintenance=i == 1,
            conductor_group="rack" if i % 2 else "",
            provision_updated_at=T0 + timedelta(hours=i),
            created_at=T0 + timedelta(minutes=i),
            last_error=None if i else "boom",
        )
        for i in range(4)
    ]
    return conductor, [store.get(node.uuid) for node in nodes]


def cut(node: Node, fields: list[str]) -> dict[str, Any]:
    return {name: getattr(node, name) for name in dict.fromkeys(["uuid", *fields])}


@pytest.mark.parametrize("fields", FIELD_SETS, ids=lambda f: ",".join(f) or "none")
def test_each_node_gives_exactly_its_own_values_of_the_fields(
    fleet: tuple[Conductor, list[Node]], fields: list[str]
) -> None:
    conductor, nodes = fleet
    got = conductor.list_nodes(fields=fields)
    assert got == [cut(node, fields) for node in nodes]
    assert all(isinstance(row, NodeFields) for row in got)
    assert all(next(iter(row)) == "uuid" for row in got)  # uuid first, always there


def test_fields_go_with_paging_sorting_and_filters(fleet: tuple[Conductor, list[Node]]) -> None:
    conductor, nodes = fleet
    fields = ["name", "provision_updated_at"]
    by_time = conductor.list_nodes(fields=fields, sort_key="provision_updated_at", sort_dir="desc")
    assert by_time == [cut(node, fields) for node in reversed(nodes)]
    page = conductor.list_nodes(fields=fields, limit=2, marker=nodes[0].uuid)
    assert page == [cut(node, fields) for node in nodes[1:3]]
    assert conductor.list_nodes(fields=fields, conductor_group="RACK") == [
        cut(nodes[1], fields),
        cut(nodes[3], fields),
    ]
    assert conductor.list_nodes(fields=fields, maintenance=True, limit=0) == []
    assert conductor.list_nodes(fields=["name", "name", "uuid"], limit=1) == [
        {"uuid": nodes[0].uuid, "name": "node-0"}
    ]


def test_timestamps_and_flags_keep_their_types(fleet: tuple[Conductor, list[Node]]) -> None:
    conductor, nodes = fleet
    [row] = conductor.list_nodes(
        fields=["created_at", "updated_at", "maintenance", "retired", "version"], limit=1
    )
    assert row["created_at"] == T0
    assert row["created_at"].utcoffset() == timedelta(0)
    assert row["updated_at"] == nodes[0].updated_at
    assert (row["maintenance"], row["retired"], row["version"]) == (False, False, 1)
    assert type(row["maintenance"]) is bool


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        (["name", "no_such_field"], "'no_such_field'"),
        (["no_such_field", "name"], "'no_such_field'"),
        ([3], "3"),
        ("name", "'name'"),  # a string is not a list of names
        (5, "5"),
    ],
)
def test_an_unknown_field_is_refused_by_name(
    fleet: tuple[Conductor, list[Node]], fields: Any, named: str
) -> None:
    conductor, _ = fleet
    with pytest.raises(InvalidParameterValue, match="field") as info:
        conductor.list_nodes(fields=fields)
    assert named in str(info.value)
    assert info.value.details.get("field") == "fields"


def test_the_repr_of_a_row_masks_secrets(
    fleet: tuple[Conductor, list[Node]], caplog: pytest.LogCaptureFixture
) -> None:
    conductor, _ = fleet
    rows = conductor.list_nodes(fields=["driver_info"])
    assert rows[0]["driver_info"]["ipmi_password"] == SECRET  # the data is the node's
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("page: %r", rows)
    assert SECRET not in caplog.text
    assert SECRET not in repr(rows)
    assert "10.0.0.0" in repr(rows)


# -- no record decoded for column fields ---------------------------------------------------


def spoil_records(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every record undecodable (the columns stay as they are)."""
    if isinstance(store, MemoryStore):

        def thaw(snapshot: Any) -> Node:
            raise AssertionError("a record was thawed")

        monkeypatch.setattr(memory, "thaw", thaw)
        return
    assert isinstance(store, SQLStore)
    with store.connection() as conn:
        conn.execute("UPDATE nodes SET data = 'not a record'")


def test_column_fields_are_read_without_decoding_a_record(
    store: Store, fleet: tuple[Conductor, list[Node]], monkeypatch: pytest.MonkeyPatch
) -> None:
    conductor, nodes = fleet
    spoil_records(store, monkeypatch)
    fields = sorted(COLUMN_FIELDS)
    assert conductor.list_nodes(fields=fields) == [cut(node, fields) for node in nodes]
    page = conductor.list_nodes(fields=["name"], sort_key="name", sort_dir="desc", limit=2)
    assert page == [
        {"uuid": nodes[3].uuid, "name": "node-3"},
        {"uuid": nodes[2].uuid, "name": "node-2"},
    ]
    with pytest.raises((IronicFSMError, AssertionError)):
        conductor.list_nodes(fields=["name", "driver_info"])  # needs the record: decoded
    with pytest.raises((IronicFSMError, AssertionError)):
        conductor.list_nodes()


# -- any store ------------------------------------------------------------------------------


class FirstReleaseStore:
    """A store of the first release: ``list`` takes filters only (no paging, no fields)."""

    def __init__(self) -> None:
        self._inner = MemoryStore()

    def list(self, **filters: Any) -> list[Node]:
        return self._inner.list(**filters)

    def __getattr__(self, name: str) -> Any:
        if name in ("create", "get", "save", "delete", "reserve", "release", "heartbeat",
                    "holders"):  # fmt: skip
            return getattr(self._inner, name)
        raise AttributeError(name)


def test_a_store_without_fields_gets_its_nodes_cut_down() -> None:
    store = FirstReleaseStore()
    conductor = Conductor(store=store)
    made = [conductor.create_node(name=f"n{i}", conductor_group="g") for i in range(3)]
    assert conductor.list_nodes(fields=["name"], limit=2, sort_dir="desc") == [
        {"uuid": made[2].uuid, "name": "n2"},
        {"uuid": made[1].uuid, "name": "n1"},
    ]
    assert list_fields(store, ["conductor_group"], name="n0") == [
        {"uuid": made[0].uuid, "conductor_group": "g"}
    ]
    with pytest.raises(InvalidParameterValue, match="'bogus'"):
        list_fields(store, ["bogus"])
