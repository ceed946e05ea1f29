"""``/v1/deploy_templates`` (1.55) and ``/v1/runbooks`` (1.92): create, list, show, patch, delete.

Both are the conductor's stored catalog (:meth:`Conductor.create_deploy_template`
and friends), one resource class for the two kinds. The conductor checks
names and steps; this module checks the body's shape, applies JSON Patch,
and shows entries as Ironic does. Deploy templates the conductor was given
in-process (its settings file) are listed too, read-only, with a UUID
derived from their name so that a client sees the same one on every call.
"""

from __future__ import annotations

import re
import uuid
from typing import Any, Final

import falcon
import jsonpatch
import jsonpointer

from ironic_fsm.api.common import (
    Resource,
    compile_schema,
    link_pair,
    query_bool,
    read_json,
    require_version,
    send,
    version_of,
)
from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.nodes import PATCH_SCHEMA
from ironic_fsm.api.traits import TRAIT_SCHEMA, TRAITS_SCHEMA
from ironic_fsm.api.versions import Version
from ironic_fsm.api.views import stamp
from ironic_fsm.conductor import Conductor
from ironic_fsm.stores.base import CatalogEntry, CatalogEntryNotFound, CatalogKind

__all__ = ["RUNBOOK_SCHEMA", "TEMPLATE_SCHEMA", "routes"]

#: Settings-file templates have no stored UUID: one is derived from the name.
_TEMPLATE_NAMESPACE: Final = uuid.UUID("6c1f7f0e-0a51-4d5e-9a4a-2f7d3c1b8e10")
_NUMBER: Final = {
    "anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": "^[0-9]+$"}]
}


def _schema(rank: str, required: list[str], **more: Any) -> dict[str, Any]:
    """A create body: name, steps ranked by ``rank`` (Ironic's step shape), and ``more``."""
    step = {
        "type": "object",
        "properties": {
            "interface": {"type": "string"}, "step": {"type": "string"}, "args": {},
            rank: _NUMBER,
        },
        "required": ["interface", "step", *required, rank],
        "additionalProperties": False,
    }  # fmt: skip
    return {
        "type": "object",
        "properties": {
            "uuid": {"type": ["string", "null"]},
            "name": {"type": "string", "minLength": 1, "maxLength": 255},
            "steps": {"type": "array", "minItems": 1, "items": step},
            "extra": {"type": ["object", "null"]},
            **more,
        },
        "required": ["name", "steps"],
        "additionalProperties": False,
    }


_FLAG: Final = {"type": ["boolean", "null"]}
TEMPLATE_SCHEMA: Final = _schema("priority", ["args"])
RUNBOOK_SCHEMA: Final = _schema(
    "order", [], public=_FLAG, owner={"type": ["string", "null"], "maxLength": 255},
    disable_ramdisk=_FLAG, description={"type": ["string", "null"], "maxLength": 255},
    traits={"type": "array", "items": TRAIT_SCHEMA, "maxItems": 50},
)  # fmt: skip
#: The runbook fields of 1.112 (relaxed names, description, traits).
_RUNBOOK_TRAITS_VERSION: Final = (1, 112)
_NEWER_RUNBOOK_FIELDS: Final = ("description", "traits")
_check_patch = compile_schema(PATCH_SCHEMA)
_FLAGS: Final = ("public", "disable_ramdisk")
#: A deploy template is named by a trait: custom, or shaped like a standard (os-traits) one.
_TRAIT_NAME: Final = re.compile(r"CUSTOM_[A-Z0-9_]+|[A-Z][A-Z0-9_]*")


def _check_template_name(name: object) -> None:
    """Refuse a name that is not a trait, in Ironic's words (clients match them): a deploy
    template's, and a runbook's below 1.112."""
    if isinstance(name, str) and not _TRAIT_NAME.fullmatch(name):
        raise ApiError(
            400,
            f"Schema error for template: {name!r} is not valid under any of the given "
            f"schemas. Possible root cause: {name!r} does not match '^CUSTOM_[A-Z0-9_]+$'",
        )


class _Kind:
    """What differs between the two kinds: names, version, body schema, fields."""

    def __init__(self, kind: CatalogKind, since: Version, schema: dict[str, Any]) -> None:
        self.kind = kind
        self.since = since
        self.check = compile_schema(schema)
        self.fields = tuple(name for name in schema["properties"] if name != "uuid")
        self.words = "Deploy template" if kind == "deploy_templates" else "Runbook"


_TEMPLATES: Final = _Kind("deploy_templates", (1, 55), TEMPLATE_SCHEMA)
_RUNBOOKS: Final = _Kind("runbooks", (1, 92), RUNBOOK_SCHEMA)


def _body(kind: _Kind, entry: CatalogEntry) -> dict[str, Any]:
    out: dict[str, Any] = {"uuid": entry.uuid}
    out.update((name, getattr(entry, name)) for name in kind.fields)
    out.update(created_at=stamp(entry.created_at), updated_at=stamp(entry.updated_at))
    return out


class CatalogResource:
    """``/v1/<kind>`` and ``/v1/<kind>/{ident}`` for one kind."""

    def __init__(self, conductor: Conductor, kind: _Kind) -> None:
        self._conductor = conductor
        self._kind = kind

    # -- reading ---------------------------------------------------------------------

    def _entries(self) -> list[CatalogEntry]:
        kind, conductor = self._kind.kind, self._conductor
        if kind == "runbooks":
            return conductor.list_runbooks()
        stored = conductor.list_deploy_templates()
        names = {entry.name for entry in stored}
        settings = [
            CatalogEntry(str(uuid.uuid5(_TEMPLATE_NAMESPACE, name)), name, steps)
            for name, steps in sorted(conductor.added_deploy_templates().items())
            if name not in names
        ]
        return [*stored, *settings]

    def _find(self, ident: str) -> CatalogEntry:
        for entry in self._entries():
            if ident in (entry.uuid, entry.name):
                return entry
        raise ApiError(404, f"{self._kind.words} {ident} could not be found.")

    def _view(self, req: falcon.Request, entry: CatalogEntry, fields: list[str] | None) -> Any:
        body = _body(self._kind, entry)
        if self._kind is _RUNBOOKS and version_of(req) < _RUNBOOK_TRAITS_VERSION:
            for name in _NEWER_RUNBOOK_FIELDS:
                body.pop(name, None)
        if fields is not None:
            body = {name: body[name] for name in fields}
        body["links"] = link_pair(req.prefix, self._kind.kind, entry.uuid)
        return body

    def _fields(self, req: falcon.Request) -> list[str] | None:
        raw = req.get_param("fields")
        if raw is None:
            return None
        names = [name.strip() for name in raw.split(",") if name.strip()]
        known = ("uuid", *self._kind.fields, "created_at", "updated_at")
        unknown = sorted(set(names) - set(known))
        if unknown:
            raise ApiError(400, f"Field(s) {', '.join(unknown)} are not valid")
        return names

    def _version(self, req: falcon.Request, reading: bool) -> None:
        """Below the kind's version Ironic has no such resource: 404 to a read, 405 to a write."""
        if reading:
            require_version(req, self._kind.since, self._kind.kind, status=404)
        elif version_of(req) < self._kind.since:
            raise ApiError(405, f"The method is not allowed on {self._kind.kind} at this version")

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        self._version(req, True)
        fields = self._fields(req)
        if query_bool(req, "detail"):
            if fields is not None:
                raise ApiError(400, "Cannot ask for both detail and fields")
        elif fields is None:
            fields = ["uuid", "name"]
        entries = self._entries()
        marker = req.get_param("marker")
        if marker is not None:
            uuids = [entry.uuid for entry in entries]
            if marker not in uuids:
                raise ApiError(400, f"The marker {marker} is not a {self._kind.words.lower()}")
            entries = entries[uuids.index(marker) + 1 :]
        limit = req.get_param_as_int("limit", min_value=1)
        body: dict[str, Any] = {}
        if limit is not None and len(entries) > limit:
            entries = entries[:limit]
            query = f"limit={limit}&marker={entries[-1].uuid}"
            body["next"] = f"{req.prefix}/v1/{self._kind.kind}?{query}"
        body[self._kind.kind] = [self._view(req, entry, fields) for entry in entries]
        send(resp, body)

    def on_get_item(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        self._version(req, True)
        send(resp, self._view(req, self._find(ident), self._fields(req)))

    # -- writing ---------------------------------------------------------------------

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        self._version(req, False)
        body = self._kind.check(read_json(req))
        self._check_newer(req, body)
        if self._kind is _TEMPLATES or version_of(req) < _RUNBOOK_TRAITS_VERSION:
            _check_template_name(body["name"])
        values = {key: value for key, value in body.items() if value is not None}
        name, steps = values.pop("name"), values.pop("steps")
        if self._kind.kind == "runbooks":
            entry = self._conductor.create_runbook(name, steps, **values)
        else:
            entry = self._conductor.create_deploy_template(name, steps, **values)
        send(resp, self._view(req, entry, None), 201)
        resp.location = f"{req.prefix}/v1/{self._kind.kind}/{entry.uuid}"

    def on_patch_item(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        self._version(req, False)
        operations = _check_patch(read_json(req))
        entry = self._stored(ident)
        before = {name: getattr(entry, name) for name in self._kind.fields}
        for op in operations:
            for key in ("path", "from"):
                root = str(op.get(key, "/name")).split("/")[1]
                if root not in before:
                    raise ApiError(400, f"Cannot patch {op[key]}: /{root} is not patchable")
        try:
            after = jsonpatch.apply_patch(before, operations)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as error:
            raise ApiError(400, f"Cannot apply the patch: {error}") from None
        changed = {
            name: after.get(name, False if name in _FLAGS else None)
            for name in self._kind.fields
            if after.get(name) != before[name]
        }
        self._check_newer(req, changed)
        if "traits" in changed and changed["traits"] is None:
            changed["traits"] = []
        trait_named = self._kind is _TEMPLATES or version_of(req) < _RUNBOOK_TRAITS_VERSION
        if trait_named and "name" in changed:
            _check_template_name(changed["name"])
        if "extra" in changed and changed["extra"] is None:
            changed["extra"] = {}
        if changed:
            kind = self._kind.kind
            update = getattr(self._conductor, f"update_{kind[:-1]}")
            entry = update(entry.uuid, **changed)
        send(resp, self._view(req, entry, None))

    def on_delete_item(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        self._version(req, False)
        entry = self._stored(ident)
        getattr(self._conductor, f"delete_{self._kind.kind[:-1]}")(entry.uuid)
        resp.status = 204

    def _check_newer(self, req: falcon.Request, fields: dict[str, Any]) -> None:
        """A runbook's description and traits need 1.112."""
        for name in _NEWER_RUNBOOK_FIELDS:
            if self._kind is _RUNBOOKS and name in fields:
                require_version(req, _RUNBOOK_TRAITS_VERSION, f"The runbook field {name!r}")

    def _stored(self, ident: str) -> CatalogEntry:
        """The stored entry; a settings-file template cannot be changed here (409)."""
        getter = getattr(self._conductor, f"get_{self._kind.kind[:-1]}")
        try:
            found: CatalogEntry = getter(ident)
        except CatalogEntryNotFound:
            self._find(ident)  # 404 unless it is a settings-file template
            raise ApiError(
                409,
                f"{self._kind.words} {ident} comes from the conductor's settings file and "
                "cannot be changed through the API",
            ) from None
        return found


_check_traits = compile_schema(TRAITS_SCHEMA)
_check_trait = compile_schema(TRAIT_SCHEMA)


class RunbookTraits(Resource):
    """``/v1/runbooks/{ident}/traits[/{trait}]`` (1.112): list, replace, clear, add, remove."""

    def _runbook(self, req: falcon.Request, ident: str) -> CatalogEntry:
        require_version(req, _RUNBOOK_TRAITS_VERSION, "runbook traits", status=404)
        try:
            return self._conductor.get_runbook(ident)
        except CatalogEntryNotFound:
            raise ApiError(404, f"Runbook {ident} could not be found.") from None

    def _set(self, entry: CatalogEntry, traits: list[str], resp: falcon.Response) -> None:
        self._conductor.update_runbook(entry.uuid, traits=list(dict.fromkeys(traits)))
        resp.status = 204

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        send(resp, {"traits": self._runbook(req, ident).traits})

    def on_put(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        entry = self._runbook(req, ident)
        self._set(entry, _check_traits(read_json(req))["traits"], resp)

    def on_delete(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        self._set(self._runbook(req, ident), [], resp)

    def on_put_one(
        self, req: falcon.Request, resp: falcon.Response, ident: str, trait: str
    ) -> None:
        entry = self._runbook(req, ident)
        _check_trait(trait)
        self._set(entry, [*entry.traits, trait], resp)
        resp.location = f"{req.prefix}/v1/runbooks/{entry.uuid}/traits/{trait}"

    def on_delete_one(
        self, req: falcon.Request, resp: falcon.Response, ident: str, trait: str
    ) -> None:
        entry = self._runbook(req, ident)
        if trait in entry.traits:  # removing an absent trait does nothing (Ironic's rule)
            self._set(entry, [t for t in entry.traits if t != trait], resp)
        resp.status = 204


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    out: list[tuple[str, Any, dict[str, str]]] = []
    for kind in (_TEMPLATES, _RUNBOOKS):
        resource = CatalogResource(conductor, kind)
        out.append((f"/v1/{kind.kind}", resource, {}))
        out.append((f"/v1/{kind.kind}/{{ident}}", resource, {"suffix": "item"}))
    traits = RunbookTraits(conductor)
    out.append(("/v1/runbooks/{ident}/traits", traits, {}))
    out.append(("/v1/runbooks/{ident}/traits/{trait}", traits, {"suffix": "one"}))
    return out
