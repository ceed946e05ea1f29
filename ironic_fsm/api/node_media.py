"""``/v1/nodes/{id}/vmedia`` (1.89) and ``/v1/nodes/{id}/firmware`` (1.86)."""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import Resource, compile_schema, read_json, require_version, send
from ironic_fsm.api.views import stamp
from ironic_fsm.conductor import Conductor
from ironic_fsm.conductor.node_media import DEVICE_TYPES, DOWNLOAD_SOURCES

__all__ = ["routes"]

_check_attach: Final = compile_schema({
    "type": "object",
    "properties": {
        "device_type": {"type": "string", "enum": list(DEVICE_TYPES)},
        "image_url": {"type": "string", "minLength": 1},
        "image_download_source": {"type": "string", "enum": list(DOWNLOAD_SOURCES)},
    },
    "required": ["device_type", "image_url"],
    "additionalProperties": False,
})  # fmt: skip
_check_detach: Final = compile_schema({
    "type": "object",
    "properties": {
        "device_types": {"type": "array", "items": {"type": "string",
                                                    "enum": list(DEVICE_TYPES)}},
    },
    "additionalProperties": False,
})  # fmt: skip


class VirtualMedia(Resource):
    """``POST`` attaches (``204``), ``DELETE`` detaches (``204``, every type unless the
    body or ``?device_types=`` names some)."""

    def on_post(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, (1, 89), f"/v1/nodes/{ident}/vmedia", status=404)
        body = _check_attach(read_json(req))
        self._conductor.attach_virtual_media(
            ident, body["device_type"], body["image_url"],
            body.get("image_download_source", "local"),
        )  # fmt: skip
        resp.status = 204

    def on_delete(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, (1, 89), f"/v1/nodes/{ident}/vmedia", status=404)
        types = req.get_param_as_list("device_types")
        if req.content_length:
            types = _check_detach(read_json(req)).get("device_types", types)
        self._conductor.detach_virtual_media(ident, types)
        resp.status = 204


class Firmware(Resource):
    """``GET``: the node's firmware components (``[]`` until its interface reported any)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, (1, 86), f"/v1/nodes/{ident}/firmware", status=404)
        components = self._conductor.list_firmware_components(ident)
        send(resp, {"firmware": [_component(c) for c in components]})


def _component(record: Any) -> dict[str, Any]:
    return {
        "component": record.component,
        "initial_version": record.initial_version,
        "current_version": record.current_version,
        "last_version_flashed": record.last_version_flashed,
        "created_at": stamp(record.created_at),
        "updated_at": stamp(record.updated_at),
    }


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    return [
        ("/v1/nodes/{ident}/vmedia", VirtualMedia(conductor), {}),
        ("/v1/nodes/{ident}/firmware", Firmware(conductor), {}),
    ]
