"""The API's access log: one line per request, on the ``ironic_fsm.api.access`` logger.

What an operator needs to follow traffic: method, path, status, duration,
request id and, under http_basic, the user. Never the query string, headers
or bodies (they may carry credentials or secrets). The log is switched by
the logger's level: ``ironic-fsm serve --no-access-log`` raises it to
WARNING, and an embedding application does the same with its own logging
configuration. A disabled log costs one level check per request.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final

import falcon

__all__ = ["ACCESS_LOGGER", "AccessLog"]

#: The logger's name, for logging configuration.
ACCESS_LOGGER: Final = "ironic_fsm.api.access"
LOG = logging.getLogger(ACCESS_LOGGER)


class AccessLog:
    """Falcon middleware: times each request and logs it once answered."""

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.started = time.perf_counter()

    def process_response(
        self, req: falcon.Request, resp: falcon.Response, resource: Any, req_succeeded: bool
    ) -> None:
        if not LOG.isEnabledFor(logging.INFO):
            return
        started = req.context.get("started")
        took = (time.perf_counter() - started) * 1000 if started is not None else 0.0
        user = req.context.get("user")
        LOG.info(
            "%s %s %s %.1fms %s%s",
            req.method,
            req.path,
            resp.status_code,
            took,
            resp.get_header("X-OpenStack-Request-Id") or "-",
            f" user={user}" if user else "",
        )
