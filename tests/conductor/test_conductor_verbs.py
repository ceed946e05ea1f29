"""Conductor: which user verb each provision state accepts (docs/userguide.rst).

Every state of the lifecycle x every verb of ``states.VERBS``: a node is
imported directly in the state and the verb is requested. Where the matrix
(data/api_verb_matrix.tsv) has a target, the verb is accepted and the
node's first transition lands on that target (flows run synchronously, so
the node may go further);
elsewhere the conductor refuses with ``InvalidStateRequested`` naming the
verb, node and state, and the node is left exactly as it was.
"""

from __future__ import annotations

import pytest
from helpers import (
    FAKE_HW,
    load_verb_matrix,
    make_conductor,
    matrix_events,
    new_node,
    snapshot,
    unchanged,
    verb_arguments,
    watched,
)

from ironic_fsm import LIFECYCLE, states
from ironic_fsm.exceptions import InvalidStateRequested

VERBS, MATRIX = load_verb_matrix()

CASES = [(state, verb) for state in MATRIX for verb in VERBS]


def test_matrix_covers_every_state_of_the_lifecycle() -> None:
    assert set(MATRIX) == set(LIFECYCLE.states)
    assert len(MATRIX) == 30


def test_matrix_verbs_are_the_verbs_of_states() -> None:
    assert set(VERBS) == set(states.VERBS)
    assert matrix_events() == dict(states.VERBS)


def test_matrix_agrees_with_the_lifecycle() -> None:
    # A sanity check of the copy the tests read: a target is exactly what
    # the machine's transition for the verb's event gives.
    for state, row in MATRIX.items():
        for verb, target in row.items():
            event = states.VERBS[verb]
            if target is None:
                assert event not in LIFECYCLE.allowed_events(state), (state, verb)
            else:
                assert LIFECYCLE.next_state(state, event) == target, (state, verb)


# Every verb in every state: refusals too (abort outside wait and hold, deploy outside
# available and deploy failed, ...), each leaving the node exactly as it was.
@pytest.mark.parametrize(("state", "verb"), CASES, ids=[f"{s}-{v}" for s, v in CASES])
def test_verb_in_state(state: str, verb: str) -> None:
    recorder, conductor, node = watched(state, driver=FAKE_HW, power_state=states.POWER_ON)
    before = snapshot(conductor.get_node(node.uuid))
    target = MATRIX[state][verb]

    if target is None:
        with pytest.raises(InvalidStateRequested) as info:
            conductor.do_provisioning_action(
                node.uuid, verb, **verb_arguments(verb, "log_passthrough")
            )
        message = str(info.value)
        assert verb in message
        assert node.uuid in message
        assert state in message
        after = conductor.get_node(node.uuid)
        assert snapshot(after) == before
        assert after.reservation is None
        assert recorder.events == []
        return

    result = conductor.do_provisioning_action(
        node.uuid, verb, **verb_arguments(verb, "log_passthrough")
    )
    after = conductor.get_node(node.uuid)
    assert result.provision_state == after.provision_state
    assert after.reservation is None
    provision = recorder.provision()
    assert provision, f"{verb} in {state} produced no transition"
    first = provision[0]
    assert first.previous_state == state
    assert first.state == target
    # The node settled: stable, wait, hold or failure state.
    settled = (
        LIFECYCLE.is_stable(after.provision_state)
        or after.provision_state in states.WAIT_STATES
        or after.provision_state in states.HOLD_STATES
        or after.provision_state in states.FAILURE_STATES
    )
    assert settled, after.provision_state


#: Ironic's alias verbs: (state, where the verb leads, the fake driver's mark of the work).
ALIAS_VERBS = {
    "deleted": (states.ACTIVE, states.AVAILABLE, ("fake_log_passthrough", 1)),  # is undeploy
    "active": (states.AVAILABLE, states.ACTIVE, ("fake_deployed", True)),  # is deploy
}


@pytest.mark.parametrize("verb", sorted(ALIAS_VERBS))
def test_alias_verb_does_the_work_of_its_event(verb: str) -> None:
    state, landing, (key, value) = ALIAS_VERBS[verb]
    conductor = make_conductor()
    node = new_node(conductor, state, driver=FAKE_HW)
    conductor.do_provisioning_action(node.uuid, verb)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == landing
    mark = node.driver_internal_info[key]
    assert (type(mark), mark) == (type(value), value)


def test_unknown_verb_is_refused_and_changes_nothing() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidStateRequested) as info:
        conductor.do_provisioning_action(node.uuid, "fly")
    assert "fly" in str(info.value)


@pytest.mark.parametrize("verb", ["done", "fail", "wait", "resume", "hold"])
def test_internal_events_are_not_verbs(verb: str) -> None:
    # done/fail/... are machine events the conductor fires, not user verbs.
    conductor = make_conductor()
    node = new_node(conductor, states.CLEANING, driver=FAKE_HW)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidStateRequested):
        conductor.do_provisioning_action(node.uuid, verb)


def test_full_lifecycle_on_fake_hardware() -> None:
    conductor = make_conductor()
    node = conductor.create_node(driver=FAKE_HW, name="lifecycle-0")
    assert node.provision_state == states.ENROLL
    seen = []
    for verb in ("manage", "provide", "deploy", "rescue", "unrescue", "undeploy"):
        kwargs = {"rescue_password": "x"} if verb == "rescue" else {}
        node = conductor.do_provisioning_action("lifecycle-0", verb, **kwargs)
        seen.append((node.provision_state, node.target_provision_state))
    assert seen == [
        (states.MANAGEABLE, None),
        (states.AVAILABLE, None),
        (states.ACTIVE, None),
        (states.RESCUE, None),
        (states.ACTIVE, None),
        (states.AVAILABLE, None),
    ]
    final = conductor.get_node(node.uuid)
    assert final.last_error is None
    assert final.power_state == states.POWER_OFF
    assert final.instance_info == {}
