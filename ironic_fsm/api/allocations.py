"""``/v1/allocations`` (1.52): ask for a node, get one (and ``/v1/nodes/{id}/allocation``).

The conductor (:meth:`Conductor.create_allocation`) runs Ironic's allocation
process at once, so a new allocation is answered ``active`` with its node,
or ``error`` with ``last_error``; clients that wait for it (openstacksdk's
``wait_for_allocation``) find it settled.
"""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import Resource, require_version, send, version_of
from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.records import Collection, Item, ListQuery, Shape, shown_as
from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import InvalidParameterValue, NodeNotFound
from ironic_fsm.records import Record

__all__ = ["ALLOCATION_FIELDS", "routes"]

ALLOCATION_FIELDS: Final = {
    "uuid": (1, 52), "name": (1, 52), "node_uuid": (1, 52), "state": (1, 52),
    "last_error": (1, 52), "resource_class": (1, 52), "traits": (1, 52),
    "candidate_nodes": (1, 52), "extra": (1, 52), "owner": (1, 60), "created_at": (1, 52),
    "updated_at": (1, 52),
}  # fmt: skip
_TEXT: Final = {"type": ["string", "null"]}
_SETTABLE: Final[dict[str, dict[str, Any]]] = {
    "uuid": _TEXT, "name": _TEXT, "node": _TEXT, "owner": _TEXT,
    "resource_class": {"type": ["string", "null"], "maxLength": 80},
    "traits": {"type": ["array", "null"], "items": {"type": "string"}},
    "candidate_nodes": {"type": ["array", "null"], "items": {"type": "string"}},
    "extra": {"type": ["object", "null"]},
}  # fmt: skip
#: A body's fields and the versions that brought them (``node``: backfilling).
_BODY_VERSIONS: Final = {"node": (1, 58), "owner": (1, 60)}


def _create(conductor: Conductor, body: dict[str, Any]) -> Record:
    """Ironic answers with the allocation as recorded (``allocating``, or ``active`` for a
    backfill); the process has run by then, and a client's next read sees its end."""
    fields = {name: value for name, value in body.items() if value is not None}
    created: list[Record] = []
    try:
        settled = conductor.create_allocation(**fields, on_created=created.append)
    except NodeNotFound as error:  # a candidate or the backfilled node: the body's mistake
        raise ApiError(400, str(error)) from None
    return settled if "node" in fields else created[0]


def _update(conductor: Conductor, record: Record, changed: dict[str, Any]) -> Record:
    if "extra" in changed and changed["extra"] is None:
        changed["extra"] = {}
    return conductor.update_allocation(record.uuid, **changed)


def _listing(conductor: Conductor, req: falcon.Request, query: ListQuery) -> list[Record]:
    owner = req.get_param("owner")
    if owner is not None:
        require_version(req, (1, 60), "The owner filter")
    try:
        found = conductor.list_allocations(
            node=req.get_param("node"), resource_class=req.get_param("resource_class"),
            state=req.get_param("state"), owner=owner, **query.paging(),
        )  # fmt: skip
    except InvalidParameterValue as error:
        raise ApiError(400, str(error)) from None
    return list(found)


SHAPE: Final = Shape(
    kind="allocations", word="Allocation", since=(1, 52),
    fields={**ALLOCATION_FIELDS, **_BODY_VERSIONS}, summary=tuple(ALLOCATION_FIELDS),
    settable=_SETTABLE, patchable=frozenset({"name", "extra"}),
    unsortable=frozenset({"extra", "candidate_nodes", "traits"}),
    show=shown_as(ALLOCATION_FIELDS), fetch=lambda c, ident: c.get_allocation(ident),
    listing=_listing, create=_create, update=_update,
    delete=lambda c, r: c.delete_allocation(r.uuid),
)  # fmt: skip


class AllocationItem(Item):
    """``/v1/allocations/{ident}``: a patch needs 1.57 (405 below, as Ironic answers)."""

    def on_patch(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        if (1, 52) <= version_of(req) < (1, 57):
            raise ApiError(405, "Updating an allocation requires API version 1.57 or later")
        super().on_patch(req, resp, ident)


class NodeAllocation(Resource):
    """``GET`` and ``DELETE /v1/nodes/{ident}/allocation``: the node's allocation."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, (1, 52), "allocations", status=404)
        fields = SHAPE.requested_fields(req)
        allocation = self._conductor.get_node_allocation(ident)
        send(resp, SHAPE.view(req, allocation, fields))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, (1, 52), "allocations", status=404)
        allocation = self._conductor.get_node_allocation(ident)
        self._conductor.delete_allocation(allocation.uuid)
        resp.status = 204


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    return [
        ("/v1/allocations", Collection(conductor, SHAPE), {}),
        ("/v1/allocations/{ident}", AllocationItem(conductor, SHAPE), {}),
        ("/v1/nodes/{ident}/allocation", NodeAllocation(conductor), {}),
    ]
