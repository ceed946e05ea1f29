"""Ramdisk agents: their heartbeats, and the commands sent to them (latency, errors).

Heartbeats come through the conductor (its observer hears each one's
outcome: ``accepted``, or the class of the refusal). Commands come from
the process's agent client through :data:`ironic_fsm.events.AGENT_COMMANDS`:
one client serves every node of the process, so its figures are the
process's. The command is a label (a fixed set: ``clean.get_clean_steps``,
``clean.execute_clean_step``, ``list``...), the node never is.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Final

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from ironic_fsm.metrics._flows import Histogram, counter_family, histogram_family

__all__ = ["AGENT_BUCKETS", "AgentMetrics"]

#: Agent command durations, seconds: a status read's milliseconds to a disk erase's hours.
AGENT_BUCKETS: Final = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200)


class AgentMetrics(Collector):
    """Counts heartbeats (:meth:`heartbeat`) and times commands (it is a command watcher)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.heartbeats: dict[str, int] = {}
        self.commands: dict[tuple[str], Histogram] = {}
        self.errors: dict[tuple[str, str], int] = {}

    def heartbeat(self, outcome: str) -> None:
        with self._lock:
            self.heartbeats[outcome] = self.heartbeats.get(outcome, 0) + 1

    def __call__(self, node: str | None, command: str, seconds: float, error: str | None) -> None:
        with self._lock:
            series = self.commands.get((command,))
            if series is None:
                series = self.commands[(command,)] = Histogram(AGENT_BUCKETS)
            series.pending.append(seconds)
            if error is not None:
                self.errors[(command, error)] = self.errors.get((command, error), 0) + 1

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            yield counter_family(
                "ironic_fsm_agent_heartbeats", "Ramdisk agents' heartbeats, by outcome "
                "(accepted, or the refusal: InvalidParameterValue, NodeLocked, NodeNotFound...).",
                ["outcome"], self.heartbeats,
            )  # fmt: skip
            yield histogram_family(
                "ironic_fsm_agent_command_duration_seconds",
                "Commands sent to ramdisk agents, by command, up to their answer.",
                ["command"], self.commands,
            )  # fmt: skip
            yield counter_family(
                "ironic_fsm_agent_command_errors", "Agent commands that raised, by command and "
                "the class of what the request raised (ReadTimeout, ConnectError...).",
                ["command", "error"], self.errors,
            )  # fmt: skip
