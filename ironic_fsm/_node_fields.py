"""The node's field checks: what each field of :class:`~ironic_fsm.node.Node` accepts.

Kept apart from the record so that ``node`` reads as the record and its
codec; these run on every assignment, as attrs validators and converters.
"""

from __future__ import annotations

import math
import re
import reprlib
import string
import uuid as _uuid
from contextvars import ContextVar
from datetime import datetime
from typing import Any, Final

import attrs

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.masking import mask_secrets


def _masked_repr(value: Any) -> str:
    return repr(mask_secrets(value))


def _new_uuid() -> str:
    return str(_uuid.uuid4())


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


def json_kind(value: object) -> str:
    """A JSON value's type, in JSON's words (for messages about files and options)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _bad(field: str, expected: str, value: object) -> InvalidParameterValue:
    # Only the type is named: values may be secrets or huge.
    return InvalidParameterValue(
        f"Node field {field!r} must be {expected}, not a value of type {type(value).__name__}",
        field=field,
    )


def _to_uuid(value: object, field: str = "uuid") -> str:
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
            f"Node field {field!r} must be a UUID, not {reprlib.repr(value)}", field=field
        )
    raise _bad(field, "a UUID string", value)


def _to_instance_uuid(value: object) -> str | None:
    """The instance UUID in canonical form, so that the ``instance_uuid`` filter finds it."""
    return None if value is None else _to_uuid(value, "instance_uuid")


def _good_name(value: str) -> bool:
    """Whether ``value`` (a string) passes :func:`check_name`, without building an error."""
    return (
        0 < len(value) <= MAX_NAME_LENGTH
        and _CONTROL_CHARS.search(value) is None
        and _UUID_SHAPE.match(value) is None
    )


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


#: Characters Ironic allows in a conductor group (its API's pattern for the node field).
_GROUP_CHARS: Final = frozenset(string.ascii_letters + string.digits + "_-.")
#: Ironic's limit for a conductor group (its column's width).
MAX_GROUP_LENGTH: Final = 255
#: A conductor group as stores keep it: lower case (Ironic's groups are case-insensitive).
STORED_GROUP: Final = re.compile(r"[a-z0-9_.-]{0,255}")


def conductor_group(value: object, what: str, **details: Any) -> str:
    """Ironic's rule for a conductor group, the node's and the conductor's: one check for both.

    At most 255 letters, digits, ``_``, ``-`` or ``.`` (``""`` is the
    default group). Returned in lower case: Ironic compares groups without
    case and stores them lowered, so ``Rack-1`` and ``rack-1`` are one group.
    """
    if (
        not isinstance(value, str)
        or len(value) > MAX_GROUP_LENGTH
        or not _GROUP_CHARS.issuperset(value)
    ):
        raise InvalidParameterValue(
            f"{what} must be at most {MAX_GROUP_LENGTH} letters, digits, '_', '-' or '.', "
            f"not {reprlib.repr(value)}",
            **details,
        )
    return value.lower()


def _group(value: object) -> str:
    """The node field's converter: checked and lowered as construction and updates need."""
    return conductor_group(value, "Node field 'conductor_group'", field="conductor_group")


def _name(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    check_name(value, attribute.name)


def _text(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """A required string: non-empty, no NUL (databases cannot store it)."""
    if type(value) is not str or not value or "\x00" in value:
        raise _bad(attribute.name, "a non-empty string without NUL characters", value)


def _optional_text(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (type(value) is not str or "\x00" in value):
        raise _bad(attribute.name, "a string without NUL characters, or None", value)


#: Ironic's limit for a node's description (its API's; the other free texts have 255).
MAX_DESCRIPTION_LENGTH: Final = 4096


def _bounded(limit: int) -> Any:
    """An optional string of at most ``limit`` characters: Ironic's widths, so it fits."""

    def check(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        _optional_text(inst, attribute, value)
        if value is not None and len(value) > limit:  # type: ignore[arg-type]
            raise InvalidParameterValue(
                f"Node field {attribute.name!r} must have at most {limit} characters, "
                f"not {len(value)}",  # type: ignore[arg-type]
                field=attribute.name,
            )

    return check


_short_text: Final = _bounded(MAX_NAME_LENGTH)
_long_text: Final = _bounded(MAX_DESCRIPTION_LENGTH)


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


def _good_trait(trait: object) -> bool:
    return type(trait) is str and 0 < len(trait) <= MAX_NAME_LENGTH and "\x00" not in trait


def _traits(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if type(value) is not list:
        raise _bad(attribute.name, "a list of trait names", value)
    for trait in value:
        if not _good_trait(trait):
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
