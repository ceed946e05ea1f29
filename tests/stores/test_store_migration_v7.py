"""Schema 7 (partial state-age and reservation indexes): a v6 database is upgraded in place.

The v6 database is made as the release before this one made it (the
migrations up to 6 only) and holds something in every table: a free node,
a reserved node in a wait state, an active node, a heartbeat,
a registered conductor, history entries and their counts, a power-sync
time. It lives in a real SQLite file or in a private schema of the real
PostgreSQL server. Version 7 changes two indexes and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path
from typing import Final

import pytest
from old_schema import (
    COLUMNS_BEFORE_V8,
    FREE,
    HELD,
    HOLDER,
    NODES_BEFORE_V8,
    SYNCED,
    T0,
    UTC,
    assert_a_failed_step_keeps,
    assert_old_records_kept,
    assert_reopening_keeps,
    every_row,
    fill_every_table,
    kept_by_v9,
    raw_rows,
    release_fixture,
    schema_version,
)

from ironic_fsm import states
from ironic_fsm.exceptions import ConcurrentUpdate
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore, sql

PARTIAL = {"nodes_state_age_idx", "nodes_reservation_idx"}
#: What the v6 and v7 releases' databases hold here: something in every table.
FILL_BEFORE_V8 = partial(fill_every_table, columns=COLUMNS_BEFORE_V8, synced=FREE)


#: A v6 database in a SQLite file, or in a private schema of the PostgreSQL server.
v6_url = release_fixture(6, FILL_BEFORE_V8)


#: Every row of every table, every column of ``nodes`` that v8 keeps as it was.
everything = partial(every_row, nodes=NODES_BEFORE_V8)


#: The tables of records beside nodes, the records step's (their indexes are its own business:
#: the earlier steps' tests compare the indexes of the tables those steps knew).
_RECORD_TABLES: Final = (
    "('ports', 'portgroups', 'chassis', 'allocations', 'volume_connectors', 'volume_targets', "
    "'inspection_rules', 'firmware_components', 'bios_settings', 'node_inventory')"
)
#: The index the resources step adds on ``nodes`` (its own test's business, likewise).
_RESOURCES_INDEX: Final = "nodes_instance_name_idx"


def indexes(url: str) -> dict[str, str]:
    """Each index's definition, as the database gives it (not the records' and resources'
    steps')."""
    if url.startswith("sqlite"):
        rows = raw_rows(
            url,
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' "
            f"AND tbl_name NOT IN {_RECORD_TABLES}",
        )
    else:
        rows = raw_rows(
            url,
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            f"AND tablename NOT IN {_RECORD_TABLES}",
        )
    return {name: definition or "" for name, definition in rows if name != _RESOURCES_INDEX}


def test_v6_database_is_upgraded_to_v7_losing_nothing(v6_url: str) -> None:
    before, defined = everything(v6_url), kept_by_v9(indexes(v6_url))
    assert not any("WHERE" in defined[name] for name in PARTIAL)
    SQLStore(v6_url).close()
    assert schema_version(v6_url) == sql.SCHEMA_VERSION >= 7
    assert everything(v6_url) == before  # not a row or column changed
    every = indexes(v6_url)
    after = {name: text for name, text in every.items() if name in defined}  # v8 adds some
    assert set(after) == set(defined)  # the same indexes by name: two of them now partial
    assert {name for name, text in after.items() if "WHERE" in text} == PARTIAL
    assert {name: text for name, text in after.items() if name not in PARTIAL} == {
        name: text for name, text in defined.items() if name not in PARTIAL
    }
    with SQLStore(v6_url) as store:
        assert_old_records_kept(store)
        # The scans find what they found before, through the new indexes.
        assert [(r.uuid, r.holder) for r in store.reserved()] == [(HELD, HOLDER)]
        later = T0 + timedelta(hours=1)
        waits = sorted(states.WAIT_STATES)
        assert [n.uuid for n in store.in_states(waits, updated_before=later)] == [HELD]
        assert [n.uuid for n in store.in_states([states.CLEANWAIT])] == [HELD]
        assert [n.uuid for n in store.in_states(waits, reservation=None)] == []
        working = [states.ACTIVE, states.AVAILABLE]
        assert [n.uuid for n in store.in_states(working, updated_before=later)] == [FREE, SYNCED]
        assert [n.uuid for n in store.list(reservation=HOLDER)] == [HELD]
        assert [n.uuid for n in store.list(reservation=None)] == [FREE, SYNCED]
        # What changes afterwards is found too: a reservation, a node entering a wait state.
        store.reserve(FREE, "new-host:1:1-ef01")
        busy = store.get(SYNCED)
        busy.provision_state, busy.provision_updated_at = states.DEPLOYWAIT, T0
        store.save(busy)
        assert {r.uuid for r in store.reserved()} == {FREE, HELD}
        assert [n.uuid for n in store.in_states(waits, updated_before=later)] == [HELD, SYNCED]
        store.release(HELD, HOLDER)
        assert [r.uuid for r in store.reserved()] == [FREE]
    assert_reopening_keeps(v6_url, indexes, every)


def test_scans_of_a_v7_database_search_the_indexes_they_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite: a wait-state scan searches the partial index, any other the state index."""
    url = f"sqlite:///{tmp_path / 'plans.sqlite'}"
    with SQLStore(url, echo=True) as store:
        sql_texts: list[str] = []
        monkeypatch.setattr(store._sql, "log", sql_texts.append)
        store.in_states(sorted(states.WAIT_STATES), updated_before=T0, reservation=None)
        store.in_states([states.DEPLOYING, states.CLEANWAIT], updated_before=T0)
        store.reserved()
        with store.connection() as conn:
            plans = [
                [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + t, [None] * t.count("?"))]
                for t in sql_texts
            ]
    assert [len(p) for p in plans] == [1, 1, 1], plans
    assert plans[0][0].startswith("SEARCH nodes USING INDEX nodes_state_age_idx ("), plans
    assert plans[1][0].startswith("SEARCH nodes USING INDEX nodes_provision_state_idx ("), plans
    assert plans[2][0].startswith("SEARCH nodes USING INDEX nodes_reservation_idx ("), plans


def test_a_failed_v7_step_leaves_the_v6_database_as_it_was(
    v6_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not a row changed; both indexes as they were, none dropped:
    assert_a_failed_step_keeps(v6_url, monkeypatch, 6, everything, indexes)


# -- what a save costs: the pages of its commit ------------------------------------------------


def wal_frames(store: SQLStore, write: Callable[[], object]) -> int:
    """The pages SQLite appends to its write-ahead log for ``write``."""
    with store.connection() as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    write()
    with store.connection() as conn:
        return int(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0][1])


def test_a_save_of_a_reserved_node_that_moves_no_indexed_value_writes_one_page(
    tmp_path: Path,
) -> None:
    """The row's page alone: setting ``reservation`` to the value it has would cost its index's."""
    with SQLStore(f"sqlite:///{tmp_path / 'pages.sqlite'}") as store:
        for i in range(50):
            store.create(Node(name=f"n{i}"))
        node = store.reserve("n7", HOLDER)
        node.extra["seen"] = 0
        store.save(node)
        for seen in range(1, 4):
            node.extra["seen"] = seen
            assert wal_frames(store, lambda: store.save(node)) == 1
        assert store.get("n7").extra == {"seen": 3}
        assert [r.uuid for r in store.reserved()] == [node.uuid]
        node.reservation = None  # the release does write the reservation
        assert wal_frames(store, lambda: store.save(node)) > 1
        assert store.reserved() == []


def test_a_reservation_cleared_behind_the_holders_back_is_set_again_by_its_save(
    sql_url: str,
) -> None:
    """As ever: a save writes the reservation its node carries, even when the row lost it."""
    with SQLStore(sql_url) as store:
        store.create(Node(uuid=FREE, name="free"))
        node = store.reserve(FREE, HOLDER)
        node.extra["step"] = 1
        store.save(node)
        with store.connection() as conn:
            conn.execute(f"UPDATE nodes SET reservation = NULL WHERE uuid = '{FREE}'")
        node.extra["step"] = 2
        store.save(node)
        again = store.get(FREE)
        assert (again.reservation, again.version, again.extra) == (HOLDER, 3, {"step": 2})
        assert [(r.uuid, r.holder) for r in store.reserved()] == [(FREE, HOLDER)]
        other = store.get(FREE)
        other.extra["step"] = 3
        store.save(other)
        with pytest.raises(ConcurrentUpdate):  # a stale copy is still refused, held or not
            store.save(node)
        assert store.get(FREE).extra == {"step": 3}


def test_timestamps_keep_the_v1_text_whatever_their_zone(tmp_path: Path) -> None:
    """Naive UTC text with microseconds, for UTC (the usual, formatted fastest) and other zones."""
    url = f"sqlite:///{tmp_path / 'times.sqlite'}"
    east = timezone(timedelta(hours=2))
    with SQLStore(url) as store:
        node = Node(
            name="t",
            created_at=datetime(2026, 5, 1, 8, 0, 0, tzinfo=UTC),
            updated_at=datetime(2026, 5, 1, 10, 0, 0, 7, tzinfo=east),
            provision_updated_at=datetime(1, 1, 1, tzinfo=UTC),
        )
        store.create(node)
    assert raw_rows(url, "SELECT created_at, updated_at, provision_updated_at FROM nodes") == [
        ("2026-05-01 08:00:00.000000", "2026-05-01 08:00:00.000007", "0001-01-01 00:00:00.000000")
    ]
