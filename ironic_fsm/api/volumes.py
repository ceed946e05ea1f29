"""``/v1/volume`` (1.32): volume connectors and targets (and ``/v1/nodes/{id}/volume``).

Kept as data, as Ironic's ``noop`` storage interface does; the conductor
(:meth:`Conductor.create_volume_connector` and friends) checks every value.
"""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import link_pair, require_version, send
from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.records import Collection, ListQuery, Route, Shape, kind_routes, shown_as
from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import InvalidParameterValue, NodeNotFound
from ironic_fsm.records import Record

__all__ = ["CONNECTOR_FIELDS", "TARGET_FIELDS", "routes"]

_SINCE: Final = (1, 32)
CONNECTOR_FIELDS: Final = {
    name: _SINCE
    for name in ("uuid", "node_uuid", "type", "connector_id", "extra", "created_at", "updated_at")
}
TARGET_FIELDS: Final = {
    name: _SINCE
    for name in ("uuid", "node_uuid", "volume_type", "properties", "boot_index", "extra",
                 "volume_id", "created_at", "updated_at")
}  # fmt: skip
_TEXT: Final = {"type": "string"}
_OBJECT: Final = {"type": ["object", "null"]}
_CONNECTOR_BODY: Final[dict[str, dict[str, Any]]] = {
    "uuid": {"type": ["string", "null"]}, "node_uuid": _TEXT, "type": _TEXT,
    "connector_id": _TEXT, "extra": _OBJECT,
}  # fmt: skip
_TARGET_BODY: Final[dict[str, dict[str, Any]]] = {
    "uuid": {"type": ["string", "null"]}, "node_uuid": _TEXT, "volume_type": _TEXT,
    "volume_id": _TEXT, "boot_index": {"type": ["integer", "string"]}, "properties": _OBJECT,
    "extra": _OBJECT,
}  # fmt: skip


def _fields(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in body.items():
        if name in ("extra", "properties") and value is None:
            value = {}
        if name == "boot_index" and isinstance(value, str):
            if not value.isdigit():
                raise ApiError(400, f"Invalid boot_index {value!r}: not an integer")
            value = int(value)
        out["node" if name == "node_uuid" else name] = value
    return out


def _creator(what: str) -> Any:
    def create(conductor: Conductor, body: dict[str, Any]) -> Record:
        fields = _fields(body)
        if fields.get("uuid") is None:
            fields.pop("uuid", None)
        if "node" not in fields:
            raise ApiError(400, "Invalid input: 'node_uuid' is a required property")
        try:
            made: Record = getattr(conductor, f"create_volume_{what}")(fields.pop("node"), **fields)
        except NodeNotFound as error:  # named in the body: a bad request
            raise ApiError(400, str(error)) from None
        return made

    return create


def _lister(what: str) -> Any:
    def listing(conductor: Conductor, req: falcon.Request, query: ListQuery) -> list[Record]:
        node = query.parent.get("node") or req.get_param("node")
        try:
            found: list[Record] = getattr(conductor, f"list_volume_{what}s")(
                node=node, **query.paging()
            )
        except InvalidParameterValue as error:
            raise ApiError(400, str(error)) from None
        return found

    return listing


def _shape(what: str, fields: dict[str, Any], body: dict[str, Any], summary: tuple[str, ...],
           unsortable: frozenset[str]) -> Shape:  # fmt: skip
    return Shape(
        kind=f"{what}s", word=f"Volume {what}", since=_SINCE, fields=fields, summary=summary,
        settable=body, patchable=frozenset(body) - {"uuid"}, unsortable=unsortable,
        show=shown_as(fields),
        fetch=lambda c, uuid: getattr(c, f"get_volume_{what}")(uuid),
        listing=_lister(what), create=_creator(what),
        update=lambda c, r, changed: getattr(c, f"update_volume_{what}")(
            r.uuid, **_fields(changed)
        ),
        delete=lambda c, r: getattr(c, f"delete_volume_{what}")(r.uuid),
        path=f"volume/{what}s", detail_since=_SINCE,
    )  # fmt: skip


CONNECTORS: Final = _shape(
    "connector",
    CONNECTOR_FIELDS,
    _CONNECTOR_BODY,
    ("uuid", "node_uuid", "type", "connector_id"),
    frozenset({"extra"}),
)
TARGETS: Final = _shape(
    "target", TARGET_FIELDS, _TARGET_BODY,
    ("uuid", "node_uuid", "volume_type", "boot_index", "volume_id"),
    frozenset({"extra", "properties"}),
)  # fmt: skip


class VolumeRoot:
    """``GET /v1/volume`` and ``/v1/nodes/{ident}/volume``: where the two collections are."""

    def __init__(self, conductor: Conductor, *, node: bool = False) -> None:
        self._conductor, self._node = conductor, node

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str = "") -> None:
        require_version(req, _SINCE, "volume", status=404)
        base = "volume"
        if self._node:
            base = f"nodes/{self._conductor.get_node(ident).uuid}/volume"
        send(resp, {
            "links": link_pair(req.prefix, base.rsplit("/", 1)[0] if self._node else "", base),
            "connectors": link_pair(req.prefix, base, "connectors"),
            "targets": link_pair(req.prefix, base, "targets"),
        })  # fmt: skip


def routes(conductor: Conductor) -> list[Route]:
    out: list[Route] = [
        ("/v1/volume", VolumeRoot(conductor), {}),
        ("/v1/nodes/{ident}/volume", VolumeRoot(conductor, node=True), {}),
    ]
    for shape in (CONNECTORS, TARGETS):
        out += kind_routes(conductor, shape)
        node_listing = Collection(conductor, shape, parent="node")  # without /detail
        out.append((f"/v1/nodes/{{ident}}/{shape.path}", node_listing, {}))
    return out
