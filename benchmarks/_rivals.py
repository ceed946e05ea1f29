"""The state machines ironic_fsm is compared with, built the way their users build them.

* ``automaton``: a :class:`automaton.machines.FiniteMachine` holding Ironic's
  30 states and 93 transitions, with Ironic's logging watchers as
  ``on_enter``/``on_exit`` and ``stable``/``target`` in each state's entry
  (as ``ironic.common.fsm.FSM.add_state`` stores them). Ironic's target
  bookkeeping (``FSM._post_process_event``) is done in plain Python by the
  benchmark loops, around ``process_event``.
* ``transitions``: one shared :class:`transitions.Machine` without a model;
  every node gets its own model object through ``add_model``.

The definition is read from Ironic's reference tables
(``states.tsv``/``transitions.tsv``) when they are found, else taken from
:data:`ironic_fsm.LIFECYCLE` (the two are checked to agree when both exist).
"""

from __future__ import annotations

import csv
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from ironic_fsm import LIFECYCLE

__all__ = [
    "LIFECYCLE_TRIPLES",
    "Definition",
    "TransitionsModel",
    "build_automaton",
    "build_transitions",
    "load_definition",
]

#: The lifecycle the per-transition benchmarks cycle through, as Ironic's
#: conductor meets it: ``(provision_state, target_provision_state, event)``.
#: enroll -manage-> verifying -done-> manageable -provide-> cleaning -done->
#: available -deploy-> deploying -done-> active -delete-> deleting -clean->
#: cleaning -done-> available.
LIFECYCLE_TRIPLES: Final[tuple[tuple[str, str | None, str], ...]] = (
    ("enroll", None, "manage"),
    ("verifying", "manageable", "done"),
    ("manageable", None, "provide"),
    ("cleaning", "available", "done"),
    ("available", None, "deploy"),
    ("deploying", "active", "done"),
    ("active", None, "delete"),
    ("deleting", "available", "clean"),
    ("cleaning", "available", "done"),
)

_LOG = logging.getLogger("benchmarks.ironic_states")


def _on_exit(old_state: str, event: str) -> None:
    # ironic.common.states.on_exit
    _LOG.debug("Exiting old state '%s' in response to event '%s'", old_state, event)


def _on_enter(new_state: str, event: str) -> None:
    # ironic.common.states.on_enter
    _LOG.debug("Entering new state '%s' in response to event '%s'", new_state, event)


@dataclass(frozen=True)
class Definition:
    """Ironic's provisioning machine as plain data."""

    states: tuple[tuple[str, bool, str | None], ...]  # (name, stable, default target)
    transitions: tuple[tuple[str, str, str], ...]  # (source, event, dest)
    initial: str
    source: str  # where it was read from

    @property
    def next_state(self) -> dict[tuple[str, str], str]:
        return {(src, ev): dst for src, ev, dst in self.transitions}

    @property
    def default_target(self) -> dict[str, str | None]:
        return {name: target for name, _, target in self.states}

    @property
    def stable(self) -> dict[str, bool]:
        return {name: stable for name, stable, _ in self.states}


def _reference_dir() -> Path | None:
    candidates = [os.environ.get("IRONIC_FSM_REFERENCE_DIR", "")]
    candidates.append(str(Path(__file__).resolve().parents[2] / "shared" / "reference"))
    for candidate in candidates:
        if candidate and (Path(candidate) / "transitions.tsv").is_file():
            return Path(candidate)
    return None


def _from_lifecycle() -> Definition:
    return Definition(
        states=tuple(
            (name, LIFECYCLE.is_stable(name), LIFECYCLE.default_target(name))
            for name in LIFECYCLE.states
        ),
        transitions=tuple((e.source, e.event, e.dest) for e in LIFECYCLE.transitions),
        initial=LIFECYCLE.initial,
        source="ironic_fsm.LIFECYCLE (reference tables not found)",
    )


def load_definition() -> Definition:
    """Ironic's machine, from the reference tables if present.

    Raises:
        RuntimeError: the reference tables and ``LIFECYCLE`` disagree, which
            would make the comparison meaningless.
    """
    ref = _reference_dir()
    if ref is None:
        return _from_lifecycle()
    with open(ref / "states.tsv", newline="") as fh:
        state_rows = list(csv.DictReader(fh, delimiter="\t"))
    with open(ref / "transitions.tsv", newline="") as fh:
        edge_rows = list(csv.DictReader(fh, delimiter="\t"))
    states = tuple(
        (
            row["state_value"],
            row["stable"] == "True",
            None if row["default_target"] == "None" else row["default_target"],
        )
        for row in state_rows
    )
    edges = tuple((row["source_state"], row["event"], row["target_state"]) for row in edge_rows)
    fallback = _from_lifecycle()
    if set(edges) != set(fallback.transitions) or set(states) != set(fallback.states):
        raise RuntimeError(f"{ref}: reference tables differ from ironic_fsm.LIFECYCLE")
    return Definition(states, edges, "enroll", f"{ref}/{{states,transitions}}.tsv")


def build_automaton(defn: Definition) -> Any:
    """Ironic's machine as an automaton ``FiniteMachine`` (the shared prototype)."""
    from automaton import machines

    machine = machines.FiniteMachine()
    # Stable states first: Ironic adds targets only once they exist.
    for name, stable, target in sorted(defn.states, key=lambda s: not s[1]):
        machine.add_state(name, on_enter=_on_enter, on_exit=_on_exit)
        # What ironic.common.fsm.FSM.add_state keeps beside automaton's keys.
        entry = cast(dict[str, Any], machine._states[name])
        entry["stable"] = stable
        entry["target"] = target
    for source, event, dest in defn.transitions:
        machine.add_transition(source, dest, event)
    machine.default_start_state = defn.initial
    return machine


def build_transitions(defn: Definition) -> Any:
    """One shared ``transitions.Machine`` with no model; nodes join with ``add_model``."""
    from transitions import Machine

    return Machine(
        model=None,
        states=[name for name, _, _ in defn.states],
        transitions=[
            {"trigger": event, "source": source, "dest": dest}
            for source, event, dest in defn.transitions
        ],
        initial=None,
        auto_transitions=False,
    )


class TransitionsModel:
    """A per-node model for the shared ``transitions`` machine (needs a ``__dict__``)."""

    state: str
    trigger: Callable[[str], bool]  # set by add_model
