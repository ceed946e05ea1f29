"""Extend Ironic's lifecycle with a state of your own, and drive nodes through it.

Run it with ``python examples/derived_lifecycle.py``. The application adds a
stable ``retired`` state, reached from ``manageable`` with a ``retire`` verb
and left with ``unretire``. The derived lifecycle is validated when it is
built (every default target stable, every state reachable from ``enroll``, no
edge to an undeclared state, no verb without a transition), so a mistake in
it fails at import time, not in production. A conductor given the derived
lifecycle accepts the new verbs like Ironic's own.
"""

from __future__ import annotations

import ironic_fsm
from ironic_fsm.exceptions import InvalidDefinition, InvalidStateRequested
from ironic_fsm.machine import StateSpec

RETIRED = "retired"

LIFECYCLE = ironic_fsm.LIFECYCLE.derive(
    add_states=[StateSpec(RETIRED, stable=True)],
    add_transitions=[
        (ironic_fsm.states.MANAGEABLE, "retire", RETIRED),
        (RETIRED, "unretire", ironic_fsm.states.MANAGEABLE),
    ],
    add_verbs={"retire": "retire", "unretire": "unretire"},
)


def main() -> None:
    """Retire a node through the new state, and show what validation refuses."""
    print(LIFECYCLE)
    print(f"retired accepts: {', '.join(LIFECYCLE.allowed_events(RETIRED))}")
    conductor = ironic_fsm.Conductor(lifecycle=LIFECYCLE)
    node = conductor.create_node(name="old-box")
    for verb in ("manage", "retire"):
        node = conductor.do_provisioning_action(node.uuid, verb)
        print(f"{verb:>8} -> {node.provision_state}")
    try:
        conductor.do_provisioning_action(node.uuid, "provide")
    except InvalidStateRequested as exc:
        print(f" provide -> refused: {exc}")
    node = conductor.do_provisioning_action(node.uuid, "unretire")
    print(f"unretire -> {node.provision_state}")
    try:
        ironic_fsm.LIFECYCLE.derive(add_states=[StateSpec("limbo", stable=True)])
    except InvalidDefinition as exc:
        print(f"an unreachable state is refused: {exc}")


if __name__ == "__main__":
    main()
