"""Vendor pass-through: ``/v1/nodes/{id}/vendor_passthru`` and
``/v1/drivers/{name}/vendor_passthru``, each with its ``/methods`` listing.

The method is named by ``?method=`` (what the clients send) or as the
path's last segment; the body, a JSON object, holds its arguments. A
synchronous method answers ``200`` with what it returned (as JSON, or the
raw bytes of an ``attach`` one); an asynchronous one ``202`` with no body,
as Ironic's do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import falcon
import orjson

from ironic_fsm.api.common import Resource, read_json, send
from ironic_fsm.api.errors import ApiError
from ironic_fsm.conductor import Conductor
from ironic_fsm.conductor.passthru import PassthruResult
from ironic_fsm.exceptions import DriverNotFound

_T = TypeVar("_T")

__all__ = ["routes"]


def _call_of(req: falcon.Request, method: str | None) -> tuple[str, dict[str, Any]]:
    """The method's name and its arguments, from the request."""
    name = method or req.get_param("method")
    if not name:
        raise ApiError(400, "Method not specified")
    args = read_json(req, optional=True)
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ApiError(400, "Invalid input: a vendor method's arguments are a JSON object")
    return name, args


def _answer(resp: falcon.Response, result: PassthruResult) -> None:
    if result.async_call:
        resp.status = 202
        return
    value = result.value
    if result.attach:
        resp.status = 200
        resp.content_type = "application/octet-stream"
        resp.data = value.encode() if isinstance(value, str) else bytes(value or b"")
        return
    try:
        orjson.dumps(value)
    except TypeError:
        raise ApiError(500, "The vendor method returned a value JSON cannot hold") from None
    send(resp, value)


class NodePassthru(Resource):
    """Calls a node's vendor method (any HTTP method; the vendor method says which it takes)."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, ident: str, method: str | None = None
    ) -> None:
        name, args = _call_of(req, method)
        _answer(resp, self._conductor.vendor_passthru(ident, name, req.method, args))

    on_post = on_put = on_patch = on_delete = on_get


class NodeMethods(Resource):
    """``GET .../vendor_passthru/methods``: each method with its HTTP methods and manner."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        send(resp, self._conductor.list_vendor_passthru_methods(ident))


def _of_driver(name: str, call: Callable[[], _T]) -> _T:
    """``call()``, with an unknown hardware type ``name`` answered 404 in Ironic's words (a
    known type missing an interface stays the conductor's error)."""
    try:
        return call()
    except DriverNotFound as error:
        if "kind" in error.details:
            raise
        raise ApiError(
            404, f"Could not find the following driver(s) or hardware type(s): {name}."
        ) from None


class DriverPassthru(Resource):
    """Calls a method of the hardware type's default vendor interface."""

    def on_get(
        self, req: falcon.Request, resp: falcon.Response, name: str, method: str | None = None
    ) -> None:
        call, args = _call_of(req, method)
        conductor = self._conductor
        _answer(resp, _of_driver(
            name, lambda: conductor.driver_vendor_passthru(name, call, req.method, args)
        ))  # fmt: skip

    on_post = on_put = on_patch = on_delete = on_get


class DriverMethods(Resource):
    """``GET /v1/drivers/{name}/vendor_passthru/methods``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        conductor = self._conductor
        send(resp, _of_driver(name, lambda: conductor.list_driver_vendor_passthru_methods(name)))


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    node, driver = NodePassthru(conductor), DriverPassthru(conductor)
    return [
        ("/v1/nodes/{ident}/vendor_passthru", node, {}),
        ("/v1/nodes/{ident}/vendor_passthru/methods", NodeMethods(conductor), {}),
        ("/v1/nodes/{ident}/vendor_passthru/{method}", node, {}),
        ("/v1/drivers/{name}/vendor_passthru", driver, {}),
        ("/v1/drivers/{name}/vendor_passthru/methods", DriverMethods(conductor), {}),
        ("/v1/drivers/{name}/vendor_passthru/{method}", driver, {}),
    ]
