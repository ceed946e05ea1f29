"""The resources step (issue 20): ``instance_name`` as a column, and three tables more.

A database of the step before (SQLite file or PostgreSQL schema) is upgraded
in place: every row is kept, a node's ``instance_name`` (kept in ``data``
until now) is copied into its new column and found by the filter, the
inspection rules, firmware and BIOS tables exist, and a node's components
and settings go with it. A failed step leaves the database as it was.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from old_schema import (
    COLUMNS_BEFORE_RESOURCES,
    T0,
    assert_failed_then_upgraded,
    assert_old_records_kept,
    create_with,
    every_row,
    fill_since_v9,
    kept_by_v18,
    nodes_since_v9,
    raw_rows,
    release_urls,
    schema_version,
)
from test_store_migration_v7 import indexes

from ironic_fsm.node import Node
from ironic_fsm.records import BiosSetting, FirmwareComponent, InspectionRule
from ironic_fsm.stores import SQLStore, sql
from ironic_fsm.stores._records import RecordQuery

#: The step before the resources step (16; the inventory step, 17, came after it).
BEFORE: int = 15
NAMED = "cccccccc-0000-4000-8000-000000000001"
_rows = partial(every_row, nodes=nodes_since_v9(COLUMNS_BEFORE_RESOURCES))


def _fill(store: SQLStore) -> None:
    fill_since_v9(COLUMNS_BEFORE_RESOURCES)(store)
    named = Node(uuid=NAMED, driver="fake-hardware", instance_name="vm-1", created_at=T0)
    create_with(store, COLUMNS_BEFORE_RESOURCES, named)


@pytest.fixture(params=["sqlite", "postgres"], name="old_url")
def _old_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database as the step before left it."""
    yield from release_urls(request, tmp_path, BEFORE, _fill)


def test_database_before_the_step_is_upgraded_losing_nothing(old_url: str) -> None:
    before, defined = _rows(old_url), kept_by_v18(indexes(old_url))
    with SQLStore(old_url) as store:
        assert schema_version(old_url) == sql.SCHEMA_VERSION
        assert _rows(old_url) == before
        assert kept_by_v18(indexes(old_url)) == defined
        assert raw_rows(old_url, "SELECT uuid, instance_name FROM nodes WHERE "
                        "instance_name IS NOT NULL") == [(NAMED, "vm-1")]  # fmt: skip
        assert [n.uuid for n in store.list(instance_name="vm-1")] == [NAMED]
        assert store.list(instance_name="vm-2") == []
        assert_old_records_kept(store)
        records = store.records
        rule = records.add_record(InspectionRule(uuid=NAMED, priority=5))
        assert records.list_records(InspectionRule, RecordQuery()) == [rule]
        records.add_record(FirmwareComponent(uuid=NAMED, node_uuid=NAMED, component="bmc"))
        records.add_record(BiosSetting(uuid=NAMED, node_uuid=NAMED, name="ProcTurbo"))
        store.delete(NAMED)
        assert records.list_records(FirmwareComponent, RecordQuery()) == []
        assert records.list_records(BiosSetting, RecordQuery()) == []
        assert raw_rows(old_url, "SELECT count(*) FROM firmware_components") == [(0,)]


def test_a_failed_step_leaves_the_database_as_it_was(
    old_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_failed_then_upgraded(old_url, monkeypatch, BEFORE, _rows, indexes)
    assert raw_rows(old_url, "SELECT count(*) FROM bios_settings") == [(0,)]
