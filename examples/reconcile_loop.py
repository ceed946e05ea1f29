"""An operator's reconcile loop: say where each node should be, not which verbs get it there.

Run it with ``python examples/reconcile_loop.py``. Five nodes on fake
hardware start in different places; a dict says where each should end up.
Every round calls :meth:`Conductor.reconcile` once per node that is not
there yet. A call issues at most one verb (the next of
``LIFECYCLE.path(state, wanted)``) and returns at once: a node that is busy
(here, its flow runs in a thread pool) is simply left alone until it rests.
Each round prints one progress line. A node reconcile refuses (retired,
in maintenance, protected, no path) is reported and dropped from the loop;
the node itself is left as it was.
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import ironic_fsm
from ironic_fsm import LIFECYCLE, exceptions
from ironic_fsm.events import Event

#: Where each node starts, and where the operator wants it.
FLEET = {
    "web-1": ("enroll", "active"),
    "web-2": ("enroll", "available"),
    "db-1": ("active", "manageable"),
    "spare-1": ("clean failed", "available"),
    "old-1": ("manageable", "available"),  # retired below: never provided
}

#: A pause between rounds; the loop, not the library, decides how often to look.
ROUND_SECONDS = 0.02
MAX_ROUNDS = 500


def progress(round_no: int, nodes: dict[str, ironic_fsm.Node], wanted: dict[str, str]) -> str:
    """One line: how many nodes are there, then every node's state."""
    there = sum(nodes[name].provision_state == wanted[name] for name in wanted)
    states = " ".join(f"{name}={nodes[name].provision_state}" for name in sorted(wanted))
    return f"round {round_no:3}: {there}/{len(wanted)} there | {states}"


def main() -> None:
    """Reconcile the fleet until every node is where it should be."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        verbs: Counter[str] = Counter()

        def count_verbs(event: Event) -> None:
            """A verb's first transition is the one that leaves a resting state."""
            if event.step is None and event.previous_state in LIFECYCLE.resting_states:
                verbs[event.node] += 1

        conductor = ironic_fsm.Conductor(executor=pool, listeners=[count_verbs])
        for name, (state, _) in FLEET.items():
            conductor.create_node(name=name, driver="fake-hardware", provision_state=state)
        conductor.update_node("old-1", retired=True, retired_reason="end of warranty")
        wanted = {name: goal for name, (_, goal) in FLEET.items()}
        for round_no in range(1, MAX_ROUNDS + 1):
            nodes = {}
            for name in list(wanted):
                try:
                    node = conductor.reconcile(name, wanted[name])
                except exceptions.IronicFSMError as exc:
                    print(f"  {name}: not reconciled ({type(exc).__name__}): {exc}")
                    del wanted[name]
                    continue
                nodes[name] = node
            print(progress(round_no, nodes, wanted), flush=True)
            if all(nodes[name].provision_state == wanted[name] for name in wanted):
                break
            time.sleep(ROUND_SECONDS)
        else:
            raise SystemExit(f"the fleet did not settle in {MAX_ROUNDS} rounds")

    print(f"settled after {round_no} rounds:")
    for name in sorted(wanted):
        start = FLEET[name][0]
        print(
            f"  {name}: {start} -> {wanted[name]} in {verbs[nodes[name].uuid]} verb(s) "
            f"({', '.join(LIFECYCLE.path(start, wanted[name]))})"
        )


if __name__ == "__main__":
    main()
