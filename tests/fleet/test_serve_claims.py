"""What a service's claim costs, and the batch reservation behind it, on every store.

A service claims on every notification and after every flow it finishes,
in one thread, while its flow threads wait for it: a claim must cost a
couple of statements whatever it takes, and decode only what it takes.
The statements are counted on the store's own connections, the decodes on
``Node.from_json``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import fresh_postgres_url
from test_fleet_work import (  # noqa: F401  (_fresh_counts: the autouse fixture)
    HW,
    RAN,
    DeferredExecutor,
    _fresh_counts,
    api_and_worker,
    make,
)

from ironic_fsm import Conductor, states
from ironic_fsm.conductor.launcher import WORKING_STATES
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node
from ironic_fsm.stores import MemoryStore, SQLStore, Store
from ironic_fsm.stores._announce import Coalescing
from ironic_fsm.stores._claim import QueuedNode, queued_work, reserve_queued


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
        return
    if request.param == "sqlite":
        with SQLStore(f"sqlite:///{tmp_path / 'claims.sqlite'}") as store:
            yield store
        return
    for url in fresh_postgres_url(request.getfixturevalue("postgres_server")):
        with SQLStore(url) as store:
            yield store


@pytest.fixture(params=["sqlite", "postgresql"])
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'claims.sqlite'}"
        return
    yield from fresh_postgres_url(request.getfixturevalue("postgres_server"))


class _Counting:
    """A driver connection that counts the statements one thread runs on it.

    Only the counting thread's: on PostgreSQL the store's announcer thread
    may still be sending the ``NOTIFY`` for the nodes just queued, and that
    round trip is not the claim's (CI once counted it on a loaded box).
    """

    def __init__(self, conn: Any, counts: list[str], thread: int) -> None:
        self._conn = conn
        self._counts = counts
        self._thread = thread

    def execute(self, sql: str, *args: Any) -> Any:
        if threading.get_ident() == self._thread:
            self._counts.append(sql)
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@contextmanager
def statements(store: SQLStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement the store runs inside the block, on any of its connections."""
    seen: list[str] = []
    thread = threading.get_ident()
    db = store._db
    for name in ("connection", "transaction"):
        original = getattr(db, name)

        @contextmanager
        def counted(*args: Any, _original: Any = original, **kwargs: Any) -> Iterator[Any]:
            with _original(*args, **kwargs) as conn:
                yield _Counting(conn, seen, thread)

        monkeypatch.setattr(db, name, counted)
    yield seen
    monkeypatch.undo()


def decodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The UUIDs of the records decoded from now on."""
    decoded: list[str] = []
    original = Node.from_json.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Node], data: Any) -> Node:
        node: Node = original(cls, data)
        decoded.append(node.uuid)
        return node

    monkeypatch.setattr(Node, "from_json", classmethod(counted))
    return decoded


def queue_manages(api: Conductor, count: int) -> list[str]:
    uuids = [api.create_node(driver=HW).uuid for _ in range(count)]
    for uuid in uuids:
        api.do_provisioning_action(uuid, "manage")
    return uuids


# -- the cost of a claim --------------------------------------------------------------------


def test_a_claim_takes_its_share_in_two_statements_and_decodes_only_that(
    sql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SQLStore(sql_url) as store:
        executor = DeferredExecutor()  # flows wait: only the claim itself is counted
        workers = [make(store, f"c{i}", executor=executor) for i in range(2)]
        for worker in workers:
            worker.register()
        uuids = queue_manages(make(store, "api", hand_off=True), 40)
        workers[0].owns(uuids[0], HW, "")  # the rings as a running service has them
        decoded = decodes(monkeypatch)
        with statements(store, monkeypatch) as seen:
            claimed = workers[0].claim_work()
        assert 0 < len(claimed) < len(uuids)  # its share, not the other's
        assert all(workers[0].owns(uuid, HW, "") for uuid in claimed)
        # One read of the queue, one UPDATE ... RETURNING: no save, no registry read, and
        # no round trip per node (it was 2 per node and 1 more per pass).
        assert len(seen) == 2, seen
        assert sorted(decoded) == sorted(claimed)  # the other's queued nodes stay undecoded
        assert {store.get(u).reservation for u in claimed} == {workers[0].holder}
        executor.run_all()
        assert {store.get(u).provision_state for u in claimed} == {states.MANAGEABLE}
        assert {store.get(u).reservation for u in uuids} == {None}


def test_a_claimed_flow_saves_nothing_in_the_claiming_thread(
    sql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SQLStore(sql_url) as store:
        executor = DeferredExecutor()
        api, worker = api_and_worker(store)
        worker._executor = executor
        [uuid] = queue_manages(api, 1)
        before = store.get(uuid)
        assert worker.claim_work() == [uuid]
        after = store.get(uuid)
        # Reserved, nothing else: the flow's own first save (in its thread) comes first.
        assert (after.version, after.reservation) == (before.version, worker.holder)
        assert worker.running() == 1
        executor.run_all()
        settled = store.get(uuid)
        assert (settled.provision_state, settled.reservation) == (states.MANAGEABLE, None)
        assert "queued_flow" not in settled.driver_internal_info
        assert worker.running() == 0


def test_a_drain_between_claim_and_flow_hands_the_node_back_as_queued(store: Store) -> None:
    executor = DeferredExecutor()
    api, worker = api_and_worker(store)
    worker._executor = executor
    [uuid] = queue_manages(api, 1)
    assert worker.claim_work() == [uuid]
    worker.drain()
    executor.run_all()
    node = store.get(uuid)
    assert (node.provision_state, node.reservation) == (states.VERIFYING, None)
    assert node.driver_internal_info["queued_flow"] == {"flow": "verify"}
    assert worker.running() == 0
    assert RAN == {}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with SQLStore(f"sqlite:///{tmp_path / 'drain.sqlite'}") as made:
        yield made


def claim_until_empty(workers: list[Conductor]) -> list[list[str]]:
    """Each worker in its own thread claims 7 at a time until it finds nothing."""
    claimed: list[list[str]] = [[] for _ in workers]
    start = threading.Barrier(len(workers))

    def claim(i: int) -> None:
        start.wait()
        while got := workers[i].claim_work(limit=7):
            claimed[i] += got

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(workers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return claimed


def test_two_services_claiming_at_once_on_postgresql_run_each_flow_once(
    postgres_server: Any,
) -> None:
    for url in fresh_postgres_url(postgres_server):
        with SQLStore(url) as one, SQLStore(url) as two:
            api = make(one, "api", hand_off=True)
            # Not registered: each owns every node, so only the reservation keeps them apart.
            workers = [make(one, "w0"), make(two, "w1")]
            uuids = [
                api.create_node(driver=HW, provision_state=states.MANAGEABLE).uuid
                for _ in range(60)
            ]
            for uuid in uuids:
                api.do_provisioning_action(uuid, "provide")
            claimed = claim_until_empty(workers)
            assert not set(claimed[0]) & set(claimed[1])
            assert sorted(claimed[0] + claimed[1]) == sorted(uuids)
            assert {one.get(u).provision_state for u in uuids} == {states.AVAILABLE}
            assert set(RAN.values()) == {1}
            assert len(RAN) == 2 * len(uuids)


# -- the store's side -------------------------------------------------------------------------


def test_reserve_queued_takes_only_free_queued_nodes_and_leaves_the_rest_as_they_were(
    any_store: Store,
) -> None:
    store = any_store
    free = Node(driver=HW, provision_state=states.VERIFYING)
    held = Node(driver=HW, provision_state=states.CLEANING)
    settled = Node(driver=HW, provision_state=states.AVAILABLE)
    for node in (free, held, settled):
        store.create(node)
    store.reserve(held.uuid, "someone-else")
    before = {n.uuid: store.get(n.uuid) for n in (free, held, settled)}
    asked = [free.uuid, held.uuid, settled.uuid, "no-such-node"]
    [got] = reserve_queued(store, asked, "me", WORKING_STATES)
    assert (got.uuid, got.reservation, got.version) == (free.uuid, "me", before[free.uuid].version)
    assert got.driver_info == before[free.uuid].driver_info  # the whole record, decoded
    assert store.get(held.uuid) == before[held.uuid]  # still someone else's
    assert store.get(settled.uuid) == before[settled.uuid]  # out of the queue: untouched
    assert reserve_queued(store, [free.uuid], "me-again", WORKING_STATES) == []
    assert reserve_queued(store, [], "me", WORKING_STATES) == []


def test_queued_work_lists_free_working_nodes_oldest_first_with_their_ring_keys(
    any_store: Store,
) -> None:
    from datetime import datetime, timedelta, timezone

    store = any_store
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    newer = Node(driver=HW, provision_state=states.DEPLOYING, provision_updated_at=now)
    older = Node(
        driver="other-hw",
        provision_state=states.CLEANING,
        provision_updated_at=now - timedelta(minutes=1),
        conductor_group="rack-2",
    )
    held = Node(driver=HW, provision_state=states.VERIFYING, provision_updated_at=now)
    stable = Node(driver=HW, provision_state=states.ACTIVE, provision_updated_at=now)
    for node in (newer, older, held, stable):
        store.create(node)
    store.reserve(held.uuid, "someone")
    assert queued_work(store, WORKING_STATES) == [
        QueuedNode(older.uuid, "other-hw", "rack-2"),
        QueuedNode(newer.uuid, HW, ""),
    ]
    assert queued_work(store, []) == []


def test_queued_work_with_a_limit_gives_only_the_oldest_of_the_queue(any_store: Store) -> None:
    """A claim pass reads the head it needs, not the whole queue, in the same order."""
    from datetime import datetime, timedelta, timezone

    store = any_store
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    ages = [3, 0, 5, 1, 4]  # minutes in their state
    nodes = [
        Node(
            driver=HW,
            provision_state=states.DEPLOYING,
            provision_updated_at=now - timedelta(minutes=age),
        )
        for age in ages
    ]
    never = Node(driver=HW, provision_state=states.CLEANING)  # no provision_updated_at: last
    for node in [*nodes, never]:
        store.create(node)
    by_age = [n.uuid for _, n in sorted(zip(ages, nodes, strict=True), key=lambda p: -p[0])]
    assert [q.uuid for q in queued_work(store, WORKING_STATES, limit=2)] == by_age[:2]
    assert [q.uuid for q in queued_work(store, WORKING_STATES, limit=9)] == [*by_age, never.uuid]
    whole = queued_work(store, WORKING_STATES)
    assert [q.uuid for q in whole] == [*by_age, never.uuid]


def test_queued_work_on_a_store_of_the_first_release_reads_its_list() -> None:
    """No scans of its own: the free working nodes of ``list()``, in its order, capped."""
    from test_store_scans import _OldStore

    store = _OldStore()
    working = [Node(driver=HW, provision_state=states.DEPLOYING) for _ in range(3)]
    for node in [*working, Node(driver=HW, provision_state=states.ACTIVE)]:
        store.create(node)
    store.reserve(working[1].uuid, "someone")
    free = [QueuedNode(n.uuid, HW, "") for n in (working[0], working[2])]
    assert queued_work(store, WORKING_STATES) == free
    assert queued_work(store, WORKING_STATES, limit=1) == free[:1]


def test_reserve_queued_refuses_a_bad_holder_and_reserves_nothing(tmp_path: Path) -> None:
    with SQLStore(f"sqlite:///{tmp_path / 'holder.sqlite'}") as store:
        node = Node(driver=HW, provision_state=states.VERIFYING)
        store.create(node)
        for bad in ("x" * 256, "nul\x00holder", 42):
            with pytest.raises(InvalidParameterValue, match="Not a reservation holder"):
                reserve_queued(store, [node.uuid], bad, WORKING_STATES)  # type: ignore[arg-type]
        assert store.get(node.uuid).reservation is None


# -- announcements ----------------------------------------------------------------------------


def test_announcements_pending_while_one_is_sent_go_out_together_and_close_flushes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sent: list[list[str]] = []
    sending = threading.Event()
    go_on = threading.Event()

    def send(batch: list[str]) -> None:
        sent.append(batch)
        if len(sent) == 1:
            sending.set()
            go_on.wait(5)
        if "bad" in batch:
            raise RuntimeError("server went away")

    announcer = Coalescing(send)
    announcer.add("a")
    assert sending.wait(5)
    for uuid in ("b", "c", "d"):  # while "a" is on the wire: the caller never waits
        announcer.add(uuid)
    go_on.set()
    announcer.add("bad")
    with caplog.at_level(logging.WARNING, logger="ironic_fsm.stores.sql"):
        announcer.close()
    announcer.add("late")  # after close: dropped, not sent by a thread left behind
    assert sent[0] == ["a"]
    assert [u for batch in sent[1:] for u in batch] == ["b", "c", "d", "bad"]
    assert len(sent) <= 3  # b, c and d in one batch at least
    assert "not announced (server went away)" in caplog.text


def test_announcements_still_pending_go_out_before_the_store_closes(
    postgres_server: Any,
) -> None:
    import psycopg

    for url in fresh_postgres_url(postgres_server):
        with psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
            conn.execute("LISTEN ironic_fsm_work")
            with SQLStore(url) as store:
                api = make(store, "api", hand_off=True)
                uuids = queue_manages(api, 40)
            # The store is closed: every announcement went out before close returned.
            heard = [n.payload for n in conn.notifies(timeout=2, stop_after=len(uuids))]
    assert sorted(heard) == sorted(uuids)
