"""Schema 12: the indexes on columns most nodes leave unset hold only the nodes that set them.

A v11 database (SQLite file or PostgreSQL schema) is upgraded in place:
every row is kept, the seven indexes keep their names and become partial
(``WHERE column IS NOT NULL``), every other index stays as it was, and a
failed step leaves v11 as it was. Then what v12 is for: the filters on
those columns still find exactly their nodes, through the partial indexes
(SQLite is told which index to use for ``wait`` steps, and would refuse a
query the index cannot serve), and a save of a node that sets none of them
leaves them empty. On PostgreSQL the nodes' pages are filled to 70%.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest
from old_schema import (
    CHANGED_BY_V12,
    COLUMNS_BEFORE_RESOURCES,
    FREE,
    HELD,
    SYNCED,
    T0,
    assert_failed_then_upgraded,
    assert_old_records_kept,
    assert_reopening_keeps,
    before_v13,
    every_row,
    fill_since_v9,
    nodes_since_v9,
    raw_rows,
    release_fixture,
    schema_version,
)
from test_store_migration_v7 import indexes

from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore, sql
from ironic_fsm.stores._schema import V12_SPARSE

#: Every column of a node row in schema 11 (12 adds none).
NODES_OF_V11 = nodes_since_v9(COLUMNS_BEFORE_RESOURCES)
_v11_rows = partial(every_row, nodes=NODES_OF_V11)

#: A v11 database in a SQLite file, or in a private schema of the PostgreSQL server.
v11_url = release_fixture(11, fill_since_v9(COLUMNS_BEFORE_RESOURCES))


def test_the_sparse_indexes_are_the_ones_old_tests_set_aside() -> None:
    assert {index for index, _ in V12_SPARSE} == CHANGED_BY_V12


def test_v11_database_is_upgraded_to_v12_losing_nothing(v11_url: str) -> None:
    before, defined = _v11_rows(v11_url), before_v13(indexes(v11_url))
    assert not any("WHERE" in defined[name].upper() for name in CHANGED_BY_V12)
    with SQLStore(v11_url) as store:
        assert schema_version(v11_url) == sql.SCHEMA_VERSION >= 12
        assert _v11_rows(v11_url) == before  # every row and column
        after = before_v13(indexes(v11_url))
        assert set(after) == set(defined)  # the same indexes by name
        kept = {n: d for n, d in after.items() if n not in CHANGED_BY_V12}
        assert kept == {n: d for n, d in defined.items() if n not in CHANGED_BY_V12}
        for index, column in V12_SPARSE:
            assert f"({column})" in after[index]
            assert f"{column} IS NOT NULL" in after[index]
        assert_old_records_kept(store)
        assert [n.uuid for n in store.list(associated=False)] == [FREE, HELD, SYNCED]
        if v11_url.startswith("postgresql"):  # room on each page for a save's new version
            options = "SELECT reloptions FROM pg_class WHERE oid = 'nodes'::regclass"
            assert raw_rows(v11_url, options) == [(["fillfactor=70"],)]
    assert_reopening_keeps(v11_url, lambda url: before_v13(indexes(url)), after)


def test_a_failed_v12_step_leaves_the_v11_database_as_it_was(
    v11_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_failed_then_upgraded(v11_url, monkeypatch, 11, _v11_rows, indexes)
    assert "IS NOT NULL" in indexes(v11_url)["nodes_owner_idx"]


# -- what v12 is for ---------------------------------------------------------------------------


def test_filters_on_the_sparse_columns_find_exactly_their_nodes(sql_url: str) -> None:
    with SQLStore(sql_url) as store:
        plain, tenant, child, waiting = (
            Node(name=name, driver="fake-hardware") for name in ("plain", "tenant", "child", "w")
        )
        tenant.owner, tenant.lessee, tenant.resource_class = "p1", "p2", "gold"
        tenant.instance_uuid, tenant.shard = "bbbbbbbb-0000-4000-8000-000000000001", "s1"
        child.parent_node = plain.uuid
        waiting.provision_state = "clean wait"
        waiting.driver_internal_info = {"clean_wait_until": (T0 + timedelta(minutes=5)).isoformat()}
        store.create_many([plain, tenant, child, waiting])
        for field, value in (
            ("owner", "p1"), ("lessee", "p2"), ("resource_class", "gold"),
            ("instance_uuid", tenant.instance_uuid), ("shard", "s1"),
        ):  # fmt: skip
            assert [n.uuid for n in store.list(**{field: value})] == [tenant.uuid], field
        assert [n.uuid for n in store.list(associated=True)] == [tenant.uuid]
        assert [n.uuid for n in store.list(sharded=True)] == [tenant.uuid]
        unassociated = [plain.uuid, child.uuid, waiting.uuid]
        assert [n.uuid for n in store.list(associated=False)] == unassociated
        assert [n.uuid for n in store.list(parent_node=plain.uuid)] == [child.uuid]
        later = T0 + timedelta(hours=1)
        assert [n.uuid for n in store.waking(before=later)] == [waiting.uuid]
        assert store.waking(before=T0) == []
        # A node that sets none of them is in none of the seven indexes.
        if sql_url.startswith("postgresql"):
            sizes = raw_rows(
                sql_url,
                "SELECT count(*) FROM nodes WHERE owner IS NULL AND lessee IS NULL "
                "AND instance_uuid IS NULL AND shard IS NULL AND parent_node IS NULL "
                "AND resource_class IS NULL AND wait_until IS NULL",
            )
            assert sizes == [(1,)]
