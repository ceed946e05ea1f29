"""Schema 18: on PostgreSQL the indexes of the state, the driver, the conductor group and
``seq`` hold only the free nodes; SQLite keeps them whole.

A database of schema 17 (SQLite file or PostgreSQL schema) is upgraded in
place: every row is kept, every other index stays as it was, the four keep
their names and columns and, on PostgreSQL only, have ``WHERE
reservation IS NULL``; a failed step leaves the database as it was. Then what the step must
not cost: pages sorted on the state or the driver, or filtered on either or
the group, counts by any of them and scans by state still give the held
nodes too, as the memory store does;
a new node still follows every other, the held ones too.
"""

from __future__ import annotations

import copy
from functools import partial

import old_schema as old
import pytest
from test_store_migration_v7 import indexes

from ironic_fsm.node import Node
from ironic_fsm.stores import MemoryStore, SQLStore, sql
from ironic_fsm.stores._schema import FREE_ON_POSTGRES
from ironic_fsm.stores.capabilities import StoreCapabilities
from ironic_fsm.stores.sql import _COLUMNS

#: The step before this one.
BEFORE = 17

_rows = partial(old.every_row, nodes=old.nodes_since_v9(_COLUMNS))
v17_url = old.release_fixture(BEFORE, old.fill_since_v9(_COLUMNS))


def test_the_changed_indexes_are_the_ones_old_tests_set_aside() -> None:
    assert {index for index, _, _ in FREE_ON_POSTGRES} == old.CHANGED_BY_V18


def test_a_schema_17_database_is_upgraded_losing_nothing(v17_url: str) -> None:
    before, defined = _rows(v17_url), indexes(v17_url)
    assert not any("WHERE" in defined[index].upper() for index in old.CHANGED_BY_V18)
    with SQLStore(v17_url) as store:
        assert old.schema_version(v17_url) == sql.SCHEMA_VERSION > BEFORE
        assert _rows(v17_url) == before  # every row and column
        after = indexes(v17_url)
        assert old.kept_by_v18(after) == old.kept_by_v18(defined)
        for index, _, columns in FREE_ON_POSTGRES:
            assert after[index].replace(" WHERE (reservation IS NULL)", "") == defined[index]
            assert f"({columns})" in after[index]
            free = after[index].endswith("WHERE (reservation IS NULL)")
            assert free == (not v17_url.startswith("sqlite")), after[index]
        old.assert_old_records_kept(store)
        assert old.HELD in [n.uuid for n in store.list(sort_key="driver")]
        assert old.HELD in [n.uuid for n in store.list(driver=store.get(old.HELD).driver)]  # type: ignore[call-arg]
    old.assert_reopening_keeps(v17_url, indexes, after)


def test_a_failed_step_leaves_a_schema_17_database_as_it_was(
    v17_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    old.assert_failed_then_upgraded(v17_url, monkeypatch, BEFORE, _rows, indexes)


# -- what the step must not cost ---------------------------------------------------------------


def _fleet() -> list[Node]:
    """Twelve nodes of three drivers, three groups and two states, created in order."""
    drivers, groups = ("ipmi", "redfish", "fake-hardware"), ("", "rack-a", "rack-b")
    return [
        Node(
            name=f"n-{(i * 5) % 12:02d}",
            driver=drivers[i % 3],
            conductor_group=groups[i % 4 % 3],
            provision_state=("enroll", "manageable")[i % 2],
        )
        for i in range(12)
    ]


def _walk(store: MemoryStore | SQLStore, **query: object) -> list[str]:
    """Every node the query gives, page by page of 2 (each after the last one's marker)."""
    pages = [store.list(limit=2, **query)]  # type: ignore[arg-type]
    while pages[-1]:
        pages.append(store.list(limit=2, marker=pages[-1][-1].uuid, **query))  # type: ignore[arg-type]
    return [node.uuid for page in pages for node in page]


def test_pages_and_counts_on_driver_and_group_give_held_and_free_nodes(sql_url: str) -> None:
    memory, nodes = MemoryStore(), _fleet()
    with SQLStore(sql_url) as store:
        held = [n.uuid for n in nodes[1::3] + nodes[5:7]]  # of every driver, group and state
        for each in (memory, store):
            each.create_many([copy.deepcopy(n) for n in nodes])
            for uuid in held:
                each.reserve(uuid, old.HOLDER)
        # A scan by state that names no reservation finds the held nodes too.
        for wanted in (["manageable"], ["enroll", "manageable"]):
            found = [n.uuid for n in store.in_states(wanted)]
            assert found == [n.uuid for n in memory.in_states(wanted)], wanted
            assert set(held) & set(found), wanted
        queries: list[dict[str, object]] = [
            {"sort_key": "driver"},
            {"sort_key": "driver", "sort_dir": "desc"},
            {"sort_key": "driver", "driver": "ipmi"},
            {"driver": "redfish"},
            {"driver": {"redfish", "fake-hardware"}, "sort_key": "name", "sort_dir": "desc"},
            {"conductor_group": "rack-a"},
            {"conductor_group": "rack-b", "sort_key": "updated_at", "sort_dir": "desc"},
            {"conductor_group": "", "driver": "ipmi", "sort_key": "provision_state"},
            {"conductor_group": "rack-a", "reserved": True},
            {"driver": "ipmi", "reserved": False},
            {"sort_key": "provision_state", "sort_dir": "desc"},
            {"provision_state": "manageable", "sort_key": "name"},
            {"provision_state": {"enroll", "manageable"}, "driver": "redfish"},
        ]
        for query in queries:
            expected = _walk(memory, **query)
            assert expected, query
            assert _walk(store, **query) == expected, query
            whole = store.list(**query)  # type: ignore[arg-type]
            assert [n.uuid for n in whole] == expected, query
        ours, theirs = StoreCapabilities(store), StoreCapabilities(memory)
        assert ours.counter is not None  # counted in SQL, not from a listing
        for field in ("provision_state", "driver", "conductor_group"):
            for reserved in (None, True, False):
                counted = ours.count_nodes(field, reserved=reserved)
                assert counted == theirs.count_nodes(field, reserved=reserved), (field, reserved)
                assert sum(counted.values()) == (6 if reserved is not None else 12)


def test_a_new_node_follows_every_other_the_held_ones_too(sql_url: str) -> None:
    """``seq`` is creation order: the last node given one is held, the next follows it."""
    with SQLStore(sql_url) as store:
        first, last = Node(name="first"), Node(name="last")
        store.create(first)
        store.create(last)
        store.reserve(last.uuid, old.HOLDER)  # the top seq is held: on no free-only index
        one, many = Node(name="one"), [Node(name=f"many-{i}") for i in range(3)]
        store.create(one)
        store.reserve(one.uuid, old.HOLDER)
        store.create_many(many)
        with store.connection() as conn:
            order = [row[0] for row in conn.execute("SELECT name FROM nodes ORDER BY seq")]
            assert len({row[0] for row in conn.execute("SELECT seq FROM nodes")}) == 6
        assert order == ["first", "last", "one", "many-0", "many-1", "many-2"]
