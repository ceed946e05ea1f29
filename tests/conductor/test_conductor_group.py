"""``Node.conductor_group``: the field (Ironic's rules), and conductors that keep to their group.

Every test runs on each store (memory, a SQLite file, the real PostgreSQL).
In the fleet tests, two registered ``Conductor`` objects on one store stand
for two conductor processes, one in group ``a`` and one in group ``b``;
one clock moves both.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import pytest
from cli_harness import Run, listed, ok
from helpers import Clock

from ironic_fsm import Conductor, Config, fleetfile, states
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node
from ironic_fsm.stores import Store
from ironic_fsm.stores.base import power_sync_due

HW = "fake-hardware"
BAD_GROUPS = ["rack 1", "a/b", "x" * 256, "caf\u00e9", None, 5]


# -- the field -------------------------------------------------------------------------------


def test_a_node_is_in_the_default_group_unless_told(store: Store) -> None:
    conductor = Conductor(store=store)
    node = conductor.create_node()
    assert node.conductor_group == ""
    assert store.get(node.uuid).conductor_group == ""


def test_the_group_is_kept_in_lower_case_as_in_ironic(store: Store) -> None:
    conductor = Conductor(store=store)
    node = conductor.create_node(conductor_group="Rack-A.1_x")
    assert node.conductor_group == "rack-a.1_x"
    assert store.get(node.uuid).conductor_group == "rack-a.1_x"
    assert Node.from_json(store.get(node.uuid).to_json()).conductor_group == "rack-a.1_x"


@pytest.mark.parametrize("bad", BAD_GROUPS)
def test_a_bad_group_is_refused_at_create_and_nothing_is_stored(store: Store, bad: object) -> None:
    conductor = Conductor(store=store)
    with pytest.raises(InvalidParameterValue, match="conductor_group") as info:
        conductor.create_node(name="n1", conductor_group=bad)
    assert info.value.details.get("field") == "conductor_group"
    assert store.list() == []


def test_the_group_is_updated_like_other_fields(store: Store) -> None:
    conductor = Conductor(store=store)
    node = conductor.create_node(name="n1")
    updated = conductor.update_node("n1", conductor_group="Rack-2")
    assert updated.conductor_group == "rack-2"
    stored = store.get(node.uuid)
    assert (stored.conductor_group, stored.reservation) == ("rack-2", None)
    assert stored.version == node.version + 1


@pytest.mark.parametrize("bad", BAD_GROUPS)
def test_a_bad_group_update_changes_nothing_and_leaves_the_node_free(
    store: Store, bad: object
) -> None:
    conductor = Conductor(store=store)
    node = conductor.create_node(name="n1", conductor_group="rack-1")
    before = store.get(node.uuid)
    with pytest.raises(InvalidParameterValue, match="conductor_group"):
        conductor.update_node("n1", conductor_group=bad)
    assert store.get(node.uuid) == before
    assert store.get(node.uuid).reservation is None


def test_a_group_assigned_in_upper_case_is_not_stored(store: Store) -> None:
    # Assignment is not checked (drivers assign fields); the store refuses what is not lowered.
    conductor = Conductor(store=store)
    node = conductor.create_node()
    node.conductor_group = "RACK"
    with pytest.raises(InvalidParameterValue, match="lower case"):
        store.save(node)
    assert store.get(node.uuid).conductor_group == ""


def test_listing_filters_on_the_group_in_any_case(store: Store) -> None:
    conductor = Conductor(store=store)
    a1 = conductor.create_node(conductor_group="a")
    b1 = conductor.create_node(conductor_group="b")
    a2 = conductor.create_node(conductor_group="A")
    plain = conductor.create_node()
    assert [n.uuid for n in conductor.list_nodes(conductor_group="a")] == [a1.uuid, a2.uuid]
    assert [n.uuid for n in conductor.list_nodes(conductor_group="A")] == [a1.uuid, a2.uuid]
    assert [n.uuid for n in store.list(conductor_group="A")] == [a1.uuid, a2.uuid]
    assert [n.uuid for n in conductor.list_nodes(conductor_group="")] == [plain.uuid]
    assert [n.uuid for n in store.list(conductor_group=["B", ""])] == [b1.uuid, plain.uuid]
    with pytest.raises(InvalidParameterValue, match="conductor_group"):
        conductor.list_nodes(conductor_group="not a group")


def test_the_power_sync_scan_reports_each_nodes_group(store: Store) -> None:
    conductor = Conductor(store=store)
    a = conductor.create_node(conductor_group="a")
    plain = conductor.create_node()
    rows = {row.uuid: row.conductor_group for row in power_sync_due(store, Clock().now)}
    assert rows == {a.uuid: "a", plain.uuid: ""}


# -- conductors keep to their group ----------------------------------------------------------


def member(store: Store, clock: Clock, host: str, group: str) -> Conductor:
    made = Conductor(
        store=store,
        config=Config(host=host, conductor_group=group, enabled_hardware_types=[HW]),
        clock=clock,
    )
    made.register()
    return made


def fleet_nodes(store: Store, state: str, **fields: object) -> dict[str, set[str]]:
    """Three nodes in each of the groups a, b and c (which no conductor serves)."""
    maker = Conductor(store=store)
    return {
        group: {
            maker.create_node(conductor_group=group, provision_state=state, **fields).uuid
            for _ in range(3)
        }
        for group in ("a", "b", "c")
    }


@pytest.fixture
def pair(store: Store) -> tuple[Conductor, Conductor]:
    clock = Clock()
    return member(store, clock, "host-a", "a"), member(store, clock, "host-b", "b")


def test_each_conductor_owns_the_nodes_of_its_group_only(
    store: Store, pair: tuple[Conductor, Conductor], caplog: pytest.LogCaptureFixture
) -> None:
    a, b = pair
    nodes = fleet_nodes(store, states.MANAGEABLE)
    with caplog.at_level(logging.WARNING, logger="ironic_fsm"):
        for uuid in nodes["a"]:
            assert (a.owns(uuid, HW, "a"), b.owns(uuid, HW, "a")) == (True, False)
        for uuid in nodes["b"]:
            assert (a.owns(uuid, HW, "b"), b.owns(uuid, HW, "b")) == (False, True)
        for uuid in nodes["c"]:  # a group nobody serves: nobody's
            assert (a.owns(uuid, HW, "c"), b.owns(uuid, HW, "c")) == (False, False)
    orphans = [r.getMessage() for r in caplog.records if "conductor group 'c'" in r.getMessage()]
    assert len(orphans) == 2  # once per conductor, not once per node
    assert all(HW in text for text in orphans)


def test_each_conductor_claims_the_queued_nodes_of_its_group_only(
    store: Store, pair: tuple[Conductor, Conductor]
) -> None:
    a, b = pair
    nodes = fleet_nodes(store, states.VERIFYING)  # working, unreserved: queued
    assert set(a.claim_work()) == nodes["a"]
    assert set(b.claim_work()) == nodes["b"]
    for group in ("a", "b"):
        assert {store.get(u).provision_state for u in nodes[group]} == {states.MANAGEABLE}
    assert {store.get(u).provision_state for u in nodes["c"]} == {states.VERIFYING}
    assert a.claim_work() == []
    assert b.claim_work() == []


def test_each_conductor_takes_over_the_dead_holders_nodes_of_its_group_only(
    store: Store, pair: tuple[Conductor, Conductor]
) -> None:
    a, b = pair
    nodes = fleet_nodes(store, states.VERIFYING)
    gone = "gone-host:4242:1-dead"
    for uuid in set().union(*nodes.values()):
        store.reserve(uuid, gone)
    store.heartbeat(gone, Clock().now - timedelta(hours=1))
    assert set(a.recover()) == nodes["a"]
    assert set(b.recover()) == nodes["b"]
    assert {store.get(u).reservation for u in nodes["a"] | nodes["b"]} == {None}
    assert {store.get(u).reservation for u in nodes["c"]} == {gone}


def test_each_conductor_syncs_the_power_of_its_group_only(
    store: Store, pair: tuple[Conductor, Conductor]
) -> None:
    a, b = pair
    nodes = fleet_nodes(store, states.MANAGEABLE, power_state=states.POWER_OFF)
    assert set(a.sync_power_states().checked) == nodes["a"]
    assert set(b.sync_power_states().checked) == nodes["b"]
    never = {row.uuid for row in power_sync_due(store, Clock().now - timedelta(seconds=1))}
    assert never == nodes["c"]  # synced by nobody


def test_each_conductor_times_out_the_waits_of_its_group_only(
    store: Store, pair: tuple[Conductor, Conductor]
) -> None:
    a, b = pair
    since = Clock().now - timedelta(hours=2)  # past the 30 minutes of clean_callback_timeout
    nodes = fleet_nodes(
        store, states.CLEANWAIT, provision_updated_at=since, target_provision_state="available"
    )
    assert set(a.check_timeouts()) == nodes["a"]
    assert set(b.check_timeouts()) == nodes["b"]
    for group, state in (("a", states.CLEANFAIL), ("b", states.CLEANFAIL), ("c", states.CLEANWAIT)):
        assert {store.get(u).provision_state for u in nodes[group]} == {state}


def test_a_node_moved_to_another_group_changes_hands(
    store: Store, pair: tuple[Conductor, Conductor]
) -> None:
    a, b = pair
    node = a.create_node(conductor_group="a", provision_state=states.MANAGEABLE)
    assert (a.owns(node.uuid, HW, "a"), b.owns(node.uuid, HW, "a")) == (True, False)
    moved = a.update_node(node.uuid, conductor_group="B")
    assert moved.conductor_group == "b"
    assert set(b.sync_power_states().checked) == {node.uuid}
    assert a.sync_power_states().checked == ()


# -- the CLI ---------------------------------------------------------------------------------


def test_the_cli_creates_lists_sets_and_unsets_the_group(run: Run) -> None:
    made = json.loads(ok(run("node", "create", "--name", "n1", "--conductor-group", "Rack-1",
                             "-f", "json")).out)  # fmt: skip
    assert made["conductor_group"] == "rack-1"
    ok(run("node", "create", "--name", "n2"))
    assert [r["name"] for r in listed(run, "--conductor-group", "RACK-1")] == ["n1"]
    assert [r["name"] for r in listed(run, "--conductor-group", "")] == ["n2"]
    ok(run("node", "set", "n2", "--conductor-group", "rack-1"))
    ok(run("node", "unset", "n1", "--conductor-group"))
    shown = listed(run, "--fields", "name", "conductor_group")
    assert [(r["name"], r["conductor_group"]) for r in shown] == [("n1", ""), ("n2", "rack-1")]


def test_the_cli_refuses_a_bad_group_before_touching_the_database(run: Run) -> None:
    bad = run("node", "create", "--name", "n1", "--conductor-group", "rack 1")
    assert bad.code == 2
    assert "conductor group" in bad.err
    assert listed(run) == []


# -- the fleet file --------------------------------------------------------------------------


def fleet_text(group: str) -> str:
    node = {"name": "n1", "driver": HW, "conductor_group": group, "wanted": "manageable"}
    return json.dumps({"nodes": [node]})


def test_a_fleet_file_sets_the_group_and_applying_it_again_changes_nothing(store: Store) -> None:
    conductor = Conductor(store=store)
    fleet = fleetfile.load_fleet(fleet_text("Rack-1"), conductor=conductor, env={})
    [planned] = fleetfile.plan_fleet(conductor, fleet).nodes
    assert planned.action == "create"
    applier = fleetfile.FleetApply(conductor, fleet)
    applier.enroll()
    while not applier.settled:
        applier.round()
    assert conductor.get_node("n1").conductor_group == "rack-1"
    [again] = fleetfile.plan_fleet(conductor, fleet).nodes
    assert again.action == "unchanged"
    moved = fleetfile.load_fleet(fleet_text("rack-2"), conductor=conductor, env={})
    [change] = fleetfile.plan_fleet(conductor, moved).nodes
    assert change.action == "update"
    assert any("conductor_group" in line for line in change.fields)


def test_a_fleet_file_with_a_bad_group_is_refused_at_its_path(store: Store) -> None:
    conductor = Conductor(store=store)
    with pytest.raises(fleetfile.FleetFileError) as caught:
        fleetfile.load_fleet(fleet_text("rack 1"), conductor=conductor, env={})
    assert [e.partition(":")[0] for e in caught.value.errors] == ["nodes[0].conductor_group"]
    assert store.list() == []
