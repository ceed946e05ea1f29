"""``/v1/nodes/{id}/bios[/{name}]`` (1.40): the node's BIOS settings."""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import (
    Resource,
    link_pair,
    query_bool,
    require_version,
    send,
    version_of,
    with_item,
)
from ironic_fsm.api.views import stamp
from ironic_fsm.conductor import Conductor

__all__ = ["routes"]

#: The fields 1.74 adds to a BIOS setting (``None`` here: no BIOS registry is read).
_BIOS_1_74: Final = (
    "attribute_type", "allowable_values", "lower_bound", "max_length", "min_length",
    "read_only", "reset_required", "unique", "upper_bound",
)  # fmt: skip


class Bios(Resource):
    """``GET /v1/nodes/{id}/bios[/{name}]`` (1.40): the node's BIOS settings."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, (1, 40), f"/v1/nodes/{ident}/bios", status=404)
        detail = bool(query_bool(req, "detail"))
        if detail:
            require_version(req, (1, 74), "The detail parameter")
        settings = self._conductor.list_bios_settings(ident)
        send(resp, {"bios": [_setting(req, ident, s, detail) for s in settings]})

    def on_get_item(
        self, req: falcon.Request, resp: falcon.Response, ident: str, name: str
    ) -> None:
        require_version(req, (1, 40), f"/v1/nodes/{ident}/bios", status=404)
        setting = self._conductor.get_bios_setting(ident, name)
        send(resp, {name: _setting(req, ident, setting, version_of(req) >= (1, 74))})


def _setting(req: falcon.Request, ident: str, setting: Any, detail: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": setting.name,
        "value": setting.value,
        "created_at": stamp(setting.created_at),
        "updated_at": stamp(setting.updated_at),
        "links": link_pair(req.prefix, f"nodes/{ident}/bios", setting.name),
    }
    if detail:
        out.update((name, getattr(setting, name)) for name in _BIOS_1_74)
    return out


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    return with_item("/v1/nodes/{ident}/bios", Bios(conductor), "name")
