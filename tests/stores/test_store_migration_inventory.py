"""The inventory step (schema 17): ``node_inventory``, one row per node, gone with its node.

A database of the step before (SQLite file or PostgreSQL schema) is upgraded
in place: every row and index is kept, the table exists with its unique
node, and deleting a node deletes its inventory (its own trigger). A failed
step leaves the database as it was.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from old_schema import (
    assert_failed_then_upgraded,
    assert_old_records_kept,
    every_row,
    fill_since_v9,
    kept_by_v18,
    nodes_since_v9,
    raw_pg,
    raw_rows,
    release_urls,
    schema_version,
)
from test_store_migration_v7 import indexes

from ironic_fsm.exceptions import ResourceExists
from ironic_fsm.node import Node
from ironic_fsm.records import NodeInventory
from ironic_fsm.stores import SQLStore, sql
from ironic_fsm.stores._records import RecordQuery
from ironic_fsm.stores.sql import _COLUMNS

#: The step before the inventory step.
BEFORE: int = 16
NODE = "dddddddd-0000-4000-8000-000000000001"
_rows = partial(every_row, nodes=nodes_since_v9(_COLUMNS))


@pytest.fixture(params=["sqlite", "postgres"], name="old_url")
def _old_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from release_urls(request, tmp_path, BEFORE, fill_since_v9(_COLUMNS))


def test_database_before_the_step_is_upgraded_losing_nothing(old_url: str) -> None:
    before, defined = _rows(old_url), kept_by_v18(indexes(old_url))
    with SQLStore(old_url) as store:
        assert schema_version(old_url) == sql.SCHEMA_VERSION > BEFORE
        assert _rows(old_url) == before
        assert kept_by_v18(indexes(old_url)) == defined
        assert_old_records_kept(store)
        store.create(Node(uuid=NODE, driver="fake-hardware"))
        records = store.records
        kept = records.add_record(
            NodeInventory(uuid=NODE, node_uuid=NODE, inventory={"cpu": {"count": 2}})
        )
        assert records.list_records(NodeInventory, RecordQuery()) == [kept]
        with pytest.raises(ResourceExists):  # one inventory per node
            records.add_record(NodeInventory(uuid=NODE[:-1] + "2", node_uuid=NODE))
        store.delete(NODE)
        assert records.list_records(NodeInventory, RecordQuery()) == []
        assert raw_rows(old_url, "SELECT count(*) FROM node_inventory") == [(0,)]


def test_the_trigger_deletes_a_nodes_inventory_with_it(old_url: str) -> None:
    """Deleted in SQL outside the store (an operator's DELETE): the trigger takes it along."""
    with SQLStore(old_url) as store:
        store.create(Node(uuid=NODE, driver="fake-hardware"))
        store.records.add_record(NodeInventory(uuid=NODE, node_uuid=NODE))
    delete = f"DELETE FROM nodes WHERE uuid = '{NODE}'"
    if old_url.startswith("sqlite"):
        with sqlite3.connect(old_url[len("sqlite:///") :]) as conn:
            conn.execute(delete)
    else:
        with raw_pg(old_url) as pg:
            pg.execute(delete)
    assert raw_rows(old_url, "SELECT count(*) FROM node_inventory") == [(0,)]


def test_a_failed_step_leaves_the_database_as_it_was(
    old_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_failed_then_upgraded(old_url, monkeypatch, BEFORE, _rows, indexes)
    assert raw_rows(old_url, "SELECT count(*) FROM node_inventory") == [(0,)]
