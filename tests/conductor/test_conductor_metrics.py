"""Prometheus metrics of a conductor: what a scrape reads matches what the nodes went through.

Each scrape is parsed by prometheus_client's own text parser, as Prometheus
reads it. The flows run on the test hardware with a clock the test moves,
so that durations are known to the second; the node gauges are checked
against a listing of the same store (a GROUP BY on SQLite, a count of the
listing on MemoryStore).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from helpers import Clock, make_conductor, metric_samples, new_node, step

from ironic_fsm import Config, states
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.metrics import Metrics
from ironic_fsm.stores import SQLStore

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
scrape = metric_samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def family(samples: Samples, name: str) -> dict[frozenset[tuple[str, str]], float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


def test_flows_steps_and_outcomes_are_counted_as_they_happened() -> None:
    clock = Clock()
    conductor = make_conductor(clock=clock, config=Config(clean_callback_timeout=600))
    metrics = Metrics(conductor)
    # The steps take time on the conductor's clock: each recorded step moves it 30 s.
    conductor.add_listener(lambda event: clock.advance(30) if event.name == "step.start" else None)

    ok = [new_node(conductor, states.MANAGEABLE).uuid for _ in range(4)]
    for uuid in ok:
        conductor.do_provisioning_action(uuid, "clean", clean_steps=[step("vendor", "step_a")])
    boom = new_node(conductor, states.MANAGEABLE).uuid
    conductor.do_provisioning_action(boom, "clean", clean_steps=[step("vendor", "boom")])
    aborted = new_node(conductor, states.MANAGEABLE).uuid
    conductor.do_provisioning_action(aborted, "clean", clean_steps=[step("vendor", "async_clean")])
    conductor.do_provisioning_action(aborted, "abort")
    late = new_node(conductor, states.MANAGEABLE).uuid
    conductor.do_provisioning_action(late, "clean", clean_steps=[step("vendor", "async_clean")])
    assert conductor.get_node(late).provision_state == states.CLEANWAIT
    assert conductor.check_timeouts(now=clock.advance(3600)) == [late]

    assert [conductor.get_node(u).provision_state for u in ok] == [states.MANAGEABLE] * 4
    assert {conductor.get_node(u).provision_state for u in (boom, aborted, late)} == {
        states.CLEANFAIL
    }
    samples = scrape(metrics)
    assert value(samples, "ironic_fsm_flows_started_total", phase="cleaning") == 7
    outcomes = {"succeeded": 4, "failed": 1, "aborted": 1, "timed_out": 1}
    for outcome, count in outcomes.items():
        assert value(samples, "ironic_fsm_flows_total", phase="cleaning", outcome=outcome) == count
        assert (
            value(samples, "ironic_fsm_flow_duration_seconds_count", phase="cleaning",
                  outcome=outcome) == count
        )  # fmt: skip
    # A successful clean: one step of 30 s on the conductor's clock.
    assert (
        value(samples, "ironic_fsm_flow_duration_seconds_sum", phase="cleaning",
              outcome="succeeded") == 4 * 30
    )  # fmt: skip
    assert (
        value(samples, "ironic_fsm_flow_duration_seconds_bucket", phase="cleaning",
              outcome="succeeded", le="10.0") == 0
    )  # fmt: skip
    assert (
        value(samples, "ironic_fsm_flow_duration_seconds_bucket", phase="cleaning",
              outcome="succeeded", le="30.0") == 4
    )  # fmt: skip
    # The timed-out flow waited 30 s in its step and 3600 s more.
    assert (
        value(samples, "ironic_fsm_flow_duration_seconds_sum", phase="cleaning",
              outcome="timed_out") == 3630
    )  # fmt: skip
    step_a = {"phase": "cleaning", "interface": "vendor", "step": "step_a"}
    assert value(samples, "ironic_fsm_steps_total", outcome="succeeded", **step_a) == 4
    assert value(samples, "ironic_fsm_step_duration_seconds_count", **step_a) == 4
    assert value(samples, "ironic_fsm_step_duration_seconds_sum", **step_a) == 4 * 30
    boom_step = {"phase": "cleaning", "interface": "vendor", "step": "boom"}
    assert value(samples, "ironic_fsm_steps_total", outcome="failed", **boom_step) == 1
    assert value(samples, "ironic_fsm_steps_total", outcome="succeeded", **boom_step) == 0
    # No label carries a node's UUID or name.
    every_label = {v for (_, labels) in samples for _, v in labels}
    assert not every_label & {*ok, boom, aborted, late}


def test_node_gauges_match_a_listing_of_the_store() -> None:
    conductor = make_conductor()
    metrics = Metrics(conductor)
    for state, group in [(states.AVAILABLE, ""), (states.AVAILABLE, "rack-1"),
                         (states.ACTIVE, "rack-1"), (states.MANAGEABLE, "rack-2")]:  # fmt: skip
        new_node(conductor, state, conductor_group=group)
    new_node(conductor, states.ACTIVE, maintenance=True, maintenance_reason="broken",
             fault="power failure")  # fmt: skip
    new_node(conductor, states.AVAILABLE, maintenance=True, maintenance_reason="by hand")
    new_node(conductor, states.CLEANING, driver="fake-hardware")  # queued: nobody holds it
    samples = scrape(metrics)
    nodes = conductor.list_nodes()
    by_state = Counter(n.provision_state for n in nodes)
    assert family(samples, "ironic_fsm_nodes") == {
        frozenset({("provision_state", state)}): count for state, count in by_state.items()
    }
    assert family(samples, "ironic_fsm_nodes_by_conductor_group") == {
        frozenset({("conductor_group", group)}): count
        for group, count in Counter(n.conductor_group for n in nodes).items()
    }
    assert family(samples, "ironic_fsm_nodes_by_driver") == {
        frozenset({("driver", "test-hardware")}): 6,
        frozenset({("driver", "fake-hardware")}): 1,
    }
    assert value(samples, "ironic_fsm_nodes_maintenance") == 2
    assert family(samples, "ironic_fsm_nodes_fault") == {frozenset({("fault", "power failure")}): 1}
    assert value(samples, "ironic_fsm_work_queue_depth") == 1
    assert value(samples, "ironic_fsm_nodes_reserved") == 0
    assert value(samples, "ironic_fsm_store_up") == 1


def test_driver_calls_heartbeats_and_power_sync_are_counted() -> None:
    conductor = make_conductor(config=Config(host="metrics-test"))
    metrics = Metrics(conductor)
    good = new_node(conductor, states.ACTIVE, power_state=states.POWER_ON)
    bad = new_node(conductor, states.MANAGEABLE, driver="test-bad-power")
    conductor.set_power_state(good.uuid, states.POWER_OFF)
    conductor.do_provisioning_action(bad.uuid, "provide")  # its power.validate raises
    conductor.heartbeat()
    conductor.heartbeat()
    report = conductor.sync_power_states()
    samples = scrape(metrics)
    power = {"driver": "test-hardware", "interface": "power", "method": "set_power_state"}
    assert value(samples, "ironic_fsm_driver_call_duration_seconds_count", **power) == 1
    failed = {"driver": "test-bad-power", "interface": "power", "method": "validate"}
    errors = family(samples, "ironic_fsm_driver_call_errors_total")
    assert [dict(labels) for labels in errors] == [{**failed, "error": "InvalidParameterValue"}]
    assert value(samples, "ironic_fsm_conductor_heartbeats_total", result="ok") == 2
    assert value(samples, "ironic_fsm_power_sync_passes_total") == 1
    assert value(samples, "ironic_fsm_power_sync_nodes_total", outcome="checked") == len(
        report.checked
    ) > 0  # fmt: skip
    assert value(samples, "ironic_fsm_conductors_alive") == 1


def test_two_conductors_keep_their_own_registries() -> None:
    first, second = make_conductor(), make_conductor()
    first_metrics, second_metrics = Metrics(first), Metrics(second)
    node = new_node(first, states.MANAGEABLE)
    first.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "step_a")])
    assert value(scrape(first_metrics), "ironic_fsm_flows_total", phase="cleaning",
                 outcome="succeeded") == 1  # fmt: skip
    assert value(scrape(second_metrics), "ironic_fsm_flows_total", phase="cleaning",
                 outcome="succeeded") == 0  # fmt: skip


def test_count_nodes_refuses_what_it_cannot_count_cheaply() -> None:
    conductor = make_conductor()
    with pytest.raises(InvalidParameterValue, match="Cannot count nodes by 'uuid'"):
        conductor.count_nodes("uuid")
    with pytest.raises(InvalidParameterValue, match="maintenance must be True, False or None"):
        conductor.count_nodes("driver", maintenance="yes")  # type: ignore[arg-type]


def test_node_counts_are_served_while_newer_ones_are_read() -> None:
    conductor = make_conductor()
    metrics = Metrics(conductor, node_counts_max_age=0.2)
    new_node(conductor, states.AVAILABLE)
    assert value(scrape(metrics), "ironic_fsm_nodes", provision_state="available") == 1
    new_node(conductor, states.AVAILABLE)
    first = scrape(metrics)  # the counts of the first scrape, served without a read
    assert value(first, "ironic_fsm_nodes", provision_state="available") == 1
    deadline = time.monotonic() + 60
    while value(scrape(metrics), "ironic_fsm_nodes", provision_state="available") != 2:
        assert time.monotonic() < deadline, "the counts were never read again"
        time.sleep(0.05)
    assert value(scrape(metrics), "ironic_fsm_node_counts_age_seconds") < 60


def test_two_live_conductors_each_count_their_share_of_the_nodes(tmp_path: Path) -> None:
    with SQLStore(f"sqlite:///{tmp_path / 'shared.sqlite'}") as store:
        first = make_conductor(store=store, config=Config(host="conductor-a"))
        second = make_conductor(store=store, config=Config(host="conductor-b"))
        first.register()
        second.register()
        for _ in range(40):
            new_node(first, states.AVAILABLE)
        owned = [
            value(scrape(Metrics(conductor)), "ironic_fsm_conductor_nodes_owned")
            for conductor in (first, second)
        ]
        assert sum(owned) == 40
        assert min(owned) > 0, owned
        mine = sum(1 for n in first.list_nodes() if first.owns(n.uuid, n.driver, ""))
        assert owned[0] == mine
