"""Lifecycle.path: the verbs that take a resting node to a wanted stable state.

The pairwise test does not trust the table: it drives a real conductor
(MemoryStore, fake hardware) along every path and checks that the node
rests where ``path`` said it would after each verb.
"""

from __future__ import annotations

import itertools
import time

import pytest

import ironic_fsm
from ironic_fsm import LIFECYCLE, states
from ironic_fsm.exceptions import InvalidState
from ironic_fsm.machine import PATH_EXCLUDED_VERBS, PATH_VERB_RANKS, Lifecycle, StateSpec

RESTING = sorted(LIFECYCLE.resting_states)
PAIRS = list(itertools.product(RESTING, RESTING))

RETIRED = "retired"
RETIRED_LIFECYCLE = LIFECYCLE.derive(
    add_states=[StateSpec(RETIRED, stable=True)],
    add_transitions=[
        (states.MANAGEABLE, "retire", RETIRED),
        (RETIRED, "unretire", states.MANAGEABLE),
    ],
    add_verbs={"retire": "retire", "unretire": "unretire"},
)


DERIVED_PAIRS = [(states.ACTIVE, RETIRED), (RETIRED, states.ACTIVE), (states.CLEANFAIL, RETIRED)]


def _pair_id(pair: tuple[str, str]) -> str:
    return f"{pair[0]}->{pair[1]}".replace(" ", "_")


def _has_path(lifecycle: Lifecycle, start: str, wanted: str) -> bool:
    try:
        lifecycle.path(start, wanted)
    except InvalidState:
        return False
    return True


# -- the documented examples ---------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "wanted", "verbs"),
    [
        (states.ENROLL, states.ACTIVE, ["manage", "provide", "deploy"]),
        (states.CLEANFAIL, states.AVAILABLE, ["manage", "provide"]),
        (states.ACTIVE, states.MANAGEABLE, ["undeploy", "manage"]),
        (states.MANAGEABLE, states.ACTIVE, ["provide", "deploy"]),
        (states.ACTIVE, states.AVAILABLE, ["undeploy"]),
        (states.ENROLL, states.RESCUE, ["manage", "provide", "deploy", "rescue"]),
        (states.INSPECTFAIL, states.MANAGEABLE, ["manage"]),
        (states.DEPLOYFAIL, states.ACTIVE, ["deploy"]),
        (states.DEPLOYFAIL, states.AVAILABLE, ["undeploy"]),
        (states.ADOPTFAIL, states.ACTIVE, ["adopt"]),
        (states.ADOPTFAIL, states.AVAILABLE, ["manage", "provide"]),
        (states.SERVICEFAIL, states.ACTIVE, ["abort"]),
        (states.RESCUE, states.ACTIVE, ["unrescue"]),
        (states.RESCUEFAIL, states.RESCUE, ["rescue"]),
        (states.ERROR, states.ACTIVE, ["undeploy", "deploy"]),
    ],
    ids=lambda v: v.replace(" ", "_") if isinstance(v, str) else None,
)
def test_documented_paths(start: str, wanted: str, verbs: list[str]) -> None:
    assert LIFECYCLE.path(start, wanted) == verbs


@pytest.mark.parametrize("state", sorted(LIFECYCLE.stable_states))
def test_already_there_is_empty(state: str) -> None:
    assert LIFECYCLE.path(state, state) == []


def test_result_is_a_fresh_list() -> None:
    first = LIFECYCLE.path(states.ENROLL, states.ACTIVE)
    first.append("garbage")
    assert LIFECYCLE.path(states.ENROLL, states.ACTIVE) == ["manage", "provide", "deploy"]


def test_unreachable_wanted_raises() -> None:
    with pytest.raises(InvalidState, match=r"No path from 'active' to 'enroll'") as info:
        LIFECYCLE.path(states.ACTIVE, states.ENROLL)
    assert info.value.details == {"state": states.ACTIVE, "wanted": states.ENROLL}


@pytest.mark.parametrize("start", [states.CLEANING, states.DEPLOYWAIT, states.CLEANHOLD])
def test_non_resting_start_raises_naming_it(start: str) -> None:
    with pytest.raises(InvalidState, match=f"{start!r} is not a resting state") as info:
        LIFECYCLE.path(start, states.AVAILABLE)
    assert info.value.details == {"state": start}


@pytest.mark.parametrize("wanted", [states.CLEANFAIL, states.DEPLOYING])
def test_non_stable_wanted_raises(wanted: str) -> None:
    with pytest.raises(InvalidState, match=f"Wanted state {wanted!r} is not a stable state"):
        LIFECYCLE.path(states.MANAGEABLE, wanted)


def test_non_stable_wanted_equal_to_start_raises() -> None:
    with pytest.raises(InvalidState, match="is not a stable state"):
        LIFECYCLE.path(states.CLEANFAIL, states.CLEANFAIL)


@pytest.mark.parametrize(("start", "wanted"), [("limbo", states.ACTIVE), (states.ENROLL, "x")])
def test_unknown_states_raise(start: str, wanted: str) -> None:
    with pytest.raises(InvalidState, match="does not exist"):
        LIFECYCLE.path(start, wanted)


# -- properties of the table -----------------------------------------------------------


def test_failure_states_read_off_the_table_are_ironics() -> None:
    assert LIFECYCLE.failure_states == states.FAILURE_STATES
    assert LIFECYCLE.resting_states == states.STABLE_STATES | states.FAILURE_STATES


def test_paths_use_canonical_verbs_and_avoid_ranked_ones() -> None:
    for start, wanted in PAIRS:
        if not _has_path(LIFECYCLE, start, wanted):
            continue
        verbs = LIFECYCLE.path(start, wanted)
        assert not set(verbs) & (PATH_EXCLUDED_VERBS | {"active", "deleted", "unhold"})
        assert all(verb in states.VERBS for verb in verbs)
        # adopt, inspect and rebuild only ever retry a failed flow from its failure state
        for verb in verbs[1:]:
            assert PATH_VERB_RANKS.get(verb, 0) == 0 or (verb == "rescue" and wanted == "rescue")
        assert "adopt" not in verbs or start == states.ADOPTFAIL
        assert "inspect" not in verbs
        assert "rebuild" not in verbs


def test_every_stable_state_but_enroll_and_error_is_reachable_from_enroll() -> None:
    for wanted in LIFECYCLE.stable_states - {states.ENROLL, states.ERROR}:
        assert _has_path(LIFECYCLE, states.ENROLL, wanted)


# -- every pair, driven on fake hardware ------------------------------------------------


@pytest.mark.parametrize(("start", "wanted"), PAIRS, ids=[_pair_id(p) for p in PAIRS])
def test_every_pair_of_resting_states(start: str, wanted: str) -> None:
    if wanted in states.FAILURE_STATES:
        with pytest.raises(InvalidState, match=f"Wanted state {wanted!r} is not a stable state"):
            LIFECYCLE.path(start, wanted)
        return
    if wanted in (states.ENROLL, states.ERROR) and start != wanted:
        # No verb leads back to enroll, and only a failed tear-down into error.
        with pytest.raises(InvalidState, match=f"No path from {start!r} to {wanted!r}"):
            LIFECYCLE.path(start, wanted)
        return
    verbs = LIFECYCLE.path(start, wanted)
    conductor = ironic_fsm.Conductor()
    node = conductor.create_node(name="walker", provision_state=start, target_provision_state=None)
    for done, verb in enumerate(verbs, 1):
        password = "r3scue-me" if verb == "rescue" else None
        node = conductor.do_provisioning_action(node.uuid, verb, rescue_password=password)
        assert node.provision_state in LIFECYCLE.stable_states, (verb, node.last_error)
        assert node.target_provision_state is None
        assert LIFECYCLE.path(node.provision_state, wanted) == verbs[done:]
    assert node.provision_state == wanted
    assert conductor.get_node(node.uuid).provision_state == wanted


def test_pairs_cover_every_resting_state() -> None:
    assert len(RESTING) == len(states.STABLE_STATES) + len(states.FAILURE_STATES)
    with_path = [p for p in PAIRS if _has_path(LIFECYCLE, *p)]
    # 13 starts to 4 wanted states each (manageable, available, active, rescue),
    # plus each stable state to itself for enroll and error.
    assert len(with_path) == 13 * 4 + 2


# -- a derived lifecycle ------------------------------------------------------------------


def test_derived_lifecycle_gets_paths_to_and_from_its_new_state() -> None:
    lc = RETIRED_LIFECYCLE
    assert lc.path(states.MANAGEABLE, RETIRED) == ["retire"]
    assert lc.path(states.ENROLL, RETIRED) == ["manage", "retire"]
    assert lc.path(states.ACTIVE, RETIRED) == ["undeploy", "manage", "retire"]
    assert lc.path(RETIRED, states.ACTIVE) == ["unretire", "provide", "deploy"]
    assert lc.path(RETIRED, RETIRED) == []
    # the base lifecycle is untouched
    with pytest.raises(InvalidState, match="does not exist"):
        LIFECYCLE.path(states.MANAGEABLE, RETIRED)


@pytest.mark.parametrize(
    ("start", "wanted"),
    DERIVED_PAIRS,
    ids=[_pair_id(p) for p in DERIVED_PAIRS],
)
def test_derived_lifecycle_paths_drive_a_conductor(start: str, wanted: str) -> None:
    verbs = RETIRED_LIFECYCLE.path(start, wanted)
    conductor = ironic_fsm.Conductor(lifecycle=RETIRED_LIFECYCLE)
    node = conductor.create_node(provision_state=start)
    for done, verb in enumerate(verbs, 1):
        node = conductor.do_provisioning_action(node.uuid, verb)
        assert RETIRED_LIFECYCLE.path(node.provision_state, wanted) == verbs[done:]
    assert node.provision_state == wanted


def test_derived_flow_transition_counts_for_its_flows_end() -> None:
    # A new transition into an existing flow (provide -> cleaning) counts for
    # where that flow ends (available), not for the state it enters; and the
    # conductor, which runs its own flow for the event, agrees.
    lc = RETIRED_LIFECYCLE.derive(add_transitions=[(RETIRED, "provide", states.CLEANING)])
    assert lc.path(RETIRED, states.AVAILABLE) == ["provide"]
    assert lc.path(RETIRED, states.ACTIVE) == ["provide", "deploy"]
    conductor = ironic_fsm.Conductor(lifecycle=lc)
    node = conductor.create_node(provision_state=RETIRED)
    for verb in lc.path(RETIRED, states.ACTIVE):
        node = conductor.do_provisioning_action(node.uuid, verb)
    assert node.provision_state == states.ACTIVE


def test_removed_transition_changes_paths() -> None:
    lc = LIFECYCLE.derive(remove_transitions=[(states.CLEANFAIL, "manage")])
    with pytest.raises(InvalidState, match="No path from 'clean failed'"):
        lc.path(states.CLEANFAIL, states.AVAILABLE)


def test_timings_for_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    """Not an assertion on speed: prints the figures the report quotes."""
    LIFECYCLE.path(states.ENROLL, states.ACTIVE)
    for start, wanted in ((states.ACTIVE, states.ACTIVE), (states.ENROLL, states.ACTIVE)):
        n = 100_000
        t0 = time.perf_counter()
        for _ in range(n):
            LIFECYCLE.path(start, wanted)
        per_call = (time.perf_counter() - t0) / n * 1e6
        with capsys.disabled():
            print(f"\npath({start!r}, {wanted!r}): {per_call:.3f} us per call")
