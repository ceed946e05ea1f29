"""The :class:`Store` protocol, its scan extension, and the helpers every built-in store shares.

Two protocols, so that stores written for the first release keep working:

* :class:`Store`: the nine methods the conductor has always needed.
* :class:`HistoryStore`: a store that keeps node history, written in the
  same transaction as the save that caused it (:func:`save_with_history`).
  A store without it still works: history is then skipped, never written
  apart from its change (see :func:`save_with_history`).
* :class:`ScanningStore`: a :class:`Store` whose ``list`` pages and sorts
  (``limit``, ``marker``, ``sort_key``, ``sort_dir``) and that answers the
  periodic scans from indexed columns: :meth:`~ScanningStore.reserved`
  (crash recovery), :meth:`~ScanningStore.in_states` (callback timeouts,
  power sync) and :meth:`~ScanningStore.waking` (``wait`` steps whose time
  is up). Both built-in stores are scanning stores.

Callers go through :func:`list_page`, :func:`reserved`, :func:`in_states`
and :func:`waking`: they call the store's own method when it has one, and
otherwise fall back to one ``list()`` filtered and sorted here. The
fallback decodes the fleet, as the first release did; a store that wants
scans to cost what is due implements the methods (or inherits
:class:`ListScans`, which is correct but not faster).

Filters, for every store: the fields of :data:`FILTER_FIELDS`, each equal to
a value (``None`` for "not set"); a list, tuple or set of strings means any
of them (``provision_state=['active', 'deploy failed']``). A value of the
wrong type matches nothing. Any other field is refused rather than
scanned, so a listing always costs what its indexes say.
"""

from __future__ import annotations

import builtins
import heapq
import inspect
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol, runtime_checkable

from ironic_fsm.exceptions import InvalidParameterValue, NodeLocked, NodeNotFound
from ironic_fsm.history import HistoryEntry, check_entry
from ironic_fsm.node import (
    NODE_FIELDS,
    Node,
    Snapshot,
    check_storable,
    encode_stored,
    freeze,
)

__all__ = [
    "BOOL_FILTERS",
    "FILTER_FIELDS",
    "SET",
    "SORT_KEYS",
    "ConductorRecord",
    "ConductorRegistry",
    "HistoryStore",
    "ListScans",
    "Reserved",
    "ScanningStore",
    "Store",
    "check_conductor",
    "check_filters",
    "check_page",
    "check_time",
    "conductor_order",
    "duplicate_name",
    "duplicate_uuid",
    "check_history",
    "encode",
    "in_states",
    "list_page",
    "locked_error",
    "matches",
    "normalize_filters",
    "not_found",
    "reserved",
    "save_with_history",
    "snapshot",
    "sort_records",
    "wake_time",
    "waking",
]

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
    }
)
#: Filters that take ``True`` or ``False``.
BOOL_FILTERS: Final = frozenset({"maintenance", "retired", "protected"})
#: Every field ``list`` filters on: each is a column of the SQL store.
#: Ironic's ``reserved`` filter: ``True`` for nodes someone holds, ``False`` for free ones.
#: Not a field; stores see it as ``reservation`` equal to :data:`SET` (or to ``None``).
RESERVED: Final = "reserved"
FILTER_FIELDS: Final = (
    *sorted(STRING_FILTERS | BOOL_FILTERS | {"version"}, key=NODE_FIELDS.index),
    RESERVED,
)


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


class Reserved(NamedTuple):
    """A reserved node, as the recovery scan sees it: no record decoded."""

    uuid: str
    holder: str
    #: The node's ``updated_at`` (the last sign of life of a holder without heartbeats).
    updated_at: datetime | None


@runtime_checkable
class Store(Protocol):
    """What the conductor needs from persistence.

    Two kinds of change, kept apart: a *save* changes the record and is
    checked against, and bumps, its ``version``; a *reservation* is a lock,
    not data, so ``reserve`` and ``release`` change ``reservation`` and
    nothing else (not ``version``). A request refused after its node was
    reserved and released therefore leaves the record exactly as it was.
    """

    def create(self, node: Node) -> None:
        """Add a new record (its uuid and name must be unused); sets ``version`` to 1.

        A refused create changes neither the store nor ``node``.
        """

    def get(self, ident: str) -> Node:
        """A fresh copy of the node with this UUID or name; :class:`NodeNotFound` if none."""

    def list(self, **filters: Any) -> list[Node]:
        """Copies of the nodes matching every filter (see :data:`FILTER_FIELDS`).

        The first release's signature, in creation order; a
        :class:`ScanningStore` adds paging and sorting.
        """

    def save(self, node: Node) -> None:
        """Write ``node`` if its version is current; bump ``node.version`` in place.

        All or nothing: a refused save (stale version, taken name, a value
        that cannot be stored) changes neither the store nor ``node``.
        """

    def delete(self, ident: str) -> None:
        """Remove the node; :class:`NodeNotFound` if none."""

    def reserve(self, ident: str, holder: str) -> Node:
        """Atomically set ``reservation = holder`` if nobody (not even ``holder``) has it.

        Returns the updated copy. Only ``reservation`` changes: the version
        stays, since a lock is not a change of the record. A reservation is
        exclusive per task: a conductor whose background work holds a node
        cannot take it again.
        """

    def release(self, ident: str, holder: str) -> None:
        """Clear the reservation if ``holder`` has it; nothing else changes, not the version."""

    def heartbeat(self, holder: str, now: datetime) -> None:
        """Record that ``holder`` is alive at ``now``."""

    def holders(self) -> dict[str, datetime]:
        """Every holder's last heartbeat."""


class ConductorRecord(NamedTuple):
    """One conductor as the registry keeps it (one row of the ``conductors`` table)."""

    #: The conductor's unique name: its reservation holder token (host, process, instance).
    holder: str
    #: ``Config.host``; several conductors on one host share it.
    hostname: str
    conductor_group: str
    #: The hardware types it serves, sorted.
    hardware_types: tuple[str, ...]
    #: False once it stopped cleanly (``unregister``); a dead one stays True.
    online: bool
    #: When it registered.
    started_at: datetime
    #: Its last heartbeat (or registration, or going offline).
    updated_at: datetime


@runtime_checkable
class ConductorRegistry(Protocol):
    """The conductor registry: what a store adds so that conductors see each other.

    Both built-in stores have it. A store without it still works: each
    conductor then sees only itself (see :class:`~ironic_fsm.Conductor`'s
    ``list_conductors``). Times are aware UTC datetimes, chosen by the
    conductor's clock, never by the store's.
    """

    def register_conductor(
        self, record: ConductorRecord, *, replace_before: datetime | None = None
    ) -> None:
        """Add or replace the row of ``record.holder``, in one transaction.

        Also deletes the other rows of ``record.hostname`` that are offline
        or whose ``updated_at`` is before ``replace_before``: a restarted
        conductor replaces its dead or stopped predecessors on that host,
        as Ironic's row per host does, while live siblings stay.
        """

    def conductor_heartbeat(self, holder: str, now: datetime) -> bool:
        """Set ``updated_at = now`` and ``online``; False when no row has this holder."""

    def unregister_conductor(self, holder: str, now: datetime) -> None:
        """Mark the conductor offline at once (``updated_at = now``); no row: nothing."""

    def list_conductors(self) -> builtins.list[ConductorRecord]:
        """Every registered conductor, by hostname, then start time, then holder."""


@runtime_checkable
class HistoryStore(Protocol):
    """Node history kept beside the nodes: what a store adds for ``get_node_history``.

    Both built-in stores have it. Its ``save`` takes ``history``: entries
    written in the same transaction as the node (SQL) or under the same lock
    (memory), so that a refused save writes none. Deleting a node deletes
    its entries. Entries come back oldest first (``created_at``, then the
    order they were written in).
    """

    def save(self, node: Node, *, history: Sequence[HistoryEntry] = ()) -> None:
        """:meth:`Store.save`, plus ``history`` in the same transaction (all or nothing)."""

    def add_history(self, entries: Sequence[HistoryEntry]) -> None:
        """Write entries that go with no node change (a refused verb); unknown nodes: none."""

    def node_history(self, node_uuid: str) -> builtins.list[HistoryEntry]:
        """The node's entries, oldest first; ``[]`` for a node without any."""

    def trim_history(self, max_entries: int, *, before: datetime | None, limit: int) -> int:
        """Delete at most ``limit`` entries in one transaction; return how many went.

        Only from nodes holding more than ``max_entries`` entries, their
        oldest first, and only entries created before ``before`` (``None``:
        any age). Found through a per-node count, so that a trim reads the
        nodes over the limit and the entries it deletes, not the fleet.
        """


def check_history(entries: Sequence[HistoryEntry], node: Node | None = None) -> None:
    """Refuse entries no store keeps (or that belong to another node than ``node``)."""
    for entry in entries:
        check_entry(entry)
        if node is not None and entry.node_uuid != node.uuid:
            raise InvalidParameterValue(
                f"History entry {entry.uuid} is for node {entry.node_uuid}, not {node.uuid}",
                node=node.uuid,
                field="node_uuid",
            )


def save_with_history(store: Store, node: Node, history: Sequence[HistoryEntry]) -> None:
    """Save ``node`` with its history entries on any store.

    A :class:`HistoryStore` writes both in one transaction. Any other store
    just saves the node, and the entries are dropped: written apart, they
    could tell of a change that then failed to save.
    """
    if history and isinstance(store, HistoryStore):
        store.save(node, history=history)
    else:
        store.save(node)


def check_conductor(record: ConductorRecord) -> None:
    """Refuse, naming the field, a record no store keeps (checked before any write)."""
    for field in ("holder", "hostname", "conductor_group"):
        value = getattr(record, field)
        if not isinstance(value, str) or len(value) > 255 or "\x00" in value:
            raise InvalidParameterValue(
                f"A conductor's {field} must be a string of at most 255 characters without "
                f"NUL, not {value!r}",
                field=field,
            )
    if not record.holder or not record.hostname:
        raise InvalidParameterValue("A conductor needs a holder and a hostname", field="holder")
    types = record.hardware_types
    if not isinstance(types, tuple) or not all(_valid_text(t) for t in types):
        raise InvalidParameterValue(
            f"A conductor's hardware_types must be a tuple of names, not {types!r}",
            field="hardware_types",
        )
    if type(record.online) is not bool:
        raise InvalidParameterValue("A conductor's online flag must be a bool", field="online")
    for field in ("started_at", "updated_at"):
        check_time(getattr(record, field), field)


def check_time(value: object, field: str) -> None:
    """Refuse a time that is not a timezone-aware datetime."""
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise InvalidParameterValue(
            f"{field} must be a timezone-aware datetime, not {value!r}", field=field
        )


def conductor_order(record: ConductorRecord) -> tuple[str, datetime, str]:
    """The order :meth:`ConductorRegistry.list_conductors` returns records in."""
    return (record.hostname, record.started_at.astimezone(_UTC), record.holder)


@runtime_checkable
class ScanningStore(Store, Protocol):
    """A :class:`Store` that pages listings and answers periodic scans itself.

    Every method reads only what it returns (plus index entries): none
    decodes nodes it does not return, so a scan when nothing is due costs
    the same for 100 nodes as for 100,000.
    """

    def list(
        self,
        *,
        limit: int | None = None,
        marker: str | None = None,
        sort_key: str = "created_at",
        sort_dir: str = "asc",
        **filters: Any,
    ) -> builtins.list[Node]:
        """Copies of the nodes matching every filter, one page in ``sort_key`` order.

        ``marker`` is the UUID of the last node of the previous page (the
        page starts after it); ``limit`` caps the page (``None``: all).
        Ties of ``sort_key`` are broken by creation order, then UUID.

        Raises:
            InvalidParameterValue: a marker that is no node's UUID, a bad
                ``limit``, ``sort_key`` or ``sort_dir``, or a filter outside
                :data:`FILTER_FIELDS`.
        """

    def reserved(self) -> builtins.list[Reserved]:
        """Every reserved node's UUID, holder and ``updated_at``, in creation order."""

    def in_states(
        self,
        states: Collection[str],
        *,
        updated_before: datetime | None = None,
        limit: int | None = None,
        **filters: Any,
    ) -> builtins.list[Node]:
        """Nodes in one of ``states`` (and matching ``filters``), oldest state change first.

        With ``updated_before``, only nodes whose ``provision_updated_at`` is
        set and earlier than it: the candidates of a callback timeout.
        """

    def waking(
        self, before: datetime, *, limit: int | None = None, **filters: Any
    ) -> builtins.list[Node]:
        """Nodes whose ``wait`` step's time (see :func:`wake_time`) is at or before ``before``."""


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


def matches(node: Node, filters: dict[str, Any]) -> bool:
    """Whether ``node`` matches every normalised filter (see :func:`normalize_filters`)."""
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
    unknown = sorted(names - set(NODE_FIELDS) - {RESERVED})
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


def normalize_filters(filters: dict[str, Any]) -> dict[str, Any] | None:
    """Filters checked and put in one shape; ``None`` when no node can match.

    Collections of strings become frozensets (any of); ``reserved`` becomes
    a ``reservation`` filter (:data:`SET` or ``None``); a value of the wrong
    type, or containing NUL (no store keeps one), matches nothing.
    """
    check_filters(filters)
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if key == RESERVED:
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
        out[key] = value
    if RESERVED in filters:
        held = filters[RESERVED]
        if type(held) is not bool:
            return None
        holder = out.get("reservation", SET if held else None)
        if (holder is None) is held:  # reserved=True with reservation=None, or the reverse
            return None
        out["reservation"] = holder
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


# -- for callers: the store's own scans, or a fallback on list() ------------------------------


def _pages(store: Store) -> bool:
    """Whether ``store.list`` takes the paging keywords (its signature names ``marker``).

    Asked of the signature, not of :class:`ScanningStore`: a store may
    inherit :class:`ListScans` and keep the first release's ``list``.
    """
    kind = type(store)
    known = _PAGING.get(kind)
    if known is None:
        try:
            known = "marker" in inspect.signature(store.list).parameters
        except (TypeError, ValueError):
            known = False
        _PAGING[kind] = known
    return known


_PAGING: dict[type, bool] = {}


def list_page(
    store: Store,
    *,
    limit: int | None = None,
    marker: str | None = None,
    sort_key: str = "created_at",
    sort_dir: str = "asc",
    **filters: Any,
) -> list[Node]:
    """``store.list`` with paging on any store: the store's own, else sorted here.

    The fallback reads every matching node, so it costs what the store's
    ``list`` costs; its order is the store's ``list`` order among ties.
    """
    if _pages(store):
        paged: list[Node] = store.list(
            limit=limit, marker=marker, sort_key=sort_key, sort_dir=sort_dir, **filters
        )
        return paged
    check_page(limit, marker, sort_key, sort_dir)
    wanted = normalize_filters(filters)
    nodes = store.list()
    positions = {node.uuid: i for i, node in enumerate(nodes)}
    marker_key = None
    if marker is not None:
        found = next((n for n in nodes if n.uuid == marker), None)
        if found is None:
            raise bad_marker(marker)
        marker_key = _node_key(found, sort_key, positions)
    if wanted is None:
        return []
    chosen = [n for n in nodes if matches(n, wanted)]
    return sort_records(
        chosen,
        lambda n: _node_key(n, sort_key, positions),
        limit=limit,
        marker_key=marker_key,
        descending=sort_dir == "desc",
    )


def _node_key(node: Node, sort_key: str, positions: dict[str, int]) -> tuple[Any, ...]:
    return order_key(sort_key, getattr(node, sort_key), positions[node.uuid], node.uuid)


def reserved(store: Store) -> list[Reserved]:
    """The store's reserved nodes, through :meth:`ScanningStore.reserved` when it has one."""
    if isinstance(store, ScanningStore):
        return store.reserved()
    return [
        Reserved(n.uuid, n.reservation, n.updated_at)
        for n in store.list()
        if n.reservation is not None
    ]


def in_states(
    store: Store,
    states: Collection[str],
    *,
    updated_before: datetime | None = None,
    limit: int | None = None,
    **filters: Any,
) -> list[Node]:
    """:meth:`ScanningStore.in_states` on any store (a filtered ``list()`` as fallback)."""
    if isinstance(store, ScanningStore):
        return store.in_states(states, updated_before=updated_before, limit=limit, **filters)
    return ListScans.in_states(store, states, updated_before=updated_before, limit=limit, **filters)  # type: ignore[arg-type]


def waking(
    store: Store, before: datetime, *, limit: int | None = None, **filters: Any
) -> list[Node]:
    """:meth:`ScanningStore.waking` on any store (a filtered ``list()`` as fallback)."""
    if isinstance(store, ScanningStore):
        return store.waking(before, limit=limit, **filters)
    return ListScans.waking(store, before, limit=limit, **filters)  # type: ignore[arg-type]


class ListScans:
    """The scans of :class:`ScanningStore` done on ``self.list()``: a mixin for own stores.

    Correct on any store, but each call reads every node: inherit it, and
    override what should be fast. A ``list`` without the paging keywords is
    paged by :func:`list_page` as for any first-release store.
    """

    if TYPE_CHECKING:

        def list(self, **filters: Any) -> builtins.list[Node]: ...

    def reserved(self) -> builtins.list[Reserved]:
        return [
            Reserved(n.uuid, n.reservation, n.updated_at)
            for n in self.list()
            if n.reservation is not None
        ]

    def in_states(
        self,
        states: Collection[str],
        *,
        updated_before: datetime | None = None,
        limit: int | None = None,
        **filters: Any,
    ) -> builtins.list[Node]:
        wanted = _scan_filters(states, limit, filters, updated_before)
        if wanted is None:
            return []
        chosen = [
            n
            for n in self.list()
            if matches(n, wanted)
            and (
                updated_before is None
                or (n.provision_updated_at is not None and n.provision_updated_at < updated_before)
            )
        ]
        return _oldest_first(chosen, lambda n: n.provision_updated_at, limit)

    def waking(
        self, before: datetime, *, limit: int | None = None, **filters: Any
    ) -> builtins.list[Node]:
        wanted = _scan_filters(None, limit, filters, before)
        if wanted is None:
            return []
        chosen = []
        for node in self.list():
            when = wake_time(node)
            if when is not None and when <= before and matches(node, wanted):
                chosen.append(node)
        return _oldest_first(chosen, wake_time, limit)


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


def _oldest_first(
    nodes: Sequence[Node], when: Callable[[Node], datetime | None], limit: int | None
) -> list[Node]:
    far = datetime.max.replace(tzinfo=_UTC)
    ordered = sorted(nodes, key=lambda n: when(n) or far)
    return ordered if limit is None else ordered[:limit]


def encode(node: Node) -> bytes:
    """``node`` as the UTF-8 JSON stores keep, or :class:`InvalidParameterValue` saying why not.

    Done before anything is written, so that a record that cannot be stored
    is refused with nothing changed. Checks the fields' types first
    (:func:`~ironic_fsm.node.check_storable`), so that nothing gets in that
    :meth:`Node.from_json` would refuse to read back.
    """
    check_storable(node)
    try:
        return encode_stored(node)
    except (TypeError, ValueError, RecursionError) as exc:
        raise _not_storable(node, exc) from exc


def snapshot(node: Node) -> Snapshot:
    """:func:`encode` for a store in this process: an immutable copy (:func:`~.node.freeze`)."""
    check_storable(node)
    try:
        return freeze(node)
    except (TypeError, ValueError, RecursionError) as exc:
        raise _not_storable(node, exc) from exc


def _not_storable(node: Node, exc: BaseException) -> InvalidParameterValue:
    reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
    return InvalidParameterValue(
        f"Node {node.uuid} cannot be stored: its fields must be JSON-serializable ({reason})",
        node=node.uuid,
    )


def locked_error(uuid: str, holder: str | None) -> NodeLocked:
    """The error for a node reserved by ``holder``."""
    return NodeLocked(
        f"Node {uuid} is locked by {holder}; the operation may be retried later",
        node=uuid,
        holder=holder,
    )


def not_found(ident: str) -> NodeNotFound:
    """The error for an identifier no node has."""
    return NodeNotFound(f"Node {ident} could not be found", node=ident)


def duplicate_name(name: str | None) -> InvalidParameterValue:
    """The error for a name another node has (or that is another node's UUID)."""
    return InvalidParameterValue(f"A node named {name!r} already exists", node=name, field="name")


def duplicate_uuid(uuid: str) -> InvalidParameterValue:
    """The error for a UUID another node has."""
    return InvalidParameterValue(f"A node with UUID {uuid} already exists", node=uuid, field="uuid")
