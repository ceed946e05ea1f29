"""Schema 8 (owner, lessee, instance UUID; deploy templates, runbooks): a v7 database upgrades.

The v7 database is made as the release before this one made it (the
migrations up to 7 only, nodes written with the v7 columns) and holds
something in every table. It lives in a real SQLite file or in a private
schema of the real PostgreSQL server. Then the new columns at work: their
filters, pushed down by every store.
"""

from __future__ import annotations

from typing import Any

import pytest
from old_schema import (
    FREE,
    HELD,
    NODES_BEFORE_V8,
    SYNCED,
    assert_a_failed_step_keeps,
    assert_old_records_kept,
    assert_reopening_keeps,
    kept_by_v9,
    raw_rows,
    release_fixture,
    schema_version,
)
from test_store_migration_v7 import FILL_BEFORE_V8, everything, indexes

from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore, Store, sql

INSTANCE = "6d9f2e3a-0c1b-4e5f-8a7b-9c0d1e2f3a4b"


#: A v7 database in a SQLite file, or in a private schema of the PostgreSQL server.
v7_url = release_fixture(7, FILL_BEFORE_V8)


def test_v7_database_is_upgraded_to_v8_losing_nothing(v7_url: str) -> None:
    before, defined = everything(v7_url), kept_by_v9(indexes(v7_url))
    SQLStore(v7_url).close()
    assert schema_version(v7_url) == sql.SCHEMA_VERSION >= 8
    assert everything(v7_url) == before  # not a row or an old column changed
    after = indexes(v7_url)
    assert {name: after[name] for name in defined} == defined
    assert {"nodes_owner_idx", "nodes_lessee_idx", "nodes_instance_uuid_idx"} <= set(after)
    assert (
        raw_rows(v7_url, "SELECT owner, lessee, instance_uuid FROM nodes")
        == [(None, None, None)] * 3
    )
    assert raw_rows(v7_url, "SELECT * FROM deploy_templates") == []
    assert raw_rows(v7_url, "SELECT * FROM runbooks") == []
    with SQLStore(v7_url) as store:
        for uuid in assert_old_records_kept(store):
            node = store.get(uuid)
            assert (node.owner, node.lessee, node.instance_uuid) == (None, None, None)
        # The new columns are written and filtered from the first save on.
        node = store.get(SYNCED)
        node.owner, node.instance_uuid = "project-a", INSTANCE
        store.save(node)
        assert [n.uuid for n in store.list(owner="project-a")] == [SYNCED]
        assert [n.uuid for n in store.list(associated=True)] == [SYNCED]
        assert [n.uuid for n in store.list(associated=False)] == [FREE, HELD]
    assert_reopening_keeps(v7_url, indexes, after)


def test_a_failed_v8_step_leaves_the_v7_database_as_it_was(
    v7_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_a_failed_step_keeps(v7_url, monkeypatch, 7, everything, indexes)
    columns = raw_rows(v7_url, "SELECT * FROM nodes LIMIT 1")[0]
    assert len(columns) == len(raw_rows(v7_url, NODES_BEFORE_V8)[0])  # no column added


# -- the new columns at work -----------------------------------------------------------------


def test_tenancy_and_instance_filters_in_every_store(store: Store) -> None:
    nodes = [
        Node(name="mine", owner="p1", lessee="p2", instance_uuid=INSTANCE),
        Node(name="lent", owner="p1", lessee="p3"),
        Node(name="bare"),
    ]
    for node in nodes:
        store.create(node)

    def names(**filters: Any) -> list[str | None]:
        return [n.name for n in store.list(**filters)]

    assert names(owner="p1") == ["mine", "lent"]
    assert names(owner=None) == ["bare"]
    assert names(lessee=["p2", "p3"]) == ["mine", "lent"]
    assert names(instance_uuid=INSTANCE) == ["mine"]
    assert names(associated=True) == ["mine"]
    assert names(associated=False) == ["lent", "bare"]
    assert names(associated=True, owner="p1") == ["mine"]
    assert names(associated="yes") == []  # a value of the wrong type matches nothing
    got = store.get("mine")
    assert (got.owner, got.lessee, got.instance_uuid) == ("p1", "p2", INSTANCE)
    got.instance_uuid = None
    store.save(got)
    assert names(associated=True) == []


def test_a_description_is_kept_whole(store: Store) -> None:
    text = "row 7, " * 585  # 4095 characters: far past the width of any column
    store.create(Node(name="described", description=text))
    assert store.get("described").description == text
