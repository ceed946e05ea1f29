"""``/v1/nodes/{id}/vifs`` (1.28): attach, list and detach a node's VIFs."""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import (
    Resource,
    compile_schema,
    read_json,
    require_version,
    send,
    with_item,
)
from ironic_fsm.conductor import Conductor

__all__ = ["routes"]

_SINCE: Final = (1, 28)
_BODY: Final = compile_schema(
    {
        "type": "object",
        "properties": {"id": {"type": "string", "minLength": 1, "maxLength": 255}},
        "required": ["id"],
    }
)


class NodeVifs(Resource):
    """``GET`` and ``POST /v1/nodes/{ident}/vifs``, ``DELETE .../vifs/{vif}``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, _SINCE, "vifs", status=404)
        send(resp, {"vifs": self._conductor.list_vifs(ident)})

    def on_post(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, _SINCE, "vifs", status=404)
        body: dict[str, Any] = _BODY(read_json(req))
        info = {k: v for k, v in body.items() if k in ("port_uuid", "portgroup_uuid")}
        self._conductor.attach_vif(ident, body["id"], **info)
        resp.status = 204

    def on_delete_vif(
        self, req: falcon.Request, resp: falcon.Response, ident: str, vif: str
    ) -> None:
        require_version(req, _SINCE, "vifs", status=404)
        self._conductor.detach_vif(ident, vif)
        resp.status = 204


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    return with_item("/v1/nodes/{ident}/vifs", NodeVifs(conductor), "vif", "vif")
