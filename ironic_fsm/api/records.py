"""What the resources beside nodes share: listing, showing, creating, patching, deleting.

Ports, port groups, chassis, allocations and volume records are the same
resource to Ironic's API: fields that appear at a microversion, a summary
listing and ``detail``, ``fields``, paging by marker, JSON Patch on some
fields. Each resource's module says what is its own in a :class:`Shape`;
:class:`Collection` and :class:`Item` serve it. The conductor decides
every rule about values; this module checks versions, bodies and queries,
and shows records as Ironic does.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import urlencode

import falcon
import jsonpatch
import jsonpointer

from ironic_fsm.api.common import (
    compile_schema,
    link_pair,
    page_limit,
    read_json,
    require_version,
    send,
    too_new,
    version_of,
    wants_detail,
)
from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.nodes import PATCH_SCHEMA
from ironic_fsm.api.versions import Version
from ironic_fsm.api.views import stamp
from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import NodeNotFound, ResourceNotFound
from ironic_fsm.records import Record

__all__ = ["Collection", "Item", "ListQuery", "Shape", "shown_as"]

_check_patch: Final = compile_schema(PATCH_SCHEMA)


class ListQuery:
    """A listing's paging, and the parent it is under (``/v1/nodes/{id}/ports``)."""

    def __init__(self, req: falcon.Request, parent: dict[str, str]) -> None:
        self.limit = page_limit(req)
        self.marker = req.get_param("marker")
        self.sort_key = req.get_param("sort_key") or "id"
        self.sort_dir = (req.get_param("sort_dir") or "asc").lower()
        self.parent = parent

    def paging(self) -> dict[str, Any]:
        return dict(
            limit=self.limit, marker=self.marker, sort_key=self.sort_key, sort_dir=self.sort_dir
        )


class Shape:
    """What one resource is: its fields and their versions, and the conductor calls.

    Args:
        kind: The collection's name in bodies (``ports``), and in paths unless ``path``.
        path: The collection's path under ``/v1`` (``volume/connectors``), if not ``kind``.
        detail_since: The version from which ``?detail`` is taken (1.43; volumes' 1.32).
        word: How messages name one (``Port``).
        since: The version the resource appeared in (404 below it).
        fields: Every field shown, in order, with the version it appeared in.
        summary: The fields of a listing without ``detail``.
        settable: The fields a create body may hold (others are 400).
        patchable: The root fields a patch may change.
        unsortable: Fields a listing cannot sort on (objects).
        show: A record as its fields (every one, before versions are applied).
        fetch: The record by UUID or name.
        listing: One page of records for a request's filters.
        create: A new record from a checked create body.
        update: The record with the changed fields (a patch's outcome).
        delete: Removes the record.
        links: The record's links beyond its own (a group's ``ports``), given the base URL.
    """

    def __init__(
        self, *, kind: str, word: str, since: Version, fields: Mapping[str, Version],
        summary: tuple[str, ...], settable: Mapping[str, dict[str, Any]],
        patchable: frozenset[str], unsortable: frozenset[str],
        show: Callable[[Record], dict[str, Any]],
        fetch: Callable[[Conductor, str], Record],
        listing: Callable[[Conductor, falcon.Request, ListQuery], list[Record]],
        create: Callable[[Conductor, dict[str, Any]], Record],
        update: Callable[[Conductor, Record, dict[str, Any]], Record],
        delete: Callable[[Conductor, Record], None],
        links: Callable[[str, Record], dict[str, Any]] | None = None, path: str | None = None,
        detail_since: Version = (1, 43),
    ) -> None:  # fmt: skip
        self.kind, self.word, self.since, self.fields = kind, word, since, fields
        self.summary, self.patchable, self.unsortable = summary, patchable, unsortable
        self.show, self.fetch, self.listing = show, fetch, listing
        self.create, self.update, self.delete = create, update, delete
        self.links = links
        self.path = path or kind
        self.detail_since = detail_since
        self.check_create = compile_schema(
            {"type": "object", "properties": dict(settable), "additionalProperties": False}
        )

    def check_versions(self, req: falcon.Request, names: Any, what: str = "The field") -> None:
        """406 for a field newer than the request's version (Ironic's NotAcceptable)."""
        version = version_of(req)
        for name in names:
            since = self.fields.get(name)
            if since is not None and version < since:
                raise too_new(f"{what} {name}", since, version)

    def view(
        self, req: falcon.Request, record: Record, fields: tuple[str, ...] | None = None
    ) -> dict[str, Any]:
        """The record at the request's version: only ``fields`` if given, and its links."""
        shown = self.show(record)
        out = {
            name: shown[name] for name in self._visible(version_of(req), fields) if name in shown
        }
        out["links"] = link_pair(req.prefix, self.path, record.uuid)
        if self.links is not None and fields is None:
            out.update(self.links(req.prefix, record))
        return out

    @functools.lru_cache(maxsize=256)  # noqa: B019  (shapes live as long as the process)
    def _visible(self, version: Version, fields: tuple[str, ...] | None) -> tuple[str, ...]:
        """The fields a view at ``version`` shows: worked out once per version and choice."""
        names = fields if fields is not None else tuple(self.fields)
        return tuple(name for name in names if version >= self.fields.get(name, (1, 1)))

    def requested_fields(self, req: falcon.Request) -> tuple[str, ...] | None:
        raw = req.get_param("fields")
        if raw is None:
            return None
        require_version(req, (1, 8), "The fields parameter")
        names = tuple(name.strip() for name in raw.split(",") if name.strip())
        unknown = sorted(set(names) - set(self.fields))
        if unknown:
            raise ApiError(400, f"Field(s) {', '.join(unknown)} are not valid")
        self.check_versions(req, names)
        return names


def shown_as(fields: Mapping[str, Version]) -> Callable[[Record], dict[str, Any]]:
    """A record as Ironic shows it: each of ``fields`` (times in ISO 8601)."""

    def show(record: Record) -> dict[str, Any]:
        out = {name: getattr(record, name) for name in fields}
        out.update(created_at=stamp(record.created_at), updated_at=stamp(record.updated_at))
        return out

    return show


class Collection:
    """``GET`` and ``POST /v1/<kind>``, ``GET /v1/<kind>/detail``, and a parent's listing
    (``/v1/nodes/{ident}/ports``: ``parent`` names the filter its ``ident`` fills)."""

    def __init__(
        self, conductor: Conductor, shape: Shape, *, detail: bool = False,
        parent: str | None = None, parent_since: Version = (1, 1),
    ) -> None:  # fmt: skip
        self._conductor, self._shape, self._detail = conductor, shape, detail
        self._parent, self._parent_since = parent, parent_since

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str = "") -> None:
        shape = self._shape
        require_version(req, shape.since, shape.kind, status=404)
        if self._parent is not None:
            require_version(req, self._parent_since, shape.kind, status=404)
        fields = shape.requested_fields(req)
        detail = wants_detail(req, fields, self._detail, shape.detail_since)
        query = ListQuery(req, {self._parent: ident} if self._parent else {})
        if query.sort_key in shape.unsortable:
            raise ApiError(
                400, f"The sort_key value {query.sort_key} is an invalid field for sorting"
            )
        shape.check_versions(req, [query.sort_key])
        try:
            records = shape.listing(self._conductor, req, query)
        except ResourceNotFound as error:
            if query.marker is not None and query.marker in str(error):
                raise ApiError(400, str(error)) from None
            raise
        chosen = None if detail else (fields or shape.summary)
        body: dict[str, Any] = {shape.kind: [shape.view(req, r, chosen) for r in records]}
        if records and len(records) == query.limit:
            params = dict(req.params)
            params.update(limit=str(query.limit), marker=records[-1].uuid)
            body["next"] = f"{req.prefix}{req.path}?{urlencode(params)}"
        send(resp, body)

    def on_post(self, req: falcon.Request, resp: falcon.Response, ident: str = "") -> None:
        shape = self._shape
        if self._parent is not None:
            raise ApiError(400, "Malformed request URI: create it at /v1/" + shape.path)
        require_version(req, shape.since, shape.kind, status=404)
        body = shape.check_create(read_json(req))
        shape.check_versions(req, body)
        record = shape.create(self._conductor, body)
        send(resp, shape.view(req, record), 201)
        resp.location = f"{req.prefix}/v1/{shape.path}/{record.uuid}"


class Item:
    """``GET``, ``PATCH`` and ``DELETE /v1/<kind>/{ident}``."""

    def __init__(self, conductor: Conductor, shape: Shape) -> None:
        self._conductor, self._shape = conductor, shape

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        shape = self._shape
        require_version(req, shape.since, shape.kind, status=404)
        fields = shape.requested_fields(req)
        send(resp, shape.view(req, shape.fetch(self._conductor, ident), fields))

    def on_patch(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        shape = self._shape
        require_version(req, shape.since, shape.kind, status=404)
        operations = _check_patch(read_json(req))
        record = shape.fetch(self._conductor, ident)
        roots = []
        for op in operations:
            for key in ("path", "from"):
                if key in op:
                    root = op[key].split("/")[1]
                    if root not in shape.patchable:
                        raise ApiError(400, f"Cannot patch {op[key]}: /{root} is not patchable")
                    roots.append(root)
        shape.check_versions(req, roots)
        before = {name: value for name, value in shape.show(record).items()
                  if name in shape.patchable}  # fmt: skip
        after = copy.deepcopy(before)
        for number, op in enumerate(operations, 1):
            after = _apply(after, op, number)
        changed = {
            name: after.get(name) for name in shape.patchable if after.get(name) != before.get(name)
        }
        if changed:
            try:
                record = shape.update(self._conductor, record, changed)
            except NodeNotFound as error:  # a node named in the body: the body is wrong
                raise ApiError(400, str(error)) from None
        send(resp, shape.view(req, record))

    def on_delete(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        shape = self._shape
        require_version(req, shape.since, shape.kind, status=404)
        shape.delete(self._conductor, shape.fetch(self._conductor, ident))
        resp.status = 204


def _apply(doc: dict[str, Any], op: dict[str, Any], number: int) -> dict[str, Any]:
    try:
        return jsonpatch.apply_patch(doc, [op], in_place=True)  # type: ignore[no-any-return]
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as error:
        raise ApiError(
            400, f"Cannot apply patch operation {number} ({op['op']} {op['path']}): {error}"
        ) from None


#: One route: a path, the resource that serves it, and ``add_route``'s keywords.
Route = tuple[str, Any, dict[str, str]]


def kind_routes(conductor: Conductor, shape: Shape, *parents: tuple[str, Version]) -> list[Route]:
    """A kind's routes: ``/v1/<path>``, its ``/detail`` and ``/{ident}``; then, for each
    ``(parent, since)``, the parent's listing of it and its ``/detail``
    (``("node", (1, 1))``: ``/v1/nodes/{ident}/ports``, filtered on ``node``)."""
    routes: list[Route] = [
        (f"/v1/{shape.path}", Collection(conductor, shape), {}),
        (f"/v1/{shape.path}/detail", Collection(conductor, shape, detail=True), {}),
        (f"/v1/{shape.path}/{{ident}}", Item(conductor, shape), {}),
    ]
    for parent, since in parents:
        listing = f"/v1/{parent}s/{{ident}}/{shape.path}"
        routes += [
            (listing, Collection(conductor, shape, parent=parent, parent_since=since), {}),
            (f"{listing}/detail",
             Collection(conductor, shape, detail=True, parent=parent, parent_since=since), {}),
        ]  # fmt: skip
    return routes
