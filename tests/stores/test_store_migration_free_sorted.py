"""The step after the records step: the timestamps' sort indexes hold only the free nodes.

A database of the records step (SQLite file or PostgreSQL schema) is
upgraded in place: every row is kept, ``nodes_name_idx`` is dropped (the
unique index on names sorts them, a partial one the unnamed nodes), the
sort indexes of ``created_at``, ``updated_at`` and ``provision_updated_at``
keep their names and columns and hold only the nodes nobody holds, every
other index stays as it was; a failed step leaves the database as it was.
Then what the step is for: pages sorted on those keys still give every
node, the held ones too, in the order one index of all of them would (the
memory store's), page after page, both ways.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from functools import partial

import pytest
from old_schema import (
    CHANGED_BY_FREE_SORTED,
    COLUMNS_BEFORE_RESOURCES,
    HELD,
    HOLDER,
    T0,
    assert_failed_then_upgraded,
    assert_old_records_kept,
    assert_reopening_keeps,
    every_row,
    fill_since_v9,
    kept_by_free_sorted,
    nodes_since_v9,
    release_fixture,
    schema_version,
)
from test_store_migration_v7 import indexes

from ironic_fsm.node import Node
from ironic_fsm.stores import MemoryStore, SQLStore, sql
from ironic_fsm.stores._query import SORT_KEYS
from ironic_fsm.stores._schema import FREE_SORTED

#: The schema of the records step, the one this step upgrades (the lead renumbers steps).
RECORDS = 14

# Nodes as the records step wrote them: the resources step, after this one, adds instance_name.
_rows = partial(every_row, nodes=nodes_since_v9(COLUMNS_BEFORE_RESOURCES))
v14_url = release_fixture(RECORDS, fill_since_v9(COLUMNS_BEFORE_RESOURCES))


def test_the_changed_indexes_are_the_ones_old_tests_set_aside() -> None:
    named = {"nodes_name_idx", "nodes_unnamed_idx"}
    assert {index for index, _ in FREE_SORTED} | named == CHANGED_BY_FREE_SORTED


def test_a_records_step_database_is_upgraded_losing_nothing(v14_url: str) -> None:
    before, defined = _rows(v14_url), indexes(v14_url)
    assert "nodes_name_idx" in defined
    assert not any("WHERE" in defined[index].upper() for index, _ in FREE_SORTED)
    with SQLStore(v14_url) as store:
        assert schema_version(v14_url) == sql.SCHEMA_VERSION > RECORDS
        assert _rows(v14_url) == before  # every row and column
        after = indexes(v14_url)
        assert "nodes_name_idx" not in after
        assert "(seq, uuid)" in after["nodes_unnamed_idx"]
        assert "name IS NULL" in after["nodes_unnamed_idx"]
        assert kept_by_free_sorted(after) == kept_by_free_sorted(defined)
        for index, column in FREE_SORTED:
            assert f"({column}, seq, uuid)" in after[index]
            assert "reservation IS NULL" in after[index]
        assert_old_records_kept(store)
        for key in ("created_at", "updated_at", "provision_updated_at", "name"):
            assert HELD in [n.uuid for n in store.list(sort_key=key)], key
    assert_reopening_keeps(v14_url, indexes, after)


def test_a_failed_step_leaves_the_records_step_database_as_it_was(
    v14_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_failed_then_upgraded(v14_url, monkeypatch, RECORDS, _rows, indexes)
    assert "nodes_name_idx" not in indexes(v14_url)


# -- what the step is for ----------------------------------------------------------------------


def _fleet() -> list[Node]:
    """Twelve nodes whose times tie, repeat and go unset, some named, created in order."""
    nodes = []
    for i in range(12):
        node = Node(name=None if i % 3 == 0 else f"n-{(i * 5) % 12:02d}", driver="fake-hardware")
        node.created_at = T0 + timedelta(minutes=i // 2)  # pairs tie: seq decides
        node.updated_at = None if i % 4 == 1 else T0 + timedelta(minutes=(i * 7) % 5)
        node.provision_updated_at = None if i % 5 == 2 else T0 + timedelta(seconds=(i * 3) % 4)
        nodes.append(node)
    return nodes


def _walk(store: MemoryStore | SQLStore, sort_key: str, sort_dir: str) -> list[str]:
    """Every node, page by page of 3 (each after the last one's marker)."""
    seen: list[str] = []
    while True:
        marker = seen[-1] if seen else None
        page = store.list(limit=3, marker=marker, sort_key=sort_key, sort_dir=sort_dir)
        if not page:
            return seen
        seen += [n.uuid for n in page]


def test_pages_on_every_key_give_held_and_free_nodes_in_one_order(sql_url: str) -> None:
    memory, nodes = MemoryStore(), _fleet()
    with SQLStore(sql_url) as store:
        for each in (memory, store):
            each.create_many([copy.deepcopy(n) for n in nodes])
            for node in nodes[1::4] + nodes[6:8]:  # held, between free ones in every order
                each.reserve(node.uuid, HOLDER)
        for sort_key in SORT_KEYS:
            for sort_dir in ("asc", "desc"):
                expected = _walk(memory, sort_key, sort_dir)
                assert sorted(expected) == sorted(n.uuid for n in nodes)
                assert _walk(store, sort_key, sort_dir) == expected, (sort_key, sort_dir)
                whole = [n.uuid for n in store.list(sort_key=sort_key, sort_dir=sort_dir)]
                assert whole == expected, (sort_key, sort_dir)
        # A filter narrows both parts alike: the held nodes alone, the free ones alone.
        held = store.list(sort_key="updated_at", reserved=True)
        assert {n.uuid for n in held} == {n.uuid for n in nodes[1::4] + nodes[6:8]}
        free = store.list(sort_key="created_at", sort_dir="desc", reserved=False, limit=4)
        assert [n.uuid for n in free] == [
            n.uuid for n in memory.list(sort_key="created_at", sort_dir="desc", reserved=False)
        ][:4]
