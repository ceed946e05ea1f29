"""``GET /openapi.json``: an OpenAPI 3.1 description of the subset this server implements.

Request schemas are the very ones that validate requests; response schemas
are checked against real responses by the tests, so the document cannot
drift from what is served.
"""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api import actions, catalog, nodes, traits
from ironic_fsm.api.common import send
from ironic_fsm.api.versions import MAX_VERSION, MIN_VERSION, version_text
from ironic_fsm.api.views import NODE_FIELD_VERSIONS

__all__ = ["CHILDREN_SCHEMA", "ERROR_SCHEMA", "NODE_SCHEMA", "SHARDS_SCHEMA", "OpenApi", "document"]

_TEXT: Final = {"type": ["string", "null"]}
_OBJECT: Final = {"type": "object"}
_FLAGS: Final = frozenset(
    {"maintenance", "console_enabled", "protected", "retired", "disable_power_off"}
)
_OBJECTS: Final = frozenset(
    {"driver_info", "properties", "extra", "instance_info", "driver_internal_info",
     "clean_step", "deploy_step", "service_step", "raid_config", "target_raid_config",
     "network_data"}
)  # fmt: skip
_LINKS: Final = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"href": {"type": "string"}, "rel": {"type": "string"}},
        "required": ["href", "rel"],
    },
}


def _field_schema(name: str) -> dict[str, Any]:
    if name in _FLAGS:
        return {"type": "boolean"}
    if name in _OBJECTS:
        return _OBJECT
    if name == "traits":
        return {"type": "array", "items": {"type": "string"}}
    if name in ("automated_clean", "secure_boot"):
        return {"type": ["boolean", "null"]}
    return _TEXT


#: A node as shown at the maximum version (older versions show fewer fields).
NODE_SCHEMA: Final = {
    "type": "object",
    "properties": {
        **{name: _field_schema(name) for name in NODE_FIELD_VERSIONS},
        "conductor": _TEXT,
        "links": _LINKS,
        "ports": _LINKS,
        "states": _LINKS,
    },
    "required": ["uuid", "links"],
    "additionalProperties": False,
}


def _closed(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    """An object schema with exactly these properties: what a response may hold, no more."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


ERROR_SCHEMA: Final = _closed({"error_message": {"type": "string"}}, "error_message")
NODE_LIST_SCHEMA: Final = _closed(
    {
        "nodes": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
        "next": {"type": "string"},
    },
    "nodes",
)
#: ``GET /v1/shards`` (1.82), as Ironic's own response schema has it.
SHARDS_SCHEMA: Final = _closed(
    {
        "shards": {
            "type": "array",
            "items": _closed(
                {"name": {"type": "string"}, "count": {"type": "integer", "minimum": 1}},
                "name",
                "count",
            ),
        }
    },
    "shards",
)
#: ``GET /v1/nodes/{ident}/children`` (1.83): child UUIDs and one link (Ironic's shape).
CHILDREN_SCHEMA: Final = _closed(
    {
        "children": {"type": "array", "items": {"type": "string"}},
        "links": _closed({"href": {"type": "string"}, "rel": {"type": "string"}}, "href", "rel"),
    },
    "children",
    "links",
)


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _answer(status: str, text: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"description": text}
    if schema is not None:
        out.update(_json(schema))
    return {status: out}


_ERRORS: Final = {
    "default": {
        "description": "Ironic's error body",
        **_json({"$ref": "#/components/schemas/Error"}),
    }
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_NODE: Final = _ref("Node")
_IDENT: Final = {"name": "ident", "in": "path", "required": True, "schema": {"type": "string"},
                 "description": "node UUID or name"}  # fmt: skip


def _op(summary: str, responses: dict[str, Any], body: dict[str, Any] | None = None,
        params: list[dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    op: dict[str, Any] = {"summary": summary, "responses": {**responses, **_ERRORS}}
    if body is not None:
        op["requestBody"] = {"required": True, **_json(body)}
    if params:
        op["parameters"] = params
    return op


#: A trait in a path (``/v1/nodes/{ident}/traits/{trait}``).
_TRAIT: Final = {"name": "trait", "in": "path", "required": True, "schema": traits.TRAIT_SCHEMA}


def _node_paths() -> dict[str, Any]:
    # Every path below one node (``/v1/nodes/{ident}...``) takes its ident, written here once.
    below: dict[str, dict[str, Any]] = {
        "": {
            "get": _op("Show a node", _answer("200", "the node", _NODE)),
            "patch": _op(
                "Update a node (RFC 6902)", _answer("200", "the node", _NODE), nodes.PATCH_SCHEMA
            ),
            "delete": _op("Delete a node", _answer("204", "deleted")),
        },
        "/states": {"get": _op("Node states", _answer("200", "states", _OBJECT))},
        "/states/provision": {
            "put": _op("Provisioning verb", _answer("202", "accepted"), actions.PROVISION_SCHEMA),
        },
        "/states/power": {"put": _op("Power", _answer("202", "done"), actions.POWER_SCHEMA)},
        "/states/boot_mode": {
            "put": _op("Set boot mode (1.76+)", _answer("202", "set"), actions.BOOT_MODE_SCHEMA),
        },
        "/states/secure_boot": {
            "put": _op(
                "Set secure boot (1.76+)", _answer("202", "set"), actions.SECURE_BOOT_SCHEMA
            ),
        },
        "/management/boot_device": {
            "get": _op("Boot device", _answer("200", "boot device", _OBJECT)),
            "put": _op("Set boot device", _answer("204", "set"), actions.BOOT_DEVICE_SCHEMA),
        },
        "/management/boot_device/supported": {
            "get": _op("Supported boot devices", _answer("200", "devices", _OBJECT)),
        },
        "/maintenance": {
            "put": _op("Set maintenance", _answer("202", "set")),
            "delete": _op("Unset maintenance", _answer("202", "unset")),
        },
        "/validate": {"get": _op("Validate interfaces", _answer("200", "results", _OBJECT))},
        "/traits": {
            "get": _op("Traits", _answer("200", "traits", _OBJECT)),
            "put": _op("Replace traits", _answer("204", "set"), traits.TRAITS_SCHEMA),
            "delete": _op("Remove all traits", _answer("204", "removed")),
        },
        "/traits/{trait}": {
            "put": _op("Add a trait", _answer("204", "added")),
            "delete": _op("Remove a trait", _answer("204", "removed")),
        },
        "/history": {"get": _op("Node history", _answer("200", "entries", _OBJECT))},
        "/inventory": {
            "get": _op(
                "Inventory of the last inspection (1.81+)",
                _answer("200", "inventory and plugin data", _OBJECT),
            ),
        },
        "/children": {
            "get": _op("Child nodes (1.83+)", _answer("200", "children", _ref("Children"))),
        },
    }
    return {
        "/v1/nodes": {
            "get": _op("List nodes", _answer("200", "nodes", NODE_LIST_SCHEMA)),
            "post": _op("Create a node", _answer("201", "the node", _NODE),
                        nodes.CREATE_SCHEMA),
        },
        "/v1/nodes/detail": {
            "get": _op("List nodes in full", _answer("200", "nodes", NODE_LIST_SCHEMA)),
        },
        **{
            f"/v1/nodes/{{ident}}{path}": {
                "parameters": [_IDENT, _TRAIT] if "{trait}" in path else [_IDENT], **ops
            }
            for path, ops in below.items()
        },
    }  # fmt: skip


def document(base: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document, with ``base`` as the server URL."""
    simple = {"get": _op("Discovery", _answer("200", "versions", _OBJECT))}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "ironic_fsm: Ironic-compatible Bare Metal API (subset)",
            "version": version_text(MAX_VERSION),
            "description": (
                f"Microversions {version_text(MIN_VERSION)} to {version_text(MAX_VERSION)}, "
                "negotiated with X-OpenStack-Ironic-API-Version or OpenStack-API-Version."
            ),
        },
        "servers": [{"url": base}],
        "paths": {
            "/": simple,
            "/v1": simple,
            **_node_paths(),
            "/v1/drivers": {"get": _op("Drivers", _answer("200", "drivers", _OBJECT))},
            "/v1/conductors": {"get": _op("Conductors", _answer("200", "conductors", _OBJECT))},
            "/v1/shards": {"get": _op("Shards (1.82+)", _answer("200", "shards", _ref("Shards")))},
            **{
                f"/v1/{kind}": {
                    "get": _op(f"List {kind}", _answer("200", kind, _OBJECT)),
                    "post": _op(
                        f"Create one of the {kind}", _answer("201", "created", _OBJECT), schema
                    ),
                }
                for kind, schema in (
                    ("deploy_templates", catalog.TEMPLATE_SCHEMA),
                    ("runbooks", catalog.RUNBOOK_SCHEMA),
                )
            },
        },
        "components": {
            "schemas": {
                "Node": NODE_SCHEMA,
                "NodeList": NODE_LIST_SCHEMA,
                "Error": ERROR_SCHEMA,
                "Shards": SHARDS_SCHEMA,
                "Children": CHILDREN_SCHEMA,
            }
        },
    }


class OpenApi:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        send(resp, document(req.prefix))
