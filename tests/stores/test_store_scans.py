"""Paging, sorting, filters pushed down, and the periodic scans' candidate queries.

On every store (MemoryStore, a SQLite file, the real PostgreSQL server): a
walk by marker visits a fleet exactly once, in order, for every sort key in
both directions; each candidate query returns exactly the due nodes; and on
a 20,000-node SQLite fleet the scans decode nothing when nothing is due and
a page reads only its rows, through indexes.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import DecodeCounter, expected_order

from ironic_fsm import states
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node
from ironic_fsm.stores import MemoryStore, SQLStore, Store, sql
from ironic_fsm.stores import base as store_base
from ironic_fsm.stores.base import SORT_KEYS, Reserved, ScanningStore

UTC = timezone.utc
T0 = datetime(2026, 1, 1, tzinfo=UTC)
PLUS2 = timezone(timedelta(hours=2))
STATES = ["available", "active", "clean wait", "deploy wait", "manageable"]


def build_fleet(store: Store, count: int = 37) -> list[Node]:
    """Nodes with ties, unset values and mixed time zones in every sort key, in creation order."""
    rng = random.Random(7)
    nodes = []
    for i in range(count):
        updated = None if i % 5 == 0 else T0 + timedelta(minutes=rng.randrange(6))
        if updated is not None and i % 3 == 0:
            updated = updated.astimezone(PLUS2)  # same instant, another offset
        node = Node(
            name=None if i % 4 == 0 else f"node-{rng.randrange(1000):03d}-{i}",
            driver=rng.choice(["ipmi", "redfish", "fake-hardware"]),
            provision_state=rng.choice(STATES),
            maintenance=i % 6 == 0,
            resource_class=rng.choice([None, "gpu", "cpu"]),
            created_at=T0 - timedelta(hours=rng.randrange(4)),  # many ties
            updated_at=updated,
            provision_updated_at=None if i % 7 == 0 else T0 - timedelta(hours=rng.randrange(5)),
        )
        store.create(node)
        nodes.append(node)
    return nodes


def walk(store: Store, limit: int, **kwargs: Any) -> list[str]:
    """Every page after the previous page's last node, until an empty or short page."""
    seen: list[str] = []
    marker = None
    while True:
        page = store.list(limit=limit, marker=marker, **kwargs)  # type: ignore[call-arg]
        assert len(page) <= limit
        seen += [n.uuid for n in page]
        if len(page) < limit:
            return seen
        marker = page[-1].uuid


FILTERS: list[dict[str, Any]] = [
    {},
    {"driver": "ipmi"},
    {"provision_state": ["active", "clean wait"]},
    {"maintenance": False, "resource_class": None},
]


@pytest.mark.parametrize("sort_dir", ["asc", "desc"])
@pytest.mark.parametrize("sort_key", SORT_KEYS)
def test_a_walk_by_marker_visits_every_node_once_in_order(
    store: Store, sort_key: str, sort_dir: str
) -> None:
    nodes = build_fleet(store)
    for filters in FILTERS:
        chosen = [
            n for n in nodes if store_base.matches(n, store_base.normalize_filters(filters) or {})
        ]
        expected = expected_order(chosen, sort_key, sort_dir)
        assert expected, filters
        whole = store.list(sort_key=sort_key, sort_dir=sort_dir, **filters)  # type: ignore[call-arg]
        assert [n.uuid for n in whole] == expected, filters
        for limit in (1, 4, 10, len(expected)):
            assert walk(store, limit, sort_key=sort_key, sort_dir=sort_dir, **filters) == expected


def test_pages_are_whole_nodes_and_the_marker_need_not_match_the_filters(store: Store) -> None:
    nodes = build_fleet(store, 12)
    by_uuid = {n.uuid: n for n in nodes}
    page = store.list(limit=5, sort_key="uuid")  # type: ignore[call-arg]
    assert all(n == by_uuid[n.uuid] for n in page)
    outsider = next(n for n in nodes if n.driver != "ipmi")
    ipmi = [n.uuid for n in nodes if n.driver == "ipmi"]
    after = store.list(marker=outsider.uuid, sort_key="uuid", driver="ipmi")  # type: ignore[call-arg]
    assert [n.uuid for n in after] == sorted(u for u in ipmi if u > outsider.uuid)
    assert store.list(limit=0) == []  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"marker": "5a7e0f5c-0000-4000-8000-000000000000"}, "marker"),
        ({"marker": 5}, "marker"),
        ({"sort_key": "extra"}, "Cannot sort nodes on 'extra'"),
        ({"sort_key": "maintenance"}, "Cannot sort nodes on 'maintenance'"),
        ({"sort_dir": "up"}, "sort_dir"),
        ({"limit": -1}, "limit"),
        ({"limit": "10"}, "limit"),
        ({"limit": True}, "limit"),
        ({"extra": {}}, "Cannot filter nodes on extra"),
        ({"last_error": None}, "Cannot filter nodes on last_error"),
        ({"colour": "red"}, "unknown field"),
    ],
)
def test_bad_paging_and_unindexed_filters_are_refused(
    store: Store, kwargs: dict[str, Any], match: str
) -> None:
    build_fleet(store, 3)
    with pytest.raises(InvalidParameterValue, match=match):
        store.list(**kwargs)


def test_a_deleted_marker_is_refused(store: Store) -> None:
    nodes = build_fleet(store, 4)
    store.delete(nodes[1].uuid)
    with pytest.raises(InvalidParameterValue, match=nodes[1].uuid):
        store.list(marker=nodes[1].uuid)  # type: ignore[call-arg]


def test_every_indexed_filter_is_pushed_down(store: Store) -> None:
    a = Node(name="a", resource_class="gpu", fault="power failure", power_state="power on")
    b = Node(name="b", protected=True, target_provision_state="active", driver="ipmi")
    c = Node(provision_state="deploy wait", retired=True, maintenance=True)
    for node in (a, b, c):
        store.create(node)
    store.reserve(c.uuid, "conductor-1")

    def uuids(**filters: Any) -> list[str]:
        return [n.uuid for n in store.list(**filters)]

    assert uuids(fault="power failure") == [a.uuid]
    assert uuids(fault=None) == [b.uuid, c.uuid]
    assert uuids(protected=True) == [b.uuid]
    assert uuids(power_state="power on") == [a.uuid]
    assert uuids(target_provision_state="active") == [b.uuid]
    assert uuids(reservation="conductor-1") == [c.uuid]
    assert uuids(reserved=True) == [c.uuid]  # Ironic's filter: held by anyone
    assert uuids(reserved=False) == [a.uuid, b.uuid]
    assert uuids(reserved=True, reservation="conductor-1") == [c.uuid]
    assert uuids(reserved=True, reservation=None) == []
    assert uuids(reserved=False, reservation="conductor-1") == []
    assert uuids(reserved="yes") == []
    assert uuids(provision_state=("deploy wait", "enroll"), retired=True) == [c.uuid]
    assert uuids(provision_state=[]) == []
    assert uuids(uuid=[a.uuid, c.uuid]) == [a.uuid, c.uuid]
    assert uuids(name={"a", "b"}, driver="ipmi") == [b.uuid]
    assert uuids(maintenance=1) == []  # not a bool: matches nothing, as in every store
    assert uuids(version=1) == [a.uuid, b.uuid, c.uuid]


def test_create_many_creates_all_or_none(store: Store) -> None:
    create_many = store.create_many  # type: ignore[attr-defined]
    first = [Node(name=f"bulk-{i}", created_at=T0) for i in range(5)]
    create_many(first)
    assert [n.version for n in first] == [1] * 5
    assert [n.uuid for n in store.list()] == [n.uuid for n in first]  # ties: creation order
    assert store.get("bulk-3") == first[3]
    before = [n.to_json() for n in store.list()]
    refused: list[list[Node]] = [
        [Node(name="new-1"), Node(uuid=first[0].uuid, name="new-2")],  # a UUID in use
        [Node(name="new-1"), Node(name="bulk-2")],  # a name in use
        [Node(name="twin"), Node(name="twin")],  # a name twice in the batch
    ]
    for batch in refused:
        with pytest.raises(InvalidParameterValue, match=r"already exists|cannot be stored"):
            create_many(batch)
        assert [n.to_json() for n in store.list()] == before
    create_many([])
    assert [n.to_json() for n in store.list()] == before


# -- candidate queries ---------------------------------------------------------------------------


def test_reserved_lists_exactly_the_reserved_nodes(store: Store) -> None:
    nodes = build_fleet(store, 8)
    assert isinstance(store, ScanningStore)
    assert store.reserved() == []
    store.reserve(nodes[5].uuid, "host-a:1:x")
    store.reserve(nodes[2].uuid, "host-b:2:y")
    assert store.reserved() == [
        Reserved(nodes[2].uuid, "host-b:2:y", nodes[2].updated_at),
        Reserved(nodes[5].uuid, "host-a:1:x", nodes[5].updated_at),
    ]
    store.release(nodes[2].uuid, "host-b:2:y")
    assert [r.uuid for r in store.reserved()] == [nodes[5].uuid]


def test_in_states_returns_the_old_enough_candidates_oldest_first(store: Store) -> None:
    assert isinstance(store, ScanningStore)
    due = [
        Node(provision_state="clean wait", provision_updated_at=T0 - timedelta(hours=2)),
        Node(provision_state="deploy wait", provision_updated_at=T0 - timedelta(hours=3)),
    ]
    not_due = [
        Node(provision_state="clean wait", provision_updated_at=T0),  # exactly the cut-off
        Node(provision_state="clean wait"),  # no time recorded: never timed out
        Node(provision_state="active", provision_updated_at=T0 - timedelta(days=9)),
    ]
    skipped = [
        Node(
            provision_state="deploy wait",
            provision_updated_at=T0 - timedelta(hours=5),
            maintenance=True,
        ),
        Node(provision_state="clean wait", provision_updated_at=T0 - timedelta(hours=4)),
    ]
    for node in (*due, *not_due, *skipped):
        store.create(node)
    store.reserve(skipped[1].uuid, "busy")
    waits = ["clean wait", "deploy wait"]
    found = store.in_states(waits, updated_before=T0, reservation=None, maintenance=False)
    assert [n.uuid for n in found] == [due[1].uuid, due[0].uuid]
    assert found[0] == store.get(due[1].uuid)
    everything = store.in_states(waits, updated_before=T0)
    assert [n.uuid for n in everything] == [
        skipped[0].uuid, skipped[1].uuid, due[1].uuid, due[0].uuid
    ]  # fmt: skip
    assert [n.uuid for n in store.in_states(waits, updated_before=T0, limit=1)] == [skipped[0].uuid]
    # Without a cut-off: every node in the states (unset times last), for power sync.
    assert {n.uuid for n in store.in_states(["clean wait"])} == {
        due[0].uuid, not_due[0].uuid, not_due[1].uuid, skipped[1].uuid
    }  # fmt: skip
    assert store.in_states([], updated_before=T0) == []
    with pytest.raises(InvalidParameterValue, match="states"):
        store.in_states("clean wait")
    with pytest.raises(InvalidParameterValue, match="Cannot filter nodes on extra"):
        store.in_states(waits, extra={})
    for bad in (T0.replace(tzinfo=None), "2026-01-01"):
        with pytest.raises(InvalidParameterValue, match="timezone-aware"):
            store.in_states(waits, updated_before=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidParameterValue, match="timezone-aware"):
            store.waking(bad)  # type: ignore[arg-type]


def test_waking_returns_the_wait_steps_whose_time_is_up(store: Store) -> None:
    assert isinstance(store, ScanningStore)
    soon = Node(
        provision_state="clean wait",
        driver_internal_info={"clean_wait_until": (T0 + timedelta(seconds=30)).isoformat()},
    )
    due = Node(
        provision_state="service wait",
        driver_internal_info={
            "service_wait_until": (T0 - timedelta(seconds=1)).astimezone(PLUS2).isoformat()
        },
    )
    naive = Node(
        provision_state="deploy wait",
        driver_internal_info={"deploy_wait_until": "2025-12-31T23:00:00"},  # naive is UTC
    )
    # An unreadable deadline is due at once (as the conductor reads it), never stuck.
    junk = Node(driver_internal_info={"clean_wait_until": "soon", "x_wait_until": 5})
    for node in (soon, due, naive, junk, Node()):
        store.create(node)
    assert [n.uuid for n in store.waking(T0)] == [junk.uuid, naive.uuid, due.uuid]
    assert [n.uuid for n in store.waking(T0, limit=1)] == [junk.uuid]
    assert [n.uuid for n in store.waking(T0, provision_state="service wait")] == [due.uuid]
    later = T0 + timedelta(seconds=30)
    assert [n.uuid for n in store.waking(later)] == [junk.uuid, naive.uuid, due.uuid, soon.uuid]
    # The step finished: its time is cleared, and with it the candidacy.
    current = store.get(soon.uuid)
    current.driver_internal_info.pop("clean_wait_until")
    store.save(current)
    assert [n.uuid for n in store.waking(later)] == [junk.uuid, naive.uuid, due.uuid]


class _OldStore:
    """A store written for the first release: nine methods, ``list(**filters)`` only."""

    def __init__(self) -> None:
        self._inner = MemoryStore()
        self._order: list[str] = []  # the first release's list order: creation
        self.get, self.save = self._inner.get, self._inner.save
        self.delete, self.reserve = self._inner.delete, self._inner.reserve
        self.release, self.heartbeat = self._inner.release, self._inner.heartbeat
        self.holders = self._inner.holders

    def create(self, node: Node) -> None:
        self._inner.create(node)
        self._order.append(node.uuid)

    def list(self, **filters: Any) -> list[Node]:
        nodes = self._inner.list(**filters)
        return sorted(nodes, key=lambda n: self._order.index(n.uuid))


def test_callers_fall_back_on_list_for_stores_of_the_first_release() -> None:
    old, new = _OldStore(), MemoryStore()
    assert isinstance(old, Store)
    assert not isinstance(old, ScanningStore)
    rng = random.Random(3)
    for i in range(15):
        fields: dict[str, Any] = {
            "name": f"n{i}",
            "provision_state": rng.choice(STATES),
            "created_at": T0 - timedelta(hours=rng.randrange(3)),
            "provision_updated_at": T0 - timedelta(hours=rng.randrange(3)),
            "driver_internal_info": {"clean_wait_until": (T0 - timedelta(seconds=i)).isoformat()}
            if i % 4 == 0
            else {},
        }
        old.create(Node(**fields))
        new.create(Node(**{**fields, "uuid": old.get(f"n{i}").uuid}))
    old.reserve("n3", "h")
    new.reserve("n3", "h")
    for sort_key in SORT_KEYS:
        for sort_dir in ("asc", "desc"):
            got = [
                n.uuid
                for n in store_base.list_page(old, limit=4, sort_key=sort_key, sort_dir=sort_dir)
            ]
            want = [
                n.uuid
                for n in store_base.list_page(new, limit=4, sort_key=sort_key, sort_dir=sort_dir)
            ]
            assert got == want
            marker = want[-1]
            got = store_base.list_page(
                old, marker=marker, sort_key=sort_key, sort_dir=sort_dir, driver="fake-hardware"
            )
            want_nodes = new.list(
                marker=marker, sort_key=sort_key, sort_dir=sort_dir, driver="fake-hardware"
            )
            assert [n.uuid for n in got] == [n.uuid for n in want_nodes]
    with pytest.raises(InvalidParameterValue, match="marker"):
        store_base.list_page(old, marker="00000000-0000-4000-8000-000000000000")
    assert store_base.reserved(old) == new.reserved()
    waits = ["clean wait", "deploy wait", "available"]
    assert store_base.in_states(old, waits, updated_before=T0, reservation=None) == new.in_states(
        waits, updated_before=T0, reservation=None
    )
    assert store_base.waking(old, T0 - timedelta(seconds=3)) == new.waking(
        T0 - timedelta(seconds=3)
    )


# -- a fleet of 20,000 on SQLite: scans decode nothing when nothing is due ------------------------


FLEET = 20_000


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SQLStore, list[str]]]:
    path: Path = tmp_path_factory.mktemp("fleet") / "fleet.sqlite"
    store = SQLStore(f"sqlite:///{path}")
    nodes = [
        Node(
            name=f"n{i:05d}",
            driver_info={"ipmi_address": f"10.0.{i // 250}.{i % 250}", "ipmi_password": "pw"},
            properties={"cpus": 64, "memory_mb": 262144},
            provision_state=states.ACTIVE if i % 2 else states.AVAILABLE,
            power_state="power on",
            created_at=T0 + timedelta(seconds=i),
            updated_at=T0 + timedelta(seconds=i),
            provision_updated_at=T0 + timedelta(seconds=i),
        )
        for i in range(FLEET)
    ]
    store.create_many(nodes)
    try:
        yield store, [n.uuid for n in nodes]
    finally:
        store.close()


def test_scans_of_a_large_fleet_decode_nothing_when_nothing_is_due(
    fleet: tuple[SQLStore, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = fleet
    decodes = DecodeCounter(monkeypatch)
    now = T0 + timedelta(days=1)
    assert store.reserved() == []
    waits = sorted(states.WAIT_STATES)
    assert store.in_states(waits, updated_before=now, reservation=None, maintenance=False) == []
    assert store.waking(now) == []
    assert decodes.count == 0
    # The whole listing does decode every node: the counter sees decoding when it happens.
    assert len(store.list(provision_state=states.ACTIVE)) == FLEET // 2
    assert decodes.count == FLEET // 2


def _parts_of(plan: list[str]) -> list[list[str]]:
    """A statement's plan by part: itself, or each leg of its ``UNION ALL`` (the lines of
    one subquery, without the compound's own lines around them)."""
    if plan[0] != "COMPOUND QUERY":
        return [plan]
    parts: list[list[str]] = []
    for line in plan[1:]:
        if line.startswith("CO-ROUTINE part"):
            parts.append([])
        elif not line.startswith(("LEFT-MOST SUBQUERY", "UNION ALL", "SCAN part")):
            parts[-1].append(line)
    assert parts, plan
    return parts


def test_a_page_of_a_large_fleet_reads_only_its_rows_through_indexes(
    fleet: tuple[SQLStore, list[str]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, uuids = fleet
    decodes = DecodeCounter(monkeypatch)
    middle = uuids[FLEET // 2]
    page = store.list(limit=1000, marker=middle)
    assert [n.uuid for n in page] == uuids[FLEET // 2 + 1 : FLEET // 2 + 1001]
    assert decodes.count == 1000
    # Every statement a page runs is an index search: no table scan, no sort.
    path = store.url[len("sqlite:///") :]
    logged = SQLStore(f"sqlite:///{path}", echo=True)
    try:
        for sort_key in SORT_KEYS:
            for sort_dir in ("asc", "desc"):
                caplog.clear()
                with caplog.at_level(logging.DEBUG, logger="ironic_fsm.stores.sql"):
                    logged.list(limit=1000, marker=middle, sort_key=sort_key, sort_dir=sort_dir)
                statements = [r.getMessage().partition(": ")[2] for r in caplog.records]
                assert statements, sort_key
                with logged.connection() as conn:
                    for sql_text in statements:
                        blanks = [None] * sql_text.count("?")
                        plan = [
                            row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql_text, blanks)
                        ]
                        # Per part (a page of several ranges or parts is one UNION ALL):
                        # one index search, and a sort only of what it found when that is
                        # few rows: the held nodes (the timestamps' sort indexes leave them
                        # out; they are the flows in progress, not the fleet), or each run
                        # of one name after the unique index on names (one row a run).
                        for search, *sorts in _parts_of(plan):
                            # The unnamed nodes' partial index holds only them: walked in
                            # order, up to the page's size.
                            unnamed = search == "SCAN nodes USING INDEX nodes_unnamed_idx"
                            assert search.startswith("SEARCH") or unnamed, (sort_key, plan)
                            held = "USING INDEX nodes_reservation_idx" in search
                            allowed = (
                                [["USE TEMP B-TREE FOR ORDER BY"]] if held
                                else [["USE TEMP B-TREE FOR RIGHT PART OF ORDER BY"]]
                                if sort_key == "name" else []
                            )  # fmt: skip
                            assert sorts in [[], *allowed], (sort_key, plan)
                        assert len(statements) == 1, statements  # one snapshot
        # And so is every statement of the candidate scans.
        now = T0 + timedelta(days=1)
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="ironic_fsm.stores.sql"):
            logged.reserved()
            logged.in_states(
                sorted(states.WAIT_STATES), updated_before=now, reservation=None, maintenance=False
            )
            logged.waking(now, reservation=None)
        statements = [r.getMessage().partition(": ")[2] for r in caplog.records]
        assert len(statements) == 3
        indexes = ["nodes_reservation_idx", "nodes_state_age_idx", "nodes_wait_until_idx"]
        with logged.connection() as conn:
            for sql_text, index in zip(statements, indexes, strict=True):
                blanks = [None] * sql_text.count("?")
                plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql_text, blanks)]
                # The index that finds the candidates (not "reservation IS NULL": every free node).
                assert all(
                    step.startswith(f"SEARCH nodes USING INDEX {index} (") for step in plan
                ), (sql_text, plan)
    finally:
        logged.close()


def test_a_page_costs_the_same_anywhere_in_a_large_fleet(
    fleet: tuple[SQLStore, list[str]],
) -> None:
    store, uuids = fleet

    def best(marker: str | None) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            store.list(limit=100, marker=marker, sort_key="updated_at", sort_dir="desc")
            times.append(time.perf_counter() - start)
        return min(times)

    first, deep = best(None), best(uuids[200])  # desc: the marker is near the far end
    assert deep < first * 3 + 0.005


def test_columns_always_agree_with_the_record_across_stores_and_saves(sql_url: str) -> None:
    # A save writes only the columns that changed since this store's last write of that
    # version; another store's saves, reservations and deletes must never leave a stale one.
    first, second = SQLStore(sql_url), SQLStore(sql_url)
    rng = random.Random(11)
    try:
        nodes = [Node(name=f"c{i}", provision_state="enroll") for i in range(6)]
        for node in nodes:
            first.create(node)
        for step in range(120):
            store = first if rng.random() < 0.5 else second
            uuid = rng.choice(nodes).uuid
            node = store.get(uuid)
            if rng.random() < 0.2:
                taken = store.reserve(uuid, f"h{step}")
                store.release(uuid, taken.reservation or "")
                continue
            node.provision_state = rng.choice(STATES)
            node.provision_updated_at = T0 + timedelta(seconds=step)
            node.updated_at = T0 + timedelta(seconds=step) if rng.random() < 0.8 else None
            node.maintenance = rng.random() < 0.3
            node.fault = rng.choice([None, "power failure"])
            node.name = rng.choice([None, f"c-{step}", node.name])
            if rng.random() < 0.3:
                node.driver_internal_info["clean_wait_until"] = (
                    T0 + timedelta(seconds=step)
                ).isoformat()
            else:
                node.driver_internal_info.pop("clean_wait_until", None)
            store.save(node)
        with first.connection() as conn:
            columns = ", ".join(sql._COLUMNS)
            rows = conn.execute(f"SELECT data, {columns}, created_at FROM nodes").fetchall()
        for data, *values in rows:
            expected = first._row(Node.from_json(data))[1]
            assert tuple(values[:-1]) == expected[:-1]  # created_at: stored "now" when unset
    finally:
        first.close()
        second.close()


class _OldStoreWithScans(store_base.ListScans, _OldStore):
    """A first-release store that inherits the scans, keeping its ``list(**filters)``."""


def test_a_store_inheriting_list_scans_is_scanned_and_paged_through_list() -> None:
    own, reference = _OldStoreWithScans(), MemoryStore()
    assert isinstance(own, ScanningStore)
    for i in range(8):
        fields: dict[str, Any] = {
            "name": f"s{i}",
            "provision_state": "deploy wait" if i % 2 else "active",
            "provision_updated_at": T0 - timedelta(minutes=i),
            "driver_internal_info": {"deploy_wait_until": T0.isoformat()} if i == 3 else {},
        }
        own.create(Node(**fields))
        reference.create(Node(**{**fields, "uuid": own.get(f"s{i}").uuid}))
    own.reserve("s5", "h")
    reference.reserve("s5", "h")
    assert store_base.reserved(own) == reference.reserved()
    cut = T0 - timedelta(minutes=2)
    assert store_base.in_states(own, ["deploy wait"], updated_before=cut) == reference.in_states(
        ["deploy wait"], updated_before=cut
    )
    assert store_base.waking(own, T0) == reference.waking(T0)
    page = store_base.list_page(own, limit=3, sort_key="name", sort_dir="desc")
    assert [n.name for n in page] == ["s7", "s6", "s5"]
