"""What a listing or a scan may ask for, and how records are matched and ordered.

The query vocabulary every store shares (sort keys, filters, pages) and the
pure functions on nodes behind it; :mod:`ironic_fsm.stores.base` re-exports
them, which is where callers find them.

The filters themselves are described in :mod:`ironic_fsm.stores.base`.
"""

from __future__ import annotations

import heapq
import reprlib
from collections.abc import Callable, Collection, Iterable
from datetime import datetime, timezone
from typing import Any, Final, NamedTuple, TypeVar

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.masking import mask_secrets
from ironic_fsm.node import NODE_FIELDS, Node

#: A node, or a store's record of one: anything with the fields as attributes.
_R = TypeVar("_R")

#: Keys ``list`` sorts on (Ironic's sortable node fields that we have).
#: Ties are broken by creation order, then UUID, so pages never skip or repeat.
SORT_KEYS: Final = (
    "created_at",
    "updated_at",
    "uuid",
    "name",
    "provision_state",
    "provision_updated_at",
    "driver",
)
#: Sort keys whose value may be missing (``None`` sorts first ascending, last descending).
NULLABLE_SORT_KEYS: Final = frozenset({"updated_at", "name", "provision_updated_at"})
SORT_DIRS: Final = ("asc", "desc")
#: Filters that take a string, ``None`` (not set) or a collection of strings (any of).
STRING_FILTERS: Final = frozenset(
    {
        "uuid",
        "name",
        "driver",
        "provision_state",
        "target_provision_state",
        "power_state",
        "reservation",
        "resource_class",
        "fault",
        "conductor_group",
        "owner",
        "lessee",
        "instance_uuid",
        "shard",
        "parent_node",
        "instance_name",
    }
)
#: Filters that take ``True`` or ``False``.
BOOL_FILTERS: Final = frozenset({"maintenance", "retired", "protected"})
#: Every field ``list`` filters on: each is a column of the SQL store.
#: Ironic's ``reserved`` filter: ``True`` for nodes someone holds, ``False`` for free ones.
#: Not a field; stores see it as ``reservation`` equal to :data:`SET` (or to ``None``).
RESERVED: Final = "reserved"
#: Ironic's ``associated`` filter: ``True`` for nodes with an instance, ``False`` for the others.
#: Not a field either; stores see it as ``instance_uuid`` equal to :data:`SET` (or to ``None``).
ASSOCIATED: Final = "associated"
#: Ironic's ``sharded`` filter: ``True`` for nodes in a shard; stores see ``shard`` :data:`SET`.
SHARDED: Final = "sharded"
#: The filters that are not fields, and the nullable field each one tests.
FLAG_FILTERS: Final = {RESERVED: "reservation", ASSOCIATED: "instance_uuid", SHARDED: "shard"}
FILTER_FIELDS: Final = (
    *sorted(STRING_FILTERS | BOOL_FILTERS | {"version"}, key=NODE_FIELDS.index),
    RESERVED,
    ASSOCIATED,
    SHARDED,
)


class Reserved(NamedTuple):
    """A reserved node, as the recovery scan sees it: no record decoded."""

    uuid: str
    holder: str
    #: The node's ``updated_at`` (the last sign of life of a holder without heartbeats).
    updated_at: datetime | None


#: Node fields every built-in store keeps beside the record (the SQL store: as columns), so
#: that a listing asking only for these (``list(fields=...)``) builds no node.
COLUMN_FIELDS: Final = frozenset(
    {*STRING_FILTERS, *BOOL_FILTERS, "version", "created_at", "updated_at", "provision_updated_at"}
)


class NodeFields(dict[str, Any]):
    """What a listing with ``fields`` returns per node: those fields by name, ``uuid`` first.

    A plain ``dict`` of the node's values, each of the type its
    :class:`~ironic_fsm.node.Node` attribute has (datetimes aware, in UTC
    where a store read them from its own columns), secrets included as in
    :meth:`Node.to_dict() <ironic_fsm.node.Node.to_dict>`; only its
    ``repr`` masks them, as the node's does, so that logging a page leaks none.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"NodeFields({mask_secrets(dict(self))!r})"


def check_fields(fields: object) -> tuple[str, ...]:
    """The fields a listing returns: ``uuid`` first, then each asked-for field once.

    Checked before anything is read: a field that is not a node field is
    refused, by name, as Ironic's API refuses it.
    """
    if isinstance(fields, (str, bytes)) or not isinstance(fields, Iterable):
        raise InvalidParameterValue(
            f"fields must be a list of node field names, not {reprlib.repr(fields)}",
            field="fields",
        )
    names = list(fields)
    unknown = [name for name in names if not isinstance(name, str) or name not in NODE_FIELDS]
    if unknown:
        shown = ", ".join(reprlib.repr(name) for name in unknown)
        raise InvalidParameterValue(
            f"Cannot list unknown node field(s): {shown}", field="fields", fields=unknown
        )
    return tuple(dict.fromkeys(("uuid", *names)))


def project(node: Node, fields: Iterable[str]) -> NodeFields:
    """The ``fields`` of ``node`` (checked by :func:`check_fields`), as a listing returns them."""
    return NodeFields((name, getattr(node, name)) for name in fields)


class _Set:
    """The filter value "any value but ``None``" (``reserved=True``)."""

    def __repr__(self) -> str:
        return "SET"


#: A normalised filter value matching every value but ``None``.
SET: Final = _Set()
#: The ``driver_internal_info`` keys that hold when a ``wait`` step's time is up
#: (any key ending so: ``clean_wait_until``, ``deploy_wait_until``, ...).
WAIT_UNTIL_SUFFIX: Final = "_wait_until"
_UTC: Final = timezone.utc


#: Stands for "due at once" (an early time every database stores and sorts as it should).
_DUE: Final = datetime(1970, 1, 1, tzinfo=_UTC)


def wake_time(node: Node) -> datetime | None:
    """When the node's current ``wait`` step is up: the earliest ``*_wait_until`` it holds.

    The conductor records it in ``driver_internal_info`` as ISO 8601 text;
    stores copy it into an indexed column so that :meth:`ScanningStore.waking`
    needs no decoding. An unreadable value is due at once, as the conductor
    reads it: a node whose deadline cannot be read must not wait forever.
    """
    earliest: datetime | None = None
    for key, value in node.driver_internal_info.items():
        if not (isinstance(key, str) and key.endswith(WAIT_UNTIL_SUFFIX)):
            continue
        try:
            when = datetime.fromisoformat(value) if isinstance(value, str) else _DUE
        except ValueError:
            when = _DUE
        when = when.replace(tzinfo=_UTC) if when.tzinfo is None else when.astimezone(_UTC)
        if earliest is None or when < earliest:
            earliest = when
    return earliest


def matches(node: object, filters: dict[str, Any]) -> bool:
    """Whether ``node`` matches every normalised filter (see :func:`normalize_filters`).

    Anything with the filtered fields as attributes will do (a node, a store's record).
    """
    for key, wanted in filters.items():
        value = getattr(node, key)
        if isinstance(wanted, frozenset):
            if value not in wanted:
                return False
        elif wanted is SET:
            if value is None:
                return False
        elif value != wanted:
            return False
    return True


def check_filters(filters: Iterable[str]) -> None:
    """Refuse filters that are not node fields, or that no store pushes down, naming them."""
    names = set(filters)
    unknown = sorted(names - set(NODE_FIELDS) - FLAG_FILTERS.keys())
    if unknown:
        raise InvalidParameterValue(
            f"Cannot filter nodes on unknown field(s): {', '.join(unknown)}", fields=unknown
        )
    unindexed = sorted(names - set(FILTER_FIELDS))
    if unindexed:
        raise InvalidParameterValue(
            f"Cannot filter nodes on {', '.join(unindexed)}: stores filter only on "
            f"{', '.join(FILTER_FIELDS)}",
            fields=unindexed,
        )


def _valid_text(value: object) -> bool:
    return type(value) is str and "\x00" not in value


def _lowered(value: Any) -> Any:
    if isinstance(value, frozenset):
        return frozenset(v.lower() for v in value)
    return value if value is None else value.lower()


def normalize_filters(filters: dict[str, Any]) -> dict[str, Any] | None:
    """Filters checked and put in one shape; ``None`` when no node can match.

    Collections of strings become frozensets (any of); ``reserved`` becomes
    a ``reservation`` filter (:data:`SET` or ``None``), ``associated`` an
    ``instance_uuid`` one, ``sharded`` a ``shard`` one; a value of the wrong
    type, or containing NUL (no store keeps one), matches nothing.
    """
    check_filters(filters)
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if key in FLAG_FILTERS:
            continue
        if key in BOOL_FILTERS:
            if type(value) is not bool:
                return None
        elif key == "version":
            if type(value) is not int:
                return None
        elif isinstance(value, (list, tuple, set, frozenset)):
            value = frozenset(v for v in value if _valid_text(v))  # others match nothing
            if not value:
                return None
        elif value is not None and not _valid_text(value):
            return None
        if key == "conductor_group":  # groups are case-insensitive: stored lower case
            value = _lowered(value)
        out[key] = value
    for flag, field in FLAG_FILTERS.items():
        if flag not in filters:
            continue
        held = filters[flag]
        if type(held) is not bool:
            return None
        value = out.get(field, SET if held else None)
        if (value is None) is held:  # reserved=True with reservation=None, or the reverse
            return None
        out[field] = value
    return out


def check_page(limit: object, marker: object, sort_key: object, sort_dir: object) -> None:
    """Refuse a bad ``limit``, ``marker``, ``sort_key`` or ``sort_dir`` (Ironic answers 400)."""
    if limit is not None and (type(limit) is not int or limit < 0):
        raise InvalidParameterValue(
            f"limit must be a non-negative integer or None, not {limit!r}", field="limit"
        )
    if marker is not None and not _valid_text(marker):
        raise InvalidParameterValue(
            f"marker must be the UUID of a node, not a value of type {type(marker).__name__}",
            field="marker",
        )
    if sort_key not in SORT_KEYS:
        raise InvalidParameterValue(
            f"Cannot sort nodes on {sort_key!r}: the sort keys are {', '.join(SORT_KEYS)}",
            field="sort_key",
        )
    if sort_dir not in SORT_DIRS:
        raise InvalidParameterValue(
            f"sort_dir must be 'asc' or 'desc', not {sort_dir!r}", field="sort_dir"
        )


def bad_marker(marker: str) -> InvalidParameterValue:
    """The error for a marker no node has (Ironic answers 400, not 404)."""
    return InvalidParameterValue(
        f"The marker {marker} is not the UUID of a node", field="marker", marker=marker
    )


def sort_records(
    records: Iterable[Any],
    key_of: Callable[[Any], tuple[Any, ...]],
    *,
    limit: int | None,
    marker_key: tuple[Any, ...] | None,
    descending: bool,
) -> list[Any]:
    """The page of ``records`` after ``marker_key`` in ``key_of`` order, at most ``limit``.

    ``key_of`` gives a total order (see :func:`order_key`). Uses a bounded
    heap, so a page of ``limit`` costs O(n log limit), not a full sort.
    """
    if marker_key is not None:
        if descending:
            records = (r for r in records if key_of(r) < marker_key)
        else:
            records = (r for r in records if key_of(r) > marker_key)
    if limit is None:
        return sorted(records, key=key_of, reverse=descending)
    pick = heapq.nlargest if descending else heapq.nsmallest
    return pick(limit, records, key=key_of)


def order_key(sort_key: str, value: Any, seq: int, uuid: str) -> tuple[Any, ...]:
    """A total order matching the SQL store's: ``None`` first, then values; then seq, uuid."""
    if sort_key == "uuid":
        return (uuid,)
    if value is None:
        return (0, "", seq, uuid)
    if isinstance(value, datetime):
        value = value.astimezone(_UTC)
    return (1, value, seq, uuid)


class PageQuery(NamedTuple):
    """A checked page request: what :func:`page_query` hands a store to read."""

    limit: int | None
    marker: str | None
    sort_key: str
    descending: bool
    #: Normalised (:func:`normalize_filters`); ``None`` when no node can match.
    filters: dict[str, Any] | None
    #: The fields asked for (:func:`check_fields`); ``None`` for whole nodes.
    fields: tuple[str, ...] | None


def page_query(
    limit: int | None,
    marker: str | None,
    sort_key: str,
    sort_dir: str,
    filters: dict[str, Any],
    fields: Iterable[str] | None = None,
) -> PageQuery:
    """A listing's arguments, checked before anything is read, as one :class:`PageQuery`."""
    check_page(limit, marker, sort_key, sort_dir)
    wanted = normalize_filters(filters)
    names = None if fields is None else check_fields(fields)
    return PageQuery(limit, marker, sort_key, sort_dir == "desc", wanted, names)


def list_query(query: dict[str, Any], fields: Iterable[str] | None) -> PageQuery:
    """:func:`page_query` from ``list``'s keywords: the paging ones, the rest filters."""
    return page_query(
        query.pop("limit", None),
        query.pop("marker", None),
        query.pop("sort_key", "created_at"),
        query.pop("sort_dir", "asc"),
        query,
        fields,
    )


def pick_page(
    records: Iterable[_R],
    key_of: Callable[[_R], tuple[Any, ...]],
    find: Callable[[str], _R | None],
    query: PageQuery,
) -> list[_R]:
    """The page ``query`` asks for among ``records``, for stores that page in Python.

    ``find`` looks the marker up by UUID: a marker that is no record's is
    refused even when no record could match.
    """
    marker_key = None
    if query.marker is not None:
        found = find(query.marker)
        if found is None:
            raise bad_marker(query.marker)
        marker_key = key_of(found)
    if query.filters is None:
        return []
    wanted = query.filters
    chosen = (r for r in records if matches(r, wanted))
    return sort_records(
        chosen, key_of, limit=query.limit, marker_key=marker_key, descending=query.descending
    )


def _scan_filters(
    states: Collection[str] | None,
    limit: object,
    filters: dict[str, Any],
    when: object,
) -> dict[str, Any] | None:
    """The filters of a scan, with ``states`` as a ``provision_state`` filter; checked.

    ``when`` is the scan's time (``updated_before``, ``before``): aware, like
    every timestamp of a node, or ``None`` where it is optional.
    """
    check_page(limit, None, "created_at", "asc")
    if when is not None and (not isinstance(when, datetime) or when.utcoffset() is None):
        raise InvalidParameterValue(
            f"A scan needs a timezone-aware datetime, not {when!r}", field="time"
        )
    if states is None and when is None:
        raise InvalidParameterValue("waking needs the time to compare with", field="time")
    if states is not None:
        if isinstance(states, str) or not all(_valid_text(x) for x in states):
            raise InvalidParameterValue(
                f"states must be a collection of state names, not {states!r}", field="states"
            )
        if "provision_state" in filters:
            raise InvalidParameterValue(
                "Give the states as states, not also as a provision_state filter",
                field="provision_state",
            )
        filters = {**filters, "provision_state": frozenset(states)}
    return normalize_filters(filters)


def oldest_due(
    records: Iterable[_R],
    filters: dict[str, Any],
    when_of: Callable[[_R], datetime | None],
    before: datetime | None,
    *,
    inclusive: bool,
    limit: int | None,
) -> list[_R]:
    """The records matching ``filters`` whose time is due, oldest first, at most ``limit``.

    Due: earlier than ``before`` (or equal to it, when ``inclusive``);
    with ``before=None``, every match, its time set or not (unset sorts
    last). Ties keep the order of ``records``: creation order, as the SQL
    store breaks them. What the scans of every store without an index share.
    """
    chosen = []
    for record in records:
        if before is not None:  # first: a record's time is cheaper to read than the filters
            when = when_of(record)
            if when is None or when > before or (when == before and not inclusive):
                continue
        if matches(record, filters):
            chosen.append(record)
    far = datetime.max.replace(tzinfo=_UTC)
    chosen.sort(key=lambda r: when_of(r) or far)
    return chosen if limit is None else chosen[:limit]
