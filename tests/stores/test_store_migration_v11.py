"""Schema 11: the history count's index holds only the nodes with more than 100 entries.

A v10 database (SQLite file or PostgreSQL schema) is upgraded in place:
every row is kept, the index keeps its name and becomes partial, and a
failed step leaves v10 as it was. Then what v11 is for: a save with history
of a node under the index's floor costs its SQLite commit two pages, not
three, and the trim still finds exactly the nodes over any limit, through
the index from the floor up and by reading every count below it.
"""

from __future__ import annotations

import statistics
from datetime import timedelta
from functools import partial
from pathlib import Path

import pytest
from old_schema import (
    CHANGED_BY_V12,
    COLUMNS_BEFORE_RESOURCES,
    HELD,
    T0,
    assert_failed_then_upgraded,
    assert_old_records_kept,
    assert_reopening_keeps,
    before_v13,
    commit_frames,
    entry,
    every_row,
    fill_since_v9,
    nodes_since_v9,
    raw_rows,
    release_fixture,
    schema_version,
)
from test_store_migration_v7 import indexes

from ironic_fsm.history import HistoryEntry, new_entry
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore, sql
from ironic_fsm.stores._schema import HISTORY_INDEXED_OVER

INDEX = "node_history_counts_entries_idx"
#: Every column of a node row in schema 10 (11 adds none).
NODES_OF_V10 = nodes_since_v9(COLUMNS_BEFORE_RESOURCES)
_v10_rows = partial(every_row, nodes=NODES_OF_V10)


#: A v10 database in a SQLite file, or in a private schema of the PostgreSQL server.
v10_url = release_fixture(10, fill_since_v9(COLUMNS_BEFORE_RESOURCES))


def test_v10_database_is_upgraded_to_v11_losing_nothing(v10_url: str) -> None:
    before, defined = _v10_rows(v10_url), before_v13(indexes(v10_url))
    assert "WHERE" not in defined[INDEX].upper()
    with SQLStore(v10_url) as store:
        assert schema_version(v10_url) == sql.SCHEMA_VERSION >= 11
        assert _v10_rows(v10_url) == before  # every row and column, the counts too
        after = before_v13(indexes(v10_url))
        assert set(after) == set(defined)  # the same indexes by name
        assert {n: d for n, d in after.items() if n not in {INDEX, *CHANGED_BY_V12}} == {
            n: d for n, d in defined.items() if n not in {INDEX, *CHANGED_BY_V12}
        }
        assert "history_entries" in after[INDEX]
        assert f"history_entries > {HISTORY_INDEXED_OVER}" in after[INDEX]
        assert_old_records_kept(store)
        store.add_history([entry(3)])  # the numbering goes on from v10's
        held = f"SELECT seq FROM node_history WHERE node_uuid = '{HELD}'"
        assert sorted(raw_rows(v10_url, held)) == [(1,), (2,), (3,)]
        assert store.trim_history(1, before=None, limit=10) == 2  # below the floor: read all
        assert store.node_history(HELD) == [entry(3)]
    assert_reopening_keeps(v10_url, lambda url: before_v13(indexes(url)), after)


def test_a_failed_v11_step_leaves_the_v10_database_as_it_was(
    v10_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_failed_then_upgraded(v10_url, monkeypatch, 10, _v10_rows, indexes)
    assert f"history_entries > {HISTORY_INDEXED_OVER}" in indexes(v10_url)[INDEX]


# -- what v11 is for ---------------------------------------------------------------------------


def _entries(node: Node, first: int, count: int) -> list[HistoryEntry]:
    """``count`` entries of ``node``, a minute apart from minute ``first``."""
    return [
        new_entry(node.uuid, T0 + timedelta(minutes=m), "ERROR", "power", f"power {m}")
        for m in range(first, first + count)
    ]


def test_trim_finds_exactly_the_nodes_over_any_limit(sql_url: str) -> None:
    """Limits on both sides of the floor: through the index, and by reading every count."""
    with SQLStore(sql_url) as store:
        nodes = [Node(name=f"n{i}", driver="fake-hardware") for i in range(4)]
        store.create_many(nodes)
        sizes = [3, HISTORY_INDEXED_OVER, HISTORY_INDEXED_OVER + 1, HISTORY_INDEXED_OVER + 9]
        for node, size in zip(nodes, sizes, strict=True):
            store.add_history(_entries(node, 0, size))
        # From the floor up: the nodes over it, found on the index; nothing under it is read.
        assert store.trim_history(HISTORY_INDEXED_OVER, before=None, limit=100) == 1 + 9
        assert [len(store.node_history(n.uuid)) for n in nodes] == [3] + [HISTORY_INDEXED_OVER] * 3
        kept = store.node_history(nodes[3].uuid)
        assert [e.event for e in kept] == [f"power {m}" for m in range(9, 9 + HISTORY_INDEXED_OVER)]
        # Under the floor: every node over the limit, the small one too.
        assert store.trim_history(2, before=None, limit=1000) == 1 + 3 * (HISTORY_INDEXED_OVER - 2)
        assert [len(store.node_history(n.uuid)) for n in nodes] == [2, 2, 2, 2]
        counts = "SELECT history_entries FROM nodes ORDER BY seq"
        assert raw_rows(sql_url, counts) == [(2,)] * 4


def test_sqlite_entry_of_a_node_under_the_floor_costs_its_commit_two_pages(
    tmp_path: Path,
) -> None:
    """The same save with one entry against without: the WAL frames its commit writes.

    Two pages under the floor (the entry's, its node index's); a node over
    it moves its entry in the count's index as well: a third.
    """
    path = tmp_path / "pages.sqlite"
    with SQLStore(f"sqlite:///{path}") as store:
        nodes = [Node(name=f"n{i}", driver="fake-hardware") for i in range(80)]
        store.create_many(nodes)
        for node in nodes[40:]:
            store.add_history(_entries(node, 0, HISTORY_INDEXED_OVER + 1))

        frames = partial(commit_frames, store, path)
        extra: dict[bool, list[int]] = {False: [], True: []}
        for i, node in enumerate(nodes):
            frames(node, [])  # the first save sets every column: not compared
            plain = frames(node, [])
            with_entry = frames(node, _entries(node, 500, 1))
            extra[i >= 40].append(with_entry - plain)
    assert statistics.median(extra[False]) == 2, extra
    assert statistics.median(extra[True]) == 3, extra
