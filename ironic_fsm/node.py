"""The node record: everything ironic_fsm knows about one bare-metal machine.

Field names are Ironic's, so that data moves between the two without a
mapping. The record is plain data: the lifecycle keeps no state of its own
on it, and a node converts losslessly to and from a JSON-safe dict (what
the stores persist). Secrets in ``driver_info`` and ``instance_info`` are
masked in ``repr`` and in :meth:`Node.to_dict` when asked.
"""

from __future__ import annotations

import json
import math
import re
import reprlib
import uuid as _uuid
from contextvars import ContextVar
from datetime import datetime
from typing import Any, Final

import attrs

from ironic_fsm import states
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.interfaces import INTERFACE_KINDS  # re-exported: its home is interfaces
from ironic_fsm.masking import mask_secrets

__all__ = [
    "INTERFACE_KINDS",
    "MAX_NESTING",
    "NODE_FIELDS",
    "Node",
    "check_field",
    "check_json",
    "check_name",
    "is_uuid_like",
]


def _masked_repr(value: Any) -> str:
    return repr(mask_secrets(value))


def _new_uuid() -> str:
    return str(_uuid.uuid4())


_DATETIME_FIELDS: Final = frozenset({"provision_updated_at", "created_at", "updated_at"})

#: How deeply JSON containers may nest inside a dict field. Real records
#: nest a handful of levels; the bound keeps hostile input from exhausting
#: the recursion limit of the JSON codec or of the database.
MAX_NESTING: Final = 32
#: Ironic's limit for names (and the width of the stores' name column).
MAX_NAME_LENGTH: Final = 255

# Decoded JSON is JSON-safe by construction: while Node.from_json builds a
# node, the deep walk of its containers is skipped (the flat checks stay).
_TRUSTED_JSON: ContextVar[bool] = ContextVar("ironic_fsm_trusted_json", default=False)
_CONTROL_CHARS: Final = re.compile(r"[\x00-\x1f\x7f]")
_CANONICAL_UUID: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_UUID_SHAPE: Final = re.compile(
    r"^(urn:uuid:)?\{?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\}?$",
    re.IGNORECASE,
)


def _bad(field: str, expected: str, value: object) -> InvalidParameterValue:
    # Only the type is named: values may be secrets or huge.
    return InvalidParameterValue(
        f"Node field {field!r} must be {expected}, not a value of type {type(value).__name__}",
        field=field,
    )


def _to_uuid(value: object) -> str:
    """A UUID in its canonical form (lowercase, hyphenated)."""
    if isinstance(value, _uuid.UUID):
        return str(value)
    if isinstance(value, str):
        if _CANONICAL_UUID.fullmatch(value):  # the common case, and the cheap one
            return value
        if len(value) <= 45 and "\x00" not in value:
            try:
                return str(_uuid.UUID(value))
            except ValueError:
                pass
        raise InvalidParameterValue(
            f"Node field 'uuid' must be a UUID, not {reprlib.repr(value)}", field="uuid"
        )
    raise _bad("uuid", "a UUID string", value)


def is_uuid_like(value: object) -> bool:
    """Whether ``value`` is a string shaped like a UUID (so it cannot be a name)."""
    return isinstance(value, str) and _UUID_SHAPE.match(value) is not None


def check_name(value: object, field: str = "name") -> None:
    """Ironic's rules for a node name: a short printable string that is not a UUID."""
    if value is None:
        return
    if not isinstance(value, str):
        raise _bad(field, "a string or None", value)
    if not value or len(value) > MAX_NAME_LENGTH:
        raise InvalidParameterValue(
            f"Node field {field!r} must have 1 to {MAX_NAME_LENGTH} characters, not {len(value)}",
            field=field,
        )
    if _CONTROL_CHARS.search(value):
        raise InvalidParameterValue(
            f"Node field {field!r} must not contain control characters: {value!r}", field=field
        )
    if _UUID_SHAPE.match(value):
        raise InvalidParameterValue(
            f"Node field {field!r} must not look like a UUID ({value!r}): names and UUIDs "
            "share one namespace",
            field=field,
        )


def _name(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    check_name(value, attribute.name)


def _text(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """A required string: non-empty, no NUL (databases cannot store it)."""
    if type(value) is not str or not value or "\x00" in value:
        raise _bad(attribute.name, "a non-empty string without NUL characters", value)


def _optional_text(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (type(value) is not str or "\x00" in value):
        raise _bad(attribute.name, "a string without NUL characters, or None", value)


def _flag(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not True and value is not False:
        raise _bad(attribute.name, "True or False", value)


def _optional_flag(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and value is not True and value is not False:
        raise _bad(attribute.name, "True, False or None", value)


def _version(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not int or value < 0:
        raise _bad(attribute.name, "an integer >= 0", value)


def _timestamp(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise _bad(attribute.name, "a timezone-aware datetime or None", value)


def _traits(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not list:
        raise _bad(attribute.name, "a list of trait names", value)
    for trait in value:
        if type(trait) is not str or not trait or len(trait) > MAX_NAME_LENGTH or "\x00" in trait:
            raise InvalidParameterValue(
                f"Node field 'traits' must hold non-empty strings of at most "
                f"{MAX_NAME_LENGTH} characters, not {reprlib.repr(trait)}",
                field="traits",
            )


def check_json(value: object, where: str, depth: int = 0) -> None:
    """Refuse anything that does not survive a JSON round trip unchanged.

    Strings keys only, no NaN or infinity, no tuples or sets, no NUL (which
    PostgreSQL refuses), and at most :data:`MAX_NESTING` levels.
    """
    kind = type(value)
    if kind is str:
        if "\x00" in value:  # type: ignore[operator]
            raise InvalidParameterValue(f"{where} contains a NUL character", field=where)
    elif kind is dict:
        if depth >= MAX_NESTING:
            raise InvalidParameterValue(
                f"{where} nests deeper than {MAX_NESTING} levels", field=where
            )
        for key, item in value.items():  # type: ignore[attr-defined]
            if type(key) is not str or "\x00" in key:
                raise InvalidParameterValue(
                    f"{where} has a key that is not a string without NUL characters "
                    f"({type(key).__name__})",
                    field=where,
                )
            if type(item) not in _JSON_SCALARS:
                check_json(item, f"{where}[{reprlib.repr(key)}]", depth + 1)
    elif kind is list:
        if depth >= MAX_NESTING:
            raise InvalidParameterValue(
                f"{where} nests deeper than {MAX_NESTING} levels", field=where
            )
        for index, item in enumerate(value):  # type: ignore[arg-type]
            if type(item) not in _JSON_SCALARS:
                check_json(item, f"{where}[{index}]", depth + 1)
    elif kind is float:
        if not math.isfinite(value):  # type: ignore[arg-type]
            raise InvalidParameterValue(f"{where} is not a finite number", field=where)
    elif kind not in _JSON_SCALARS:
        raise InvalidParameterValue(
            f"{where} holds a {kind.__name__}, which JSON cannot represent", field=where
        )


_JSON_SCALARS: Final = frozenset({int, bool, type(None)})


def _json_dict(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not dict:
        raise _bad(attribute.name, "a dictionary", value)
    if value and not _TRUSTED_JSON.get():
        check_json(value, f"Node field {attribute.name!r}")


def _optional_json_dict(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None:
        _json_dict(inst, attribute, value)


@attrs.define(eq=True, on_setattr=attrs.setters.NO_OP)
class Node:
    """One bare-metal node.

    ``provision_state`` starts at ``enroll``. ``version`` is bumped by the
    store on every save and guards against lost updates. Timestamps are
    timezone-aware UTC datetimes.

    Every field is checked on construction (types, Ironic's name rules,
    JSON-safe dicts), raising
    :class:`~ironic_fsm.exceptions.InvalidParameterValue`. Assignment is
    not checked, to keep the conductor's many small updates cheap: code
    that assigns user input checks it with :func:`check_field` first, and
    the conductor runs :meth:`check_types` before every save.
    """

    uuid: str = attrs.field(factory=_new_uuid, converter=_to_uuid)
    name: str | None = attrs.field(default=None, validator=_name)
    driver: str = attrs.field(default="fake-hardware", validator=_text)
    driver_info: dict[str, Any] = attrs.field(factory=dict, repr=_masked_repr, validator=_json_dict)
    driver_internal_info: dict[str, Any] = attrs.field(
        factory=dict, repr=_masked_repr, validator=_json_dict
    )
    properties: dict[str, Any] = attrs.field(factory=dict, repr=_masked_repr, validator=_json_dict)
    instance_info: dict[str, Any] = attrs.field(
        factory=dict, repr=_masked_repr, validator=_json_dict
    )
    extra: dict[str, Any] = attrs.field(factory=dict, repr=_masked_repr, validator=_json_dict)
    traits: list[str] = attrs.field(factory=list, validator=_traits)
    resource_class: str | None = attrs.field(default=None, validator=_optional_text)
    provision_state: str = attrs.field(default=states.ENROLL, validator=_text)
    target_provision_state: str | None = attrs.field(default=None, validator=_optional_text)
    power_state: str | None = attrs.field(default=None, validator=_optional_text)
    target_power_state: str | None = attrs.field(default=None, validator=_optional_text)
    maintenance: bool = attrs.field(default=False, validator=_flag)
    maintenance_reason: str | None = attrs.field(default=None, validator=_optional_text)
    fault: str | None = attrs.field(default=None, validator=_optional_text)
    last_error: str | None = attrs.field(default=None, validator=_optional_text)
    retired: bool = attrs.field(default=False, validator=_flag)
    retired_reason: str | None = attrs.field(default=None, validator=_optional_text)
    protected: bool = attrs.field(default=False, validator=_flag)
    protected_reason: str | None = attrs.field(default=None, validator=_optional_text)
    automated_clean: bool | None = attrs.field(default=None, validator=_optional_flag)
    clean_step: dict[str, Any] | None = attrs.field(
        default=None, repr=_masked_repr, validator=_optional_json_dict
    )
    deploy_step: dict[str, Any] | None = attrs.field(
        default=None, repr=_masked_repr, validator=_optional_json_dict
    )
    service_step: dict[str, Any] | None = attrs.field(
        default=None, repr=_masked_repr, validator=_optional_json_dict
    )
    reservation: str | None = attrs.field(default=None, validator=_optional_text)
    provision_updated_at: datetime | None = attrs.field(default=None, validator=_timestamp)
    created_at: datetime | None = attrs.field(default=None, validator=_timestamp)
    updated_at: datetime | None = attrs.field(default=None, validator=_timestamp)
    version: int = attrs.field(default=0, validator=_version)
    target_raid_config: dict[str, Any] = attrs.field(
        factory=dict, repr=_masked_repr, validator=_json_dict
    )
    raid_config: dict[str, Any] = attrs.field(factory=dict, repr=_masked_repr, validator=_json_dict)
    power_interface: str | None = attrs.field(default=None, validator=_optional_text)
    management_interface: str | None = attrs.field(default=None, validator=_optional_text)
    deploy_interface: str | None = attrs.field(default=None, validator=_optional_text)
    boot_interface: str | None = attrs.field(default=None, validator=_optional_text)
    bios_interface: str | None = attrs.field(default=None, validator=_optional_text)
    raid_interface: str | None = attrs.field(default=None, validator=_optional_text)
    inspect_interface: str | None = attrs.field(default=None, validator=_optional_text)
    rescue_interface: str | None = attrs.field(default=None, validator=_optional_text)
    vendor_interface: str | None = attrs.field(default=None, validator=_optional_text)
    firmware_interface: str | None = attrs.field(default=None, validator=_optional_text)

    def to_dict(self, *, mask: bool = False, copy: bool = True) -> dict[str, Any]:
        """A JSON-safe dict of every field (datetimes as ISO 8601 strings).

        Containers are copied, so changing the result never changes the
        node; ``copy=False`` shares them, for callers that only serialise
        the result at once (the stores). With ``mask=True`` secrets are
        replaced, for display.
        """
        out: dict[str, Any] = {}
        for name in NODE_FIELDS:
            value = getattr(self, name)
            if name in _DATETIME_FIELDS:
                value = None if value is None else value.isoformat()
            elif copy and isinstance(value, (dict, list)):
                value = _copy_json(value)
            out[name] = value
        return mask_secrets(out) if mask else out

    def to_json(self) -> str:
        """The node as JSON text: what stores persist."""
        return json.dumps(self.to_dict(copy=False), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, copy: bool = True) -> Node:
        """The node that :meth:`to_dict` described; unknown keys are an error.

        ``copy=False`` adopts the containers of ``data`` (for freshly decoded
        JSON that nobody else holds).
        """
        if not isinstance(data, dict):
            raise InvalidParameterValue(
                f"A node record must be a dictionary, not {type(data).__name__}"
            )
        unknown = data.keys() - _FIELD_SET
        if unknown:
            names = sorted(map(str, unknown))
            raise InvalidParameterValue(f"Unknown node field(s): {', '.join(names)}", fields=names)
        kwargs = {}
        for name, value in data.items():
            if name in _DATETIME_FIELDS and isinstance(value, str):
                value = _parse_timestamp(name, value)
            elif copy and isinstance(value, (dict, list)):
                check_json(value, f"Node field {name!r}")  # before copying: bounded depth
                value = _copy_json(value)
            kwargs[name] = value
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str | bytes) -> Node:
        """The node that :meth:`to_json` wrote."""
        try:
            data = json.loads(text)
        except (ValueError, TypeError, RecursionError) as exc:
            raise InvalidParameterValue(f"A node record is not valid JSON: {exc}") from exc
        token = _TRUSTED_JSON.set(True)
        try:
            return cls.from_dict(data, copy=False)
        finally:
            _TRUSTED_JSON.reset(token)

    def check_types(self) -> None:
        """Check every field's type and shape again, without walking the dicts' contents.

        For records changed by assignment (drivers do that): a wrong type
        saved would make the record unreadable, so it is refused before
        the save. What JSON cannot encode inside the dicts the store refuses.
        """
        # Inline rather than attrs.validate: this runs before every save.
        for name in _OPTIONAL_TEXT_FIELDS:
            value = getattr(self, name)
            if value is not None and (type(value) is not str or "\x00" in value):
                raise _bad(name, "a string without NUL characters, or None", value)
        for name in _DICT_FIELDS:
            value = getattr(self, name)
            if type(value) is not dict and (value is not None or name not in _STEP_FIELDS):
                raise _bad(name, "a dictionary", value)
        for name in ("maintenance", "retired", "protected"):
            value = getattr(self, name)
            if value is not True and value is not False:
                raise _bad(name, "True or False", value)
        for name in _TIMESTAMP_FIELDS:
            value = getattr(self, name)
            if value is not None and (type(value) is not datetime or value.tzinfo is None):
                _timestamp(self, _FIELDS_BY_NAME[name], value)
        _text(self, _FIELDS_BY_NAME["driver"], self.driver)
        _text(self, _FIELDS_BY_NAME["provision_state"], self.provision_state)
        _optional_flag(self, _FIELDS_BY_NAME["automated_clean"], self.automated_clean)
        _version(self, _FIELDS_BY_NAME["version"], self.version)
        _traits(self, _FIELDS_BY_NAME["traits"], self.traits)
        if type(self.uuid) is not str or not _CANONICAL_UUID.fullmatch(self.uuid):
            raise _bad("uuid", "a UUID in canonical form", self.uuid)
        if self.name is not None:
            check_name(self.name)

    def interface_name(self, kind: str) -> str | None:
        """The interface implementation this node chose for ``kind``, if any."""
        return getattr(self, f"{kind}_interface")  # type: ignore[no-any-return]


def _parse_timestamp(name: str, value: str) -> datetime:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise InvalidParameterValue(
            f"Node field {name!r} must be an ISO 8601 timestamp, not {reprlib.repr(value)}",
            field=name,
        ) from None


def check_field(name: str, value: Any) -> Any:
    """Check (and normalise) ``value`` for the node field ``name``, as construction would.

    Lets callers refuse bad input before they lock or load anything.
    """
    field = _FIELDS_BY_NAME.get(name)
    if field is None:
        raise InvalidParameterValue(f"Unknown node field: {name!r}", fields=[name])
    if name == "uuid":  # the one field with a converter
        value = _to_uuid(value)
    if field.validator is not None:
        field.validator(None, field, value)
    return value


def _copy_json(value: Any) -> Any:
    # Deep copy limited to JSON containers: much cheaper than copy.deepcopy.
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


#: The names of every node field, in declaration order.
NODE_FIELDS: Final = tuple(f.name for f in attrs.fields(Node))
_FIELD_SET: Final = frozenset(NODE_FIELDS)
_FIELDS_BY_NAME: Final[dict[str, attrs.Attribute[Any]]] = attrs.fields_dict(Node)
_STEP_FIELDS: Final = frozenset({"clean_step", "deploy_step", "service_step"})
_DICT_FIELDS: Final = tuple(
    n for n, f in _FIELDS_BY_NAME.items() if f.validator in (_json_dict, _optional_json_dict)
)
_OPTIONAL_TEXT_FIELDS: Final = tuple(
    n for n, f in _FIELDS_BY_NAME.items() if f.validator is _optional_text
)
_TIMESTAMP_FIELDS: Final = tuple(sorted(_DATETIME_FIELDS))
