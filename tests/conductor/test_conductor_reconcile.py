"""Conductor.reconcile: one verb per call toward a wanted state (issue 12, docs/embedding.rst).

Every test drives real flows on the test hardware, on MemoryStore and on a
SQLite file (``conductor_store``), and checks what the store holds after
each call: the state, the version (nothing written when nothing is done)
and the ``provision_set.start`` events, one per verb issued.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from helpers import (
    FAKE_HW,
    Recorder,
    calls,
    dstep,
    make_conductor,
    new_node,
    snapshot,
    step,
    watched,
)

from ironic_fsm import LIFECYCLE, Conductor, states
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    InvalidState,
    NodeInMaintenance,
    NodeIsRetired,
    NodeProtected,
    TransitionRejected,
)
from ironic_fsm.node import Node
from ironic_fsm.stores import MemoryStore

ELSEWHERE = "elsewhere.example:1:x"


def _started(recorder: Recorder) -> list[str]:
    """The machine event of every verb issued, in order: the transitions out of a resting state.

    A verb's first transition leaves the state the node rested in; what a
    flow does next (undeploy's tear-down starting cleaning, say) leaves a
    working state, and is not counted.
    """
    return [
        str(e.event) for e in recorder.provision() if e.previous_state in LIFECYCLE.resting_states
    ]


def _unchanged(conductor: Conductor, before: Node, recorder: Recorder | None = None) -> None:
    """The store holds exactly ``before``: same fields, same version; no event, if heard."""
    after = conductor.get_node(before.uuid)
    assert snapshot(after) == snapshot(before)
    assert after.version == before.version
    if recorder is not None:
        assert recorder.events == []


def test_enroll_to_active_in_three_calls_then_nothing() -> None:
    recorder, conductor, node = watched(driver=FAKE_HW)
    uuid = node.uuid
    seen = []
    for _ in range(3):
        node = conductor.reconcile(uuid, states.ACTIVE)
        seen.append((node.provision_state, node.target_provision_state))
    assert seen == [(states.MANAGEABLE, None), (states.AVAILABLE, None), (states.ACTIVE, None)]
    assert _started(recorder) == ["manage", "provide", "deploy"]
    there = conductor.get_node(uuid)
    recorder.clear()
    for _ in range(3):
        node = conductor.reconcile(uuid, states.ACTIVE)
        assert node.provision_state == states.ACTIVE
        assert node.version == there.version
    assert recorder.events == []
    _unchanged(conductor, there)


@pytest.mark.parametrize(
    ("start", "wanted", "verbs"),
    [
        (states.ACTIVE, states.AVAILABLE, ["undeploy"]),
        (states.ACTIVE, states.MANAGEABLE, ["undeploy", "manage"]),
        (states.CLEANFAIL, states.AVAILABLE, ["manage", "provide"]),
        (states.AVAILABLE, states.MANAGEABLE, ["manage"]),
        (states.RESCUE, states.ACTIVE, ["unrescue"]),
    ],
)
def test_each_call_issues_the_next_verb_of_the_path(
    start: str, wanted: str, verbs: list[str]
) -> None:
    recorder, conductor, node = watched(start, driver=FAKE_HW)
    uuid = node.uuid
    for verb in verbs:
        recorder.clear()
        conductor.reconcile(uuid, wanted)
        assert _started(recorder) == [conductor.lifecycle.verbs[verb]]
    node = conductor.get_node(uuid)
    assert (node.provision_state, node.target_provision_state) == (wanted, None)
    recorder.clear()
    assert conductor.reconcile(uuid, wanted).version == node.version
    assert recorder.events == []


def test_a_failed_deploy_is_retried_by_the_next_call() -> None:
    recorder, conductor, node = watched(states.AVAILABLE)
    uuid = node.uuid
    failing = [dstep("deploy", "fail_deploy", 150)]
    node = conductor.reconcile(uuid, states.ACTIVE, deploy_steps=failing)
    assert node.provision_state == states.DEPLOYFAIL
    assert "image checksum mismatch" in (node.last_error or "")
    assert calls(node) == ["fail_deploy"]  # deploy_steps reached the deploy
    recorder.clear()
    node = conductor.reconcile(uuid, states.ACTIVE)
    assert _started(recorder) == ["deploy"]
    assert node.provision_state == states.ACTIVE
    assert node.last_error is None
    assert calls(node) == ["fail_deploy", "deploy"]


def test_deploy_steps_go_to_deploy_only_and_clean_steps_nowhere() -> None:
    conductor = make_conductor()
    uuid = new_node(conductor).uuid
    args: dict[str, Any] = {
        "deploy_steps": [dstep("deploy", "again_deploy", 150)],
        "clean_steps": [step("vendor", "step_a")],
    }
    # manage and provide would refuse deploy_steps or clean_steps if they got them
    for _ in range(3):
        node = conductor.reconcile(uuid, states.ACTIVE, **args)
    assert node.provision_state == states.DEPLOYWAIT  # the requested step waits
    assert "step_a" not in calls(node)
    assert calls(node) == ["again_deploy#1"]
    # busy in a wait state: unchanged, whatever the arguments
    assert conductor.reconcile(uuid, states.ACTIVE, **args).version == node.version
    node = conductor.continue_node_deploy(uuid)
    assert node.provision_state == states.ACTIVE
    assert calls(node) == ["again_deploy#1", "again_deploy#2", "deploy"]


def test_rescue_password_goes_to_rescue() -> None:
    conductor = make_conductor()
    uuid = new_node(conductor, states.ACTIVE).uuid
    node = conductor.reconcile(uuid, states.RESCUE, rescue_password="let-me-in")
    assert node.provision_state == states.RESCUE
    with pytest.raises(InvalidParameterValue, match="rescue_password"):
        conductor.reconcile(new_node(conductor, states.ACTIVE).uuid, states.RESCUE)


def test_unknown_argument_is_refused_and_changes_nothing() -> None:
    recorder, conductor, before = watched()
    with pytest.raises(InvalidParameterValue) as info:
        conductor.reconcile(before.uuid, states.ACTIVE, deploy_step=[], force=True)
    assert "deploy_step, force" in str(info.value)
    assert "deploy_steps" in str(info.value)
    _unchanged(conductor, before, recorder)


def test_a_node_reserved_elsewhere_is_returned_unchanged() -> None:
    recorder, conductor, node = watched(states.MANAGEABLE)
    uuid = node.uuid
    conductor.store.reserve(uuid, ELSEWHERE)
    before = conductor.get_node(uuid)
    node = conductor.reconcile(uuid, states.AVAILABLE)
    assert node.reservation == ELSEWHERE
    assert node.provision_state == states.MANAGEABLE
    _unchanged(conductor, before, recorder)


def test_a_node_in_clean_wait_is_returned_unchanged() -> None:
    recorder, conductor, node = watched(states.MANAGEABLE)
    uuid = node.uuid
    conductor.do_provisioning_action(uuid, "clean", clean_steps=[step("vendor", "async_clean")])
    before = conductor.get_node(uuid)
    assert before.provision_state == states.CLEANWAIT
    recorder.clear()
    for wanted in (states.AVAILABLE, states.MANAGEABLE, states.ACTIVE):
        assert conductor.reconcile(uuid, wanted).provision_state == states.CLEANWAIT
    _unchanged(conductor, before, recorder)


def test_a_retired_node_is_never_provided() -> None:
    conductor = make_conductor()
    uuid = new_node(conductor, states.MANAGEABLE, retired=True).uuid
    before = conductor.get_node(uuid)
    for wanted in (states.AVAILABLE, states.ACTIVE):
        with pytest.raises(NodeIsRetired) as info:
            conductor.reconcile(uuid, wanted)
        assert uuid in str(info.value)
        assert "'provide'" in str(info.value)
        assert info.value.details["verb"] == "provide"
    _unchanged(conductor, before)
    assert conductor.reconcile(uuid, states.MANAGEABLE).version == before.version


def test_a_retired_active_node_is_not_torn_down_on_the_way_to_available() -> None:
    # Its tear-down would end in manageable, where provide is refused: refuse first.
    conductor = make_conductor()
    uuid = new_node(conductor, states.ACTIVE).uuid
    before = conductor.update_node(uuid, retired=True)
    with pytest.raises(NodeIsRetired):
        conductor.reconcile(uuid, states.AVAILABLE)
    _unchanged(conductor, before)
    node = conductor.reconcile(uuid, states.MANAGEABLE)  # a retired node may go there
    assert node.provision_state == states.MANAGEABLE
    assert conductor.reconcile(uuid, states.MANAGEABLE).version == node.version


def test_a_retired_node_in_clean_failed_may_be_managed() -> None:
    conductor = make_conductor()
    uuid = new_node(conductor, states.CLEANFAIL, retired=True).uuid
    assert conductor.reconcile(uuid, states.MANAGEABLE).provision_state == states.MANAGEABLE


def test_a_node_in_maintenance_is_refused_and_says_so() -> None:
    recorder, conductor, node = watched(states.ACTIVE)
    uuid = node.uuid
    before = conductor.update_node(uuid, maintenance=True)
    with pytest.raises(NodeInMaintenance) as info:
        conductor.reconcile(uuid, states.AVAILABLE)
    assert uuid in str(info.value)
    assert "does not act on it" in str(info.value)
    _unchanged(conductor, before)
    # already there: nothing to do, nothing refused
    assert conductor.reconcile(uuid, states.ACTIVE).version == before.version
    assert recorder.events == []


def test_a_protected_node_is_not_undeployed() -> None:
    conductor = make_conductor()
    uuid = new_node(conductor, states.ACTIVE).uuid
    before = conductor.update_node(uuid, protected=True, protected_reason="database")
    for wanted in (states.AVAILABLE, states.MANAGEABLE):
        with pytest.raises(NodeProtected) as info:
            conductor.reconcile(uuid, wanted)
        assert uuid in str(info.value)
        assert info.value.details["verb"] == "undeploy"
    _unchanged(conductor, before)


def test_a_guard_veto_surfaces_and_changes_nothing() -> None:
    def no_provide(node: Node, verb: str, event: str, new_state: str) -> str | None:
        return "change freeze" if verb == "provide" else None

    recorder = Recorder()
    conductor = make_conductor(listeners=[recorder], guards=[no_provide])
    uuid = new_node(conductor, states.MANAGEABLE).uuid
    before = conductor.get_node(uuid)
    with pytest.raises(TransitionRejected, match="change freeze"):
        conductor.reconcile(uuid, states.AVAILABLE)
    _unchanged(conductor, before, recorder)


@pytest.mark.parametrize(
    ("state", "wanted", "words"),
    [
        (states.ACTIVE, states.ENROLL, ["'active'", "'enroll'", "no sequence"]),
        (states.MANAGEABLE, "bogus", ["'bogus'", "does not exist"]),
        (states.MANAGEABLE, states.CLEANING, ["'cleaning'", "not a stable state"]),
        (states.CLEANWAIT, "bogus", ["'bogus'", "does not exist"]),  # busy, still refused
    ],
)
def test_an_unreachable_wanted_state_is_a_typed_error(
    state: str, wanted: str, words: list[str]
) -> None:
    conductor = make_conductor()
    before = new_node(conductor, state)
    with pytest.raises(InvalidState) as info:
        conductor.reconcile(before.uuid, wanted)
    for word in [before.uuid, *words]:
        assert word in str(info.value)
    assert info.value.details["wanted"] == wanted
    _unchanged(conductor, before)


def test_a_wanted_state_that_is_not_a_string_is_refused() -> None:
    conductor = make_conductor()
    before = new_node(conductor)
    with pytest.raises(InvalidParameterValue, match="string"):
        conductor.reconcile(before.uuid, 3)  # type: ignore[arg-type]
    _unchanged(conductor, before)


class _RacingStore(MemoryStore):
    """A MemoryStore that lets another party act right after the next read.

    It makes the race of two callers deterministic: the caller under test
    reads the node, then ``meddle`` runs (another conductor's verb, another
    holder's reservation), then the caller acts on what it read.
    """

    meddle: Any = None

    def get(self, ident: str) -> Node:
        node = super().get(ident)
        meddle, self.meddle = self.meddle, None
        if meddle is not None:
            meddle()
        return node


def test_a_caller_that_lost_the_race_gets_the_node_back_unchanged() -> None:
    recorder = Recorder()
    store = _RacingStore()
    slow = make_conductor(store=store, listeners=[recorder])
    fast = make_conductor(store=store, listeners=[recorder])
    uuid = new_node(slow, driver=FAKE_HW).uuid
    store.meddle = lambda: fast.reconcile(uuid, states.ACTIVE)  # manages it first
    node = slow.reconcile(uuid, states.ACTIVE)
    assert node.provision_state == states.MANAGEABLE
    assert _started(recorder) == ["manage"]  # not twice


def test_a_caller_that_finds_the_node_locked_gets_it_back_unchanged() -> None:
    recorder = Recorder()
    store = _RacingStore()
    conductor = make_conductor(store=store, listeners=[recorder])
    uuid = new_node(conductor, states.MANAGEABLE).uuid
    store.meddle = lambda: store.reserve(uuid, ELSEWHERE)
    node = conductor.reconcile(uuid, states.AVAILABLE)
    assert node.reservation == ELSEWHERE
    assert node.provision_state == states.MANAGEABLE
    assert recorder.events == []


def test_concurrent_callers_issue_each_verb_once() -> None:
    recorder, conductor, node = watched(driver=FAKE_HW)
    uuid = node.uuid
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def loop() -> None:
        try:
            start.wait()
            for _ in range(2000):
                if conductor.reconcile(uuid, states.ACTIVE).provision_state == states.ACTIVE:
                    return
            raise AssertionError("never got there")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=loop) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(_started(recorder)) == ["deploy", "manage", "provide"]
    assert conductor.get_node(uuid).provision_state == states.ACTIVE


def test_a_stale_caller_does_not_repeat_a_verb_the_new_state_also_accepts() -> None:
    # rescue is accepted in rescue too: only the version tells that the
    # node moved on between the slow caller's read and its verb.
    recorder = Recorder()
    store = _RacingStore()
    slow = make_conductor(store=store, listeners=[recorder])
    fast = make_conductor(store=store, listeners=[recorder])
    uuid = new_node(slow, states.ACTIVE).uuid
    store.meddle = lambda: fast.reconcile(uuid, states.RESCUE, rescue_password="first")
    node = slow.reconcile(uuid, states.RESCUE, rescue_password="second")
    assert node.provision_state == states.RESCUE
    assert _started(recorder) == ["rescue"]  # once, by the fast caller
    assert node.version == store.get(uuid).version


def test_a_listener_may_act_on_other_nodes_during_a_reconcile() -> None:
    conductor = make_conductor()
    other = new_node(conductor, states.AVAILABLE).uuid
    acted: list[str] = []

    def manage_the_other(event: Any) -> None:
        if event.node != other and not acted:
            acted.append(conductor.do_provisioning_action(other, "manage").provision_state)

    conductor.add_listener(manage_the_other)
    uuid = new_node(conductor, states.ENROLL).uuid
    assert conductor.reconcile(uuid, states.MANAGEABLE).provision_state == states.MANAGEABLE
    assert acted == [states.MANAGEABLE]
