"""What a store offers beyond :class:`~ironic_fsm.stores.base.Store`, asked once.

A store may add any of eight optional protocols: node history
(:class:`~.base.HistoryStore`), scans (:class:`~.base.ScanningStore`), the
work queue (:class:`~._claim.QueueStore`), power-sync rows
(:class:`~._power.PowerSyncStore`), the conductor registry
(:class:`~._conductors.ConductorRegistry`), the catalog
(:class:`~._catalog.CatalogStore`), work announcements
(:class:`~._announce.WorkAnnouncer`), node counts
(:class:`~._counts.NodeCounter`) and reserving saves (:class:`ReservingStore`,
declared here). :class:`StoreCapabilities` is built once, when a conductor is
constructed: it asks each question once (a
``Protocol`` ``isinstance`` is slow) and then offers every operation on any
store: the store's own method when it has one, a fallback on ``list()``
otherwise. Callers hold the adapter and never test the store again.

The rule the answers rely on: a store's class says what it offers, and its
instances do not add or drop methods after they are built.

Whether a store checks a node's field types itself on ``save`` (so the
conductor need not) is the store's own declaration,
``checks_node_types = True`` (see :class:`~ironic_fsm.stores.MemoryStore`):
the conductor never names a concrete store class.
"""

from __future__ import annotations

import builtins
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from ironic_fsm.history import HistoryEntry
from ironic_fsm.node import Node
from ironic_fsm.stores import _claim, _power
from ironic_fsm.stores._announce import WorkAnnouncer
from ironic_fsm.stores._catalog import CatalogStore, MemoryCatalog
from ironic_fsm.stores._claim import QueuedNode, QueueStore
from ironic_fsm.stores._conductors import ConductorRegistry
from ironic_fsm.stores._counts import NodeCounter, check_count
from ironic_fsm.stores._listed_scans import ListedScans
from ironic_fsm.stores._power import PowerSyncRow, PowerSyncStore
from ironic_fsm.stores._records import RecordStore
from ironic_fsm.stores.base import (
    HistoryStore,
    NodeFields,
    Reserved,
    ScanningStore,
    Store,
    list_fields,
    list_page,
)

__all__ = ["ReservingStore", "StoreCapabilities"]


@runtime_checkable
class ReservingStore(Protocol):
    """A store whose save can take the node's reservation: reserve and save in one write.

    What a verb needs to write nothing before its first change: it decides
    on a copy of the node (:meth:`last_written`, else a read), and its first
    save (:meth:`save_reserving`) takes the reservation only if nobody took
    it, and nobody saved the node, since that copy. Without it a verb
    reserves, then saves, as every store allows. Its holder's later saves are
    compare-and-sets on the reservation too (:meth:`save_held`): a conductor
    whose node was taken over while its save waited out an outage finds it
    so, and never takes it back. :class:`~.sql.SQLStore` has it.
    """

    def save_reserving(self, node: Node, *, history: Sequence[HistoryEntry] = ()) -> None:
        """Save ``node`` (with ``history``, as :meth:`~.base.HistoryStore.save`) only if the
        record is at ``node.version`` and unreserved; the write sets ``reservation`` to
        ``node.reservation`` (the holder taking it, or ``None``: saved and left free).

        Raises (nothing written): :class:`~ironic_fsm.exceptions.NodeLocked` naming the
        holder if someone holds it, :class:`~ironic_fsm.exceptions.ConcurrentUpdate` if it
        was saved since, :class:`~ironic_fsm.exceptions.NodeNotFound` if it is gone.
        """

    def save_held(self, node: Node, holder: str, *, history: Sequence[HistoryEntry] = ()) -> None:
        """Save ``node`` (with ``history``) only if the record is at ``node.version`` and
        reserved by ``holder``; the write sets ``reservation`` to ``node.reservation`` (kept,
        or ``None``: released). A holder whose node was taken over never takes it back.

        Raises (nothing written): :class:`~ironic_fsm.exceptions.NodeLocked` naming the
        holder if someone else holds it, :class:`~ironic_fsm.exceptions.ConcurrentUpdate` if
        it was saved since or is no longer reserved by ``holder``,
        :class:`~ironic_fsm.exceptions.NodeNotFound` if it is gone.
        """

    def last_written(self, uuid: str) -> Node | None:
        """A copy of the node as this store last wrote it, or ``None`` if it does not know.

        Possibly stale (another writer may have saved since): a caller acts
        on it only through :meth:`save_reserving`, which checks.
        """


class StoreCapabilities:
    """One store and what it offers: each optional protocol, ``None`` when it lacks it.

    Attributes:
        store: The store itself.
        history: The store as a :class:`~.base.HistoryStore`, or ``None``:
            history is then dropped, never written apart from its change.
        scans: The store's own scans, or the same scans done on its ``list()``.
        queue: The store as a :class:`~._claim.QueueStore`, or ``None``.
        power_sync: The store as a :class:`~._power.PowerSyncStore`, or ``None``.
        registry: The store as a :class:`~._conductors.ConductorRegistry`, or
            ``None``: each conductor then sees only itself.
        catalog: Where deploy templates and runbooks are kept: the store if it
            can, else a :class:`~._catalog.MemoryCatalog` of this adapter's own.
        announcer: The store as a :class:`~._announce.WorkAnnouncer`, or ``None``.
        counter: The store as a :class:`~._counts.NodeCounter`, or ``None``: counts
            are then made from a listing of the fields counted.
        reserving: The store as a :class:`ReservingStore`, or ``None``: a verb then
            reserves the node, then saves it.
        records: The store's ports, chassis, allocations... (its ``records``
            attribute, a :class:`~._records.RecordStore`), or ``None``: it keeps
            none, and asking for them is
            :class:`~ironic_fsm.exceptions.StoreUnsupported`.
        checks_node_types: The store's ``save`` refuses a field of the wrong
            type itself, in :meth:`~ironic_fsm.node.Node.check_types`' words.
    """

    __slots__ = (
        "announcer", "catalog", "checks_node_types", "counter", "history", "power_sync", "queue",
        "records", "registry", "reserving", "scans", "store",
    )  # fmt: skip

    def __init__(self, store: Store) -> None:
        self.store = store
        self.history: HistoryStore | None = store if isinstance(store, HistoryStore) else None
        self.scans: ScanningStore | ListedScans = (
            store if isinstance(store, ScanningStore) else ListedScans(store.list)
        )
        self.queue: QueueStore | None = store if isinstance(store, QueueStore) else None
        self.power_sync: PowerSyncStore | None = (
            store if isinstance(store, PowerSyncStore) else None
        )
        self.registry: ConductorRegistry | None = (
            store if isinstance(store, ConductorRegistry) else None
        )
        self.catalog: CatalogStore = store if isinstance(store, CatalogStore) else MemoryCatalog()
        self.announcer: WorkAnnouncer | None = store if isinstance(store, WorkAnnouncer) else None
        self.counter: NodeCounter | None = store if isinstance(store, NodeCounter) else None
        self.reserving: ReservingStore | None = store if isinstance(store, ReservingStore) else None
        self.checks_node_types = getattr(store, "checks_node_types", False) is True
        records = getattr(store, "records", None)
        self.records: RecordStore | None = records if isinstance(records, RecordStore) else None

    # -- history -------------------------------------------------------------------------

    def save(self, node: Node, history: Sequence[HistoryEntry] = ()) -> None:
        """Save ``node``, with ``history`` in the same transaction if the store keeps it."""
        if history and self.history is not None:
            self.history.save(node, history=history)
        else:
            self.store.save(node)

    def save_reserving(self, node: Node, history: Sequence[HistoryEntry] = ()) -> None:
        """Save ``node`` and take (or leave free) its reservation, if nobody holds it
        (:meth:`ReservingStore.save_reserving`); ``history`` as :meth:`save` writes it."""
        assert self.reserving is not None, "only for a ReservingStore"
        self.reserving.save_reserving(node, history=history if self.history is not None else ())

    def last_written(self, ident: str) -> Node | None:
        """The node as the store last wrote it (maybe stale), if it is a ReservingStore that
        remembers; ``None`` otherwise."""
        return None if self.reserving is None else self.reserving.last_written(ident)

    # -- listings and scans ------------------------------------------------------------------

    def list_page(self, **query: Any) -> builtins.list[Node]:
        """One page of nodes (see :func:`~.base.list_page`)."""
        return list_page(self.store, **query)

    def list_fields(self, fields: Iterable[str], **query: Any) -> builtins.list[NodeFields]:
        """One page of some fields of each node (see :func:`~.base.list_fields`)."""
        return list_fields(self.store, fields, **query)

    def reserved(self) -> builtins.list[Reserved]:
        return self.scans.reserved()

    def in_states(self, states: Collection[str], **query: Any) -> builtins.list[Node]:
        """Nodes in ``states`` (see :meth:`~.base.ScanningStore.in_states` for ``query``)."""
        return self.scans.in_states(states, **query)

    def waking(
        self, before: datetime, *, limit: int | None = None, **filters: Any
    ) -> builtins.list[Node]:
        return self.scans.waking(before, limit=limit, **filters)

    # -- the work queue ------------------------------------------------------------------

    def queued_work(
        self, states: Collection[str], limit: int | None = None
    ) -> builtins.list[QueuedNode]:
        """The unreserved nodes in ``states``, longest waiting first (at most ``limit``)."""
        if self.queue is not None:
            queue = self.queue
            return queue.queued_work(states) if limit is None else queue.queued_work(states, limit)
        return _claim.scan_queue(self.store, states, limit)

    def reserve_queued(
        self, uuids: Sequence[str], holder: str, states: Collection[str]
    ) -> builtins.list[Node]:
        """Reserve those of ``uuids`` still queued (:meth:`~._claim.QueueStore.reserve_queued`)."""
        if self.queue is not None:
            return self.queue.reserve_queued(uuids, holder, states)
        return _claim.reserve_each(self.store, uuids, holder, states)

    def announce_work(self, uuid: str) -> None:
        """Wake the conductors waiting for work, if the store can; else pollers find it."""
        if self.announcer is not None:
            self.announcer.announce_work(uuid)

    # -- power sync ----------------------------------------------------------------------

    def power_sync_due(self, before: datetime) -> builtins.list[PowerSyncRow]:
        """The nodes due a power sync; without the protocol, every node."""
        if self.power_sync is not None:
            return self.power_sync.power_sync_due(before)
        return _power.every_node_due(self.store)

    def mark_power_synced(self, uuids: Sequence[str], when: datetime) -> None:
        if uuids and self.power_sync is not None:
            self.power_sync.mark_power_synced(uuids, when)

    # -- counts --------------------------------------------------------------------------

    def count_nodes(
        self, field: str, *, maintenance: bool | None = None, reserved: bool | None = None
    ) -> dict[Any, int]:
        """How many nodes per value of ``field`` (see :class:`~._counts.NodeCounter`).

        Without the protocol, from one listing of the fields involved: the
        built-in stores read it from their columns, any other store's nodes
        are read whole.
        """
        check_count(field, maintenance, reserved)
        if self.counter is not None:
            return self.counter.count_nodes(field, maintenance=maintenance, reserved=reserved)
        rows = self.list_fields({field, "maintenance", "reservation"})
        return dict(
            Counter(
                row[field]
                for row in rows
                if (maintenance is None or row["maintenance"] is maintenance)
                and (reserved is None or (row["reservation"] is not None) is reserved)
            )
        )
