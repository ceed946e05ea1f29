"""ironic_fsm.states: Ironic's constants, state sets and verbs (docs/states.rst)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from ironic_fsm import states

DATA = Path(__file__).parents[1] / "data"


def _states_table() -> list[dict[str, str]]:
    with (DATA / "states.tsv").open(newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


STATES_TSV = _states_table()


def _where(column: str) -> frozenset[str]:
    return frozenset(row["state_value"] for row in STATES_TSV if row[column] == "True")


def _accepting(event: str) -> frozenset[str]:
    return frozenset(
        row["state_value"] for row in STATES_TSV if event in row["events_accepted"].split(",")
    )


EXPECTED_CONSTANTS = {
    "ENROLL": "enroll",
    "VERIFYING": "verifying",
    "MANAGEABLE": "manageable",
    "INSPECTING": "inspecting",
    "INSPECTWAIT": "inspect wait",
    "INSPECTFAIL": "inspect failed",
    "CLEANING": "cleaning",
    "CLEANWAIT": "clean wait",
    "CLEANFAIL": "clean failed",
    "CLEANHOLD": "clean hold",
    "AVAILABLE": "available",
    "DEPLOYING": "deploying",
    "DEPLOYWAIT": "wait call-back",
    "DEPLOYFAIL": "deploy failed",
    "DEPLOYHOLD": "deploy hold",
    "ACTIVE": "active",
    "DELETING": "deleting",
    "ERROR": "error",
    "ADOPTING": "adopting",
    "ADOPTFAIL": "adopt failed",
    "RESCUING": "rescuing",
    "RESCUEWAIT": "rescue wait",
    "RESCUEFAIL": "rescue failed",
    "RESCUE": "rescue",
    "UNRESCUING": "unrescuing",
    "UNRESCUEFAIL": "unrescue failed",
    "SERVICING": "servicing",
    "SERVICEWAIT": "service wait",
    "SERVICEFAIL": "service failed",
    "SERVICEHOLD": "service hold",
}


@pytest.mark.parametrize(("name", "value"), sorted(EXPECTED_CONSTANTS.items()))
def test_constant_has_ironic_string(name: str, value: str) -> None:
    assert getattr(states, name) == value


def test_table_has_thirty_states() -> None:
    assert len(STATES_TSV) == 30
    assert len(EXPECTED_CONSTANTS) == 30


@pytest.mark.parametrize("row", STATES_TSV, ids=lambda r: r["state_value"])
def test_constant_names_match_states_table(row: dict[str, str]) -> None:
    for name in row["constant_names"].split(","):
        assert getattr(states, name.strip()) == row["state_value"]


def test_nostate_is_none() -> None:
    assert states.NOSTATE is None


#: Each state set of ``states``, and where the table says what it holds: a column,
#: or (wait and hold states) the event that exactly these states accept.
STATE_SET_SOURCES = {
    "STABLE_STATES": _where("stable"),
    "FAILURE_STATES": _where("in_FAILURE_STATES"),
    "WAIT_STATES": _accepting("resume"),
    "HOLD_STATES": _accepting("unhold"),
    "UNSTABLE_STATES": _where("in_UNSTABLE_STATES"),
    "STUCK_STATES_TREATED_AS_FAIL": _where("in_STUCK_STATES_TREATED_AS_FAIL"),
    "DELETE_ALLOWED_STATES": _where("in_DELETE_ALLOWED_STATES"),
}

#: The sets written out, as Ironic has them.
STATE_SETS_SPELLED_OUT = {
    "STABLE_STATES": {"enroll", "manageable", "available", "active", "error", "rescue"},
    "WAIT_STATES": {"wait call-back", "clean wait", "inspect wait", "rescue wait", "service wait"},
    "HOLD_STATES": {"deploy hold", "clean hold", "service hold"},
}


@pytest.mark.parametrize("name", sorted(STATE_SET_SOURCES))
def test_state_set_matches_table(name: str) -> None:
    assert frozenset(getattr(states, name)) == STATE_SET_SOURCES[name]


@pytest.mark.parametrize("name", sorted(STATE_SETS_SPELLED_OUT))
def test_state_set_holds_ironics_states(name: str) -> None:
    assert frozenset(getattr(states, name)) == STATE_SETS_SPELLED_OUT[name]


def test_failure_states_are_the_seven_failed_states() -> None:
    assert len(states.FAILURE_STATES) == 7
    assert all(state.endswith(" failed") for state in states.FAILURE_STATES)


def test_holds_and_failures_are_neither_stable_nor_unstable() -> None:
    for state in states.HOLD_STATES | states.FAILURE_STATES:
        assert state not in states.STABLE_STATES
        assert state not in states.UNSTABLE_STATES


def test_state_sets_only_name_known_states() -> None:
    known = set(EXPECTED_CONSTANTS.values())
    for group in (
        states.STABLE_STATES,
        states.FAILURE_STATES,
        states.WAIT_STATES,
        states.HOLD_STATES,
        states.UNSTABLE_STATES,
    ):
        assert set(group) <= known


#: Ironic's fifteen API provision targets, and the machine event each one fires.
IRONIC_VERBS = {
    "active": "deploy",
    "deploy": "deploy",
    "deleted": "delete",
    "undeploy": "delete",
    **{
        verb: verb
        for verb in (
            "rebuild", "manage", "provide", "inspect", "clean", "adopt", "rescue", "unrescue",
            "abort", "unhold", "service",
        )
    },
}  # fmt: skip


def test_verbs_are_exactly_ironics_fifteen_api_targets() -> None:
    assert dict(states.VERBS) == IRONIC_VERBS
    assert len(IRONIC_VERBS) == 15


def test_internal_events_are_not_verbs() -> None:
    for event in ("done", "fail", "wait", "resume", "hold"):
        assert event not in states.VERBS


def test_power_states() -> None:
    assert states.POWER_ON == "power on"
    assert states.POWER_OFF == "power off"
    assert states.REBOOT == "rebooting"
