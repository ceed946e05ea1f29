"""Memory per node beyond the node record, measured with tracemalloc.

The node records are built first (untraced). Then, traced, each node takes
one transition decision (``enroll -manage-> verifying``, target
``manageable``) and its fields are updated:

* ironic_fsm: ``LIFECYCLE.advance`` on the record's own fields; nothing else
  is kept, so the extra memory should be about zero;
* automaton: the shared machine shallow-copied per node, initialized,
  ``process_event``; the copies are kept (in a list), as a per-node machine
  would be;
* automaton as Ironic 39's ``TaskManager`` copies it (``machine.copy()``),
  and ``copy.deepcopy``: both kept alive, i.e. the memory of that many
  concurrent tasks;
* transitions: one shared ``Machine``, a model per node added with
  ``add_model``, ``model.trigger``; models kept.

Slow rivals run on fewer nodes and are reported per node. The size of one
``ironic_fsm.Node`` record (defaults, fresh UUID) is reported for context.

Run alone: ``python benchmarks/bench_memory.py [--quick]``.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from typing import Any

from _harness import Section, SummaryRow, Table, fmt_bytes, fmt_ratio, run_alone, traced_bytes
from _rivals import (
    Definition,
    TransitionsModel,
    build_automaton,
    build_transitions,
    load_definition,
)

from ironic_fsm import LIFECYCLE, Node

GOAL_EXTRA_BYTES = 16  # "about zero": allow a little measurement noise
EVENT = "manage"


def _reset(nodes: list[Node]) -> None:
    for node in nodes:
        node.provision_state = "enroll"
        node.target_provision_state = None


def _ironic_fsm(nodes: list[Node]) -> Callable[[], object]:
    advance = LIFECYCLE.advance

    def build() -> object:
        for node in nodes:
            node.provision_state, node.target_provision_state = advance(
                node.provision_state, node.target_provision_state, EVENT
            )
        return None

    return build


def _record(node: Node, current: str, defaults: Mapping[str, str | None]) -> None:
    """The node record after a rival machine moved: Ironic's target rule, as the conductor."""
    target = node.target_provision_state
    if target is not None and target == current:
        target = None
    if defaults[current] is not None:
        target = defaults[current]
    node.provision_state, node.target_provision_state = current, target


def _automaton(
    nodes: list[Node], defn: Definition, clone: Callable[[Any], Any]
) -> Callable[[], object]:
    proto = build_automaton(defn)
    defaults = defn.default_target

    def build() -> object:
        machines = []
        for node in nodes:
            machine = clone(proto)
            machine.initialize(node.provision_state)
            machine.process_event(EVENT)
            current = machine.current_state
            _record(node, current, defaults)
            machines.append(machine)
        return machines

    return build


def _transitions(nodes: list[Node], defn: Definition) -> Callable[[], object]:
    machine = build_transitions(defn)
    defaults = defn.default_target

    def build() -> object:
        models = []
        for node in nodes:
            model = TransitionsModel()
            machine.add_model(model, initial=node.provision_state)
            model.trigger(EVENT)
            current = model.state
            _record(node, current, defaults)
            models.append(model)
        return (machine, models)

    return build


def _per_node(build: Callable[[], object], nodes: list[Node]) -> tuple[float, float]:
    """Extra bytes per node, and seconds the traced build took."""
    _reset(nodes)
    started = time.perf_counter()
    extra, kept = traced_bytes(build)
    seconds = time.perf_counter() - started
    if nodes[0].provision_state != "verifying" or nodes[-1].target_provision_state != "manageable":
        raise AssertionError("the transition was not applied to the node records")
    del kept
    return extra / len(nodes), seconds


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    defn = load_definition()
    n_main = 10_000 if quick else 100_000  # ironic_fsm and the automaton shallow copy
    n_copy = 1_000 if quick else 10_000  # automaton copy() and transitions
    n_deep = 100 if quick else 1_000  # copy.deepcopy

    record_bytes, records = traced_bytes(lambda: [Node() for _ in range(n_main)])
    nodes: list[Node] = records  # type: ignore[assignment]
    per_record = record_bytes / n_main

    measured: list[tuple[str, int, float, float]] = []
    for name, n, build in [
        ("ironic_fsm: LIFECYCLE.advance on the record", n_main, _ironic_fsm(nodes)),
        (
            "automaton: shallow copy per node, kept",
            n_main,
            _automaton(nodes, defn, lambda m: m.copy(shallow=True)),
        ),
        (
            "automaton: machine.copy() per node (Ironic 39 TaskManager), kept",
            n_copy,
            _automaton(nodes[:n_copy], defn, lambda m: m.copy()),
        ),
        (
            "automaton: copy.deepcopy per node, kept",
            n_deep,
            _automaton(nodes[:n_deep], defn, copy.deepcopy),
        ),
        (
            "transitions: shared Machine + add_model per node",
            n_copy,
            _transitions(nodes[:n_copy], defn),
        ),
    ]:
        per_node, seconds = _per_node(build, nodes[:n])
        measured.append((name, n, per_node, seconds))

    table = Table(
        "Extra memory per node beyond the Node record (one transition decision each)",
        [
            "implementation",
            "nodes",
            "bytes / node",
            f"for {n_main:,} nodes",
            "/ Node record",
            "traced s",
        ],
    )
    table.add(
        "(context) one ironic_fsm.Node record itself",
        f"{n_main:,}",
        fmt_bytes(per_record),
        fmt_bytes(record_bytes),
        "1.00x",
        "-",
    )
    for name, n, per_node, seconds in measured:
        table.add(
            name,
            f"{n:,}",
            fmt_bytes(per_node),
            fmt_bytes(per_node * n_main),
            fmt_ratio(max(per_node, 0.0) / per_record),
            f"{seconds:.1f}",
        )
    table.notes += [
        "tracemalloc 'current' after minus before, with gc.collect() around; "
        "temporaries are freed, kept objects count",
        "kept machines/models sit in a list (8 B/node of that is the list slot)",
        f"rows on fewer than {n_main:,} nodes are scaled per node; "
        f"'for {n_main:,} nodes' extrapolates",
    ]

    fsm_extra = measured[0][2]
    section = Section("2. Memory per node", [table])
    section.summary += [
        SummaryRow(
            f"ironic_fsm extra bytes/node ({n_main:,} nodes)",
            fmt_bytes(fsm_extra),
            f"~0 (< {GOAL_EXTRA_BYTES} B)",
            fsm_extra < GOAL_EXTRA_BYTES,
        ),
        SummaryRow("Node record size", fmt_bytes(per_record), "-", None),
    ]
    section.summary += [
        SummaryRow(f"{name.split(',')[0]} extra bytes/node", fmt_bytes(per_node), "-", None)
        for name, _, per_node, _ in measured[1:]
    ]
    section.seconds = time.perf_counter() - started
    return section


if __name__ == "__main__":
    run_alone(run, __doc__)
