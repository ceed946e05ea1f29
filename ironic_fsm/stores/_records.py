"""The records beside nodes as stores keep them: one protocol for every kind.

Ports, port groups, chassis, allocations and volume records are the same
shape to a store: a UUID, a few fields it finds, filters, sorts or keeps
unique (a :class:`Kind` names them: its columns), and the rest as JSON.
:class:`RecordStore` is what a store offers for them, reached through the
store's ``records`` attribute (see
:class:`~ironic_fsm.stores.capabilities.StoreCapabilities`); a store
without one keeps no such records. :class:`MemoryRecords` keeps them in
dicts, for :class:`~ironic_fsm.stores.MemoryStore`. What a field may hold
is the conductor's rule; the store keeps unique what must be and drops a
node's records with the node.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, runtime_checkable

import attrs
import orjson

from ironic_fsm.exceptions import InvalidParameterValue, ResourceExists, ResourceNotFound

if TYPE_CHECKING:  # the record classes are imported with the first store, not by ironic_fsm
    from ironic_fsm.records import Record

__all__ = [
    "SORT_TIMES",
    "Kind",
    "MemoryRecords",
    "RecordQuery",
    "RecordStore",
    "exists",
    "not_found",
]

_UTC: Final = timezone.utc
R = TypeVar("R", bound="Record")
#: Sort keys every kind offers besides its columns (``id``: creation order).
SORT_TIMES: Final = ("id", "uuid", "created_at", "updated_at")


@attrs.frozen
class Kind:
    """How a store keeps one kind of record.

    Attributes:
        record: The record class (its ``kind`` names the table).
        columns: The fields kept apart from the JSON, to find, filter and sort on.
        unique: Groups of columns no two records share (a NULL clashes with nothing).
        labels: How a column is named in a clash's message (``address``: "MAC address").
        by_node: The column naming the node whose deletion drops the record.
    """

    record: type[Record]
    columns: tuple[str, ...]
    unique: tuple[tuple[str, ...], ...] = ()
    labels: Mapping[str, str] = attrs.field(factory=dict)
    by_node: str | None = "node_uuid"

    @property
    def table(self) -> str:
        return self.record.kind

    def values(self, record: Record) -> tuple[Any, ...]:
        return tuple(getattr(record, column) for column in self.columns)


@attrs.frozen
class RecordQuery:
    """One page of records: equality ``filters`` on columns (a tuple: any of its values),
    after the record ``marker`` (a UUID), sorted on ``sort_key``."""

    filters: Mapping[str, Any] = attrs.field(factory=dict)
    limit: int | None = None
    marker: str | None = None
    sort_key: str = "id"
    sort_dir: str = "asc"


def not_found(kind: Kind | type[Record], ident: str) -> ResourceNotFound:
    record = kind.record if isinstance(kind, Kind) else kind
    return ResourceNotFound(f"{record.word} {ident} could not be found.", ident=ident)


def exists(kind: Kind, column: tuple[str, ...], record: Record) -> ResourceExists:
    """The clash of ``record`` with another on ``column``, in Ironic's words."""
    word = kind.record.word.lower()
    if column == ("uuid",):
        return ResourceExists(
            f"A {word} with UUID {record.uuid} already exists.", ident=record.uuid
        )
    shown = " and ".join(f"{kind.labels.get(c, c)} {getattr(record, c)}" for c in column)
    return ResourceExists(
        f"A {word} with {shown} already exists.", ident=record.uuid, field=column[0]
    )


def check_query(kind: Kind, query: RecordQuery) -> None:
    """Refuse a filter or sort key the kind has no column for (a programming error)."""
    unknown = set(query.filters) - set(kind.columns)
    if unknown:
        raise InvalidParameterValue(
            f"{kind.record.word} records cannot be filtered on {', '.join(sorted(unknown))}"
        )
    if query.sort_key not in SORT_TIMES and query.sort_key not in kind.columns:
        raise InvalidParameterValue(
            f"The sort_key value {query.sort_key} is an invalid field for sorting"
        )
    if query.sort_dir not in ("asc", "desc"):
        raise InvalidParameterValue(
            f"Invalid sort direction: {query.sort_dir}. Acceptable values are 'asc' or 'desc'"
        )


@runtime_checkable
class RecordStore(Protocol):
    """Where a store keeps the records beside nodes (its ``records`` attribute).

    Every method takes and returns copies: a caller never holds what the
    store keeps. ``add`` and ``replace`` refuse a clash on a unique column
    with :class:`~ironic_fsm.exceptions.ResourceExists` and write nothing.
    """

    def add_record(self, record: R) -> R: ...
    def get_record(self, kind: type[R], uuid: str) -> R: ...
    def find_record(self, kind: type[R], column: str, value: Any) -> R | None: ...
    def list_records(self, kind: type[R], query: RecordQuery) -> builtins.list[R]: ...
    def replace_record(self, record: R) -> R: ...
    def delete_record(self, kind: type[R], uuid: str) -> None: ...
    def drop_node(self, node_uuid: str) -> None: ...


def sort_and_page(
    kind: Kind,
    rows: Iterable[tuple[int, Record]],
    query: RecordQuery,
) -> builtins.list[Record]:
    """The page of ``rows`` (creation number, record) ``query`` asks for; NULLs sort first."""
    key_name = query.sort_key

    def key(row: tuple[int, Record]) -> tuple[Any, ...]:
        seq, record = row
        if key_name == "id":
            return (seq, record.uuid)
        value = getattr(record, key_name)
        if isinstance(value, datetime):
            value = value.astimezone(_UTC).isoformat()
        return (value is not None, value if value is not None else "", seq, record.uuid)

    ordered = sorted(rows, key=key, reverse=query.sort_dir == "desc")
    if query.marker is not None:
        uuids = [record.uuid for _, record in ordered]
        if query.marker not in uuids:
            raise InvalidParameterValue(f"The marker {query.marker} is not a {kind.table[:-1]}")
        ordered = ordered[uuids.index(query.marker) + 1 :]
    if query.limit is not None:
        ordered = ordered[: query.limit]
    return [record for _, record in ordered]


def _matches(kind: Kind, record: Record, filters: Mapping[str, Any]) -> bool:
    for column, wanted in filters.items():
        value = getattr(record, column)
        if isinstance(wanted, tuple) and value not in wanted:
            return False
        if not isinstance(wanted, tuple) and value != wanted:
            return False
    return True


def copy_record(record: R) -> R:
    """A copy sharing nothing with ``record``: its data through JSON and back."""
    data = orjson.loads(orjson.dumps(record.data()))
    return type(record).from_data(record.uuid, data, record.created_at, record.updated_at)


class MemoryRecords:
    """Every kind's records in dicts under one lock; copies in and out.

    Args:
        kinds: How each kind is kept, by table name.
    """

    def __init__(self, kinds: Mapping[str, Kind]) -> None:
        self._kinds = kinds
        self._lock = threading.Lock()
        self._rows: dict[str, dict[str, tuple[int, Record]]] = {k: {} for k in kinds}
        self._seq = 0

    def _kind(self, record: type[Record]) -> Kind:
        return self._kinds[record.kind]

    def _clash(self, kind: Kind, record: Record) -> tuple[str, ...] | None:
        """The first unique group ``record`` shares with another record, if any."""
        rows = self._rows[kind.table]
        for group in kind.unique:
            values = tuple(getattr(record, c) for c in group)
            if None in values:
                continue
            for _, other in rows.values():
                same = tuple(getattr(other, c) for c in group) == values
                if same and other.uuid != record.uuid:
                    return group
        return None

    def add_record(self, record: R) -> R:
        kind = self._kind(type(record))
        kept = copy_record(record)
        kept.created_at, kept.updated_at = datetime.now(_UTC), None
        with self._lock:
            if record.uuid in self._rows[kind.table]:
                raise exists(kind, ("uuid",), record)
            clash = self._clash(kind, record)
            if clash is not None:
                raise exists(kind, clash, record)
            self._seq += 1
            self._rows[kind.table][record.uuid] = (self._seq, kept)
        return copy_record(kept)

    def get_record(self, kind: type[R], uuid: str) -> R:
        with self._lock:
            row = self._rows[kind.kind].get(uuid)
        if row is None:
            raise not_found(kind, uuid)
        return copy_record(row[1])  # type: ignore[return-value]

    def find_record(self, kind: type[R], column: str, value: Any) -> R | None:
        with self._lock:
            for _, record in self._rows[kind.kind].values():
                if getattr(record, column) == value:
                    return copy_record(record)  # type: ignore[return-value]
        return None

    def list_records(self, kind: type[R], query: RecordQuery) -> builtins.list[R]:
        spec = self._kind(kind)
        check_query(spec, query)
        with self._lock:
            rows = [
                row
                for row in self._rows[kind.kind].values()
                if _matches(spec, row[1], query.filters)
            ]
            page = sort_and_page(spec, rows, query)
            return [copy_record(record) for record in page]  # type: ignore[misc]

    def replace_record(self, record: R) -> R:
        kind = self._kind(type(record))
        kept = copy_record(record)
        with self._lock:
            old = self._rows[kind.table].get(record.uuid)
            if old is None:
                raise not_found(kind, record.uuid)
            clash = self._clash(kind, record)
            if clash is not None:
                raise exists(kind, clash, record)
            kept.created_at, kept.updated_at = old[1].created_at, datetime.now(_UTC)
            self._rows[kind.table][record.uuid] = (old[0], kept)
        return copy_record(kept)

    def delete_record(self, kind: type[R], uuid: str) -> None:
        with self._lock:
            if self._rows[kind.kind].pop(uuid, None) is None:
                raise not_found(kind, uuid)

    def drop_node(self, node_uuid: str) -> None:
        """Forget every record of the node (called as the node is deleted)."""
        with self._lock:
            for spec in self._kinds.values():
                if spec.by_node is None:
                    continue
                rows = self._rows[spec.table]
                for uuid in [
                    u for u, (_, r) in rows.items() if getattr(r, spec.by_node) == node_uuid
                ]:
                    del rows[uuid]
