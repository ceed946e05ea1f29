"""``/v1/nodes/{id}/states/console`` and ``/v1/nodes/{id}/management/inject_nmi`` (1.29)."""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import Resource, one_field_check, read_json, require_version, send
from ironic_fsm.conductor import Conductor

__all__ = ["routes"]

_check_mode: Final = one_field_check("enabled", {"type": "boolean"})


class NodeConsole(Resource):
    """``GET``: whether the console is on and where; ``PUT {"enabled"}``: 202 once done."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        send(resp, self._conductor.get_console(ident))

    def on_put(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        self._conductor.set_console_mode(ident, _check_mode(read_json(req))["enabled"])
        resp.status = 202
        resp.location = f"{req.prefix}/v1/nodes/{ident}/states/console"


class InjectNmi(Resource):
    """``PUT``: 204 once the management interface sent it (1.29; 404 below)."""

    def on_put(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, (1, 29), f"/v1/nodes/{ident}/management/inject_nmi", status=404)
        self._conductor.inject_nmi(ident)
        resp.status = 204


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    return [
        ("/v1/nodes/{ident}/states/console", NodeConsole(conductor), {}),
        ("/v1/nodes/{ident}/management/inject_nmi", InjectNmi(conductor), {}),
    ]
