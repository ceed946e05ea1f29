"""What the parts that keep records beside nodes share: the store's records, their rules.

Ports, port groups, chassis, allocations and volume records live in the
store's :class:`~ironic_fsm.stores.base.RecordStore` when it has one
(:attr:`~ironic_fsm.stores.capabilities.StoreCapabilities.records`);
a store without one keeps none, and asking is
:class:`~ironic_fsm.exceptions.StoreUnsupported`, never a silent loss.
"""

from __future__ import annotations

import re
import uuid as _uuid
from collections.abc import Collection, Iterable, Sized
from typing import Any, Final, Generic, TypeVar

from ironic_fsm.conductor.common import shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.exceptions import InvalidParameterValue, ResourceNotFound, StoreUnsupported
from ironic_fsm.node import check_json, is_uuid_like
from ironic_fsm.records import Record
from ironic_fsm.stores.base import RecordQuery, RecordStore

__all__ = [
    "check_dict",
    "check_flag",
    "check_known",
    "described_changes",
    "check_traits",
    "check_text",
    "find",
    "new_uuid",
    "normalize_mac",
    "records_of",
    "Shelf",
]

R = TypeVar("R", bound=Record)
_MAC: Final = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")
#: A trait: custom, or shaped like a standard (os-traits) one, at most 255 characters.
_TRAIT: Final = re.compile(r"(CUSTOM_[A-Z0-9_]+|[A-Z][A-Z0-9_]*)")


def records_of(ctx: Context, kind: type[Record]) -> RecordStore:
    """The store's records; :class:`StoreUnsupported` naming the kind if it keeps none."""
    records = ctx.caps.records
    if records is None:
        raise StoreUnsupported(
            f"The store {type(ctx.caps.store).__name__} keeps no {kind.kind} (it has no "
            "records attribute): use MemoryStore or SQLStore for them",
            kind=kind.kind,
        )
    return records


class Shelf(Generic[R]):
    """The store's records of one kind, as the part that keeps that kind uses them.

    Every call asks the store again (:func:`records_of`), so a store that keeps
    no records refuses each call, not the part's construction.
    """

    def __init__(self, ctx: Context, kind: type[R]) -> None:
        self._ctx = ctx
        self.kind = kind

    @property
    def records(self) -> RecordStore:
        return records_of(self._ctx, self.kind)

    def get(self, uuid: str) -> R:
        """The record with this UUID, for a kind without names: anything else is not found."""
        if not is_uuid_like(uuid):
            raise ResourceNotFound(f"{self.kind.word} {uuid} could not be found.", ident=uuid)
        return self.records.get_record(self.kind, uuid.lower())

    def find(self, ident: object) -> R:
        """The record with this UUID or name (:func:`find`)."""
        return find(self.records, self.kind, ident)

    def page(self, query: RecordQuery) -> list[R]:
        return self.records.list_records(self.kind, query)

    def add(self, record: R) -> R:
        return self.records.add_record(record)

    def replace(self, record: R) -> R:
        return self.records.replace_record(record)

    def delete(self, record: R, *, holding: str = "", held: Sized = ()) -> None:
        """Delete ``record``; refused (Ironic's words) while it holds the ``held`` records
        (``holding`` names them: a chassis' ``nodes``, a port group's ``ports``)."""
        if held:
            name = self.kind.word.lower()  # Ironic's word: "chassis", "portgroup"
            raise InvalidParameterValue(
                f"Cannot complete the requested action because {name} {record.uuid} contains "
                f"{holding}.",
                **{name: record.uuid},
            )
        self.records.delete_record(self.kind, record.uuid)


def new_uuid(kind: type[Record], uuid: object) -> str:
    """The UUID a new record was given (checked), else a fresh one."""
    if uuid is None:
        return str(_uuid.uuid4())
    if not is_uuid_like(uuid):
        raise InvalidParameterValue(f"Expected UUID for uuid: {shown(uuid)}", field="uuid")
    return str(uuid).lower()


def normalize_mac(value: object, field: str = "address") -> str:
    """A MAC address in lower case; Ironic's words when it is not one."""
    if isinstance(value, str) and _MAC.fullmatch(value.lower()):
        return value.lower()
    raise InvalidParameterValue(
        f"Expected valid MAC address for {field}: {shown(value)}", field=field
    )


def check_text(
    value: object, field: str, word: str, *, most: int = 255, empty: bool = False
) -> str | None:
    """``None`` or a string of at most ``most`` characters (non-empty unless ``empty``)."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > most or (not value and not empty):
        raise InvalidParameterValue(
            f"{word} {field} must be a {'' if empty else 'non-empty '}string of at most "
            f"{most} characters, not {shown(value)}",
            field=field,
        )
    if "\x00" in value:
        raise InvalidParameterValue(f"{word} {field} contains a NUL character", field=field)
    return value


def check_dict(value: object, field: str, word: str) -> dict[str, Any]:
    """A JSON object (``None`` is an empty one), checked to survive the store."""
    if value is None:
        return {}
    if type(value) is not dict:
        raise InvalidParameterValue(
            f"{word} {field} must be an object, not {shown(value)}", field=field
        )
    check_json(value, f"{word} {field}")
    return value


def check_traits(values: object, word: str) -> list[str]:
    """A list of trait names (a set's worth: each once), in Ironic's shape."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InvalidParameterValue(f"{word} traits must be a list of trait names")
    traits = list(values)
    bad = [t for t in traits if not isinstance(t, str) or len(t) > 255 or not _TRAIT.fullmatch(t)]
    if bad:
        # "... does not match '^CUSTOM_...'": Ironic's validator's words, which clients match.
        raise InvalidParameterValue(
            f"{word} traits {shown(bad)} are not trait names (CUSTOM_ and capitals, digits, "
            f"'_'; at most 255 characters): {shown(bad[0])} does not match "
            "'^CUSTOM_[A-Z0-9_]+$'",
            field="traits",
        )
    return list(dict.fromkeys(traits))


def check_known(fields: Iterable[str], allowed: Collection[str], word: str) -> None:
    """Refuse fields a record of this kind does not have (or a caller may not set)."""
    unknown = sorted(set(fields) - set(allowed))
    if unknown:
        raise InvalidParameterValue(
            f"Unknown {word} field(s): {', '.join(unknown)}", fields=unknown
        )


def described_changes(
    fields: dict[str, Any], allowed: Collection[str], word: str
) -> dict[str, Any]:
    """The first changes of a record with a free ``description`` (a chassis, an inspection
    rule): ``fields`` checked against ``allowed``, then the description, if given, checked
    (at most 255 characters, may be empty)."""
    check_known(fields, allowed, word.lower())
    if "description" not in fields:
        return {}
    return {
        "description": check_text(fields["description"], "description", word, most=255, empty=True)
    }


def check_flag(value: object, field: str, word: str) -> bool:
    if type(value) is not bool:
        raise InvalidParameterValue(
            f"{word} {field} must be True or False, not {shown(value)}", field=field
        )
    return value


def find(records: RecordStore, kind: type[R], ident: object, *, by_name: bool = True) -> R:
    """The record with this UUID (or, when the kind has names, this name)."""
    if not isinstance(ident, str) or not ident:
        raise InvalidParameterValue(f"A {kind.word.lower()} is named by a UUID or a name")
    if is_uuid_like(ident):
        return records.get_record(kind, ident.lower())
    found = records.find_record(kind, "name", ident) if by_name else None
    if found is None:
        raise ResourceNotFound(f"{kind.word} {ident} could not be found.", ident=ident)
    return found
