"""Schema 9: a node's history count lives in its row; SQLite's history has no UUID key.

A v8 database (SQLite file or PostgreSQL schema) is upgraded in place: every
entry, its order and its node's count are kept, the counts table goes, and a
failed step leaves v8 as it was. Then what v9 is for: a save with history
costs its SQLite commit three pages more than the same save without (six
before), and counting entries never changes a node's version.
"""

from __future__ import annotations

import statistics
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import pytest
from old_schema import (
    COLUMNS_BEFORE_V9,
    COUNTS_BEFORE_V9,
    COUNTS_SINCE_V9,
    FREE,
    HELD,
    NODES_BEFORE_V9,
    SYNCED,
    add_history_before_v9,
    as_release,
    assert_a_failed_step_keeps,
    commit_frames,
    entry,
    every_row,
    fill_every_table,
    raw_rows,
    release_fixture,
    schema_version,
    v5_nodes,
)
from test_store_migration_v7 import indexes
from test_store_migrations import history_entry

from ironic_fsm.history import HistoryEntry
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore, sql


def free_entry(n: int, minutes: int) -> HistoryEntry:
    """Entry ``n`` of FREE, ``minutes`` after T0 (several may share an instant)."""
    made = history_entry(FREE, minutes, f"power {n}")
    return attrs.evolve(made, uuid=f"cccccccc-0000-4000-8000-{n:012d}")


#: FREE's entries as v8 wrote them, in writing order: two share an instant, one is older
#: than the one before it (a conductor with a clock behind), so ``seq`` and time disagree.
FREE_WRITTEN = [free_entry(1, 1), free_entry(2, 5), free_entry(3, 5), free_entry(4, 3)]
#: Oldest first, ties in writing order: what ``node_history`` returned and returns.
FREE_ORDER = [FREE_WRITTEN[i] for i in (0, 3, 1, 2)]


def fill_as_v8(store: SQLStore) -> None:
    """What the v8 release left here: history on two nodes, one trimmed."""
    fill_every_table(store, COLUMNS_BEFORE_V9, history=(0, 1, 2))
    add_history_before_v9(store, FREE_WRITTEN)
    q = store._q
    with store.connection() as conn:  # v8's trim took HELD's oldest entry
        conn.execute(f"DELETE FROM node_history WHERE uuid = {q}", (entry(0).uuid,))
        conn.execute(f"UPDATE node_history_counts SET entries = 2 WHERE node_uuid = {q}", (HELD,))


#: A v8 database in a SQLite file, or in a private schema of the PostgreSQL server.
v8_url = release_fixture(8, fill_as_v8)


#: Every row of the tables v9 keeps, and every v8 column of ``nodes``.
everything_of_v8 = partial(every_row, nodes=NODES_BEFORE_V9, counts=False)


def counts_of_v8(url: str) -> list[tuple[Any, ...]]:
    """The per-node history counts, in their own table (as v8 kept them)."""
    return sorted(raw_rows(url, COUNTS_BEFORE_V9))


def test_v8_database_is_upgraded_to_v9_losing_nothing(v8_url: str) -> None:
    before, counts = everything_of_v8(v8_url), counts_of_v8(v8_url)
    assert counts == [(FREE, 4, 4), (HELD, 2, 3)]
    SQLStore(v8_url).close()
    assert schema_version(v8_url) == sql.SCHEMA_VERSION >= 9
    assert everything_of_v8(v8_url) == before  # every entry (seq too), every node column
    assert sorted(raw_rows(v8_url, COUNTS_SINCE_V9)) == counts  # the counts, in the node rows
    never = f"SELECT history_entries, history_last_seq FROM nodes WHERE uuid = '{SYNCED}'"
    assert raw_rows(v8_url, never) == [(0, 0)]  # a node without history counts none
    with pytest.raises(Exception, match="node_history_counts"):
        raw_rows(v8_url, COUNTS_BEFORE_V9)  # the table is gone
    after = indexes(v8_url)
    assert "history_entries" in after["node_history_counts_entries_idx"]
    assert "nodes" in after["node_history_counts_entries_idx"]
    with SQLStore(v8_url) as store:
        assert store.node_history(FREE) == FREE_ORDER
        assert store.node_history(HELD) == [entry(1), entry(2)]
        assert store.node_history(SYNCED) == []
        versions = {n.uuid: store.get(n.uuid).version for n in v5_nodes()}
        # Entries go on from the last seq v8 gave; the trim reads the moved counts.
        store.add_history([entry(3)])
        assert store.node_history(HELD) == [entry(1), entry(2), entry(3)]
        held = f"SELECT seq FROM node_history WHERE node_uuid = '{HELD}'"
        assert sorted(raw_rows(v8_url, held)) == [(2,), (3,), (4,)]
        assert store.trim_history(2, before=None, limit=10) == 3  # 1 of HELD, 2 of FREE
        assert store.node_history(HELD) == [entry(2), entry(3)]
        assert store.node_history(FREE) == FREE_ORDER[2:]
        assert sorted(raw_rows(v8_url, COUNTS_SINCE_V9)) == [(FREE, 2, 4), (HELD, 2, 4)]
        assert {n.uuid: store.get(n.uuid).version for n in v5_nodes()} == versions
    with SQLStore(v8_url) as again:  # reopening changes nothing
        assert schema_version(v8_url) == sql.SCHEMA_VERSION
        assert indexes(v8_url) == after
        assert again.node_history(FREE) == FREE_ORDER[2:]


def test_sqlite_history_loses_its_uuid_key_and_keeps_its_node_index(tmp_path: Path) -> None:
    url = as_release(f"sqlite:///{tmp_path / 'v8.sqlite'}", 8, fill_as_v8)
    assert "sqlite_autoindex_node_history_1" in indexes(url)
    SQLStore(url).close()
    names = set(indexes(url))
    assert "sqlite_autoindex_node_history_1" not in names
    assert "node_history_node_idx" in names
    assert {n for n in names if "node_history" in n} == {
        "node_history_node_idx",
        "node_history_counts_entries_idx",
    }


def test_a_failed_v9_step_leaves_the_v8_database_as_it_was(
    v8_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = counts_of_v8(v8_url)
    assert_a_failed_step_keeps(v8_url, monkeypatch, 8, everything_of_v8, indexes, counts_of_v8)
    columns = raw_rows(v8_url, "SELECT * FROM nodes LIMIT 1")[0]
    assert len(columns) == len(raw_rows(v8_url, NODES_BEFORE_V9)[0])  # no column added
    monkeypatch.undo()
    with SQLStore(v8_url) as store:  # and the next attempt upgrades it
        assert store.node_history(FREE) == FREE_ORDER
    assert sorted(raw_rows(v8_url, COUNTS_SINCE_V9)) == counts


# -- what v9 is for ---------------------------------------------------------------------------


def test_sqlite_entry_costs_its_commit_three_pages(tmp_path: Path) -> None:
    """The same save with one entry against without: the WAL frames its commit writes.

    Three pages: the entry's, its node index's, the count index's (v8: six,
    with the UUID key and the counts table's row and two indexes).
    """
    path = tmp_path / "pages.sqlite"
    extra = []
    with SQLStore(f"sqlite:///{path}") as store:
        nodes = [Node(name=f"n{i}", driver="fake-hardware") for i in range(60)]
        store.create_many(nodes)

        frames = partial(commit_frames, store, path)
        for i, node in enumerate(nodes):
            frames(node, [])  # the first save sets every column: not compared
            plain = frames(node, [])
            extra.append(
                frames(node, [history_entry(node.uuid, i, f"cleaning failed {i}")]) - plain
            )
    assert statistics.median(extra) <= 3, extra


def test_counting_entries_never_changes_the_node(sql_url: str) -> None:
    with SQLStore(sql_url) as store:
        node = Node(name="counted", driver="fake-hardware")
        store.create(node)
        store.save(node, history=[history_entry(node.uuid, 1, "cleaning failed 1")])
        version = node.version
        store.add_history([history_entry(node.uuid, n, f"cleaning failed {n}") for n in (2, 3)])
        assert store.get(node.uuid).version == version
        node.maintenance = True
        store.save(
            node, history=[history_entry(node.uuid, 4, "cleaning failed 4")]
        )  # not a concurrent update
        assert store.get(node.uuid).maintenance is True
        assert [e.event for e in store.node_history(node.uuid)] == [
            f"cleaning failed {n}" for n in (1, 2, 3, 4)
        ]
        assert raw_rows(
            sql_url,
            f"SELECT history_entries, history_last_seq FROM nodes WHERE uuid = '{node.uuid}'",
        ) == [(4, 4)]
        store.delete(node.uuid)
        assert raw_rows(sql_url, "SELECT COUNT(*) FROM node_history") == [(0,)]
