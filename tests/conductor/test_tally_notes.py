"""The conductor's tally counts the same with or without listeners, and what it never saw begin.

With the tally alone, a flow builds no Event; with a listener too, Events are
built beside what the tally reads. Both must count alike, and so must a
conductor that gained its listener in the middle of a flow. A
flow picked up mid-way (the node found waiting) counts its outcome, not a
duration.
"""

from __future__ import annotations

from collections.abc import Callable

from helpers import Clock, make_conductor, metric_samples, new_node, step

from ironic_fsm import Config, states
from ironic_fsm.conductor import Conductor
from ironic_fsm.metrics import Metrics

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
#: The families the tally fills (the node gauges and the conductor's own are left out).
TALLIED = (
    "ironic_fsm_flows", "ironic_fsm_flow_duration", "ironic_fsm_steps", "ironic_fsm_step_duration",
    "ironic_fsm_provision_state_changes", "ironic_fsm_driver_call",
)  # fmt: skip


def tallied(metrics: Metrics) -> Samples:
    """The tally's samples, but the driver calls' summed seconds (timed, never alike)."""
    return {
        key: v
        for key, v in metric_samples(metrics).items()
        if key[0].startswith(TALLIED) and key[0] != "ironic_fsm_driver_call_duration_seconds_sum"
    }


def drive(conductor: Conductor, clock: Clock, midway: Callable[[], None]) -> None:
    """Cleans that succeed, fail, are aborted and time out; a lifecycle; ``midway`` called
    while a clean waits on its asynchronous step."""
    for name in ("step_a", "boom"):
        node = new_node(conductor, states.MANAGEABLE).uuid
        clock.advance(7)
        conductor.do_provisioning_action(node, "clean", clean_steps=[step("vendor", name)])
    waiting = new_node(conductor, states.MANAGEABLE).uuid
    conductor.do_provisioning_action(waiting, "clean", clean_steps=[step("vendor", "async_clean")])
    midway()
    clock.advance(11)
    conductor.do_provisioning_action(waiting, "abort")
    late = new_node(conductor, states.MANAGEABLE).uuid
    conductor.do_provisioning_action(late, "clean", clean_steps=[step("vendor", "async_clean")])
    assert conductor.check_timeouts(now=clock.advance(3600)) == [late]
    node = new_node(conductor).uuid
    for verb in ("manage", "provide", "deploy", "undeploy"):
        clock.advance(3)
        conductor.do_provisioning_action(node, verb)
    assert conductor.get_node(node).provision_state == states.AVAILABLE


def counted(listen: str) -> Samples:
    """What the tally counted of :func:`drive`: ``listen`` ``never``, ``always`` (a
    listener from the start) or ``midway`` (one added while a flow waits)."""
    clock = Clock()
    conductor = make_conductor(clock=clock, config=Config(clean_callback_timeout=600))
    metrics = Metrics(conductor)
    heard: list[str] = []
    if listen == "always":
        conductor.add_listener(lambda event: heard.append(event.name))
    drive(conductor, clock, lambda: conductor.add_listener(lambda event: heard.append(event.name))
          if listen == "midway" else None)  # fmt: skip
    assert bool(heard) is (listen != "never")
    return tallied(metrics)


def cleaning(name: str, outcome: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return (name, frozenset({("phase", "cleaning"), ("outcome", outcome)}))


def test_the_tally_counts_alike_with_a_listener_from_the_start_or_midway() -> None:
    alone = counted("never")
    assert alone[cleaning("ironic_fsm_flows_total", "aborted")] == 1
    assert alone[cleaning("ironic_fsm_flows_total", "timed_out")] == 1
    assert alone[cleaning("ironic_fsm_flow_duration_seconds_sum", "aborted")] == 11
    assert counted("always") == alone
    assert counted("midway") == alone


def test_a_flow_picked_up_midway_counts_its_outcome_not_a_duration() -> None:
    conductor = make_conductor()
    metrics = Metrics(conductor)
    node = new_node(conductor, states.CLEANWAIT, target_provision_state=states.AVAILABLE).uuid
    conductor.do_provisioning_action(node, "abort")
    assert conductor.get_node(node).provision_state == states.CLEANFAIL
    samples = tallied(metrics)
    assert samples[cleaning("ironic_fsm_flows_total", "aborted")] == 1
    assert samples.get(cleaning("ironic_fsm_flow_duration_seconds_count", "aborted"), 0) == 0
    assert not any(name == "ironic_fsm_flows_started_total" and value for (name, _), value
                   in samples.items())  # fmt: skip
