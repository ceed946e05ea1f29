"""ironic_fsm.machine: the lifecycle table, target bookkeeping, derivation, diagrams."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import attrs
import pytest

from ironic_fsm import states
from ironic_fsm.exceptions import InvalidDefinition, InvalidState, IronicFSMError
from ironic_fsm.machine import FLOW_EVENTS, LIFECYCLE, Lifecycle, StateSpec, Transition
from ironic_fsm.node import Node

DATA = Path(__file__).parents[1] / "data"


def _read(name: str) -> list[dict[str, str]]:
    with (DATA / name).open(newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def _none(value: str) -> str | None:
    return None if value == "None" else value


TRANSITIONS_TSV = _read("transitions.tsv")
DETAIL_TSV = _read("transitions_detail.tsv")
STATES_TSV = _read("states.tsv")

EXPECTED_TRANSITIONS = {(r["source_state"], r["event"], r["target_state"]) for r in TRANSITIONS_TSV}
EXPECTED_STATES = {r["state_value"] for r in STATES_TSV}
EXPECTED_EVENTS = {
    "abort", "adopt", "clean", "delete", "deploy", "done", "fail", "hold", "inspect",
    "manage", "provide", "rebuild", "rescue", "resume", "service", "unhold", "unrescue",
    "wait",
}  # fmt: skip


# -- the table -------------------------------------------------------------------


def test_reference_tables_have_the_documented_sizes() -> None:
    assert len(TRANSITIONS_TSV) == 93
    assert len(EXPECTED_TRANSITIONS) == 93
    assert len(DETAIL_TSV) == 93
    assert len(STATES_TSV) == 30


def test_lifecycle_has_exactly_the_thirty_states() -> None:
    assert len(LIFECYCLE.states) == 30
    assert set(LIFECYCLE.states) == EXPECTED_STATES
    assert len(set(LIFECYCLE.states)) == len(LIFECYCLE.states)


def test_lifecycle_has_exactly_the_eighteen_events() -> None:
    assert set(LIFECYCLE.events) == EXPECTED_EVENTS
    assert {r["event"] for r in TRANSITIONS_TSV} == EXPECTED_EVENTS
    assert len(LIFECYCLE.events) == 18


def test_lifecycle_has_exactly_the_93_transitions() -> None:
    got = [tuple(t) for t in LIFECYCLE.transitions]
    assert len(got) == 93
    assert set(got) == EXPECTED_TRANSITIONS
    assert not set(got) - EXPECTED_TRANSITIONS
    assert not EXPECTED_TRANSITIONS - set(got)


def test_transitions_are_source_event_target_triples() -> None:
    for transition in LIFECYCLE.transitions:
        source, event, target = transition
        assert source in EXPECTED_STATES
        assert event in EXPECTED_EVENTS
        assert target in EXPECTED_STATES


@pytest.mark.parametrize("row", TRANSITIONS_TSV, ids=lambda r: f"{r['source_state']}-{r['event']}")
def test_next_state_follows_table(row: dict[str, str]) -> None:
    assert LIFECYCLE.next_state(row["source_state"], row["event"]) == row["target_state"]


@pytest.mark.parametrize("row", STATES_TSV, ids=lambda r: r["state_value"])
def test_stable_flag_matches_table(row: dict[str, str]) -> None:
    assert LIFECYCLE.is_stable(row["state_value"]) is (row["stable"] == "True")


@pytest.mark.parametrize("row", STATES_TSV, ids=lambda r: r["state_value"])
def test_default_target_matches_table(row: dict[str, str]) -> None:
    assert LIFECYCLE.default_target(row["state_value"]) == _none(row["default_target"])


@pytest.mark.parametrize("row", STATES_TSV, ids=lambda r: r["state_value"])
def test_allowed_events_match_table(row: dict[str, str]) -> None:
    expected = sorted(row["events_accepted"].split(","))
    assert sorted(LIFECYCLE.allowed_events(row["state_value"])) == expected


def test_stable_states_property() -> None:
    expected = {r["state_value"] for r in STATES_TSV if r["stable"] == "True"}
    assert set(LIFECYCLE.stable_states) == expected
    assert set(LIFECYCLE.stable_states) == set(states.STABLE_STATES)


def test_no_done_from_wait_or_hold_states() -> None:
    for state in states.WAIT_STATES | states.HOLD_STATES:
        if state == states.INSPECTWAIT:
            continue  # inspect wait --done--> manageable is Ironic's one exception
        assert "done" not in LIFECYCLE.allowed_events(state)


def test_flow_events() -> None:
    assert frozenset({"wait", "hold", "unhold", "resume", "abort", "fail"}) == FLOW_EVENTS


# -- errors ----------------------------------------------------------------------


def test_invalid_pair_names_state_event_and_allowed_events() -> None:
    with pytest.raises(InvalidState) as info:
        LIFECYCLE.next_state("enroll", "deploy")
    message = str(info.value)
    assert "'enroll'" in message
    assert "'deploy'" in message
    assert "manage" in message
    assert info.value.state == "enroll"
    assert info.value.event == "deploy"
    assert tuple(info.value.allowed) == ("manage",)


def test_invalid_pair_lists_every_allowed_event() -> None:
    with pytest.raises(InvalidState) as info:
        LIFECYCLE.next_state("clean wait", "done")
    for event in ("abort", "fail", "hold", "resume"):
        assert event in str(info.value)
    assert "'clean wait'" in str(info.value)


def test_invalid_event_name_raises_invalid_state() -> None:
    with pytest.raises(InvalidState, match="no-such-event"):
        LIFECYCLE.next_state("manageable", "no-such-event")


def test_invalid_advance_raises_invalid_state() -> None:
    with pytest.raises(InvalidState, match="active"):
        LIFECYCLE.advance("active", None, "provide")


@pytest.mark.parametrize(
    "call",
    [
        lambda: LIFECYCLE.next_state("bogus", "manage"),
        lambda: LIFECYCLE.is_stable("bogus"),
        lambda: LIFECYCLE.default_target("bogus"),
        lambda: LIFECYCLE.allowed_events("bogus"),
        lambda: LIFECYCLE.advance("bogus", None, "manage"),
    ],
    ids=["next_state", "is_stable", "default_target", "allowed_events", "advance"],
)
def test_unknown_state_raises_invalid_state(call: object) -> None:
    with pytest.raises(InvalidState, match="bogus"):
        call()  # type: ignore[operator]


def test_invalid_state_is_an_ironic_fsm_error() -> None:
    with pytest.raises(IronicFSMError):
        LIFECYCLE.next_state("available", "rescue")


# -- target bookkeeping -------------------------------------------------------------


@pytest.mark.parametrize(
    "row", DETAIL_TSV, ids=lambda r: f"{r['source_state']}-{r['event']}-{r['target_state']}"
)
def test_advance_follows_ironic_bookkeeping(row: dict[str, str]) -> None:
    source = row["source_state"]
    assert LIFECYCLE.default_target(source) == _none(row["source_default_target"])
    got = LIFECYCLE.advance(source, LIFECYCLE.default_target(source), row["event"])
    assert got == (row["target_state"], _none(row["node_target_if_no_callback"]))


def test_entering_stable_state_clears_target() -> None:
    assert LIFECYCLE.advance("cleaning", "available", "done") == ("available", None)
    assert LIFECYCLE.advance("deploying", "active", "done") == ("active", None)


def test_non_flow_event_sets_default_target_like_ironic() -> None:
    # deleting --clean--> cleaning is not a flow event: the default target wins.
    assert LIFECYCLE.advance("deleting", "manageable", "clean") == ("cleaning", "available")


def _walk(start: str, target: str, events: list[str]) -> list[tuple[str, str | None]]:
    state: str = start
    current: str | None = target
    seen = []
    for event in events:
        state, current = LIFECYCLE.advance(state, current, event)
        seen.append((state, current))
    return seen


def test_manual_clean_starts_with_explicit_target() -> None:
    assert LIFECYCLE.advance("manageable", None, "clean", target_state="manageable") == (
        "cleaning",
        "manageable",
    )
    # Without the explicit target it would be Ironic's default.
    assert LIFECYCLE.advance("manageable", None, "clean") == ("cleaning", "available")


def test_manual_clean_keeps_manageable_through_wait_hold_unhold_resume() -> None:
    state, target = LIFECYCLE.advance("manageable", None, "clean", target_state="manageable")
    walk = _walk(state, target, ["wait", "hold", "unhold", "resume", "hold"])  # type: ignore[arg-type]
    assert walk == [
        ("clean wait", "manageable"),
        ("clean hold", "manageable"),
        ("clean wait", "manageable"),
        ("cleaning", "manageable"),
        ("clean hold", "manageable"),
    ]
    # abort from the hold, then the operator manages the node again
    assert _walk("clean hold", "manageable", ["abort", "manage"]) == [
        ("clean failed", "manageable"),
        ("manageable", None),
    ]


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (["fail"], [("clean failed", "manageable")]),
        (["wait", "fail"], [("clean wait", "manageable"), ("clean failed", "manageable")]),
        (["wait", "abort"], [("clean wait", "manageable"), ("clean failed", "manageable")]),
        (["hold", "abort"], [("clean hold", "manageable"), ("clean failed", "manageable")]),
        (
            ["wait", "hold", "unhold", "resume", "manage"],
            [
                ("clean wait", "manageable"),
                ("clean hold", "manageable"),
                ("clean wait", "manageable"),
                ("cleaning", "manageable"),
                ("manageable", None),
            ],
        ),
    ],
)
def test_manual_clean_target_survives_every_flow_event(
    events: list[str], expected: list[tuple[str, str | None]]
) -> None:
    assert _walk("cleaning", "manageable", events) == expected


def test_manual_clean_finishes_with_manage() -> None:
    assert LIFECYCLE.advance("cleaning", "manageable", "manage") == ("manageable", None)
    assert LIFECYCLE.advance("clean failed", "manageable", "manage") == ("manageable", None)


@pytest.mark.parametrize(
    ("start", "verb", "busy", "wait", "hold", "target"),
    [
        ("manageable", "provide", "cleaning", "clean wait", "clean hold", "available"),
        ("available", "deploy", "deploying", "wait call-back", "deploy hold", "active"),
        ("active", "service", "servicing", "service wait", "service hold", "active"),
    ],
    ids=["automated-clean", "deploy", "service"],
)
def test_step_flow_keeps_its_default_target(
    start: str, verb: str, busy: str, wait: str, hold: str, target: str
) -> None:
    walk = _walk(start, None, [verb, "wait", "hold", "unhold", "resume", "done"])  # type: ignore[arg-type]
    assert walk == [
        (busy, target),
        (wait, target),
        (hold, target),
        (wait, target),
        (busy, target),
        (target, None),
    ]


def test_retired_tear_down_clean_keeps_manageable() -> None:
    # Cleaning a retired node after tear-down ends in manageable.
    state, target = LIFECYCLE.advance("deleting", "available", "clean", target_state="manageable")
    assert (state, target) == ("cleaning", "manageable")
    assert _walk(state, target, ["wait", "resume", "manage"]) == [
        ("clean wait", "manageable"),
        ("cleaning", "manageable"),
        ("manageable", None),
    ]


@pytest.mark.parametrize(
    ("start", "events", "wait", "hold", "failed"),
    [
        ("servicing", ["wait", "hold", "unhold", "resume", "fail"],
         "service wait", "service hold", "service failed"),
        ("deploying", ["wait", "hold", "unhold", "resume", "fail"],
         "wait call-back", "deploy hold", "deploy failed"),
    ],
)  # fmt: skip
def test_explicit_target_kept_in_service_and_deploy_flows(
    start: str, events: list[str], wait: str, hold: str, failed: str
) -> None:
    # Use a target other than the default so that a reset would show.
    walk = _walk(start, "manageable", events)
    assert walk == [
        (wait, "manageable"),
        (hold, "manageable"),
        (wait, "manageable"),
        (start, "manageable"),
        (failed, "manageable"),
    ]
    assert _walk(hold, "manageable", ["abort"]) == [(failed, "manageable")]
    assert _walk(wait, "manageable", ["abort"]) == [(failed, "manageable")]


def test_service_failed_abort_returns_to_active() -> None:
    assert LIFECYCLE.advance("service failed", "active", "abort") == ("active", None)


def test_deploy_flow_with_explicit_target_argument() -> None:
    state, target = LIFECYCLE.advance("available", None, "deploy", target_state="active")
    assert (state, target) == ("deploying", "active")
    assert LIFECYCLE.advance(state, target, "wait", target_state="active") == (
        "wait call-back",
        "active",
    )


def test_explicit_target_given_on_flow_event_wins() -> None:
    assert LIFECYCLE.advance("clean wait", "available", "resume", target_state="manageable") == (
        "cleaning",
        "manageable",
    )


def test_explicit_target_ignored_when_landing_in_stable_state() -> None:
    assert LIFECYCLE.advance("cleaning", "manageable", "manage", target_state="manageable") == (
        "manageable",
        None,
    )


@pytest.mark.parametrize("bad", ["cleaning", "clean wait", "bogus"])
def test_explicit_target_must_be_stable(bad: str) -> None:
    with pytest.raises(InvalidState, match=re.escape(bad)):
        LIFECYCLE.advance("manageable", None, "clean", target_state=bad)


def test_advance_is_pure() -> None:
    before = list(LIFECYCLE.transitions)
    for _ in range(3):
        assert LIFECYCLE.advance("manageable", None, "clean", target_state="manageable") == (
            "cleaning",
            "manageable",
        )
    assert LIFECYCLE.advance("manageable", None, "clean") == ("cleaning", "available")
    assert list(LIFECYCLE.transitions) == before


# -- no machine on nodes ---------------------------------------------------------------


def test_node_carries_no_machine() -> None:
    field_names = {f.name for f in attrs.fields(Node)}
    slots = set(getattr(Node, "__slots__", ()))
    assert slots, "Node should be a slotted attrs class"
    assert slots - {"__weakref__"} <= field_names
    node = Node()
    assert not hasattr(node, "__dict__")
    before = set(dir(node))
    node.provision_state, node.target_provision_state = LIFECYCLE.advance(
        node.provision_state, node.target_provision_state, "manage"
    )
    assert (node.provision_state, node.target_provision_state) == ("verifying", "manageable")
    assert set(dir(node)) == before
    for name in ("machine", "state", "trigger", "manage", "may_manage", "to_verifying"):
        assert name not in field_names
        assert not hasattr(node, name)
    with pytest.raises(AttributeError):
        node.machine = object()  # type: ignore[attr-defined]


# -- derivation ------------------------------------------------------------------------


def _retired() -> Lifecycle:
    return LIFECYCLE.derive(
        add_states=[StateSpec("retired", stable=True)],
        add_transitions=[
            Transition("manageable", "retire", "retired"),
            ("retired", "unretire", "manageable"),
        ],
        add_verbs={"retire": "retire", "unretire": "unretire"},
    )


def test_derive_adds_retired_state() -> None:
    derived = _retired()
    assert isinstance(derived, Lifecycle)
    assert "retired" in derived.states
    assert len(derived.states) == 31
    assert len(list(derived.transitions)) == 95
    assert derived.is_stable("retired")
    assert derived.default_target("retired") is None
    assert derived.next_state("manageable", "retire") == "retired"
    assert derived.next_state("retired", "unretire") == "manageable"
    assert derived.advance("manageable", None, "retire") == ("retired", None)
    assert derived.allowed_events("retired") == ("unretire",)
    assert "retire" in derived.allowed_events("manageable")
    assert derived.verbs["retire"] == "retire"
    assert {"retire", "unretire"} <= set(derived.events)


def test_derive_keeps_the_original_lifecycle() -> None:
    derived = _retired()
    assert "retired" not in LIFECYCLE.states
    assert "retire" not in LIFECYCLE.verbs
    assert len(list(LIFECYCLE.transitions)) == 93
    with pytest.raises(InvalidState):
        LIFECYCLE.next_state("manageable", "retire")
    # and the derived one kept everything of the original
    assert {tuple(t) for t in LIFECYCLE.transitions} <= {tuple(t) for t in derived.transitions}
    assert derived.advance("cleaning", "manageable", "wait") == ("clean wait", "manageable")


def test_derive_can_remove_transitions() -> None:
    derived = LIFECYCLE.derive(remove_transitions=[("available", "manage")])
    assert "manage" not in derived.allowed_events("available")
    assert len(list(derived.transitions)) == 92


def test_derived_non_stable_state_gets_its_default_target() -> None:
    derived = LIFECYCLE.derive(
        add_states=[StateSpec("retired", True), StateSpec("retiring", False, "retired")],
        add_transitions=[
            ("manageable", "retire", "retiring"),
            ("retiring", "done", "retired"),
            ("retired", "unretire", "manageable"),
        ],
    )
    assert derived.advance("manageable", None, "retire") == ("retiring", "retired")
    assert derived.advance("retiring", "retired", "done") == ("retired", None)


def test_derive_rejects_unstable_default_target() -> None:
    with pytest.raises(InvalidDefinition, match="cleaning"):
        LIFECYCLE.derive(
            add_states=[StateSpec("retiring", False, "cleaning")],
            add_transitions=[("manageable", "retire", "retiring")],
        )


def test_derive_rejects_unknown_default_target() -> None:
    with pytest.raises(InvalidDefinition, match="nowhere"):
        LIFECYCLE.derive(
            add_states=[StateSpec("retiring", False, "nowhere")],
            add_transitions=[("manageable", "retire", "retiring")],
        )


def test_derive_rejects_unreachable_state() -> None:
    with pytest.raises(InvalidDefinition, match="orphan"):
        LIFECYCLE.derive(add_states=[StateSpec("orphan", True)])


def test_derive_rejects_state_unreachable_after_removal() -> None:
    with pytest.raises(InvalidDefinition, match="adopt"):
        LIFECYCLE.derive(remove_transitions=[("manageable", "adopt"), ("adopt failed", "adopt")])


def test_derive_rejects_transition_to_undeclared_state() -> None:
    with pytest.raises(InvalidDefinition, match="retired"):
        LIFECYCLE.derive(add_transitions=[("manageable", "retire", "retired")])


def test_derive_rejects_transition_from_undeclared_state() -> None:
    with pytest.raises(InvalidDefinition, match="limbo"):
        LIFECYCLE.derive(add_transitions=[("limbo", "manage", "manageable")])


def test_derive_rejects_one_pair_leading_to_two_places() -> None:
    with pytest.raises(InvalidDefinition) as info:
        LIFECYCLE.derive(add_transitions=[("manageable", "provide", "available")])
    message = str(info.value)
    assert "provide" in message
    assert "manageable" in message
    assert "available" in message
    assert "cleaning" in message


def test_derive_rejects_verb_for_unused_event() -> None:
    with pytest.raises(InvalidDefinition, match="retire"):
        LIFECYCLE.derive(add_verbs={"retire": "retire"})


def test_duplicate_state_declaration_rejected() -> None:
    with pytest.raises(InvalidDefinition, match="manageable"):
        LIFECYCLE.derive(add_states=[StateSpec("manageable", True)])


def test_invalid_definition_is_an_ironic_fsm_error() -> None:
    assert issubclass(InvalidDefinition, IronicFSMError)


def test_lifecycle_built_from_scratch() -> None:
    tiny = Lifecycle(
        [StateSpec("off", True), StateSpec("booting", False, "on"), StateSpec("on", True)],
        [("off", "boot", "booting"), ("booting", "done", "on"), ("on", "halt", "off")],
        initial="off",
        verbs={"boot": "boot"},
    )
    assert tiny.states == ("off", "booting", "on")
    assert tiny.advance("off", None, "boot") == ("booting", "on")
    assert tiny.advance("booting", "on", "done") == ("on", None)


# -- diagrams ---------------------------------------------------------------------------


def test_to_dot_contains_every_state_and_event() -> None:
    dot = LIFECYCLE.to_dot()
    assert dot.lstrip().startswith("digraph")
    for state in EXPECTED_STATES:
        assert f'"{state}"' in dot
    for source, event, target in EXPECTED_TRANSITIONS:
        assert f'"{source}" -> "{target}"' in dot
        assert f'label="{event}"' in dot


def test_to_mermaid_contains_every_state_as_label() -> None:
    text = LIFECYCLE.to_mermaid()
    assert "stateDiagram" in text
    labels = dict(re.findall(r'state "([^"]+)" as (\S+)', text))
    assert set(labels) == EXPECTED_STATES
    assert "clean wait" in labels
    assert " " not in labels["clean wait"]
    for ident in labels.values():
        assert re.fullmatch(r"[A-Za-z0-9_]+", ident), ident


def test_to_mermaid_edges_use_ids_without_spaces() -> None:
    text = LIFECYCLE.to_mermaid()
    labels = dict(re.findall(r'state "([^"]+)" as (\S+)', text))
    ids = set(labels.values())
    edges = re.findall(r"^\s*(\S+) --> (\S+?):\s*(.+)$", text, flags=re.MULTILINE)
    assert edges
    drawn: set[tuple[str, str, str]] = set()
    for source, dest, events in edges:
        assert source in ids
        assert dest in ids
        for event in events.split("|"):
            drawn.add((source, event.strip(), dest))
    expected = {(labels[s], e, labels[t]) for s, e, t in EXPECTED_TRANSITIONS}
    assert drawn == expected


def test_repr_mentions_size() -> None:
    assert "30 states" in repr(LIFECYCLE)
    assert "93 transitions" in repr(LIFECYCLE)


def test_redeclaring_an_existing_transition_adds_nothing() -> None:
    derived = LIFECYCLE.derive(add_transitions=[("available", "manage", "manageable")])
    assert len(list(derived.transitions)) == 93
    assert {tuple(t) for t in derived.transitions} == EXPECTED_TRANSITIONS
    assert derived.to_dot().count('"available" -> "manageable"') == 1


def test_to_dot_of_some_states_draws_them_and_only_the_transitions_between_them() -> None:
    """One flow per diagram (the docs draw each readable at a page's width)."""
    flow = ["manageable", "cleaning", "clean wait", "clean failed", "available"]
    dot = LIFECYCLE.to_dot(flow)
    drawn = set(re.findall(r'^  "([^"]+)" \[label=', dot, flags=re.M))
    assert drawn == set(flow)
    edges = set(re.findall(r'^  "([^"]+)" -> "([^"]+)" \[label="([^"]+)"\]', dot, flags=re.M))
    expected = {(s, d, e) for s, e, d in LIFECYCLE.transitions if s in flow and d in flow}
    assert edges == {(s, d, e) for s, d, e in expected}
    assert ("cleaning", "manageable", "manage") in edges
    assert "__start__" not in dot  # enroll, where the lifecycle starts, is not drawn
    with pytest.raises(InvalidState, match="'nowhere'"):
        LIFECYCLE.to_dot(["manageable", "nowhere"])
