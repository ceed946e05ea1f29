"""``/v1/nodes/{ident}/traits`` (1.37) and ``/v1/nodes/{ident}/history`` (1.78)."""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.common import (
    Resource,
    compile_schema,
    link_pair,
    query_bool,
    read_json,
    read_modify_write,
    require_version,
    send,
    version_of,
)
from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.views import stamp
from ironic_fsm.history import HistoryEntry

__all__ = ["TRAITS_SCHEMA", "TRAIT_SCHEMA", "NodeHistory", "NodeTrait", "NodeTraits"]

#: A custom trait, or the shape of a standard os-traits name (upper case, underscores).
TRAIT_SCHEMA: Final = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    "pattern": "^(CUSTOM_[A-Z0-9_]+|[A-Z][A-Z0-9_]*)$",
}
_MAX_TRAITS: Final = 50
TRAITS_SCHEMA: Final = {
    "type": "object",
    "properties": {"traits": {"type": "array", "items": TRAIT_SCHEMA, "maxItems": _MAX_TRAITS}},
    "required": ["traits"],
    "additionalProperties": False,
}
_check_traits = compile_schema(TRAITS_SCHEMA)
_check_trait = compile_schema(TRAIT_SCHEMA)


def _writable(req: falcon.Request) -> None:
    """Below 1.37 Ironic routes a node's traits as if there were none: a write is 405."""
    if version_of(req) < (1, 37):
        raise ApiError(405, f"The method {req.method} is not allowed below API version 1.37")


class NodeTraits(Resource):
    """``GET``, ``PUT`` (replace all) and ``DELETE`` (remove all) on a node's traits."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, (1, 37), "traits")
        send(resp, {"traits": self._conductor.get_node(ident).traits})

    def on_put(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        _writable(req)
        traits = _check_traits(read_json(req))["traits"]
        self._conductor.update_node(ident, traits=list(dict.fromkeys(traits)))
        resp.status = 204

    def on_delete(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        _writable(req)
        self._conductor.update_node(ident, traits=[])
        resp.status = 204


class NodeTrait(Resource):
    """``PUT`` (add) and ``DELETE`` (remove) of one trait."""

    def on_put(self, req: falcon.Request, resp: falcon.Response, ident: str, trait: str) -> None:
        _writable(req)
        _check_trait(trait)
        uuid = self._conductor.get_node(ident).uuid

        def add() -> None:
            node = self._conductor.get_node(uuid)
            if trait not in node.traits:
                if len(node.traits) >= _MAX_TRAITS:
                    raise ApiError(400, f"Node {node.uuid} already has {_MAX_TRAITS} traits")
                self._conductor.update_node(
                    uuid, expected_version=node.version, traits=[*node.traits, trait]
                )

        read_modify_write(uuid, add)
        resp.status = 204
        resp.location = f"{req.prefix}/v1/nodes/{uuid}/traits/{trait}"

    def on_delete(self, req: falcon.Request, resp: falcon.Response, ident: str, trait: str) -> None:
        _writable(req)
        uuid = self._conductor.get_node(ident).uuid

        def remove() -> None:
            node = self._conductor.get_node(uuid)
            if trait not in node.traits:
                raise ApiError(404, f"Node {node.uuid} has no trait {trait}")
            kept = [t for t in node.traits if t != trait]
            self._conductor.update_node(uuid, expected_version=node.version, traits=kept)

        read_modify_write(uuid, remove)
        resp.status = 204


def _entry(entry: HistoryEntry, req: falcon.Request, detail: bool) -> dict[str, Any]:
    base = req.prefix
    out: dict[str, Any] = {
        "uuid": entry.uuid,
        "created_at": stamp(entry.created_at),
        "severity": entry.severity,
        "event": entry.event if detail else entry.event[:255],
        "links": link_pair(base, f"nodes/{entry.node_uuid}/history", entry.uuid),
    }
    if detail:
        out.update(event_type=entry.event_type, conductor=entry.conductor, user=entry.user)
        version = version_of(req)
        if version >= (1, 113):
            out["project"] = None  # no projects here: every request is the operator's
        if version >= (1, 115):
            # Not recorded by this server's history (yet): shown as unknown.
            out.update(state=None, target_provision_state=None, duration_seconds=None)
    return out


class NodeHistory(Resource):
    """``GET /v1/nodes/{ident}/history[/{entry}]``, oldest first (1.78)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, (1, 78), "history", status=404)
        detail = bool(query_bool(req, "detail"))
        entries = self._conductor.get_node_history(ident)
        marker = req.get_param("marker")
        if marker is not None:
            position = next((i for i, e in enumerate(entries) if e.uuid == marker), None)
            if position is None:
                raise ApiError(400, f"The marker {marker} is not an entry of this node's history")
            entries = entries[position + 1 :]
        limit = req.get_param_as_int("limit", min_value=1)
        if limit is not None:
            entries = entries[:limit]
        send(resp, {"history": [_entry(e, req, detail) for e in entries]})

    def on_get_entry(
        self, req: falcon.Request, resp: falcon.Response, ident: str, entry: str
    ) -> None:
        require_version(req, (1, 78), "history", status=404)
        found = self._conductor.get_node_history_entry(ident, entry)
        send(resp, _entry(found, req, True))
