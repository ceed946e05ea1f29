"""The node record: everything ironic_fsm knows about one bare-metal machine.

Field names are Ironic's, so that data moves between the two without a
mapping. The record is plain data: the lifecycle keeps no state of its own
on it, and a node converts losslessly to and from a JSON-safe dict (what
the stores persist). Secrets in ``driver_info`` and ``instance_info`` are
masked in ``repr`` and in :meth:`Node.to_dict` when asked.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

import attrs
import orjson

from ironic_fsm import _node_codec, _node_fields, states
from ironic_fsm._node_codec import NOT_EXACT as _NOT_EXACT
from ironic_fsm._node_codec import Snapshot
from ironic_fsm._node_codec import dumps as _dumps
from ironic_fsm._node_fields import (
    _CANONICAL_UUID,
    _TRUSTED_JSON,
    STORED_GROUP,
    _bad,
    _flag,
    _good_name,
    _group,
    _json_dict,
    _long_text,
    _masked_repr,
    _name,
    _new_uuid,
    _optional_flag,
    _optional_json_dict,
    _optional_text,
    _short_text,
    _text,
    _timestamp,
    _to_instance_uuid,
    _to_uuid,
    _traits,
    _version,
    check_json,
    check_name,
    is_uuid_like,
)
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.interfaces import INTERFACE_KINDS  # re-exported: its home is interfaces
from ironic_fsm.masking import mask_secrets

__all__ = [
    "INTERFACE_KINDS",
    "MAX_NESTING",
    "NODE_FIELDS",
    "Node",
    "Snapshot",
    "check_field",
    "check_json",
    "check_name",
    "check_storable",
    "encode_stored",
    "freeze_checked",
    "is_uuid_like",
]

#: How deeply JSON containers may nest inside a dict field. Real records
#: nest a handful of levels; the bound keeps hostile input from exhausting
#: the recursion limit of the JSON codec or of the database.
MAX_NESTING: Final = _node_fields.MAX_NESTING
#: Ironic's limit for names (and the width of the stores' name column).
MAX_NAME_LENGTH: Final = _node_fields.MAX_NAME_LENGTH


def _to_parent(value: object) -> str | None:
    """The parent's UUID in canonical form, so that the ``parent_node`` filter finds it."""
    return None if value is None else _to_uuid(value, "parent_node")


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
    #: The conductor group whose conductors manage the node (``""``: the default group).
    conductor_group: str = attrs.field(default="", converter=_group)
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
    #: The project that owns the node, and the one it is lent to (Ironic's multi-tenancy).
    owner: str | None = attrs.field(default=None, validator=_short_text)
    lessee: str | None = attrs.field(default=None, validator=_short_text)
    description: str | None = attrs.field(default=None, validator=_long_text)
    #: The instance deployed on the node, set by whoever deploys (Nova in Ironic).
    instance_uuid: str | None = attrs.field(
        default=None, converter=_to_instance_uuid, validator=_optional_text
    )
    #: The boot mode (``uefi``/``bios``) and secure boot as the BMC last reported them:
    #: cached by the conductor (on verify, manage and when set), never set by users.
    boot_mode: str | None = attrs.field(default=None, validator=_optional_text)
    secure_boot: bool | None = attrs.field(default=None, validator=_optional_flag)
    #: The node's network configuration for its instance (Ironic's ``network_data``, 1.66).
    network_data: dict[str, Any] = attrs.field(
        factory=dict, repr=_masked_repr, validator=_json_dict
    )
    #: The shard, and the node this one is a part of (a DPU's host): both filtered, so columns.
    shard: str | None = attrs.field(default=None, validator=_short_text)
    parent_node: str | None = attrs.field(
        default=None, converter=_to_parent, validator=_optional_text
    )
    #: When the last inspection started (cleared when it ends) and when it last succeeded.
    inspection_started_at: datetime | None = attrs.field(default=None, validator=_timestamp)
    inspection_finished_at: datetime | None = attrs.field(default=None, validator=_timestamp)
    #: The interface kinds Ironic has beyond the ten above (console 1.31, network 1.20,
    #: storage 1.33): ``None`` is the hardware type's default, as for the others.
    console_interface: str | None = attrs.field(default=None, validator=_optional_text)
    network_interface: str | None = attrs.field(default=None, validator=_optional_text)
    storage_interface: str | None = attrs.field(default=None, validator=_optional_text)
    #: The node must never be powered off (a DPU's host, say): power-off requests and
    #: the steps that power off are refused (Ironic's ``disable_power_off``, 1.95).
    disable_power_off: bool = attrs.field(default=False, validator=_flag)
    #: The deployed instance's name, as whoever deploys gives it (Ironic 1.104).
    instance_name: str | None = attrs.field(default=None, validator=_short_text)
    #: The BMC's word for the node's health (``OK``, ``Warning``, ``Critical``), as the
    #: management interface last read it (Ironic 1.109); None when unknown.
    health: str | None = attrs.field(default=None, validator=_optional_text)

    def to_dict(self, *, mask: bool = False, copy: bool = True) -> dict[str, Any]:
        """A JSON-safe dict of every field (datetimes as ISO 8601 strings).

        Containers are copied, so changing the result never changes the
        node; ``copy=False`` shares them, for callers that only serialise
        the result at once (the stores). With ``mask=True`` secrets are
        replaced, for display.
        """
        out: dict[str, Any] = _record(self)
        if copy:
            for name in _CONTAINER_FIELDS:
                value = out[name]
                if isinstance(value, (dict, list)):
                    out[name] = _copy_json(value)
        return mask_secrets(out) if mask else out

    def to_json(self) -> str:
        """The node as JSON text: what stores persist.

        Raises :class:`~ironic_fsm.exceptions.InvalidParameterValue` for a
        field of the wrong type, ``TypeError`` or ``ValueError`` for a record
        that would not read back equal (see :func:`encode_stored`).
        """
        check_storable(self)
        return encode_stored(self).decode()

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
        """The node that :meth:`to_json` wrote, every field checked as on construction.

        The common case is cheap: a record with every field is built
        directly and its fields' shapes checked in one pass
        (:func:`check_storable`, plus the name rules); anything else (a
        record of an older version with fields missing, a value that fails)
        goes through :meth:`from_dict`, which says what is wrong. The dicts'
        contents are not walked: decoded JSON is JSON-safe by construction.
        """
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError:
            try:  # text the json module wrote (NaN): earlier releases did
                data = json.loads(text)
            except (ValueError, TypeError, RecursionError) as exc:
                raise InvalidParameterValue(f"A node record is not valid JSON: {exc}") from exc
        if cls is Node and type(data) is dict and len(data) == _FIELD_COUNT:
            try:
                node: Node = _build(data)
            except (KeyError, TypeError, ValueError):
                pass  # a field missing or a bad timestamp: from_dict says which
            else:
                if _shapes_ok(node) and (node.name is None or _good_name(node.name)):
                    return node
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
        Adds Ironic's name rules to :func:`check_storable`.
        """
        check_storable(self)
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
    convert = _CONVERTERS.get(name)
    if convert is not None:  # checked and normalised
        value = convert(value)
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
#: The fields with a converter (which checks as well as normalises).
_CONVERTERS: Final[dict[str, Any]] = {
    "uuid": _to_uuid,
    "conductor_group": _group,
    "instance_uuid": _to_instance_uuid,
    "parent_node": _to_parent,
}
_STEP_FIELDS: Final = frozenset({"clean_step", "deploy_step", "service_step"})
_DICT_FIELDS: Final = tuple(
    n for n, f in _FIELDS_BY_NAME.items() if f.validator in (_json_dict, _optional_json_dict)
)
_OPTIONAL_TEXT_FIELDS: Final = tuple(
    n
    for n, f in _FIELDS_BY_NAME.items()
    if f.validator in (_optional_text, _short_text, _long_text)
)
#: The fields holding a datetime (ISO 8601 text in JSON).
_DATETIME_FIELDS: Final = frozenset(
    n for n, f in _FIELDS_BY_NAME.items() if f.validator is _timestamp
)
_TIMESTAMP_FIELDS: Final = tuple(sorted(_DATETIME_FIELDS))
_CONTAINER_FIELDS: Final = (*_DICT_FIELDS, "traits")

# -- the stores' codec ------------------------------------------------------------------------
#
# Generated once from the fields (ironic_fsm._node_codec, which says why and what the
# generated code relies on), since these run on every store read and write. orjson
# because it encodes a record about ten times faster than the json module and decodes it
# three to four times faster (measured in docs/performance.rst); whatever it would write
# differently from what it was given is caught by reading the text back (encode_stored).


def _field_checks() -> tuple[tuple[str, str], ...]:
    """Each field once, with the shape (``_node_codec.SHAPES``) a store can keep of it."""
    rules: dict[str, tuple[str, ...]] = {
        "optional text": (*_OPTIONAL_TEXT_FIELDS, "name"),
        "text": ("driver", "provision_state"),
        "dict": tuple(n for n in _DICT_FIELDS if n not in _STEP_FIELDS),
        "optional dict": tuple(sorted(_STEP_FIELDS)),
        "flag": ("maintenance", "retired", "protected", "disable_power_off"),
        "optional flag": ("automated_clean", "secure_boot"),
        "timestamp": _TIMESTAMP_FIELDS,
        "version": ("version",),
        "uuid": ("uuid",),
        "group": ("conductor_group",),
        "traits": ("traits",),
    }
    checks = tuple((name, shape) for shape, names in rules.items() for name in names)
    assert sorted(name for name, _ in checks) == sorted(NODE_FIELDS), "each field, once"
    return checks


#: What the codecs are generated from (the tests build the reference codec from it too).
_LAYOUT: Final = _node_codec.Layout(
    cls=Node,
    fields=NODE_FIELDS,
    datetimes=_DATETIME_FIELDS,
    containers=_CONTAINER_FIELDS,
    checks=_field_checks(),
)
_record, _raw, _build, _freeze, _thaw, _shapes_ok, _freeze_checked = _node_codec.generate(_LAYOUT)


def encode_stored(node: Node) -> bytes:
    """The node as UTF-8 JSON, only if that text reads back equal to the node.

    What a store writes, after :func:`check_storable`. orjson writes the
    timestamps itself (as :meth:`datetime.isoformat` does, in C); reading the
    text back refuses whatever JSON would change: ``NaN`` and infinities,
    tuples, sets, datetimes, UUIDs and enums inside the dicts, non-string
    keys, integers beyond 64 bits.

    Raises:
        TypeError: a value JSON cannot hold (``RecursionError`` past 254 levels).
        ValueError: a value JSON would not give back as it is.
    """
    record = _raw(node)
    text = _dumps(record)
    back = orjson.loads(text)
    # The timestamps come back as text, and were written from what they are.
    for name in _TIMESTAMP_FIELDS:
        back[name] = record[name]
    if back != record:
        raise ValueError(_NOT_EXACT)
    return text


def freeze(node: Node) -> Snapshot:
    """An immutable copy of ``node``, only if its containers read back equal.

    For an in-process store: no timestamp is formatted or parsed, and only
    the containers go through JSON (orjson copies them faster than Python
    code could). Fields' types are not checked (:func:`check_storable` is).

    Raises:
        TypeError, ValueError, RecursionError: as :func:`encode_stored`.
    """
    return _freeze(node)


# The two below run on every MemoryStore save and read: the generated code itself, no wrapper.
_freeze_checked.__doc__ = """:func:`freeze` after :func:`check_storable`'s test; ``None``: failed.

``since``: the stored snapshot the node was read from (or ``None``): fields
still the same objects as its own were checked when it was stored, and are
not checked again. On ``None`` or an exception, :func:`check_storable` and
:func:`freeze` say what is wrong.
"""
freeze_checked: Final[Callable[[Node, Snapshot | None], Snapshot | None]] = _freeze_checked
_thaw.__doc__ = "A new node, with new containers, from what :func:`freeze` returned."
thaw: Final[Callable[[Snapshot], Node]] = _thaw


_FIELD_COUNT: Final = len(NODE_FIELDS)


def check_storable(node: Node) -> None:
    """Refuse, naming the field, a value of a type no store can write and read back.

    :meth:`Node.check_types` without Ironic's name rules: what every store
    checks before it writes, since stores read their own records back
    quickly (:meth:`Node.from_json`) and must never hold what they cannot read.
    """
    if _shapes_ok(node):
        return
    _explain_containers(node)
    _explain_scalars(node)


def _explain_containers(node: Node) -> None:
    """The slow path of :func:`check_storable`: raise for the text, dict and flag fields."""
    for name in _OPTIONAL_TEXT_FIELDS:
        value = getattr(node, name)
        if value is not None and (type(value) is not str or "\x00" in value):
            raise _bad(name, "a string without NUL characters, or None", value)
    for name in _DICT_FIELDS:
        value = getattr(node, name)
        if type(value) is not dict and (value is not None or name not in _STEP_FIELDS):
            raise _bad(name, "a dictionary", value)
    for name in ("maintenance", "retired", "protected"):
        value = getattr(node, name)
        if value is not True and value is not False:
            raise _bad(name, "True or False", value)


def _explain_scalars(node: Node) -> None:
    """The slow path of :func:`check_storable`: raise for the remaining fields."""
    for name in _TIMESTAMP_FIELDS:
        value = getattr(node, name)
        if value is not None and (type(value) is not datetime or value.tzinfo is None):
            _timestamp(node, _FIELDS_BY_NAME[name], value)
    _text(node, _FIELDS_BY_NAME["driver"], node.driver)
    _text(node, _FIELDS_BY_NAME["provision_state"], node.provision_state)
    _optional_flag(node, _FIELDS_BY_NAME["automated_clean"], node.automated_clean)
    _optional_flag(node, _FIELDS_BY_NAME["secure_boot"], node.secure_boot)
    _version(node, _FIELDS_BY_NAME["version"], node.version)
    _traits(node, _FIELDS_BY_NAME["traits"], node.traits)
    if type(node.uuid) is not str or not _CANONICAL_UUID.fullmatch(node.uuid):
        raise _bad("uuid", "a UUID in canonical form", node.uuid)
    if node.name is not None and (type(node.name) is not str or "\x00" in node.name):
        raise _bad("name", "a string without NUL characters, or None", node.name)
    group = node.conductor_group
    if type(group) is not str or not STORED_GROUP.fullmatch(group):
        lowered = _group(group)  # raises for what no group may hold
        raise InvalidParameterValue(
            f"Node field 'conductor_group' must be stored in lower case ({lowered!r}), "
            f"not {group!r}",
            field="conductor_group",
        )
