"""``/v1/nodes/{id}/management/indicators[/{component} | /{indicator}@{component}]`` (1.63)."""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import (
    Resource,
    link_pair,
    one_field_check,
    read_json,
    require_version,
    send,
    with_item,
)
from ironic_fsm.conductor import Conductor

__all__ = ["routes"]

_check_state: Final = one_field_check("state", {"type": "string"})


class NodeIndicators(Resource):
    """The components; one component's indicators; one indicator's state (GET and PUT)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, (1, 63), "indicators", status=404)
        base = f"nodes/{ident}/management/indicators"
        components = sorted(self._conductor.list_indicators(ident))
        send(resp, {"components": [{"name": c, "links": link_pair(req.prefix, base, c)}
                                   for c in components]})  # fmt: skip

    def on_get_item(
        self, req: falcon.Request, resp: falcon.Response, ident: str, name: str
    ) -> None:
        require_version(req, (1, 63), "indicators", status=404)
        if "@" in name:
            send(resp, {"state": self._conductor.get_indicator_state(ident, name)})
            return
        found = self._conductor.list_indicators(ident).get(name)
        if found is None:
            raise falcon.HTTPNotFound(description=f"Node {ident} has no component {name}")
        base = f"nodes/{ident}/management/indicators"
        send(resp, {"indicators": [
            {"name": indicator, "readonly": bool(info.get("readonly")),
             "states": list(info.get("states", [])),
             "links": link_pair(req.prefix, base, f"{indicator}@{name}")}
            for indicator, info in sorted(found.items())
        ]})  # fmt: skip

    def on_put_item(
        self, req: falcon.Request, resp: falcon.Response, ident: str, name: str
    ) -> None:
        require_version(req, (1, 63), "indicators", status=404)
        state = _check_state(read_json(req))["state"]
        self._conductor.set_indicator_state(ident, name, state)
        resp.status = 204


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    return with_item("/v1/nodes/{ident}/management/indicators", NodeIndicators(conductor), "name")
