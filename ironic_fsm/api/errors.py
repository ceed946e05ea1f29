"""Every failure becomes Ironic's error body here, and only here.

Ironic wraps its fault in a JSON *string* under ``error_message``; both
clients decode that string and show ``faultstring``, and both retry 409
and 503, so the status decides whether a client waits or gives up.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import falcon
import orjson

from ironic_fsm import exceptions as exc
from ironic_fsm.stores.base import CatalogEntryExists, CatalogEntryNotFound

__all__ = [
    "ApiError", "AuthFailed", "error_body", "install_error_handlers", "not_served", "status_of",
]  # fmt: skip

LOG = logging.getLogger("ironic_fsm.api")


class ApiError(Exception):
    """A refusal decided by the API layer itself: an HTTP status and the reason shown."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class AuthFailed(Exception):
    """Authentication refused: Ironic answers these with its ``{"error": ...}`` body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


#: Library exceptions by status, most specific first (the first match wins).
_STATUS: Final[tuple[tuple[type[BaseException], int], ...]] = (
    (exc.NodeNotFound, 404),
    (CatalogEntryNotFound, 404),
    (CatalogEntryExists, 409),
    (exc.ResourceNotFound, 404),
    (exc.ResourceExists, 409),
    (exc.NodeLocked, 409),
    (exc.ConcurrentUpdate, 409),
    (exc.StoreBusy, 503),
    (exc.StepsNotAvailable, 503),
    (exc.NodeProtected, 403),
    (exc.InvalidStateRequested, 400),
    (exc.InvalidState, 409),
    (exc.InvalidParameterValue, 400),
    (exc.DriverNotFound, 400),
    (exc.NodeInMaintenance, 400),
    (exc.NodeIsRetired, 400),
    (exc.TransitionRejected, 400),
    (exc.UnsupportedOperation, 400),
    # The node names a driver or interface whose extra (pyghmi, sushy) is not installed:
    # the request cannot be served as given, and Ironic refuses what it cannot load.
    (exc.MissingDependency, 400),
)


def status_of(error: BaseException) -> int:
    """The HTTP status of a library exception: 500 for anything not a client's doing."""
    for kind, status in _STATUS:
        if isinstance(error, kind):
            return status
    return 500


def error_body(status: int, message: str) -> bytes:
    """Ironic's body: the fault as a JSON string inside ``error_message``."""
    fault = {
        "faultcode": "Server" if status >= 500 else "Client",
        "faultstring": message,
        "debuginfo": None,
    }
    return orjson.dumps({"error_message": orjson.dumps(fault).decode()})


def _respond(resp: falcon.Response, status: int, message: str) -> None:
    resp.status = status
    resp.content_type = "application/json"
    resp.data = error_body(status, message)


def _on_api_error(req: falcon.Request, resp: falcon.Response, error: ApiError, params: Any) -> None:
    _respond(resp, error.status, error.message)
    for name, value in error.headers.items():
        resp.set_header(name, value)


def _on_auth_failed(
    req: falcon.Request, resp: falcon.Response, error: AuthFailed, params: Any
) -> None:
    resp.status = error.status
    resp.content_type = "application/json"
    resp.set_header("WWW-Authenticate", 'Basic realm="Baremetal API"')
    resp.data = orjson.dumps({"error": {"message": error.message, "code": error.status}})


def _on_library_error(
    req: falcon.Request, resp: falcon.Response, error: exc.IronicFSMError, params: Any
) -> None:
    status = status_of(error)
    if status >= 500:
        LOG.error("%s %s failed: %s", req.method, req.path, error)
    if isinstance(error, exc.StepsNotAvailable) and error.retry_after > 0:
        resp.set_header("Retry-After", str(int(error.retry_after)))
    _respond(resp, status, str(error))


def _on_http_error(
    req: falcon.Request, resp: falcon.Response, error: falcon.HTTPError, params: Any
) -> None:
    """Falcon's own refusals (unknown path, wrong method, bad header) in Ironic's shape."""
    if isinstance(error, falcon.HTTPRouteNotFound):
        message = not_served(req.path)
    else:
        message = error.description or error.title or "Error"
    for name, value in dict(error.headers or {}).items():
        resp.set_header(name, value)
    _respond(resp, error.status_code, message)


#: Where the endpoints served are listed, for a client that asked for one that is not.
_DOCS: Final = "the 'What is implemented' section of docs/api-server.rst lists what is"


def not_served(path: str) -> str:
    """Why a path answers 404: no such endpoint here, and where to look (not a bare "Not Found")."""
    shown = path if len(path) <= 200 else path[:200] + "..."
    return f"{shown} is not served: ironic_fsm serves part of Ironic's API, and {_DOCS}"


def _on_unexpected(
    req: falcon.Request, resp: falcon.Response, error: Exception, params: Any
) -> None:
    # A bug: the details go to the log, not to the client (they may name secrets).
    LOG.exception("%s %s failed unexpectedly", req.method, req.path)
    _respond(resp, 500, "Internal server error; see the service log.")


def install_error_handlers(app: falcon.App[Any, Any]) -> None:
    """Route every exception to one of the handlers above (Falcon picks the most specific)."""
    app.add_error_handler(Exception, _on_unexpected)
    app.add_error_handler(falcon.HTTPError, _on_http_error)
    app.add_error_handler(exc.IronicFSMError, _on_library_error)
    app.add_error_handler(ApiError, _on_api_error)
    app.add_error_handler(AuthFailed, _on_auth_failed)
