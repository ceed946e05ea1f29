"""One transition decision with target bookkeeping, side by side.

Every case decides the same cycle of ``(state, target, event)`` triples
(:data:`_rivals.LIFECYCLE_TRIPLES`, 9 transitions of a node's lifecycle) and
computes the new ``(provision_state, target_provision_state)``:

(a)  the floor: ``next[(state, event)]`` plus ``default_target[next]``;
(b)  ``ironic_fsm.LIFECYCLE.advance(state, target, event)``;
(c)  automaton, the shared machine shallow-copied per node, initialized at
     the node's state, ``process_event`` and Ironic's bookkeeping;
(c') automaton, the same copies kept per node: ``process_event`` only;
(c2) automaton, Ironic 39's ``TaskManager``: ``machine.copy()`` (automaton's
     non-shallow copy) per task, ``initialize``, ``process_event``;
(c3) automaton, ``copy.deepcopy`` of the machine per task;
(d)  transitions, one shared ``Machine``, a model per node (``add_model``),
     ``model.trigger(event)`` and the same bookkeeping.

Run alone: ``python benchmarks/bench_machine.py [--quick]``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from _harness import (
    Case,
    Section,
    SummaryRow,
    Table,
    autosize,
    fmt_ns,
    fmt_ratio,
    measure,
    run_alone,
)
from _rivals import (
    LIFECYCLE_TRIPLES,
    Definition,
    TransitionsModel,
    build_automaton,
    build_transitions,
    load_definition,
)

from ironic_fsm import LIFECYCLE

GOAL_FLOOR_RATIO = 3.0  # advance within 3x of the dict floor
GOAL_AUTOMATON_RATIO = 10.0  # advance at least 10x faster than automaton copy-per-node

_Triple = tuple[str, "str | None", str]

FLOOR = "(a) dict[(state, event)] + dict[target] (floor)"
ADVANCE = "(b) ironic_fsm LIFECYCLE.advance"
AUTOMATON_COPY = "(c) automaton: shallow copy per node + initialize + process_event"
AUTOMATON_KEPT = "(c') automaton: kept per-node shallow copy, process_event only"
AUTOMATON_IRONIC = "(c2) automaton: Ironic 39 TaskManager, machine.copy() per task"
AUTOMATON_DEEP = "(c3) automaton: copy.deepcopy(machine) per task"
TRANSITIONS = "(d) transitions: shared Machine, add_model per node, trigger"
LOOP = "loop only, no decision (overhead included in every row)"


def _check_agreement(defn: Definition) -> None:
    """Every implementation must reach the same (state, target) for every triple."""
    expected = [LIFECYCLE.advance(*triple) for triple in LIFECYCLE_TRIPLES]
    proto = build_automaton(defn)
    machine = build_transitions(defn)
    defaults = defn.default_target
    for (state, target, event), want in zip(LIFECYCLE_TRIPLES, expected, strict=True):
        m = proto.copy(shallow=True)
        m.initialize(state)
        m.process_event(event)
        cur = m.current_state
        tgt = None if target == cur else target
        tgt = defaults[cur] if defaults[cur] is not None else tgt
        model = TransitionsModel()
        machine.add_model(model, initial=state)
        model.trigger(event)
        if (cur, tgt) != want or model.state != want[0]:
            raise AssertionError(f"{state} -{event}->: automaton {cur, tgt}, ironic_fsm {want}")


# -- per-transition cases ---------------------------------------------------------
# Each factory takes a number of laps of the 9-transition cycle and returns a
# Case; the loops are written out (not shared helpers) so that every case pays
# exactly one Python loop iteration and its own work, nothing else.


def _loop_case(laps: int) -> Case:
    work = list(LIFECYCLE_TRIPLES) * laps

    def run() -> None:
        for _state, _target, _event in work:
            pass

    return Case(LOOP, run, len(work))


def _floor_case(defn: Definition) -> Callable[[int], Case]:
    nxt = defn.next_state
    defaults = defn.default_target

    def make(laps: int) -> Case:
        work = list(LIFECYCLE_TRIPLES) * laps

        def run() -> None:
            for state, _target, event in work:
                dest = nxt[state, event]
                _new_target = defaults[dest]

        return Case(FLOOR, run, len(work))

    return make


def _advance_case(laps: int) -> Case:
    work = list(LIFECYCLE_TRIPLES) * laps
    lifecycle = LIFECYCLE

    def run() -> None:
        for state, target, event in work:
            lifecycle.advance(state, target, event)

    return Case(ADVANCE, run, len(work))


def _automaton_per_task_case(
    defn: Definition, name: str, clone: Callable[[Any], Any]
) -> Callable[[int], Case]:
    """Copy the shared machine, initialize at the node's state, process the event."""
    proto = build_automaton(defn)
    defaults = defn.default_target
    stable = defn.stable

    def make(laps: int) -> Case:
        work = list(LIFECYCLE_TRIPLES) * laps

        def run() -> None:
            for state, target, event in work:
                machine = clone(proto)
                machine.initialize(state)
                if target is not None and not stable[target]:  # FSM._validate_target_state
                    raise ValueError(target)
                machine.process_event(event)
                # ironic.common.fsm.FSM._post_process_event
                current = machine.current_state
                if target is not None and target == current:
                    target = None
                default = defaults[current]
                if default is not None:
                    target = default

        return Case(name, run, len(work))

    return make


def _automaton_kept_case(defn: Definition) -> Callable[[int], Case]:
    """One shallow copy per node, made beforehand and kept; time process_event only."""
    proto = build_automaton(defn)
    defaults = defn.default_target

    def make(laps: int) -> Case:
        nodes: list[tuple[Any, str, str | None, str]] = []
        for _ in range(laps):
            for state, target, event in LIFECYCLE_TRIPLES:
                nodes.append((proto.copy(shallow=True), state, target, event))
        work = [(m, target, event) for m, _state, target, event in nodes]

        def reset() -> None:
            for machine, state, _target, _event in nodes:
                machine.initialize(state)

        def run() -> None:
            for machine, target, event in work:
                machine.process_event(event)
                current = machine.current_state
                if target is not None and target == current:
                    target = None
                default = defaults[current]
                if default is not None:
                    target = default

        return Case(AUTOMATON_KEPT, run, len(work), reset)

    return make


def _transitions_case(defn: Definition) -> Callable[[int], Case]:
    """One shared Machine; a model per node added beforehand; time trigger only."""
    defaults = defn.default_target

    def make(laps: int) -> Case:
        machine = build_transitions(defn)
        nodes: list[tuple[TransitionsModel, str, str | None, str]] = []
        for _ in range(laps):
            for state, target, event in LIFECYCLE_TRIPLES:
                model = TransitionsModel()
                machine.add_model(model, initial=state)
                nodes.append((model, state, target, event))
        work = [(model, target, event) for model, _state, target, event in nodes]

        def reset() -> None:
            for model, state, _target, _event in nodes:
                machine.set_state(state, model)

        def run() -> None:
            for model, target, event in work:
                model.trigger(event)
                current = model.state
                if target is not None and target == current:
                    target = None
                default = defaults[current]
                if default is not None:
                    target = default

        return Case(TRANSITIONS, run, len(work), reset)

    return make


# -- per-node set-up cases --------------------------------------------------------


def _setup_automaton(
    defn: Definition, name: str, clone: Callable[[Any], Any]
) -> Callable[[int], Case]:
    proto = build_automaton(defn)

    def make(nodes: int) -> Case:
        states = [LIFECYCLE_TRIPLES[i % len(LIFECYCLE_TRIPLES)][0] for i in range(nodes)]

        def run() -> None:
            for state in states:
                machine = clone(proto)
                machine.initialize(state)

        return Case(name, run, nodes)

    return make


def _setup_transitions(defn: Definition) -> Callable[[int], Case]:
    def make(nodes: int) -> Case:
        states = [LIFECYCLE_TRIPLES[i % len(LIFECYCLE_TRIPLES)][0] for i in range(nodes)]
        fresh: list[Any] = []

        def reset() -> None:
            # A fresh machine and fresh models each pass: add_model never sees a crowd.
            fresh[:] = [build_transitions(defn), [TransitionsModel() for _ in states]]

        def run() -> None:
            machine, models = fresh
            add_model = machine.add_model
            for model, state in zip(models, states, strict=True):
                add_model(model, initial=state)

        return Case("transitions: add_model(model, initial=state)", run, nodes, reset)

    return make


def _shallow(machine: Any) -> Any:
    return machine.copy(shallow=True)


def _ironic_copy(machine: Any) -> Any:
    return machine.copy()


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    defn = load_definition()
    _check_agreement(defn)
    repeats = 3 if quick else 9
    target_ms = 8.0 if quick else 40.0
    slow_laps = 20 if quick else 120  # caps the per-node objects set up in advance

    cases = [
        autosize(_loop_case, target_ms, 100_000),
        autosize(_floor_case(defn), target_ms, 100_000),
        autosize(_advance_case, target_ms, 100_000),
        autosize(_automaton_per_task_case(defn, AUTOMATON_COPY, _shallow), target_ms, 100_000),
        autosize(_automaton_kept_case(defn), target_ms, 5_000),
        autosize(_automaton_per_task_case(defn, AUTOMATON_IRONIC, _ironic_copy), target_ms, 10_000),
        autosize(
            _automaton_per_task_case(defn, AUTOMATON_DEEP, copy.deepcopy),
            target_ms,
            slow_laps,
        ),
        autosize(_transitions_case(defn), target_ms, slow_laps),
    ]
    timings = measure(cases, repeats)
    floor = timings[FLOOR].best_ns
    advance = timings[ADVANCE].best_ns

    table = Table(
        "Per transition decision with target bookkeeping "
        f"(cycle of {len(LIFECYCLE_TRIPLES)} lifecycle transitions)",
        ["implementation", "best / transition", "median", "ops/pass", "/ floor", "/ ironic_fsm"],
    )
    table.add_timings(cases, timings, floor, advance)
    table.notes += [
        f"machine definition: {len(defn.states)} states, {len(defn.transitions)} transitions "
        f"from {defn.source}",
        f"best of {repeats} interleaved passes (gc disabled while timing); "
        "ratios are of the best figures",
        "automaton cases carry Ironic's on_enter/on_exit logging watchers (DEBUG, disabled) "
        "and its stable/target bookkeeping in plain Python",
        "(c2) is what Ironic 39 runs per TaskManager (automaton's non-shallow copy(), "
        "copying every state's dict); (c3) copy.deepcopy is heavier still",
    ]

    setup_cases = [
        autosize(
            _setup_automaton(defn, "automaton: copy(shallow=True) + initialize", _shallow),
            target_ms,
            100_000,
        ),
        autosize(
            _setup_automaton(defn, "automaton: copy() + initialize (Ironic 39)", _ironic_copy),
            target_ms,
            20_000,
        ),
        autosize(
            _setup_automaton(defn, "automaton: copy.deepcopy + initialize", copy.deepcopy),
            target_ms,
            2_000,
        ),
        autosize(_setup_transitions(defn), target_ms, 2_000 if not quick else 300),
    ]
    setup_timings = measure(setup_cases, max(3, repeats // 2))
    setup = Table(
        "Per-node machine set-up (ironic_fsm: none, a node is only its record)",
        ["implementation", "best / node", "median", "nodes/pass"],
    )
    setup.add("ironic_fsm / dict floor: nothing to set up", "0 ns", "0 ns", "-")
    for case in setup_cases:
        t = setup_timings[case.name]
        setup.add(case.name, fmt_ns(t.best_ns), fmt_ns(t.median_ns), f"{t.ops:,}")

    def ratio(name: str) -> float:
        return timings[name].best_ns / advance

    section = Section("1. Transition decision", [table, setup])
    section.summary += [
        SummaryRow(
            "advance / dict floor",
            f"{fmt_ratio(advance / floor)} ({fmt_ns(advance)} vs {fmt_ns(floor)})",
            f"<= {GOAL_FLOOR_RATIO:.0f}x",
            advance / floor <= GOAL_FLOOR_RATIO,
        ),
        SummaryRow(
            "automaton copy-per-node (c) / advance",
            f"{fmt_ratio(ratio(AUTOMATON_COPY))} ({fmt_ns(timings[AUTOMATON_COPY].best_ns)})",
            f">= {GOAL_AUTOMATON_RATIO:.0f}x",
            ratio(AUTOMATON_COPY) >= GOAL_AUTOMATON_RATIO,
        ),
        SummaryRow(
            "automaton kept copy, process_event only (c') / advance",
            fmt_ratio(ratio(AUTOMATON_KEPT)),
            "-",
            None,
        ),
        SummaryRow(
            "Ironic 39 TaskManager path (c2) / advance",
            fmt_ratio(ratio(AUTOMATON_IRONIC)),
            "-",
            None,
        ),
        SummaryRow("transitions add_model (d) / advance", fmt_ratio(ratio(TRANSITIONS)), "-", None),
    ]
    section.seconds = time.perf_counter() - started
    return section


if __name__ == "__main__":
    run_alone(run, __doc__)
