"""Schema 6 (the node's conductor group): a v5 database is upgraded in place, losing nothing.

The v5 database is made as the release before this one made it: the
migrations up to 5 only, nodes written with the v5 columns, plus everything
v5 keeps beside them (a reservation, a heartbeat, a registered conductor,
history entries and their counts, power-sync times). It lives in a real
SQLite file or in a private schema of the real PostgreSQL server.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial

import pytest
from old_schema import (
    COLUMNS_BEFORE_V6,
    FREE,
    HELD,
    NODES_BEFORE_V6,
    SYNCED,
    T0,
    assert_a_failed_step_keeps,
    assert_old_records_kept,
    every_row,
    fill_every_table,
    raw_rows,
    release_fixture,
    schema_version,
)

from ironic_fsm.stores import SQLStore
from ironic_fsm.stores.base import PowerSyncRow
from ironic_fsm.stores.sql import SCHEMA_VERSION

#: A URL of a database in the v5 layout holding something in every table.
v5_url = release_fixture(5, partial(fill_every_table, columns=COLUMNS_BEFORE_V6, synced=SYNCED))


#: Every row of every v5 table, and every v5 column of ``nodes``.
everything_of_v5 = partial(every_row, nodes=NODES_BEFORE_V6)


def index_names(url: str) -> set[str]:
    if url.startswith("sqlite"):
        return {r[0] for r in raw_rows(url, "SELECT name FROM sqlite_master WHERE type='index'")}
    rows = raw_rows(url, "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
    return {r[0] for r in rows}


def test_v5_database_is_upgraded_losing_nothing(v5_url: str) -> None:
    before = everything_of_v5(v5_url)
    SQLStore(v5_url).close()
    assert schema_version(v5_url) == SCHEMA_VERSION
    assert everything_of_v5(v5_url) == before  # not a row or column of v5 changed
    assert raw_rows(v5_url, "SELECT DISTINCT conductor_group FROM nodes") == [("",)]
    assert "nodes_conductor_group_idx" in index_names(v5_url)
    with SQLStore(v5_url) as store:
        expected = assert_old_records_kept(store)
        assert {store.get(uuid).conductor_group for uuid in expected} == {""}
        due = store.power_sync_due(T0 + timedelta(minutes=1))
        assert {row.uuid: row.conductor_group for row in due} == dict.fromkeys(expected, "")
        assert [r.synced_at for r in due if r.uuid == SYNCED] == [T0 + timedelta(minutes=1)]
        # The old rows take a group, and the filter finds them by it.
        node = store.get(FREE)
        node.conductor_group = "rack-2"
        store.save(node)
        assert [n.uuid for n in store.list(conductor_group="rack-2")] == [FREE]
        assert [n.uuid for n in store.list(conductor_group="")] == [HELD, SYNCED]
    with SQLStore(v5_url) as again:  # reopening changes nothing
        assert schema_version(v5_url) == SCHEMA_VERSION
        assert again.get(FREE).conductor_group == "rack-2"
        assert again.power_sync_due(T0)[0] == PowerSyncRow(
            FREE, "ipmi", "available", False, None, None, None, "rack-2"
        )


def test_a_failed_v6_step_leaves_the_v5_database_as_it_was(
    v5_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not a row changed, no group index left behind:
    assert_a_failed_step_keeps(v5_url, monkeypatch, 5, everything_of_v5, index_names)
    with pytest.raises(Exception, match="conductor_group"):
        raw_rows(v5_url, "SELECT conductor_group FROM nodes")  # nor the column
