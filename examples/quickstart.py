"""Take one node through manage -> provide -> deploy -> undeploy on fake hardware.

Run it with ``python examples/quickstart.py``. It prints every transition
and every step as the conductor reports them, from a listener.
"""

from __future__ import annotations

import ironic_fsm
from ironic_fsm.events import Event


def show(event: Event) -> None:
    """Print one event as a line of the story."""
    if event.step is not None:
        step = f"{event.step['interface']}.{event.step['step']}"
        print(f"    {event.name:<11} {step}")
    else:
        target = f" (target {event.target})" if event.target else ""
        print(f"  {event.previous_state:>10} --{event.event}--> {event.state}{target}")


def main() -> ironic_fsm.Node:
    """Run the lifecycle once and return the node as it ends."""
    conductor = ironic_fsm.Conductor(listeners=[show])
    node = conductor.create_node(name="demo-0", driver="fake-hardware")
    print(f"enrolled {node.name} ({node.uuid}) in {node.provision_state!r}")
    for verb in ("manage", "provide", "deploy", "undeploy"):
        print(f"{verb}:")
        node = conductor.do_provisioning_action(node.uuid, verb)
    print(f"{node.name} is {node.provision_state!r}, power {node.power_state!r}")
    return node


if __name__ == "__main__":
    main()
