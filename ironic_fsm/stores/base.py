"""The :class:`Store` protocol, its scan extension, and the helpers every built-in store shares.

Two protocols, so that stores written for the first release keep working:

* :class:`Store`: the nine methods the conductor has always needed.
* :class:`HistoryStore`: a store that keeps node history, written in the
  same transaction as the save that caused it (:func:`save_with_history`).
  A store without it still works: history is then skipped, never written
  apart from its change (see :func:`save_with_history`).
* :class:`PowerSyncStore` (from :mod:`._power`): a store that knows when each
  node's power was last synced, so the power sync reads only what is due;
  :func:`power_sync_due` falls back to ``list()`` (every node due) without it.
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
:class:`ListScans`, which is correct but not faster). The built-in stores
inherit :class:`PagedList` and :class:`ListScans` too, overriding only
how they read: the arguments are checked here, once, the same way for all.

Filters, for every store: the fields of :data:`FILTER_FIELDS`, each equal to
a value (``None`` for "not set"); a list, tuple or set of strings means any
of them (``provision_state=['active', 'deploy failed']``). A value of the
wrong type matches nothing. Any other field is refused rather than
scanned, so a listing always costs what its indexes say.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from operator import attrgetter
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Final,
    NamedTuple,
    Protocol,
    overload,
    runtime_checkable,
)

from ironic_fsm.exceptions import InvalidParameterValue, NodeLocked, NodeNotFound
from ironic_fsm.history import HistoryEntry, check_entry
from ironic_fsm.node import (
    Node,
    Snapshot,
    check_storable,
    encode_stored,
    freeze,
)
from ironic_fsm.stores._announce import WORK_CHANNEL, WorkAnnouncer, announce_work
from ironic_fsm.stores._catalog import (
    CATALOG_KINDS,
    CatalogEntry,
    CatalogEntryExists,
    CatalogEntryNotFound,
    CatalogKind,
    CatalogStore,
    MemoryCatalog,
)
from ironic_fsm.stores._conductors import (
    ConductorRecord,
    ConductorRegistry,
    check_conductor,
    check_registration,
    check_time,
    conductor_order,
)
from ironic_fsm.stores._power import PowerSyncRow, PowerSyncStore, mark_power_synced, power_sync_due
from ironic_fsm.stores._query import (
    ASSOCIATED,
    BOOL_FILTERS,
    COLUMN_FIELDS,
    FILTER_FIELDS,
    NULLABLE_SORT_KEYS,
    RESERVED,
    SET,
    SHARDED,
    SORT_DIRS,
    SORT_KEYS,
    STRING_FILTERS,
    WAIT_UNTIL_SUFFIX,
    NodeFields,
    PageQuery,
    _scan_filters,
    bad_marker,
    check_fields,
    check_filters,
    check_page,
    matches,
    normalize_filters,
    oldest_due,
    order_key,
    page_query,
    pick_page,
    project,
    sort_records,
    wake_time,
)
from ironic_fsm.stores._records import RecordQuery, RecordStore

__all__ = [
    "ASSOCIATED", "BOOL_FILTERS", "CATALOG_KINDS", "CatalogEntry", "CatalogEntryExists",
    "CatalogEntryNotFound", "CatalogKind", "CatalogStore", "MemoryCatalog", "COLUMN_FIELDS",
    "FILTER_FIELDS", "NULLABLE_SORT_KEYS",
    "RESERVED", "SET", "SHARDED", "SORT_DIRS", "SORT_KEYS", "STRING_FILTERS", "WAIT_UNTIL_SUFFIX",
    "WORK_CHANNEL",
    "ConductorRecord", "ConductorRegistry", "HistoryStore", "ListScans", "NodeFields",
    "PagedList", "PageQuery",
    "PowerSyncRow", "PowerSyncStore", "RecordQuery", "RecordStore",
    "Reserved", "ScanningStore", "Store", "WorkAnnouncer",
    "announce_work", "bad_marker", "check_conductor", "check_fields", "check_filters",
    "check_registration",
    "check_history", "check_page", "check_time", "conductor_order", "duplicate_name",
    "duplicate_uuid", "encode", "in_states", "list_fields", "list_page", "locked_error",
    "mark_power_synced", "matches", "normalize_filters", "not_found", "order_key", "pages",
    "power_sync_due", "project", "reserved", "save_with_history", "snapshot", "sort_records",
    "wake_time", "waking",
]  # fmt: skip


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
        The built-in stores also take ``fields``: then they return one
        :class:`NodeFields` per node instead (see :func:`list_fields`).

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


# -- for callers: the store's own scans, or a fallback on list() ------------------------------


def pages(store: object) -> bool:
    """Whether ``store.list`` pages, sorts and projects (takes ``marker`` and ``fields``).

    Declared by the store (:attr:`PagedList.lists_pages`), never guessed from a
    signature: a store may inherit :class:`ListScans` and keep the first release's
    ``list``, and its scans are then done here on ``list()``.
    """
    return getattr(store, "lists_pages", False) is True


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
    if pages(store):
        paged: list[Node] = store.list(
            limit=limit, marker=marker, sort_key=sort_key, sort_dir=sort_dir, **filters
        )
        return paged
    query = page_query(limit, marker, sort_key, sort_dir, filters)
    nodes = store.list()
    positions = {node.uuid: i for i, node in enumerate(nodes)}

    def key(node: Node) -> tuple[Any, ...]:
        return order_key(sort_key, getattr(node, sort_key), positions[node.uuid], node.uuid)

    return pick_page(nodes, key, {node.uuid: node for node in nodes}.get, query)


def list_fields(store: Store, fields: Iterable[str], **query: Any) -> list[NodeFields]:
    """:func:`list_page` (same ``query``) with only ``fields`` of each node, ``uuid`` first.

    A store whose ``list`` takes ``fields`` (both built-in ones) answers
    itself, reading no record when every field is in :data:`COLUMN_FIELDS`;
    any other store's nodes are read whole and cut down here.
    """
    wanted = check_fields(fields)
    if pages(store):
        lister: Any = store.list  # the Store protocol's list has no fields
        found: list[NodeFields] = lister(fields=wanted, **query)
        return found
    return [project(node, wanted) for node in list_page(store, **query)]


def reserved(store: Store) -> list[Reserved]:
    """The store's reserved nodes, through :meth:`ScanningStore.reserved` when it has one."""
    return _scans(store).reserved()


def in_states(
    store: Store,
    states: Collection[str],
    *,
    updated_before: datetime | None = None,
    limit: int | None = None,
    **filters: Any,
) -> list[Node]:
    """:meth:`ScanningStore.in_states` on any store (a filtered ``list()`` as fallback)."""
    return _scans(store).in_states(states, updated_before=updated_before, limit=limit, **filters)


def waking(
    store: Store, before: datetime, *, limit: int | None = None, **filters: Any
) -> list[Node]:
    """:meth:`ScanningStore.waking` on any store (a filtered ``list()`` as fallback)."""
    return _scans(store).waking(before, limit=limit, **filters)


class PagedList:
    """``list`` with paging, sorting and ``fields``: checked here, read by the store's ``_page``.

    A mixin for stores: every argument is refused or normalised once, the
    same way for all, before a store reads anything.
    """

    #: ``list`` takes the paging keywords and ``fields`` (see :func:`pages`).
    lists_pages: ClassVar[bool] = True

    # The paging keywords and filters pass through **query; the return type follows fields.
    @overload
    def list(self, *, fields: None = None, **query: Any) -> builtins.list[Node]: ...
    @overload
    def list(self, *, fields: Iterable[str], **query: Any) -> builtins.list[NodeFields]: ...

    def list(
        self,
        *,
        limit: int | None = None,
        marker: str | None = None,
        sort_key: str = "created_at",
        sort_dir: str = "asc",
        fields: Iterable[str] | None = None,
        **filters: Any,
    ) -> builtins.list[Node] | builtins.list[NodeFields]:
        """One page of copies of the matching nodes; see :meth:`ScanningStore.list`.

        With ``fields``, one :class:`NodeFields` per node with only those
        fields (``uuid`` always): the built-in stores read no record when
        every field is in :data:`COLUMN_FIELDS`.
        """
        return self._page(page_query(limit, marker, sort_key, sort_dir, filters, fields))

    def _page(self, query: PageQuery) -> builtins.list[Node] | builtins.list[NodeFields]:
        """The page ``query`` asks for (a bad marker refused even when nothing can match)."""
        raise NotImplementedError


class ListScans:
    """The scans of :class:`ScanningStore` done on ``self.list()``: a mixin for own stores.

    Correct on any store, but each call reads every node: inherit it, and
    override what should be fast (``reserved``, and the hooks ``_in_states``
    and ``_waking``, which get the arguments checked). A ``list`` without the
    paging keywords is paged by :func:`list_page` as for any first-release store.
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
        return [] if wanted is None else self._in_states(wanted, updated_before, limit)

    def waking(
        self, before: datetime, *, limit: int | None = None, **filters: Any
    ) -> builtins.list[Node]:
        wanted = _scan_filters(None, limit, filters, before)
        return [] if wanted is None else self._waking(wanted, before, limit)

    def _in_states(
        self, wanted: dict[str, Any], updated_before: datetime | None, limit: int | None
    ) -> builtins.list[Node]:
        """:meth:`in_states` with its filters normalised (``provision_state`` among them)."""
        when = _PROVISION_UPDATED
        return oldest_due(self.list(), wanted, when, updated_before, inclusive=False, limit=limit)

    def _waking(
        self, wanted: dict[str, Any], before: datetime, limit: int | None
    ) -> builtins.list[Node]:
        """:meth:`waking` with its filters normalised."""
        return oldest_due(self.list(), wanted, wake_time, before, inclusive=True, limit=limit)


_PROVISION_UPDATED: Final = attrgetter("provision_updated_at")


class _Listed(ListScans):
    """Any store's scans through its ``list()``: what the functions above fall back on."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def list(self, **filters: Any) -> builtins.list[Node]:
        return self._store.list(**filters)


def _scans(store: Store) -> ScanningStore | ListScans:
    return store if isinstance(store, ScanningStore) else _Listed(store)


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
