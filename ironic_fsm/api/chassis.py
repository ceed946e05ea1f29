"""``/v1/chassis``: groups of nodes (and ``/v1/chassis/{id}/nodes``, and nodes'
``chassis_uuid``)."""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import link_pair
from ironic_fsm.api.records import ListQuery, Route, Shape, kind_routes, shown_as
from ironic_fsm.conductor import Conductor
from ironic_fsm.records import Record

__all__ = ["CHASSIS_FIELDS", "routes"]

CHASSIS_FIELDS: Final = {
    "uuid": (1, 1), "description": (1, 1), "extra": (1, 1), "created_at": (1, 1),
    "updated_at": (1, 1),
}  # fmt: skip
_SETTABLE: Final[dict[str, dict[str, Any]]] = {
    "uuid": {"type": ["string", "null"]},
    "description": {"type": ["string", "null"], "maxLength": 255},
    "extra": {"type": ["object", "null"]},
}


def _fields(body: dict[str, Any]) -> dict[str, Any]:
    return {k: ({} if k == "extra" and v is None else v) for k, v in body.items()}


def _create(conductor: Conductor, body: dict[str, Any]) -> Record:
    fields = _fields(body)
    if fields.get("uuid") is None:
        fields.pop("uuid", None)
    return conductor.create_chassis(**fields)


def _listing(conductor: Conductor, req: falcon.Request, query: ListQuery) -> list[Record]:
    return list(conductor.list_chassis(**query.paging()))


SHAPE: Final = Shape(
    kind="chassis", word="Chassis", since=(1, 1), fields=CHASSIS_FIELDS,
    summary=("uuid", "description"), settable=_SETTABLE,
    patchable=frozenset({"description", "extra"}), unsortable=frozenset({"extra"}),
    show=shown_as(CHASSIS_FIELDS), fetch=lambda c, ident: c.get_chassis(ident), listing=_listing,
    create=_create, update=lambda c, r, changed: c.update_chassis(r.uuid, **_fields(changed)),
    delete=lambda c, r: c.delete_chassis(r.uuid),
    links=lambda base, r: {"nodes": link_pair(base, f"chassis/{r.uuid}", "nodes")},
)  # fmt: skip


def routes(conductor: Conductor) -> list[Route]:
    return kind_routes(conductor, SHAPE)
