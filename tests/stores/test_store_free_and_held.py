"""Reads split into the free nodes and the held ones, written once (``Statements.free_and_held``).

Some indexes hold only the nodes nobody holds (the timestamps' sort indexes
on both dialects, and on PostgreSQL those of :data:`FREE_ON_POSTGRES`,
schema 18), so a count, a scan or a page on one reads the held nodes in a
second leg, on the reservation index. On PostgreSQL every leg of those
statements must be able to read an index (the planner is asked with
sequential scans off: a leg whose conditions no index's own condition
covers still scans the table); on SQLite the statements are the ones
written before the helper, byte for byte; on both, the held nodes are read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pgserver import PostgresServer

from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore
from ironic_fsm.stores._schema import FREE_ON_POSTGRES

HOLDER = "conductor-a"
#: The columns a page of whole nodes reads, as a page part selects them.
_PART = "seq, uuid, data, reservation, version FROM nodes"


def _fleet(url: str) -> tuple[SQLStore, list[str]]:
    """Forty nodes of two drivers and two states, every fourth held; statements echoed."""
    store = SQLStore(url, echo=True)
    nodes = [
        Node(name=f"n{i:02d}", driver=("ipmi", "redfish")[i % 2],
             provision_state=("manageable", "available")[i % 3 % 2])
        for i in range(40)
    ]  # fmt: skip
    store.create_many(nodes)
    held = [node.uuid for node in nodes[::4]]
    for uuid in held:
        store.reserve(uuid, HOLDER)
    return store, held


@pytest.fixture
def fleet(sql_url: str) -> Iterator[tuple[SQLStore, list[str]]]:
    store, held = _fleet(sql_url)
    try:
        yield store, held
    finally:
        store.close()


@pytest.fixture
def pg_fleet(postgres_server: PostgresServer) -> Iterator[SQLStore]:
    from conftest import fresh_postgres_url

    for url in fresh_postgres_url(postgres_server):
        store, _ = _fleet(url)
        try:
            yield store
        finally:
            store.close()


@pytest.fixture
def sqlite_fleet(tmp_path: Path) -> Iterator[SQLStore]:
    store, _ = _fleet(f"sqlite:///{tmp_path / 'nodes.sqlite'}")
    try:
        yield store
    finally:
        store.close()


#: The split reads: what each asks, and the one parameter its statement binds, if any.
_READS: list[tuple[str, Callable[[SQLStore], object], str | None]] = [
    ("count by driver", lambda s: s.count_nodes("driver"), None),
    ("count by state", lambda s: s.count_nodes("provision_state"), None),
    ("scan by state", lambda s: s.in_states(["manageable"]), "manageable"),
    ("page by created_at", lambda s: s.list(limit=5), None),
    ("page by state", lambda s: s.list(limit=5, sort_key="provision_state"), None),
    ("page of a driver", lambda s: s.list(limit=5, driver="ipmi"), "ipmi"),
]


def _statements(
    store: SQLStore, caplog: pytest.LogCaptureFixture, read: Callable[[SQLStore], object]
) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="ironic_fsm.stores.sql"):
        read(store)
    return [r.getMessage().partition(": ")[2] for r in caplog.records]


def test_every_split_read_gives_the_held_nodes_too(
    fleet: tuple[SQLStore, list[str]],
) -> None:
    store, held = fleet
    assert sum(store.count_nodes("driver").values()) == 40
    assert sum(store.count_nodes("provision_state").values()) == 40
    manageable = {n.uuid for n in store.in_states(["manageable"])}
    assert manageable == {n.uuid for n in store.list() if n.provision_state == "manageable"}
    assert manageable & set(held)
    for query in ({}, {"sort_key": "provision_state"}, {"driver": "ipmi"}):
        listed = [n.uuid for n in store.list(**query)]  # type: ignore[arg-type]
        assert set(held) & set(listed), query
        paged: list[str] = []
        while page := store.list(limit=3, marker=paged[-1] if paged else None, **query):  # type: ignore[arg-type]
            paged += [n.uuid for n in page]
        assert paged == listed, query


def test_on_postgres_every_leg_reads_an_index(
    pg_fleet: SQLStore, caplog: pytest.LogCaptureFixture
) -> None:
    store = pg_fleet
    free_only = {index for index, _, _ in FREE_ON_POSTGRES}
    with store.connection() as conn:
        conn.execute("ANALYZE nodes")
        conn.execute("SET enable_seqscan = off")
        try:
            for what, read, value in _READS:
                (split,) = [s for s in _statements(store, caplog, read) if " UNION ALL " in s]
                assert split.count("reservation IS NULL") == split.count("reservation >= ''")
                bound = split if value is None else split.replace("%s", f"'{value}'")
                plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + bound).fetchall())
                assert "Seq Scan" not in plan, (what, plan)
                assert "nodes_reservation_idx" in plan, (what, plan)
                if "created_at" not in split:  # the others read one of schema 18's indexes
                    assert any(index in plan for index in free_only), (what, plan)
        finally:
            conn.execute("RESET enable_seqscan")


#: SQLite's statements for :data:`_READS`, as written before the helper (d1a2598): its
#: indexes hold every node but the timestamps' sort indexes, so only those pages split.
_SQLITE: list[list[str]] = [
    ["SELECT driver, COUNT(*) FROM nodes GROUP BY driver"],
    ["SELECT provision_state, COUNT(*) FROM nodes GROUP BY provision_state"],
    [
        "SELECT provision_updated_at, seq, uuid, data, reservation, version FROM nodes INDEXED"
        " BY nodes_provision_state_idx WHERE provision_state IN (?)"
    ],
    [
        f"SELECT * FROM (SELECT 0, created_at, {_PART} WHERE reservation IS NULL ORDER BY"
        " created_at, seq, uuid LIMIT 5) AS part0 UNION ALL SELECT * FROM (SELECT 1,"
        f" created_at, {_PART} INDEXED BY nodes_reservation_idx WHERE reservation >= ''"
        " ORDER BY created_at, seq, uuid LIMIT 5) AS part1"
    ],
    ["SELECT data, reservation, version FROM nodes ORDER BY provision_state, seq, uuid LIMIT 5"],
    [
        f"SELECT * FROM (SELECT 0, created_at, {_PART} WHERE driver = ? AND reservation IS"
        " NULL ORDER BY created_at, seq, uuid LIMIT 5) AS part0 UNION ALL SELECT * FROM"
        f" (SELECT 1, created_at, {_PART} INDEXED BY nodes_reservation_idx WHERE driver = ?"
        " AND reservation >= '' ORDER BY created_at, seq, uuid LIMIT 5) AS part1"
    ],
]


def test_on_sqlite_the_statements_are_as_they_were(
    sqlite_fleet: SQLStore, caplog: pytest.LogCaptureFixture
) -> None:
    for (what, read, _), expected in zip(_READS, _SQLITE, strict=True):
        assert _statements(sqlite_fleet, caplog, read) == expected, what
    held = _statements(sqlite_fleet, caplog, lambda s: s.count_nodes("driver", reserved=True))
    assert held == [
        "SELECT driver, COUNT(*) FROM nodes INDEXED BY nodes_reservation_idx"
        " WHERE reservation IS NOT NULL GROUP BY driver"
    ]
