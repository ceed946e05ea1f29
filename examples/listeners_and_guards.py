"""Listeners hear every transition and step; guards veto the verbs they do not like.

Run it with ``python examples/listeners_and_guards.py``. It prints the
events of one deployment in the order listeners receive them, shows that a
failing listener does not stop a flow, and lets two guards turn requests
down.
"""

from __future__ import annotations

import logging
import queue

import ironic_fsm
from ironic_fsm import exceptions
from ironic_fsm.events import Event


def describe(event: Event) -> str:
    """One line per event: transitions show state changes, step events the step."""
    if event.step is not None:
        step = f"{event.step['interface']}.{event.step['step']}"
        error = f"  error={event.error!r}" if event.error else ""
        return f"{event.name:<35} {step} (in {event.state!r}){error}"
    return (
        f"{event.name:<35} {event.previous_state!r} --{event.event}--> {event.state!r}"
        f" target={event.target!r}"
    )


def broken_listener(event: Event) -> None:
    """A listener with a bug: the conductor logs the error and carries on."""
    raise RuntimeError("this listener is broken")


class OneLineHandler(logging.Handler):
    """Show log records on stdout as one short line (no traceback)."""

    def emit(self, record: logging.LogRecord) -> None:
        print(f"   (log {record.levelname}) {record.getMessage()}")


def approved_for_tenants(
    node: ironic_fsm.Node, verb: str, event: str, new_state: str
) -> str | None:
    """Guard: only nodes with the CUSTOM_BURNED_IN trait may be deployed."""
    if event == "deploy" and "CUSTOM_BURNED_IN" not in node.traits:
        return "the node has not passed burn-in (trait CUSTOM_BURNED_IN missing)"
    return None


def change_window(node: ironic_fsm.Node, verb: str, event: str, new_state: str) -> str | None:
    """Guard: no tear-down of nodes whose extra says they are frozen."""
    if event == "delete" and node.extra.get("frozen"):
        return f"node is frozen until {node.extra['frozen']}"
    return None


def main() -> None:
    """Deploy with listeners attached, then let the guards refuse two requests."""
    events: queue.SimpleQueue[Event] = queue.SimpleQueue()
    conductor = ironic_fsm.Conductor(
        listeners=[events.put],  # any callable taking one Event
        guards=[approved_for_tenants],
    )
    conductor.add_guard(change_window)

    conductor.create_node(
        name="gpu-3",
        driver_info={"ipmi_address": "10.0.0.3", "ipmi_password": "s3cret"},
        traits=["CUSTOM_BURNED_IN"],
    )
    for verb in ("manage", "provide", "deploy"):
        conductor.do_provisioning_action("gpu-3", verb)

    print("1. Events of manage, provide and deploy, in the order listeners got them:")
    while not events.empty():
        print("  ", describe(events.get()))

    print("2. A failed step produces step.fail, then provision_set.error:")
    conductor.create_node(name="gpu-4", provision_state="manageable")
    conductor.do_provisioning_action(
        "gpu-4", "clean", clean_steps=[{"interface": "raid", "step": "create_configuration"}]
    )
    while not events.empty():
        print("  ", describe(events.get()))

    print("3. Guards veto user requests; nothing changes and no event is sent:")
    conductor.create_node(name="gpu-5", provision_state="available")
    conductor.update_node("gpu-3", extra={"frozen": "2025-01-31"})
    for name, verb in (("gpu-5", "deploy"), ("gpu-3", "undeploy")):
        try:
            conductor.do_provisioning_action(name, verb)
        except exceptions.TransitionRejected as exc:
            print(f"   {verb} {name}: TransitionRejected: {exc.details['reason']}")
            print(f"   {name} is still {conductor.get_node(name).provision_state!r}")
    print(f"   events sent: {0 if events.empty() else 'some'}")

    print("4. Secrets never reach events: step arguments are masked")
    seen: list[Event] = []
    conductor.add_listener(seen.append)
    conductor.create_node(name="gpu-6", provision_state="active")
    conductor.do_provisioning_action(
        "gpu-6",
        "service",
        service_steps=[
            {
                "interface": "firmware",
                "step": "update",
                "args": {"settings": [{"url": "http://fw/bmc.bin", "auth_token": "abc123"}]},
            }
        ],
    )
    step_args = next(e.step["args"] for e in seen if e.step is not None)
    print(f"   step.start args: {step_args}")

    print("5. A listener that raises is logged; the flow goes on:")
    logging.getLogger("ironic_fsm").addHandler(OneLineHandler())
    flaky = ironic_fsm.Conductor(listeners=[broken_listener])
    node = flaky.create_node(name="gpu-7")
    node = flaky.do_provisioning_action(node.uuid, "manage")
    print(f"   gpu-7 is {node.provision_state!r} all the same")


if __name__ == "__main__":
    main()
