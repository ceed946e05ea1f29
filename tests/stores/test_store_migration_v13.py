"""Schema 13: the nodes in maintenance, by fault, on a partial index of their own.

A v12 database (SQLite file or PostgreSQL schema) is upgraded in place:
every row is kept, every index stays as it was, one is added; a failed step
leaves v12 as it was. The metrics' count of the nodes in maintenance reads
that index.
"""

from __future__ import annotations

from functools import partial

import pytest
from old_schema import (
    ADDED_BY_V13,
    COLUMNS_BEFORE_RESOURCES,
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

from ironic_fsm.stores import SQLStore, sql
from ironic_fsm.stores.capabilities import StoreCapabilities

_v12_rows = partial(every_row, nodes=nodes_since_v9(COLUMNS_BEFORE_RESOURCES))
v12_url = release_fixture(12, fill_since_v9(COLUMNS_BEFORE_RESOURCES))


def test_v12_database_is_upgraded_to_v13_losing_nothing(v12_url: str) -> None:
    before, defined = _v12_rows(v12_url), kept_by_free_sorted(indexes(v12_url))
    assert not ADDED_BY_V13 & set(defined)
    with SQLStore(v12_url) as store:
        assert schema_version(v12_url) == sql.SCHEMA_VERSION >= 13
        assert _v12_rows(v12_url) == before  # every row and column
        after = kept_by_free_sorted(indexes(v12_url))
        assert {name: after[name] for name in defined} == defined
        assert set(after) - set(defined) == ADDED_BY_V13
        assert "(fault)" in after["nodes_maintenance_idx"]
        assert "WHERE maintenance" in after["nodes_maintenance_idx"]
        nodes = assert_old_records_kept(store)
        in_maintenance = sum(1 for node in nodes.values() if node.maintenance)
        counted = StoreCapabilities(store).count_nodes("fault", maintenance=True)
        assert sum(counted.values()) == in_maintenance
    assert_reopening_keeps(v12_url, lambda url: kept_by_free_sorted(indexes(url)), after)


def test_a_failed_v13_step_leaves_the_v12_database_as_it_was(
    v12_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_failed_then_upgraded(v12_url, monkeypatch, 12, _v12_rows, indexes)
    assert "nodes_maintenance_idx" in indexes(v12_url)
