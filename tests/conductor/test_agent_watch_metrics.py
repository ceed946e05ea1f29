"""Ramdisk agents in the metrics: heartbeats by outcome, commands timed by the process's watch.

Heartbeats go through the conductor as the API hands them over; each
outcome (accepted, or the refusal's class) is counted. Commands are timed by
``ironic_fsm.events.AGENT_COMMANDS``, which the agent client wraps each
request in; here the watch times blocks that answer, and one that raises.
"""

from __future__ import annotations

import gc
import weakref

import pytest
from helpers import make_conductor, metric_samples, new_node

from ironic_fsm import states
from ironic_fsm.agent import token as tokens
from ironic_fsm.agent.client import AgentTimeout
from ironic_fsm.events import AGENT_COMMANDS
from ironic_fsm.exceptions import InvalidParameterValue, NodeNotFound
from ironic_fsm.metrics import Metrics


def test_heartbeats_are_counted_by_outcome() -> None:
    conductor = make_conductor()
    metrics = Metrics(conductor)
    info: dict[str, str] = {}
    token = tokens.issue(info)
    node = new_node(conductor, states.CLEANWAIT, target_provision_state=states.AVAILABLE,
                    driver_internal_info=info)  # fmt: skip
    url = "http://192.0.2.10:9999"
    for _ in range(2):
        conductor.agent_heartbeat(node.uuid, url, agent_token=token, agent_version="13.0.0")
    with pytest.raises(InvalidParameterValue):
        conductor.agent_heartbeat(node.uuid, url, agent_token="wrong", agent_version="13.0.0")
    with pytest.raises(NodeNotFound):
        conductor.agent_heartbeat("no-such-node", url, agent_token=token, agent_version="1")
    samples = metric_samples(metrics)
    beats = {dict(labels)["outcome"]: value for (name, labels), value in samples.items()
             if name == "ironic_fsm_agent_heartbeats_total"}  # fmt: skip
    assert beats == {"accepted": 2, "InvalidParameterValue": 1, "NodeNotFound": 1}


def test_agent_commands_are_timed_and_their_errors_counted_while_the_metrics_live() -> None:
    metrics = Metrics(make_conductor())
    for _ in range(3):
        with AGENT_COMMANDS.timed("node-1", "clean.get_clean_steps"):
            pass
    with pytest.raises(AgentTimeout), AGENT_COMMANDS.timed("node-1", "clean.execute_clean_step"):
        raise AgentTimeout("no answer", node="node-1", command="clean.execute_clean_step")
    samples = metric_samples(metrics)
    count = "ironic_fsm_agent_command_duration_seconds_count"
    assert samples[(count, frozenset({("command", "clean.get_clean_steps")}))] == 3
    assert samples[(count, frozenset({("command", "clean.execute_clean_step")}))] == 1
    errors = {tuple(sorted(dict(labels).items())): value for (name, labels), value
              in samples.items() if name == "ironic_fsm_agent_command_errors_total"}  # fmt: skip
    assert errors == {(("command", "clean.execute_clean_step"), ("error", "AgentTimeout")): 1}
    assert not any("node-1" in dict(labels).values() for _, labels in samples)
    # Held weakly: metrics that are gone are not kept alive by the process's watch.
    gone = weakref.ref(metrics.agents)
    del metrics
    gc.collect()
    assert gone() is None
    with AGENT_COMMANDS.timed("node-1", "list"):  # and a command after them is fine
        pass
