"""``/v1/portgroups`` (1.23): a node's bonded ports (and ``/v1/nodes/{id}/portgroups``, 1.24).

The fields and their microversions are Ironic 39's; the conductor
(:meth:`Conductor.create_portgroup` and friends) checks every value.
"""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import link_pair, text_bool
from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.records import ListQuery, Route, Shape, kind_routes, shown_as
from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import InvalidParameterValue, NodeNotFound
from ironic_fsm.records import Record

__all__ = ["PORTGROUP_FIELDS", "routes"]

#: Every field a group shows, with the version it appeared in (Ironic 39's).
PORTGROUP_FIELDS: Final = {
    "uuid": (1, 23), "address": (1, 23), "name": (1, 23), "node_uuid": (1, 23),
    "extra": (1, 23), "internal_info": (1, 23), "standalone_ports_supported": (1, 23),
    "mode": (1, 26), "properties": (1, 26), "physical_network": (1, 102),
    "category": (1, 103), "created_at": (1, 23), "updated_at": (1, 23),
}  # fmt: skip
_TEXT: Final = {"type": ["string", "null"]}
_SETTABLE: Final[dict[str, dict[str, Any]]] = {
    "uuid": _TEXT, "address": _TEXT, "name": _TEXT, "node_uuid": {"type": "string"},
    "extra": {"type": ["object", "null"]}, "mode": _TEXT,
    "properties": {"type": ["object", "null"]},
    "standalone_ports_supported": {"type": ["string", "boolean", "null"]},
    "physical_network": {"type": ["string", "null"], "maxLength": 64},
    "category": {"type": ["string", "null"], "maxLength": 80},
}  # fmt: skip


def _fields(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in body.items():
        if name == "standalone_ports_supported":
            value = True if value is None else value
            value = text_bool(value, name) if isinstance(value, str) else value
        if name in ("extra", "properties") and value is None:
            value = {}
        out["node" if name == "node_uuid" else name] = value
    return out


def _create(conductor: Conductor, body: dict[str, Any]) -> Record:
    fields = _fields(body)
    if "node" not in fields:
        raise ApiError(400, "Invalid input: a port group needs a node_uuid")
    if fields.get("uuid") is None:
        fields.pop("uuid", None)
    try:
        return conductor.create_portgroup(fields.pop("node"), **fields)
    except NodeNotFound as error:  # named in the body: a bad request
        raise ApiError(400, str(error)) from None


def _listing(conductor: Conductor, req: falcon.Request, query: ListQuery) -> list[Record]:
    node = query.parent.get("node") or req.get_param("node")
    try:
        found = conductor.list_portgroups(
            node=node, address=req.get_param("address"), **query.paging()
        )
    except InvalidParameterValue as error:
        raise ApiError(400, str(error)) from None
    return list(found)


SHAPE: Final = Shape(
    kind="portgroups", word="Portgroup", since=(1, 23), fields=PORTGROUP_FIELDS,
    summary=("uuid", "address", "name"), settable=_SETTABLE,
    patchable=frozenset(_SETTABLE) - {"uuid"},
    unsortable=frozenset({"extra", "internal_info", "properties"}),
    show=shown_as(PORTGROUP_FIELDS), fetch=lambda c, ident: c.get_portgroup(ident),
    listing=_listing,
    create=_create, update=lambda c, r, changed: c.update_portgroup(r.uuid, **_fields(changed)),
    delete=lambda c, r: c.delete_portgroup(r.uuid),
    links=lambda base, r: {"ports": link_pair(base, f"portgroups/{r.uuid}", "ports")},
)  # fmt: skip


def routes(conductor: Conductor) -> list[Route]:
    return kind_routes(conductor, SHAPE, ("node", (1, 24)))
