"""The REST API's requests: latency by route template and status class.

:class:`RequestMetrics` is Falcon middleware (duck-typed: this package does
not import Falcon). The route is the template the request was routed to
(``/v1/nodes/{ident}``), never the path: a node's UUID is no label. A
request routed nowhere (an unknown path, or one refused by authentication
before routing) counts as ``unmatched``.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any, Final

from prometheus_client import CollectorRegistry, Histogram

__all__ = ["API_BUCKETS", "RequestMetrics"]

#: Request durations, seconds.
API_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
#: Methods counted by name; any other a client sends is ``other`` (labels stay bounded).
_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestMetrics:
    """Falcon middleware: times each request, observed once answered."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._seconds = Histogram(
            "ironic_fsm_api_request_duration_seconds",
            "REST API requests, by method, route template and status class (2xx, 4xx...).",
            ["method", "route", "status_class"], buckets=API_BUCKETS, registry=registry,
        )  # fmt: skip

    def process_request(self, req: Any, resp: Any) -> None:
        req.context.metrics_started = perf_counter()

    def process_response(self, req: Any, resp: Any, resource: Any, req_succeeded: bool) -> None:
        started = req.context.get("metrics_started")
        if started is None:
            return
        route = req.uri_template or "unmatched"
        status = f"{str(resp.status_code)[0]}xx"
        method = req.method if req.method in _METHODS else "other"
        self._seconds.labels(method, route, status).observe(perf_counter() - started)
