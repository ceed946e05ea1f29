"""``/v1/nodes``: create, list, show, patch and delete node records.

The rules that are Ironic's API rather than the library's (reserved names,
409 for duplicates and for updates during a transition, read-only fields
in a patch) are kept here; everything else is the conductor's decision.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import re
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any, Final
from urllib.parse import urlencode

import falcon
import jsonpatch
import jsonpointer

from ironic_fsm import states as s
from ironic_fsm.api import _glue
from ironic_fsm.api.common import (
    Resource,
    compile_schema,
    page_limit,
    query_bool,
    read_json,
    read_modify_write,
    require_version,
    send,
    text_bool,
    too_new,
    version_of,
    wants_detail,
)
from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.versions import Version
from ironic_fsm.api.views import (
    ABSENT_FIELDS,
    NODE_FIELD_VERSIONS,
    SUMMARY_FIELDS,
    NodePage,
    known_field,
    node_view,
    read_attributes,
)
from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import (
    DriverNotFound,
    InvalidParameterValue,
    InvalidStateRequested,
    NodeNotFound,
    ResourceNotFound,
)
from ironic_fsm.interfaces import INTERFACE_KINDS
from ironic_fsm.masking import is_secret_key
from ironic_fsm.node import NODE_FIELDS, Node, is_uuid_like
from ironic_fsm.stores.base import COLUMN_FIELDS, SORT_KEYS

__all__ = ["CREATE_SCHEMA", "PATCH_SCHEMA", "NodeCollection", "NodeItem", "patchable_fields"]

_RESERVED_NAMES: Final = frozenset(
    {"detail", "validate", "states", "vendor_passthru", "management", "maintenance"}
)
_OPTIONAL_TEXT: Final = {"type": ["string", "null"], "maxLength": 255}
_DICT: Final = {"type": "object"}

#: Fields a client may give on create (C) and in a patch (P), with their schemas.
_SETTABLE: Final[dict[str, dict[str, Any]]] = {
    "driver": {"type": "string", "minLength": 1, "maxLength": 255},
    "name": _OPTIONAL_TEXT,
    "driver_info": _DICT,
    "properties": _DICT,
    "extra": _DICT,
    "instance_info": _DICT,
    "maintenance": {"type": "boolean"},
    "resource_class": {"type": ["string", "null"], "maxLength": 80},
    "automated_clean": {"type": ["boolean", "null"]},
    "retired": {"type": "boolean"},
    "retired_reason": _OPTIONAL_TEXT,
    "conductor_group": {"type": "string", "maxLength": 255, "pattern": "^[A-Za-z0-9_.-]*$"},
    "owner": _OPTIONAL_TEXT,
    "lessee": _OPTIONAL_TEXT,
    "description": {"type": ["string", "null"], "maxLength": 4096},
    "instance_uuid": {"type": ["string", "null"], "maxLength": 36},
    "network_data": {"type": ["object", "null"]},
    "shard": _OPTIONAL_TEXT,
    "parent_node": {"type": ["string", "null"], "maxLength": 36},  # a UUID or a name: Ironic's
    "chassis_uuid": {"type": ["string", "null"], "maxLength": 36},
    "disable_power_off": {"type": ["boolean", "string"]},  # the CLI sends "True"
    "instance_name": _OPTIONAL_TEXT,
    **{f"{kind}_interface": _OPTIONAL_TEXT for kind in INTERFACE_KINDS},
}
_PATCH_ONLY: Final[dict[str, dict[str, Any]]] = {
    "protected": {"type": "boolean"},
    "protected_reason": _OPTIONAL_TEXT,
}
#: Fields Ironic lets clients set that ironic_fsm does not store.
_UNSTORED_SETTABLE: Final[frozenset[str]] = frozenset()

CREATE_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "uuid": {"type": "string", "minLength": 1, "maxLength": 36},
        **_SETTABLE,
        **{name: {} for name in _UNSTORED_SETTABLE},
    },
    "required": ["driver"],
    "additionalProperties": False,
}
PATCH_SCHEMA: Final = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "op": {"enum": ["add", "replace", "remove", "test", "move", "copy"]},
            "path": {"type": "string", "pattern": "^/"},
            "from": {"type": "string"},
            "value": {},
        },
        "required": ["op", "path"],
    },
}
_check_create = compile_schema(CREATE_SCHEMA)
_check_patch = compile_schema(PATCH_SCHEMA)
#: Each field's check, on ``{name: value}`` so that a refusal names the field.
_check_settable = {
    name: compile_schema({"type": "object", "properties": {name: schema}})
    for name, schema in {**_SETTABLE, **_PATCH_ONLY}.items()
}

#: Provision states in which Ironic lets a node be updated while it has a target.
_UPDATE_DURING_TRANSITION: Final = frozenset(
    {
        s.DEPLOYFAIL, s.INSPECTFAIL, s.INSPECTWAIT, s.CLEANFAIL, s.ERROR, s.VERIFYING,
        s.ADOPTFAIL, s.RESCUEFAIL, s.UNRESCUEFAIL, s.SERVICING, s.SERVICEHOLD, s.SERVICEFAIL,
    }
)  # fmt: skip
_FLAG_FILTERS: Final = (("maintenance", (1, 1)), ("retired", (1, 61)))
#: Text filters and their versions; those on fields we do not keep match no node
#: unless they ask for the value every node has.
_TEXT_FILTERS: Final = (
    ("provision_state", (1, 9)), ("driver", (1, 16)), ("resource_class", (1, 21)),
    ("fault", (1, 42)), ("instance_uuid", (1, 1)), ("chassis_uuid", (1, 1)),
    ("conductor_group", (1, 46)), ("owner", (1, 50)), ("lessee", (1, 65)),
    ("instance_name", (1, 104)),
)  # fmt: skip
_BOOLEAN_FIELDS: Final = frozenset(
    {"maintenance", "retired", "protected", "automated_clean", "disable_power_off"}
)
#: The faults Ironic knows (``ironic.common.faults.VALID_FAULTS``), in its order: a
#: filter on another is refused, as Ironic does, rather than matching nothing.
_VALID_FAULTS: Final = ("power failure", "clean failure", "rescue abort failure", "service failure")
_NAME_CHARS: Final = re.compile(r"^[A-Za-z0-9\-._~]+$")


def patchable_fields() -> frozenset[str]:
    return frozenset(_SETTABLE) | frozenset(_PATCH_ONLY) | _UNSTORED_SETTABLE


def _check_name(name: Any) -> None:
    if name is None:
        return
    if name.lower() in _RESERVED_NAMES or is_uuid_like(name) or not _NAME_CHARS.match(name):
        raise ApiError(
            400,
            f"Cannot use {name!r} as a node name: names are 1-255 of the characters "
            f"A-Z a-z 0-9 - . _ ~, not UUID-like and not one of "
            f"{', '.join(sorted(_RESERVED_NAMES))}",
        )


def _check_field_versions(req: falcon.Request, names: Any) -> None:
    version = version_of(req)
    for name in names:
        since = known_field(name)
        if since is not None and version < since:
            raise too_new(f"The field {name!r}", since, version)


def _check_unstored(values: dict[str, Any]) -> None:
    for name in _UNSTORED_SETTABLE & values.keys():
        if values[name] != ABSENT_FIELDS[name]:
            raise ApiError(400, f"The field {name!r} is not supported by this server")


def _resolve_links(conductor: Conductor, fields: dict[str, Any], own: str | None = None) -> None:
    """Store what Ironic stores for ``parent_node`` (the UUID of the node named) and
    ``network_data`` (``{}`` for null).

    An unknown parent is refused in Ironic's words, which do not say whether
    it exists; a node cannot be its own parent (Ironic does not check).
    """
    if "network_data" in fields and fields["network_data"] is None:
        fields["network_data"] = {}
    parent = fields.get("parent_node")
    if parent is None:
        return
    try:
        found = conductor.get_node(parent).uuid
    except (NodeNotFound, InvalidParameterValue):
        found = None
    if found is None or found == own:
        raise ApiError(
            400, f"Unable to apply the requested parent_node '{parent}'. Requested value was "
            "invalid."
        )  # fmt: skip
    fields["parent_node"] = found


def _in_chassis(conductor: Conductor, chassis: str, filters: dict[str, Any]) -> bool:
    """Narrow ``filters`` to the chassis' nodes; whether none can match (it has none)."""
    members = [node.uuid for node in conductor.list_chassis_nodes(chassis)]
    if "uuid" in filters:
        members = [uuid for uuid in members if uuid == filters["uuid"]]
    filters["uuid"] = members
    return not members


def _check_chassis(conductor: Conductor, fields: dict[str, Any]) -> None:
    """A node's chassis must exist: ``400`` in Ironic's words (it is the body's mistake)."""
    chassis = fields.get("chassis_uuid")
    if chassis is None:
        return
    try:
        fields["chassis_uuid"] = conductor.get_chassis(chassis).uuid
    except ResourceNotFound as error:
        raise ApiError(400, str(error)) from None


def _refuse_duplicate(conductor: Conductor, key: str, value: str | None) -> None:
    if value is None:
        return
    try:
        holder = conductor.get_node(value)
    except NodeNotFound:
        return
    raise ApiError(409, f"A node with {key} {value} already exists ({holder.uuid}).")


def _requested_fields(req: falcon.Request) -> list[str] | None:
    raw = req.get_param("fields")
    if raw is None:
        return None
    require_version(req, (1, 8), "The fields parameter")
    names = [name.strip() for name in raw.split(",") if name.strip()]
    unknown = sorted(name for name in names if known_field(name) is None)
    if unknown:
        raise ApiError(400, f"Field(s) {', '.join(unknown)} are not valid node fields")
    _check_field_versions(req, names)
    return names


def _view(
    conductor: Conductor, node: Node, req: falcon.Request, fields: list[str] | None = None
) -> dict[str, Any]:
    version = version_of(req)
    return node_view(
        node, version, req.prefix, fields=fields,
        conductor=_conductor_field(conductor, node, version, fields),
        defaults=_glue.interface_names(conductor, node.driver),
    )  # fmt: skip


def _conductor_field(
    conductor: Conductor, node: Any, version: Version, fields: Sequence[str] | None
) -> str | None:
    """Ironic's ``conductor`` field: who does the node's work, read only where it is shown."""
    if version < (1, 49) or (fields is not None and "conductor" not in fields):
        return None
    return conductor.conductor_of(node)


class NodeCollection:
    """``/v1/nodes`` and ``/v1/nodes/detail``."""

    def __init__(
        self, conductor: Conductor, *, detail: bool = False, chassis: bool = False
    ) -> None:
        self._conductor = conductor
        self._detail = detail
        self._chassis = chassis  # /v1/chassis/{ident}/nodes

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str = "") -> None:
        fields = _requested_fields(req)
        detail = wants_detail(req, fields, self._detail)
        limit = self._limit(req)
        sort_key, sort_dir = self._order(req)
        filters, empty = self._filters(req)
        chassis = ident if self._chassis else filters.pop("chassis_uuid", None)
        if chassis is not None:
            empty = _in_chassis(self._conductor, chassis, filters) or empty
        chosen = None if detail else tuple(fields or SUMMARY_FIELDS)
        nodes: list[Any] = []
        if not empty:
            query = dict(
                limit=limit, marker=req.get_param("marker"), sort_key=sort_key,
                sort_dir=sort_dir, **filters,
            )  # fmt: skip
            nodes = self._read(chosen, query)
        base = req.prefix
        page = NodePage(
            version_of(req), base, chosen, self._conductor.conductor_of,
            functools.partial(_glue.interface_names, self._conductor),
        )  # fmt: skip
        body: dict[str, Any] = {"nodes": page.show(nodes)}
        if nodes and len(nodes) == limit:
            params = dict(req.params)
            params.update(limit=str(limit), marker=nodes[-1].uuid)
            path = "/v1/nodes/detail" if self._detail else "/v1/nodes"
            body["next"] = f"{base}{path}?{urlencode(params)}"
        send(resp, body)

    def _read(self, chosen: tuple[str, ...] | None, query: dict[str, Any]) -> list[Any]:
        """The page's nodes; only their stored columns when those are all the view needs.

        A summary or ``fields`` listing then decodes no record: each row
        reads as a node does (attributes) for :func:`node_view`.
        """
        if chosen is None:
            return self._conductor.list_nodes(**query)
        # What the fields are read from (console_enabled: driver_internal_info)
        stored = [name for name in read_attributes(chosen) if name in NODE_FIELDS]
        if not COLUMN_FIELDS.issuperset(stored):
            return self._conductor.list_nodes(**query)
        if "conductor" in chosen:  # who does the node's work depends on these too
            stored += ["conductor_group"]
        rows = self._conductor.list_nodes(fields=(*stored, "driver"), **query)
        return [SimpleNamespace(**row) for row in rows]

    @staticmethod
    def _limit(req: falcon.Request) -> int:
        return page_limit(req)

    @staticmethod
    def _order(req: falcon.Request) -> tuple[str, str]:
        sort_key = req.get_param("sort_key") or "id"
        sort_dir = (req.get_param("sort_dir") or "asc").lower()
        if sort_dir not in ("asc", "desc"):
            raise ApiError(400, f"Invalid sort direction {sort_dir!r}: use asc or desc")
        if sort_key == "id":  # Ironic's row id follows creation order
            sort_key = "created_at"
        if sort_key not in SORT_KEYS:
            raise ApiError(
                400, f"The sort_key value {sort_key!r} is invalid; use one of id, "
                f"{', '.join(SORT_KEYS)}"
            )  # fmt: skip
        return sort_key, sort_dir

    @staticmethod
    def _filters(req: falcon.Request) -> tuple[dict[str, Any], bool]:
        """Library filters, and whether no node can match (a filter on a field we do not keep)."""
        filters: dict[str, Any] = {}
        for name, since in _FLAG_FILTERS:
            flag = query_bool(req, name)
            if flag is not None:
                require_version(req, since, f"The {name} filter")
                filters[name] = flag
        associated = query_bool(req, "associated")
        if associated is not None:
            filters["associated"] = associated
        empty = _shard_filters(req, filters) | _family_filters(req, filters)
        for name, since in _TEXT_FILTERS:
            value = req.get_param(name)
            if value is None:
                continue
            require_version(req, since, f"The {name} filter")
            if name == "fault" and value not in _VALID_FAULTS:
                raise ApiError(
                    400,
                    f'Unrecognized fault "{value}" is specified, allowed faults are '
                    f"{_VALID_FAULTS}",
                )
            if name in ABSENT_FIELDS:
                empty = empty or value.lower() != (ABSENT_FIELDS[name] or "")
            else:
                filters[name] = value
        return filters, empty

    def on_post(self, req: falcon.Request, resp: falcon.Response, ident: str = "") -> None:
        if self._detail or self._chassis:  # /v1/nodes/detail only lists, as in Ironic
            raise falcon.HTTPMethodNotAllowed(["GET"])
        body = _check_create(read_json(req))
        _check_field_versions(req, body)
        _check_unstored(body)
        _check_name(body.get("name"))
        fields = {key: value for key, value in body.items() if key not in _UNSTORED_SETTABLE}
        if isinstance(fields.get("disable_power_off"), str):
            fields["disable_power_off"] = text_bool(
                fields["disable_power_off"], "/disable_power_off"
            )
        if fields.get("uuid") is not None and not is_uuid_like(fields["uuid"]):
            raise ApiError(400, f"Expected UUID for uuid: {fields['uuid']}")  # Ironic's words
        _refuse_duplicate(self._conductor, "UUID", fields.get("uuid"))
        _refuse_duplicate(self._conductor, "name", fields.get("name"))
        _resolve_links(self._conductor, fields)
        _check_chassis(self._conductor, fields)
        if version_of(req) < (1, 11):
            fields["provision_state"] = s.AVAILABLE
        with _no_valid_host(fields):
            node = self._conductor.create_node(**fields)
        send(
            resp,
            _view(self._conductor, node, req),
            201,
        )
        resp.location = f"{req.prefix}/v1/nodes/{node.uuid}"


#: The dict fields a patch reaches into: stored values, not the view's masked ones.
_DICT_FIELDS: Final = (
    "driver_info", "instance_info", "driver_internal_info", "properties", "extra", "network_data",
)  # fmt: skip


def _shard_filters(req: falcon.Request, filters: dict[str, Any]) -> bool:
    """``shard`` (any of a comma-separated list) and ``sharded`` (1.82); True: none can match."""
    sharded = query_bool(req, "sharded")
    if sharded is not None:
        require_version(req, (1, 82), "The sharded filter")
        filters["sharded"] = sharded
    raw = req.get_param("shard")
    if raw is None:
        return False
    require_version(req, (1, 82), "The shard filter")
    names = sorted({name.strip() for name in raw.split(",") if name.strip()})
    if len(names) == 1:
        filters["shard"] = names[0]
    elif names:
        filters["shard"] = names
    return not names


def _family_filters(req: falcon.Request, filters: dict[str, Any]) -> bool:
    """Ironic lists child nodes only with ``include_children`` (which then ignores
    ``parent_node``) or the children of the ``parent_node`` given (1.83).

    At every version, as Ironic's database layer: children stay out of a
    plain listing. True: no node can match (a parent that is not a UUID).
    """
    include = query_bool(req, "include_children")
    parent = req.get_param("parent_node")
    if include is not None or parent is not None:
        require_version(req, (1, 83), "The include_children and parent_node filters")
    if include:
        return False
    if parent is not None and not is_uuid_like(parent):
        return True
    filters["parent_node"] = parent
    return False


def _patch_document(node: Node) -> dict[str, Any]:
    """Every root field a patch may name, with its stored (unmasked) value."""
    doc: dict[str, Any] = {name: getter(node) for name, (_, getter) in NODE_FIELD_VERSIONS.items()}
    for name in _DICT_FIELDS:
        doc[name] = getattr(node, name)
    return doc


def _default(name: str) -> Any:
    if name in ("maintenance", "retired", "protected"):
        return False
    if name in _DICT_FIELDS:
        return {}
    return None


#: jsonpatch's refusal of a missing key, which names only the key the request gave.
_NO_OBJECT: Final = re.compile(r"can't (?:remove|replace) a non-existent object '[^']*'")
_PATCH_FAILURES: Final = {
    jsonpatch.JsonPatchTestFailed: "the tested value differs",
    jsonpatch.JsonPatchConflict: "the path does not exist",
    jsonpointer.JsonPointerException: "the path does not fit the document",
}


def _apply_one(doc: dict[str, Any], op: dict[str, Any], number: int) -> dict[str, Any]:
    """One operation, applied to ``doc`` in place; its failure is described without values.

    jsonpatch's own messages quote values (a failed ``test`` shows the stored
    one), and the document holds unmasked secrets. In place, because a copy
    per operation made a patch cost the square of its length.
    """
    source = op.get("from", "")
    if op["op"] in ("copy", "move") and any(map(is_secret_key, source.split("/"))):
        raise ApiError(400, f"Cannot {op['op']} {source}: it holds a secret")
    try:
        return jsonpatch.apply_patch(doc, [op], in_place=True)  # type: ignore[no-any-return]
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as error:
        why = next(
            (text for kind, text in _PATCH_FAILURES.items() if isinstance(error, kind)),
            "it is not a valid operation",
        )
        if isinstance(error, jsonpatch.JsonPatchConflict) and _NO_OBJECT.fullmatch(str(error)):
            # "can't remove a non-existent object 'key'": Ironic's words, which clients
            # match; it quotes the request's own key, never a stored value.
            why = str(error)
        raise ApiError(
            # "Couldn't apply patch ... Reason: ...": Ironic's words, which clients match.
            400,
            f"Couldn't apply patch operation {number} ({op['op']} {op['path']}). Reason: {why}",
        ) from None


def _patched_fields(node: Node, operations: list[dict[str, Any]]) -> dict[str, Any]:
    allowed = patchable_fields()
    for op in operations:
        for key in ("path", "from"):
            if key in op:
                root = op[key].split("/")[1]
                if root not in allowed:
                    raise ApiError(400, f"Cannot patch {op[key]}: /{root} is not a patchable field")
    before = _patch_document(node)
    after = copy.deepcopy(before)  # once: the operations then change this copy in place
    for number, op in enumerate(operations, 1):
        after = _apply_one(after, op, number)
    changed: dict[str, Any] = {}
    for name in allowed:
        value = after.get(name, _default(name))
        if value != before.get(name):
            changed[name] = value
    return changed


def _instance_name_from_display_name(node: Node, fields: dict[str, Any]) -> None:
    """Ironic's forward compatibility: a new ``instance_info['display_name']`` names the
    instance (``instance_name``) when nothing else did."""
    info = fields.get("instance_info")
    if isinstance(info, dict) and not node.instance_name and "instance_name" not in fields:
        name = info.get("display_name")
        if isinstance(name, str) and name:
            fields["instance_name"] = name


@contextlib.contextmanager
def _no_valid_host(fields: dict[str, Any]) -> Iterator[None]:
    """An unknown hardware type in Ironic's words: clients match "No valid host was found".

    Ironic finds no conductor for the driver when it picks one for the node
    (400); an unknown interface of a known driver keeps the library's text.
    """
    try:
        yield
    except DriverNotFound as error:
        driver = fields.get("driver")
        if driver is None or "kind" in error.details or error.details.get("name") != driver:
            raise
        group = fields.get("conductor_group") or ""
        raise ApiError(
            400,
            "No valid host was found. Reason: No conductor service registered which supports "
            f'driver {driver} for conductor group "{group}". Ensure the driver is valid and '
            f"enabled. ({error})",
        ) from None


class NodeItem(Resource):
    """``/v1/nodes/{ident}``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        fields = _requested_fields(req)
        node = self._conductor.get_node(ident)
        send(resp, _view(self._conductor, node, req, fields))

    def on_patch(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        operations = _check_patch(read_json(req))
        reset = query_bool(req, "reset_interfaces")
        if reset is not None:
            require_version(req, (1, 45), "The reset_interfaces parameter")
        uuid = self._conductor.get_node(ident).uuid
        node = read_modify_write(uuid, lambda: self._patch(req, uuid, operations, reset))
        send(resp, _view(self._conductor, node, req))

    def _patch(
        self,
        req: falcon.Request,
        uuid: str,
        operations: list[dict[str, Any]],
        reset: bool | None = None,
    ) -> Node:
        node = self._conductor.get_node(uuid)
        changed = _patched_fields(node, operations)
        if reset and "driver" not in changed:
            raise ApiError(
                400,
                "The reset_interfaces parameter can only be used when changing the node's driver.",
            )
        _check_field_versions(req, changed)
        _check_unstored(changed)
        for name, value in changed.items():
            if name in _BOOLEAN_FIELDS and isinstance(value, str):
                # The CLI sends "True" for --retired and friends, as Ironic accepts.
                changed[name] = value = text_bool(value, f"/{name}")
            _check_settable[name]({name: value})
        if "name" in changed:
            _check_name(changed["name"])
            _refuse_duplicate(self._conductor, "name", changed["name"])
        _refuse_during_transition(node)
        _refuse_interface_change(node, changed)
        _resolve_links(self._conductor, changed, own=node.uuid)
        _check_chassis(self._conductor, changed)
        if changed.get("instance_uuid") is not None and node.instance_uuid is not None:
            raise ApiError(
                409,
                f"Node {node.uuid} is already associated with instance {node.instance_uuid}; "
                "remove instance_uuid first",
            )
        fields = {k: v for k, v in changed.items() if k not in _UNSTORED_SETTABLE}
        _instance_name_from_display_name(node, fields)
        if fields:
            with _no_valid_host({"conductor_group": node.conductor_group, **fields}):
                node = self._conductor.update_node(
                    node.uuid, expected_version=node.version, reset_interfaces=reset, **fields
                )
        return node

    def on_delete(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        try:
            self._conductor.delete_node(ident)
        except InvalidStateRequested as error:
            raise ApiError(409, str(error)) from None
        resp.status = 204


#: States in which a node's driver and interfaces may change (any state in maintenance).
_INTERFACE_CHANGE_STATES: Final = frozenset({s.ENROLL, s.MANAGEABLE, s.AVAILABLE, s.INSPECTWAIT})


def _refuse_interface_change(node: Node, changed: dict[str, Any]) -> None:
    touched = sorted(k for k in changed if k == "driver" or k.endswith("_interface"))
    if touched and not node.maintenance and node.provision_state not in _INTERFACE_CHANGE_STATES:
        raise ApiError(
            409,
            f"Node {node.uuid}: {', '.join(touched)} can only change in "
            f"{', '.join(sorted(_INTERFACE_CHANGE_STATES))} or in maintenance, not in "
            f"{node.provision_state!r}",
        )


def _refuse_during_transition(node: Node) -> None:
    busy = node.provision_state == s.INSPECTING or (
        node.target_provision_state is not None
        and node.provision_state not in _UPDATE_DURING_TRANSITION
    )
    if busy:
        raise ApiError(
            409,
            f"Node {node.uuid} can not be updated while a state transition is in progress "
            f"(provision state {node.provision_state!r}).",
        )
