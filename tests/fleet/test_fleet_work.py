"""The hand-off queue: verbs queued by one conductor, claimed and run by others; drain.

Several ``Conductor`` objects on one store stand for several processes: a
``hand_off=True`` one for the CLI or API, registered workers for
``ironic-fsm serve``. Every step of the test hardware counts its runs in
:data:`RAN`, across all conductors, so that "no step ran twice, none was
lost" is counted, not inferred from what the node recorded.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from conftest import fresh_postgres_url
from helpers import CLEAN_AND_SERVICE, Clock, recording_step
from pgserver import PostgresServer
from test_hash_ring import shared_store  # noqa: F401  (the fixture)

from ironic_fsm import Conductor, Config, HardwareType, states
from ironic_fsm.conductor.reservations import QUEUED_KEY
from ironic_fsm.drivers.fake import FakeDeploy, FakeManagement, fake_hardware
from ironic_fsm.exceptions import InvalidParameterValue, InvalidStateRequested
from ironic_fsm.interfaces import VendorInterface
from ironic_fsm.node import Node
from ironic_fsm.steps import clean_step, deploy_step
from ironic_fsm.stores import SQLStore, Store
from ironic_fsm.stores._claim import QueuedNode
from ironic_fsm.task import Task

HW = "counting-hardware"
#: Runs of each step, per (node, step), whichever conductor ran it.
RAN: Counter[tuple[str, str]] = Counter()
#: Called when the named step runs (e.g. to drain its conductor mid-flow).
ON_STEP: dict[str, Callable[[Task], None]] = {}


def ran(task: Task, name: str) -> None:
    RAN[(task.node.uuid, name)] += 1
    hook = ON_STEP.get(name)
    if hook is not None:
        hook(task)


class CountingManagement(FakeManagement):
    @clean_step(priority=20, requires_ramdisk=False)
    def auto_first(self, task: Task) -> None:
        ran(task, "auto_first")

    @clean_step(priority=10, requires_ramdisk=False)
    def auto_second(self, task: Task) -> None:
        ran(task, "auto_second")


class CountingVendor(VendorInterface):
    step_a = recording_step("step_a", *CLEAN_AND_SERVICE, record=ran)
    step_b = recording_step("step_b", *CLEAN_AND_SERVICE, record=ran)
    step_c = recording_step("step_c", *CLEAN_AND_SERVICE, record=ran)

    @clean_step(priority=0, requires_ramdisk=False)
    def wait_a(self, task: Task) -> str:
        ran(task, "wait_a")
        return states.CLEANWAIT


class CountingDeploy(FakeDeploy):
    @deploy_step(priority=100)
    def deploy(self, task: Task) -> str | None:
        ran(task, "deploy")
        return super().deploy(task)

    configure = recording_step("configure", deploy_step(priority=90), record=ran)

    def tear_down(self, task: Task) -> str | None:
        ran(task, "tear_down")
        return super().tear_down(task)


def counting_hardware() -> HardwareType:
    return attrs.evolve(
        fake_hardware(),
        management=CountingManagement(),
        vendor=CountingVendor(),
        deploy=CountingDeploy(),
    )


def steps(*names: str) -> list[dict[str, Any]]:
    return [{"interface": "deploy" if name == "hold" else "vendor", "step": name} for name in names]


@pytest.fixture(autouse=True)
def _fresh_counts() -> Iterator[None]:
    RAN.clear()
    ON_STEP.clear()
    yield
    ON_STEP.clear()


@pytest.fixture
def store(shared_store: Store) -> Store:  # noqa: F811  (the imported fixture, renamed)
    """The conductors' one store: memory, then a SQLite file."""
    return shared_store


def make(store: Store, host: str, clock: Clock | None = None, **kwargs: Any) -> Conductor:
    conductor = Conductor(
        store=store,
        config=Config(host=host, enabled_hardware_types=[HW]),
        clock=clock or Clock(),
        **kwargs,
    )
    conductor.register_hardware_type(HW, counting_hardware())
    return conductor


def api_and_worker(store: Store) -> tuple[Conductor, Conductor]:
    """A hand-off conductor (never registered: it runs nothing) and one registered worker."""
    clock = Clock()
    worker = make(store, "worker", clock)
    worker.register()
    return make(store, "api", clock, hand_off=True), worker


def assert_queued(store: Store, uuid: str, state: str, flow: dict[str, Any]) -> None:
    node = store.get(uuid)
    assert (node.provision_state, node.reservation) == (state, None)
    assert node.driver_internal_info[QUEUED_KEY] == flow


def counts(uuid: str) -> dict[str, int]:
    return {name: count for (node, name), count in RAN.items() if node == uuid}


# -- hand-off, then claim --------------------------------------------------------------------


def test_a_whole_lifecycle_handed_off_runs_each_step_once_in_the_worker(store: Store) -> None:
    api, worker = api_and_worker(store)
    uuid = api.create_node(driver=HW).uuid
    lifecycle = [
        ("manage", states.VERIFYING, {"flow": "verify"}, states.MANAGEABLE),
        ("provide", states.CLEANING, {"flow": "clean", "steps": None}, states.AVAILABLE),
        ("deploy", states.DEPLOYING, {"flow": "deploy"}, states.ACTIVE),
        ("deleted", states.DELETING, {"flow": "tear_down"}, states.AVAILABLE),
    ]
    for verb, working, flow, settled in lifecycle:
        returned = api.do_provisioning_action(uuid, verb)
        assert returned.provision_state == working
        assert_queued(store, uuid, working, flow)
        assert counts(uuid).get("deploy", 0) == (
            0 if verb in ("manage", "provide", "deploy") else 1
        )
        assert worker.claim_work() == [uuid]
        node = store.get(uuid)
        assert (node.provision_state, node.reservation, node.last_error) == (settled, None, None)
        assert QUEUED_KEY not in node.driver_internal_info
        assert worker.claim_work() == []
    assert counts(uuid) == {
        "auto_first": 2, "auto_second": 2, "deploy": 1, "configure": 1, "tear_down": 1,
    }  # fmt: skip


def test_a_handed_off_manual_clean_and_its_callback_continue_in_the_worker(store: Store) -> None:
    api, worker = api_and_worker(store)
    uuid = api.create_node(driver=HW, provision_state=states.MANAGEABLE).uuid
    api.do_provisioning_action(uuid, "clean", clean_steps=steps("step_a", "wait_a", "step_b"))
    assert_queued(
        store, uuid, states.CLEANING,
        {"flow": "clean", "steps": steps("step_a", "wait_a", "step_b"), "disable_ramdisk": False},
    )  # fmt: skip
    assert worker.claim_work() == [uuid]
    assert store.get(uuid).provision_state == states.CLEANWAIT
    assert counts(uuid) == {"step_a": 1, "wait_a": 1}
    returned = api.continue_node_clean(uuid)
    assert returned.provision_state == states.CLEANING  # resumed here, run there
    assert_queued(store, uuid, states.CLEANING, {"flow": "continue"})
    assert worker.claim_work() == [uuid]
    assert store.get(uuid).provision_state == states.MANAGEABLE
    assert counts(uuid) == {"step_a": 1, "wait_a": 1, "step_b": 1}


def test_a_handed_off_unhold_goes_on_after_the_hold_in_the_worker(store: Store) -> None:
    api, worker = api_and_worker(store)
    uuid = api.create_node(driver=HW, provision_state=states.MANAGEABLE).uuid
    api.do_provisioning_action(uuid, "clean", clean_steps=steps("step_a", "hold", "step_b"))
    worker.claim_work()
    assert store.get(uuid).provision_state == states.CLEANHOLD
    api.do_provisioning_action(uuid, "unhold")
    assert_queued(store, uuid, states.CLEANING, {"flow": "continue"})
    assert worker.claim_work() == [uuid]
    assert store.get(uuid).provision_state == states.MANAGEABLE
    assert counts(uuid) == {"step_a": 1, "step_b": 1}


def test_a_refused_handed_off_verb_leaves_the_record_as_it_was(store: Store) -> None:
    api, worker = api_and_worker(store)
    before = api.create_node(driver=HW)
    with pytest.raises(InvalidStateRequested):
        api.do_provisioning_action(before.uuid, "deploy")  # enroll does not deploy
    after = store.get(before.uuid)
    assert after == before
    assert worker.claim_work() == []


def test_claim_work_refuses_a_limit_that_is_not_a_positive_count(store: Store) -> None:
    _, worker = api_and_worker(store)
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(InvalidParameterValue, match="limit must be a positive integer"):
            worker.claim_work(limit=bad)  # type: ignore[arg-type]


def test_hand_off_must_be_a_bool(store: Store) -> None:
    with pytest.raises(InvalidParameterValue, match="hand_off must be True or False"):
        Conductor(store=store, hand_off="yes")  # type: ignore[arg-type]


def test_claim_work_claims_at_most_limit_and_the_rest_waits(store: Store) -> None:
    api, worker = api_and_worker(store)
    uuids = [api.create_node(driver=HW).uuid for _ in range(5)]
    for uuid in uuids:
        api.do_provisioning_action(uuid, "manage")
    first = worker.claim_work(limit=2)
    assert len(first) == 2
    rest = worker.claim_work()
    assert sorted(first + rest) == sorted(uuids)
    assert {store.get(u).provision_state for u in uuids} == {states.MANAGEABLE}


def test_a_hand_off_conductor_claims_nothing_itself(store: Store) -> None:
    api, _ = api_and_worker(store)
    uuid = api.create_node(driver=HW).uuid
    api.do_provisioning_action(uuid, "manage")
    assert api.claim_work() == []
    assert_queued(store, uuid, states.VERIFYING, {"flow": "verify"})


def test_a_node_that_left_the_queue_since_the_scan_is_released_unchanged(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    api, worker = api_and_worker(store)
    uuid = api.create_node(driver=HW).uuid
    api.do_provisioning_action(uuid, "manage")
    stale = store.get(uuid)
    worker.claim_work()
    settled = store.get(uuid)
    # Another conductor's scan read the node while it was queued: it finds it settled.
    other = make(store, "other", hand_off=False)
    queued = [QueuedNode(stale.uuid, stale.driver, stale.conductor_group)]
    monkeypatch.setattr("ironic_fsm.conductor.work.queued_work", lambda *a, **k: queued)
    assert other.claim_work() == []
    assert store.get(uuid) == settled  # same version, unreserved


def test_two_workers_racing_for_the_queue_run_each_flow_once(tmp_path: Path) -> None:
    with SQLStore(f"sqlite:///{tmp_path / 'race.sqlite'}") as store:
        api = make(store, "api", hand_off=True)
        # Not registered: each owns every node, so only the reservation keeps them apart.
        workers = [make(store, f"w{i}") for i in range(2)]
        uuids = [
            api.create_node(driver=HW, provision_state=states.MANAGEABLE).uuid for _ in range(30)
        ]
        for uuid in uuids:
            api.do_provisioning_action(uuid, "provide")
        claimed: list[list[str]] = [[], []]
        start = threading.Barrier(2)

        def claim(i: int) -> None:
            start.wait()
            claimed[i] = workers[i].claim_work()

        threads = [threading.Thread(target=claim, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not set(claimed[0]) & set(claimed[1])
        assert sorted(claimed[0] + claimed[1]) == sorted(uuids)
        assert {store.get(u).provision_state for u in uuids} == {states.AVAILABLE}
        assert set(RAN.values()) == {1}
        assert len(RAN) == 2 * len(uuids)


# -- ownership in a fleet ----------------------------------------------------------------------


def fleet(store: Store, size: int, clock: Clock) -> list[Conductor]:
    members = [make(store, f"c{i}", clock) for i in range(size)]
    for member in members:
        member.register()
    return members


def assert_split(members: list[Conductor], results: list[list[str]], uuids: list[str]) -> None:
    """Each node was acted on by exactly one member, the one that owns it."""
    acted_on = [uuid for result in results for uuid in result]
    assert sorted(acted_on) == sorted(uuids)  # all, and none twice
    for member, mine in zip(members, results, strict=True):
        assert all(member.owns(u, HW, "") for u in mine)


def test_each_worker_claims_only_the_nodes_it_owns(store: Store) -> None:
    clock = Clock()
    workers = fleet(store, 2, clock)
    api = make(store, "api", clock, hand_off=True)
    uuids = [api.create_node(driver=HW).uuid for _ in range(40)]
    for uuid in uuids:
        api.do_provisioning_action(uuid, "manage")
    first = workers[0].claim_work()
    assert first
    assert all(workers[0].owns(u, HW, "") for u in first)
    assert all(store.get(u).provision_state == states.VERIFYING for u in set(uuids) - set(first))
    second = workers[1].claim_work()
    assert sorted(first + second) == sorted(uuids)


def test_a_limited_claim_reads_the_head_of_a_long_queue_not_all_of_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each wake claims a few nodes: reading the whole queue every time was the claim's cost."""
    import ironic_fsm.conductor.work as work

    api, worker = api_and_worker(store)
    uuids = [api.create_node(driver=HW).uuid for _ in range(40)]
    for uuid in uuids:
        api.do_provisioning_action(uuid, "manage")
    read: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> list[QueuedNode]:
        rows = scan(*args, **kwargs)
        read.append(len(rows))
        return rows

    scan = work.queued_work
    monkeypatch.setattr(work, "queued_work", counted)
    assert worker.claim_work(limit=2) == uuids[:2]  # the oldest first
    assert sum(read) <= 4  # twice this lone conductor's share of the limit
    assert {store.get(u).provision_state for u in uuids[2:]} == {states.VERIFYING}


def test_a_limited_claim_looks_past_a_head_of_others_nodes(store: Store) -> None:
    """A queue that starts with another conductor's nodes still gives this one its own."""
    clock = Clock()
    workers = fleet(store, 2, clock)
    api = make(store, "api", clock, hand_off=True)
    uuids = [api.create_node(driver=HW).uuid for _ in range(40)]
    first, second = workers
    theirs = [u for u in uuids if first.owns(u, HW, "")]
    ours = [u for u in uuids if second.owns(u, HW, "")]
    assert len(theirs) >= 8
    assert ours
    for uuid in [*theirs, *ours]:  # queued in that order: the head is all the first's
        api.do_provisioning_action(uuid, "manage")
        clock.advance(1)
    assert second.claim_work(limit=1) == ours[:1]
    assert all(store.get(u).provision_state == states.VERIFYING for u in theirs)


def test_only_the_owner_takes_over_a_dead_holders_nodes(store: Store) -> None:
    clock = Clock()
    members = fleet(store, 2, clock)
    dead = "gone-host:4242:0-deadbeef"
    uuids = [
        members[0].create_node(driver=HW, provision_state=states.VERIFYING).uuid for _ in range(20)
    ]
    for uuid in uuids:
        store.reserve(uuid, dead)
    clock.advance(members[0].config.heartbeat_timeout + 1)
    for member in members:
        member.heartbeat()
    assert_split(members, [member.recover() for member in members], uuids)
    assert {store.get(u).provision_state for u in uuids} == {states.MANAGEABLE}
    assert {store.get(u).reservation for u in uuids} == {None}


def test_a_node_claimed_by_a_conductor_that_died_before_starting_runs_its_queued_flow(
    store: Store,
) -> None:
    """Claimed (reserved, marker still stored) and then the claimer died: nothing ran yet."""
    clock = Clock()
    api = make(store, "api", clock, hand_off=True)
    survivor = make(store, "survivor", clock)
    survivor.register()
    uuid = api.create_node(driver=HW, provision_state=states.MANAGEABLE).uuid
    api.do_provisioning_action(uuid, "provide")
    assert_queued(store, uuid, states.CLEANING, {"flow": "clean", "steps": None})
    store.reserve(uuid, "gone-host:4242:0-deadbeef")  # the claim, as the dead one made it
    clock.advance(survivor.config.heartbeat_timeout + 1)
    survivor.heartbeat()
    assert survivor.recover() == [uuid]
    node = store.get(uuid)
    assert (node.provision_state, node.reservation, node.last_error) == (
        states.AVAILABLE, None, None,
    )  # fmt: skip
    assert QUEUED_KEY not in node.driver_internal_info
    assert counts(uuid) == {"auto_first": 1, "auto_second": 1}


def test_check_timeouts_acts_only_on_owned_nodes(store: Store) -> None:
    clock = Clock()
    members = fleet(store, 2, clock)
    uuids = [
        members[0]
        .create_node(driver=HW, provision_state=states.INSPECTWAIT, provision_updated_at=clock())
        .uuid
        for _ in range(20)
    ]
    clock.advance(members[0].config.inspect_wait_timeout + 1)
    for member in members:
        member.heartbeat()
    assert_split(members, [member.check_timeouts() for member in members], uuids)
    assert {store.get(u).provision_state for u in uuids} == {states.INSPECTFAIL}


# -- drain -----------------------------------------------------------------------------------


def test_drain_hands_back_at_a_step_boundary_and_another_worker_finishes(store: Store) -> None:
    clock = Clock()
    first, second = fleet(store, 2, clock)
    uuid = first.create_node(driver=HW, provision_state=states.MANAGEABLE).uuid
    ON_STEP["step_b"] = lambda task: first.drain()  # SIGTERM arrives during step_b
    returned = first.do_provisioning_action(
        uuid, "clean", clean_steps=steps("step_a", "step_b", "step_c")
    )
    assert returned.provision_state == states.CLEANING
    assert_queued(store, uuid, states.CLEANING, {"flow": "resume"})
    node = store.get(uuid)
    assert node.driver_internal_info["clean_step_index"] == 2  # step_b recorded done
    assert (node.clean_step["interface"], node.clean_step["step"]) == ("vendor", "step_c")
    assert counts(uuid) == {"step_a": 1, "step_b": 1}
    assert (first.draining, first.running()) == (True, 0)
    assert (first.claim_work(), first.recover(), first.check_timeouts()) == ([], [], [])
    first.unregister()  # a drained service goes offline: its share moves
    assert second.claim_work() == [uuid]
    assert store.get(uuid).provision_state == states.MANAGEABLE
    assert counts(uuid) == {"step_a": 1, "step_b": 1, "step_c": 1}


class DeferredExecutor:
    """Holds submitted work until told to run it: a busy thread pool, made explicit."""

    def __init__(self) -> None:
        self.waiting: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any) -> None:
        self.waiting.append((fn, args))

    def run_all(self) -> None:
        while self.waiting:
            fn, args = self.waiting.pop(0)
            fn(*args)


def test_a_flow_drained_before_it_started_is_queued_whole(store: Store) -> None:
    clock = Clock()
    executor = DeferredExecutor()
    first = make(store, "c0", clock, executor=executor)
    second = make(store, "c1", clock)
    for member in (first, second):
        member.register()
    uuid = first.create_node(driver=HW, provision_state=states.MANAGEABLE).uuid
    first.do_provisioning_action(uuid, "provide")
    assert store.get(uuid).reservation == first.holder
    assert first.running() == 1  # submitted, not started
    first.drain()
    executor.run_all()
    assert first.running() == 0
    assert_queued(store, uuid, states.CLEANING, {"flow": "clean", "steps": None})
    assert counts(uuid) == {}
    first.unregister()
    assert second.claim_work() == [uuid]
    assert store.get(uuid).provision_state == states.AVAILABLE
    assert counts(uuid) == {"auto_first": 1, "auto_second": 1}


def test_running_counts_flows_until_their_release(store: Store) -> None:
    executor = DeferredExecutor()
    worker = make(store, "c0", executor=executor)
    uuids = [worker.create_node(driver=HW).uuid for _ in range(3)]
    for uuid in uuids:
        worker.do_provisioning_action(uuid, "manage")
    assert worker.running() == 3
    executor.run_all()
    assert worker.running() == 0
    assert {store.get(u).provision_state for u in uuids} == {states.MANAGEABLE}


# -- cost ----------------------------------------------------------------------------------


def test_claim_work_with_nothing_queued_decodes_no_node(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = make(store, "c0")
    worker.register()
    for _ in range(1000):
        store.create(Node(driver=HW, provision_state=states.AVAILABLE))
    reads: Counter[str] = Counter()
    for method in ("get", "list"):
        original = getattr(store, method)

        def counted(*args: Any, _original: Any = original, _name: str = method, **kw: Any) -> Any:
            reads[_name] += 1
            return _original(*args, **kw)

        monkeypatch.setattr(store, method, counted)
    times = []
    for _ in range(5):
        started = time.perf_counter()
        assert worker.claim_work() == []
        times.append(time.perf_counter() - started)
    assert reads == Counter()
    assert statistics.median(times) < 0.02, times  # an index lookup, not 1,000 decodes


# -- PostgreSQL: the announcement --------------------------------------------------------------


def test_queued_work_is_announced_on_postgresql(postgres_server: PostgresServer) -> None:
    import psycopg

    for url in fresh_postgres_url(postgres_server):
        with SQLStore(url) as store, psycopg.connect(postgres_server.dsn, autocommit=True) as conn:
            conn.execute("LISTEN ironic_fsm_work")
            api, worker = api_and_worker(store)
            uuid = api.create_node(driver=HW, provision_state=states.MANAGEABLE).uuid
            api.do_provisioning_action(uuid, "clean", clean_steps=steps("step_a", "step_b"))
            heard = [n for n in conn.notifies(timeout=5, stop_after=1)]
            assert [(n.channel, n.payload) for n in heard] == [("ironic_fsm_work", uuid)]
            assert store.get(uuid).reservation is None  # announced after the release
            # A drain's hand-back is announced too.
            ON_STEP["step_a"] = lambda task, draining=worker: draining.drain()
            assert worker.claim_work() == [uuid]
            heard = [n for n in conn.notifies(timeout=5, stop_after=1)]
            assert [n.payload for n in heard] == [uuid]
            assert_queued(store, uuid, states.CLEANING, {"flow": "resume"})
