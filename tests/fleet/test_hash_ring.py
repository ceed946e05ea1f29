"""Ownership: the consistent-hash rings, and ``Conductor.owns`` over the live registry.

Several ``Conductor`` objects on one store stand for several conductor
processes (each its own ``Config.host`` and holder token); one clock moves
them all, so that a conductor that stops heartbeating is seen as dead.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Clock

from ironic_fsm import Conductor, Config, HardwareType
from ironic_fsm.conductor.ring import HashRings, Member
from ironic_fsm.exceptions import DriverNotFound
from ironic_fsm.node import Node
from ironic_fsm.stores import MemoryStore, SQLStore, Store

HW = "ring-hardware"
OTHER_HW = "other-hardware"
UUIDS = [str(uuid.UUID(int=i * 7919 + 1, version=4)) for i in range(6000)]


def members(count: int, group: str = "", types: tuple[str, ...] = (HW,)) -> list[Member]:
    return [(f"host{i}:1{i}:0-abcd{i:04d}", group, types) for i in range(count)]


def owners(rings: HashRings, hardware_type: str = HW, group: str = "") -> dict[str, str | None]:
    return {u: rings.owner(u, hardware_type, group) for u in UUIDS}


# -- the rings alone -----------------------------------------------------------------------


def test_each_node_has_one_owner_and_shares_are_even() -> None:
    fleet = members(10)
    split = Counter(owners(HashRings(fleet)).values())
    assert set(split) == {holder for holder, _, _ in fleet}
    fair = len(UUIDS) / len(fleet)
    assert all(0.6 * fair < share < 1.5 * fair for share in split.values()), split


def test_the_split_is_the_same_in_every_process() -> None:
    # Built again from the members in another order: md5, not Python's salted hash().
    fleet = members(7)
    assert owners(HashRings(fleet)) == owners(HashRings(list(reversed(fleet))))


def test_a_dead_conductor_gives_up_only_its_own_share() -> None:
    fleet = members(10)
    before = owners(HashRings(fleet))
    gone = fleet[3][0]
    after = owners(HashRings(fleet[:3] + fleet[4:]))
    moved = [u for u in UUIDS if before[u] != after[u]]
    assert all(before[u] == gone for u in moved)
    assert gone not in after.values()
    assert 0.05 < len(moved) / len(UUIDS) < 0.15  # ~1/10


def test_a_joining_conductor_takes_about_one_share_from_the_others() -> None:
    fleet = members(10)
    before = owners(HashRings(fleet[:9]))
    after = owners(HashRings(fleet))
    moved = [u for u in UUIDS if before[u] != after[u]]
    assert all(after[u] == fleet[9][0] for u in moved)
    assert 0.05 < len(moved) / len(UUIDS) < 0.15


def test_rings_are_per_group_and_hardware_type() -> None:
    fleet = members(2, group="rack1") + members(1, group="", types=(HW, OTHER_HW))
    rings = HashRings(fleet)
    in_rack = set(owners(rings, HW, "rack1").values())
    assert in_rack == {fleet[0][0], fleet[1][0]}
    assert set(owners(rings, OTHER_HW, "").values()) == {fleet[2][0]}
    assert rings.owner(UUIDS[0], OTHER_HW, "rack1") is None  # nobody serves that pair
    assert rings.owner(UUIDS[0], "unknown-type", "") is None


# -- Conductor.owns over a registry ----------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        yield MemoryStore()
        return
    store = SQLStore(f"sqlite:///{tmp_path / 'fleet.sqlite'}")
    try:
        yield store
    finally:
        store.close()


def conductor(
    store: Store, clock: Clock, host: str, group: str = "", types: tuple[str, ...] = (HW,)
) -> Conductor:
    made = Conductor(
        store=store,
        config=Config(host=host, conductor_group=group, enabled_hardware_types=list(types)),
        clock=clock,
    )
    for name in types:
        made.register_hardware_type(name, HardwareType())
    return made


def owned(fleet: list[Conductor], uuids: list[str], group: str = "") -> dict[str, list[str]]:
    """Per node, the hosts of the conductors that say they own it."""
    for member in fleet:
        member.refresh_ring()
    return {u: [c.config.host for c in fleet if c.owns(u, HW, group)] for u in uuids}


def test_registered_conductors_split_the_nodes_exactly(shared_store: Store) -> None:
    clock = Clock()
    fleet = [conductor(shared_store, clock, f"c{i}") for i in range(3)]
    for member in fleet:
        member.register()
    split = owned(fleet, UUIDS[:600])
    assert all(len(hosts) == 1 for hosts in split.values())
    shares = Counter(hosts[0] for hosts in split.values())
    assert set(shares) == {"c0", "c1", "c2"}
    assert min(shares.values()) > 100


def test_a_dead_conductors_share_moves_to_the_living_and_nothing_else_moves(
    shared_store: Store,
) -> None:
    clock = Clock()
    fleet = [conductor(shared_store, clock, f"c{i}") for i in range(4)]
    for member in fleet:
        member.register()
    before = owned(fleet, UUIDS[:800])
    clock.advance(fleet[0].config.heartbeat_timeout + 1)
    for member in fleet[:3]:
        member.heartbeat()  # c3 died: no heartbeat since
    after = owned(fleet, UUIDS[:800])
    assert all(len(after[u]) == 1 and after[u] != ["c3"] for u in after)
    moved = [u for u in after if after[u] != before[u]]
    assert moved
    assert all(before[u] == ["c3"] for u in moved)
    assert len(moved) == sum(1 for u in before if before[u] == ["c3"])


def test_a_conductor_that_stops_cleanly_hands_its_share_over_at_once(shared_store: Store) -> None:
    clock = Clock()
    fleet = [conductor(shared_store, clock, f"c{i}") for i in range(2)]
    for member in fleet:
        member.register()
    fleet[1].unregister()
    split = owned(fleet, UUIDS[:300])
    assert all(hosts == ["c0"] for hosts in split.values())


def test_a_new_conductor_takes_a_share_only_from_the_others(shared_store: Store) -> None:
    clock = Clock()
    fleet = [conductor(shared_store, clock, f"c{i}") for i in range(3)]
    for member in fleet[:2]:
        member.register()
    before = owned(fleet[:2], UUIDS[:900])
    fleet[2].register()
    after = owned(fleet, UUIDS[:900])
    moved = [u for u in after if after[u] != before[u]]
    assert all(after[u] == ["c2"] for u in moved)
    assert 0.2 < len(moved) / 900 < 0.45  # ~1/3


def test_alone_a_conductor_owns_everything() -> None:
    clock = Clock()
    unregistered = conductor(MemoryStore(), clock, "solo")
    assert unregistered.owns(UUIDS[0], "any-type", "any-group")
    registered = conductor(MemoryStore(), clock, "solo")
    registered.register()
    assert registered.owns(UUIDS[0], HW, "")


def test_a_late_conductor_with_nobody_else_alive_still_works_alone(shared_store: Store) -> None:
    clock = Clock()
    solo = conductor(shared_store, clock, "solo")
    solo.register()
    clock.advance(solo.config.heartbeat_timeout + 5)  # even its own heartbeat is stale
    solo.refresh_ring()
    assert solo.owns(UUIDS[0], HW, "")


def test_a_pair_nobody_serves_is_owned_by_nobody_and_said_once(
    shared_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    fleet = [conductor(shared_store, clock, f"c{i}", group="rack1") for i in range(2)]
    for member in fleet:
        member.register()
    caplog.set_level(logging.WARNING, logger="ironic_fsm.conductor")
    assert not any(c.owns(u, HW, "") for c in fleet for u in UUIDS[:50])  # group "" unserved
    assert not any(c.owns(UUIDS[0], OTHER_HW, "rack1") for c in fleet)
    orphans = [
        r.getMessage() for r in caplog.records if "No live conductor serves" in r.getMessage()
    ]
    # Once per conductor and pair, not once per node.
    assert len(orphans) == 4, orphans
    assert any(f"{OTHER_HW!r} in conductor group 'rack1'" in text for text in orphans)


def test_owns_reads_the_registry_again_only_after_heartbeat_interval(shared_store: Store) -> None:
    clock = Clock()
    first, second = conductor(shared_store, clock, "c0"), conductor(shared_store, clock, "c1")
    first.register()
    assert all(first.owns(u, HW, "") for u in UUIDS[:100])
    second.register()
    assert all(first.owns(u, HW, "") for u in UUIDS[:100])  # not read again yet
    clock.advance(first.config.heartbeat_interval)
    assert not all(first.owns(u, HW, "") for u in UUIDS[:100])


def test_hardware_type_for_is_the_nodes_registered_type() -> None:
    made = conductor(MemoryStore(), Clock(), "c0")
    mine = HardwareType(description="mine")
    made.register_hardware_type("mine", mine)
    assert made.hardware_type_for(made.create_node(driver="mine")) is mine
    with pytest.raises(DriverNotFound):
        made.hardware_type_for(Node(driver="nobody-has-this"))


def test_a_conductor_of_this_host_whose_process_is_gone_is_dead_at_once(
    shared_store: Store,
) -> None:
    """Same host: the process table answers before ``heartbeat_timeout`` does, as for holders."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    clock = Clock()
    living, gone = conductor(shared_store, clock, "h"), conductor(shared_store, clock, "h")
    gone.holder = f"h:{child.pid}:1-deadbeef"  # its start time: a reused PID is not it
    for member in (gone, living):
        member.register()
    assert [c.alive for c in living.list_conductors()].count(True) == 1
    split = owned([living], UUIDS[:200])
    assert all(hosts == ["h"] for hosts in split.values())  # no share left with the dead one


def test_a_process_that_never_registers_names_the_owners_from_one_read(
    shared_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command line and an unregistered API name each node's conductor by the live
    members' rings, read once a heartbeat interval: a page of nodes is not a read per node.
    Once a member dies and the interval has passed, the names follow the new rings."""
    clock = Clock()
    fleet = [conductor(shared_store, clock, f"c{i}") for i in range(2)]
    for member in fleet:
        member.register()
    watcher = conductor(shared_store, clock, "watcher")  # never registers
    nodes = [Node(uuid=u, driver=HW) for u in UUIDS[:300]]
    split = owned(fleet, [n.uuid for n in nodes])
    reads: list[int] = []
    real = shared_store.list_conductors
    monkeypatch.setattr(shared_store, "list_conductors", lambda: reads.append(1) or real())
    named = {n.uuid: watcher.conductor_of(n) for n in nodes}
    assert named == {u: hosts[0] for u, hosts in split.items()}
    assert {"c0", "c1"} == set(named.values())
    assert len(reads) == 1
    fleet[1].unregister()
    clock.advance(watcher.config.heartbeat_interval)
    assert {watcher.conductor_of(n) for n in nodes} == {"c0"}
    assert len(reads) == 2
