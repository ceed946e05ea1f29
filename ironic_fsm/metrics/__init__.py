"""Prometheus metrics of one conductor service: what an operator graphs and alerts on.

Needs the ``metrics`` extra (prometheus_client); nothing else of ironic_fsm
imports this package, so ``import ironic_fsm`` never loads it.
:class:`Metrics` is handed the conductor it reads and keeps its own
:class:`~prometheus_client.CollectorRegistry` (not the process-wide
default one), so that tests and embedding applications may run several.
What it exports (``docs/operations.rst`` lists every family):

* the fleet, read at each scrape from the store's indexes (:mod:`._fleet`);
* flows, steps and driver (BMC) calls, as the conductor's tally (:mod:`._flows`);
* heartbeats, takeovers and power syncs, as the conductor's observer
  (:mod:`._conductor`), and the sensors its passes read, as
  ironic-prometheus-exporter's gauges (:mod:`._sensors`);
* ramdisk agents' heartbeats and commands (:mod:`._agent`);
* the REST API's requests, as Falcon middleware (:mod:`._api`).

``ironic-fsm serve --metrics HOST[:PORT]`` serves them on a port of their
own (:meth:`Metrics.serve`) and, with ``--api``, also under ``/metrics`` on
the API's port, behind its authentication.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Final

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, choose_encoder, start_http_server

from ironic_fsm.events import AGENT_COMMANDS
from ironic_fsm.metrics._agent import AgentMetrics
from ironic_fsm.metrics._api import RequestMetrics
from ironic_fsm.metrics._conductor import ConductorMetrics
from ironic_fsm.metrics._fleet import NODE_COUNTS_MAX_AGE, FleetCollector
from ironic_fsm.metrics._flows import FlowMetrics
from ironic_fsm.metrics._sensors import SensorMetrics

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from ironic_fsm.conductor import Conductor

__all__ = ["CONTENT_TYPE", "METRICS_PORT", "Metrics", "MetricsServer"]

#: The media type of :meth:`Metrics.exposition` (Prometheus' text format 0.0.4).
CONTENT_TYPE: Final = CONTENT_TYPE_PLAIN_0_0_4
#: The port ``--metrics HOST`` listens on: ironic-prometheus-exporter's.
METRICS_PORT: Final = 9608


class MetricsServer:
    """A running ``/metrics`` listener (prometheus_client's); :attr:`port` is the bound port."""

    def __init__(self, server: WSGIServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def stop(self, timeout: float = 10.0) -> None:
        """Stop answering and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout)


class Metrics:
    """The metrics of one conductor: its registry, and the parts that fill it.

    Building it attaches it: it becomes the conductor's tally and observer. The node counts are
    served up to ``node_counts_max_age`` seconds old (read again in a thread
    meanwhile, so that a scrape of a large fleet does not wait for them);
    ``0`` reads them at every scrape.

    Attributes:
        registry: Where every family of this conductor is registered.
        flows: The tally counting flows, steps and driver calls.
        observer: Heartbeats, takeovers, power syncs, sensor passes.
        sensors: The gauges of the last sensor pass.
        agents: Ramdisk agents' heartbeats and commands (the commands: the process's).
        api: Falcon middleware timing the REST API's requests.
    """

    def __init__(
        self,
        conductor: Conductor,
        registry: CollectorRegistry | None = None,
        *,
        node_counts_max_age: float = NODE_COUNTS_MAX_AGE,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.flows = FlowMetrics()
        self.sensors = SensorMetrics()
        self.agents = AgentMetrics()
        self.observer = ConductorMetrics(self.registry, self.sensors, self.agents)
        self.registry.register(self.sensors)
        self.registry.register(self.agents)
        AGENT_COMMANDS.add(self.agents)
        self.api = RequestMetrics(self.registry)
        self.registry.register(self.flows)
        self.registry.register(FleetCollector(conductor, node_counts_max_age))
        conductor.count_with(self.flows)
        conductor.observe(self.observer)

    def exposition(self, accept: str | None = None) -> tuple[bytes, str]:
        """Every family, and its media type: the format the ``Accept`` header asks for
        (OpenMetrics, or Prometheus' text format 0.0.4 by default), as Prometheus'
        own handler chooses it."""
        encode, content_type = choose_encoder(accept or "")
        return encode(self.registry), content_type

    def serve(self, host: str, port: int = METRICS_PORT) -> MetricsServer:
        """Answer ``GET /metrics`` on ``host:port`` in a thread of its own; port 0 picks one."""
        server, thread = start_http_server(port, addr=host, registry=self.registry)
        return MetricsServer(server, thread)
