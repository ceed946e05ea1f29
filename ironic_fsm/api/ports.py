"""``/v1/ports``: a node's network ports (and ``/v1/nodes/{id}/ports``,
``/v1/portgroups/{id}/ports``).

The fields and their microversions are Ironic 39's; the conductor
(:meth:`Conductor.create_port` and friends) checks every value, so the
library, the CLI and this API give one answer.
"""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import require_version, text_bool
from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.records import ListQuery, Route, Shape, kind_routes, shown_as
from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import InvalidParameterValue, NodeNotFound, ResourceNotFound
from ironic_fsm.node import is_uuid_like
from ironic_fsm.records import Record

__all__ = ["PORT_FIELDS", "routes"]

#: Every field a port shows, with the version it appeared in (Ironic 39's).
PORT_FIELDS: Final = {
    "uuid": (1, 1), "address": (1, 1), "node_uuid": (1, 1), "extra": (1, 1),
    "internal_info": (1, 18), "pxe_enabled": (1, 19), "local_link_connection": (1, 19),
    "portgroup_uuid": (1, 24), "physical_network": (1, 34), "is_smartnic": (1, 53),
    "name": (1, 88), "description": (1, 97), "vendor": (1, 100), "category": (1, 101),
    "available_for_dynamic_portgroup": (1, 111), "created_at": (1, 1), "updated_at": (1, 1),
}  # fmt: skip
_TEXT: Final = {"type": ["string", "null"]}
_FLAG: Final = {"type": ["boolean", "string", "null"]}
_SETTABLE: Final[dict[str, dict[str, Any]]] = {
    "uuid": _TEXT, "address": {"type": "string"}, "node_uuid": {"type": "string"},
    "node_ident": {"type": "string"}, "extra": {"type": ["object", "null"]},
    "pxe_enabled": _FLAG, "local_link_connection": {"type": ["object", "null"]},
    "portgroup_uuid": _TEXT, "physical_network": {"type": ["string", "null"], "maxLength": 64},
    "is_smartnic": _FLAG, "name": _TEXT,
    "description": {"type": ["string", "null"], "maxLength": 255},
    "vendor": {"type": ["string", "null"], "maxLength": 32},
    "category": {"type": ["string", "null"], "maxLength": 80},
    "available_for_dynamic_portgroup": _FLAG,
}  # fmt: skip
#: A field given ``null`` (or removed by a patch) takes its default.
_DEFAULTS: Final = {
    "pxe_enabled": True, "is_smartnic": False, "available_for_dynamic_portgroup": False,
    "extra": {}, "local_link_connection": {}, "internal_info": {},
}  # fmt: skip


def _fields(body: dict[str, Any]) -> dict[str, Any]:
    """A body's fields as the conductor names them (``node``, ``portgroup``)."""
    out: dict[str, Any] = {}
    for name, value in body.items():
        if value is None and name in _DEFAULTS:
            value = _DEFAULTS[name]
        if isinstance(value, str) and _FLAG in (_SETTABLE.get(name),):
            value = text_bool(value, name)  # Ironic takes "True" and "false" too
        if name in ("node_uuid", "node_ident"):
            out["node"] = value
        elif name == "portgroup_uuid":
            out["portgroup"] = value
        else:
            out[name] = value
    return out


def _create(conductor: Conductor, body: dict[str, Any]) -> Record:
    if "address" not in body or not ({"node_uuid", "node_ident"} & set(body)):
        raise ApiError(400, "Invalid input: a port needs an address and a node_uuid")
    fields = _fields(body)
    if fields.get("uuid") is None:
        fields.pop("uuid", None)
    try:
        return conductor.create_port(fields.pop("address"), fields.pop("node"), **fields)
    except (NodeNotFound, ResourceNotFound) as error:  # named in the body: a bad request
        raise ApiError(400, str(error)) from None


def _update(conductor: Conductor, record: Record, changed: dict[str, Any]) -> Record:
    try:
        return conductor.update_port(record.uuid, **_fields(changed))
    except ResourceNotFound as error:  # the port group named in the patch
        raise ApiError(400, str(error)) from None


def _listing(conductor: Conductor, req: falcon.Request, query: ListQuery) -> list[Record]:
    node = query.parent.get("node") or req.get_param("node") or req.get_param("node_uuid")
    group = query.parent.get("portgroup") or req.get_param("portgroup")
    address = req.get_param("address")
    shard = req.get_param("shard")
    if group is not None:
        require_version(req, (1, 24), "The portgroup filter")
    if shard is not None:
        require_version(req, (1, 82), "The shard filter")
    if node is not None and not is_uuid_like(node):
        require_version(req, (1, 5), "A node name")
    if sum(x is not None for x in (node, group, shard)) > 1:
        raise ApiError(400, "Only one of node, portgroup and shard may be given")
    try:
        return list(
            conductor.list_ports(
                node=node,
                portgroup=group,
                address=address,
                shard=None if shard is None else [s for s in shard.split(",") if s],
                **query.paging(),
            )
        )
    except InvalidParameterValue as error:
        raise ApiError(400, str(error)) from None


SHAPE: Final = Shape(
    kind="ports", word="Port", since=(1, 1), fields=PORT_FIELDS,
    summary=("uuid", "address"), settable=_SETTABLE,
    patchable=frozenset(_SETTABLE) - {"uuid"},
    unsortable=frozenset({"extra", "internal_info", "local_link_connection"}),
    show=shown_as(PORT_FIELDS), fetch=lambda c, ident: c.get_port(ident), listing=_listing,
    create=_create, update=_update, delete=lambda c, r: c.delete_port(r.uuid),
)  # fmt: skip


def routes(conductor: Conductor) -> list[Route]:
    return kind_routes(conductor, SHAPE, ("node", (1, 1)), ("portgroup", (1, 24)))
