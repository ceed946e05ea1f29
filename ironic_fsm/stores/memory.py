"""``MemoryStore``: node records in this process's memory."""

from __future__ import annotations

import builtins
import heapq
import itertools
import threading
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, ClassVar, Final, overload

from ironic_fsm.exceptions import ConcurrentUpdate
from ironic_fsm.history import HistoryEntry
from ironic_fsm.node import Node, Snapshot, freeze_checked
from ironic_fsm.stores._catalog import CatalogEntry, CatalogKind, MemoryCatalog
from ironic_fsm.stores._listed_scans import ListedScans
from ironic_fsm.stores._memory_record import Record
from ironic_fsm.stores._memory_scans import MemoryScans
from ironic_fsm.stores._power import PowerSyncRow, check_sync_args
from ironic_fsm.stores._query import NodeFields, list_query
from ironic_fsm.stores._records import MemoryRecords
from ironic_fsm.stores.base import (
    ConductorRecord,
    Reserved,
    check_history,
    check_registration,
    check_time,
    conductor_order,
    duplicate_name,
    duplicate_uuid,
    locked_error,
    not_found,
    snapshot,
)

__all__ = ["MemoryStore"]

_UTC: Final = timezone.utc


def _frozen(node: Node, since: Snapshot | None = None) -> Snapshot:
    """The node's snapshot, its fields checked but those that are ``since``'s very objects
    (checked when that was stored); a refusal names the field."""
    try:
        data = freeze_checked(node, since)
    except (TypeError, ValueError, RecursionError):
        data = None
    return snapshot(node) if data is None else data


class MemoryStore:
    """Nodes in this process's memory; the default, for tests and short-lived use.

    Records are kept as immutable snapshots (the containers as JSON bytes),
    so callers never share objects with the store, as with a database:
    orjson copies the containers for less than Python code would. Every
    change is checked in full before anything is touched, so a refused call
    changes nothing. Thread-safe. Listing and scans read plain attributes of
    each record and build only the nodes they return (a scan is linear in the fleet, but cheap).

    A facade over parts, as :class:`~ironic_fsm.stores.SQLStore` is: the hot
    methods (``create``, ``get``, ``save``, ``reserve``, ``release``) work on the
    records here; pages and scans (:class:`~._memory_scans.MemoryScans`, on the
    same records and lock) and the catalog (:class:`~._catalog.MemoryCatalog`)
    answer the methods that delegate to them in a line.
    """

    #: ``list`` pages, sorts and reads only the ``fields`` asked for (see
    #: :func:`~ironic_fsm.stores.base.pages`).
    lists_pages: ClassVar[bool] = True

    #: ``save`` and ``create`` check every field's type themselves (:func:`_frozen`), in
    #: :meth:`~ironic_fsm.node.Node.check_types`' words: the conductor checks only names.
    checks_node_types: Final = True

    def __init__(self) -> None:
        self._nodes: dict[str, Record] = {}
        self._names: dict[str, str] = {}
        self._holders: dict[str, datetime] = {}
        self._conductors: dict[str, ConductorRecord] = {}
        #: Each node's history entries, in the order written (only nodes that have some).
        self._history: dict[str, builtins.list[HistoryEntry]] = {}
        self._seq = itertools.count(1)
        self._lock = threading.Lock()
        #: Power sync (see PowerSyncStore): nodes never synced, in creation order; the last
        #: sync of the others, and a heap of (time, uuid) over them whose stale entries (a
        #: later sync, a deleted node) are dropped as the due scan meets them.
        self._power_never: dict[str, None] = {}
        self._power_synced: dict[str, datetime] = {}
        self._power_heap: builtins.list[tuple[datetime, str]] = []
        # The parts: the scans share the records and the lock; the catalog has its own.
        self._scans = scans = MemoryScans(self._nodes, self._lock)
        # The scans' arguments checked as on any store, then answered by the part.
        self._checked = ListedScans(self.list, due=scans.in_states, woken=scans.waking)
        self._catalog = MemoryCatalog()
        #: Ports, chassis, allocations... (:class:`~._records.RecordStore`).
        from ironic_fsm.stores._kinds import KINDS  # the record classes: not at import

        self.records = MemoryRecords(KINDS)

    def _uuid(self, ident: str) -> str:
        if ident in self._nodes:
            return ident
        uuid = self._names.get(ident)
        if uuid is None:
            raise not_found(ident)
        return uuid

    def create(self, node: Node) -> None:
        data = _frozen(node)
        created = node.created_at or datetime.now(_UTC)
        with self._lock:
            if node.uuid in self._nodes:
                raise duplicate_uuid(node.uuid)
            if node.name is not None and (node.name in self._names or node.name in self._nodes):
                raise duplicate_name(node.name)
            self._nodes[node.uuid] = Record(node, data, 1, next(self._seq), created)
            if node.name is not None:
                self._names[node.name] = node.uuid
            self._power_never[node.uuid] = None
        node.version = 1

    def create_many(self, nodes: builtins.list[Node]) -> None:
        """Create every node, all or none, with the checks of :meth:`create`."""
        encoded = [(node, _frozen(node), node.created_at or datetime.now(_UTC)) for node in nodes]
        with self._lock:
            uuids: set[str] = set()
            names: set[str] = set()
            for node in nodes:
                if node.uuid in self._nodes or node.uuid in uuids:
                    raise duplicate_uuid(node.uuid)
                uuids.add(node.uuid)
            for node in nodes:
                name = node.name
                if name is not None:
                    if name in self._names or name in self._nodes or name in names:
                        raise duplicate_name(name)
                    if name in uuids and name != node.uuid:
                        raise duplicate_name(name)
                    names.add(name)
            for node, data, created in encoded:
                self._nodes[node.uuid] = Record(node, data, 1, next(self._seq), created)
                if node.name is not None:
                    self._names[node.name] = node.uuid
                self._power_never[node.uuid] = None
        for node in nodes:
            node.version = 1

    def get(self, ident: str) -> Node:
        with self._lock:
            return self._nodes[self._uuid(ident)].node()

    # -- pages and scans: one line each to the part -------------------------------------

    @overload
    def list(self, *, fields: None = None, **query: Any) -> builtins.list[Node]: ...
    @overload
    def list(self, *, fields: Iterable[str], **query: Any) -> builtins.list[NodeFields]: ...
    def list(
        self, *, fields: Iterable[str] | None = None, **query: Any
    ) -> builtins.list[Node] | builtins.list[NodeFields]:
        """One page of copies of the matching nodes; see :meth:`~.base.ScanningStore.list`.

        The arguments are checked as every built-in store checks them (:func:`~._query.page_query`).
        """
        return self._scans.page(list_query(query, fields))

    def reserved(self) -> builtins.list[Reserved]:
        """Every reserved node's UUID, holder and ``updated_at``, in creation order."""
        return self._scans.reserved()

    def in_states(self, states: Collection[str], **query: Any) -> builtins.list[Node]:
        """See :meth:`~.base.ScanningStore.in_states`: checked, then read from the records."""
        return self._checked.in_states(states, **query)

    def waking(self, before: datetime, **query: Any) -> builtins.list[Node]:
        """See :meth:`~.base.ScanningStore.waking`: checked, then read from the records."""
        return self._checked.waking(before, **query)

    def save(self, node: Node, *, history: Sequence[HistoryEntry] = ()) -> None:
        """Write ``node`` if its version is current, and ``history`` under the same lock."""
        # First: a node that cannot be stored changes nothing. A stored snapshot (read
        # without the lock: any was checked) spares the checks of the fields it shares.
        stored = self._nodes.get(node.uuid) if type(node.uuid) is str else None
        data = _frozen(node, None if stored is None else stored.frozen)
        if history:
            check_history(history, node)
        with self._lock:
            current = self._nodes.get(node.uuid)
            if current is None:
                raise not_found(node.uuid)
            if current.version != node.version:
                raise ConcurrentUpdate(
                    f"Node {node.uuid} was changed by someone else (version "
                    f"{current.version}, ours {node.version}); re-read it and retry",
                    node=node.uuid,
                )
            renamed = node.name != current.name
            if renamed and node.name is not None and node.name in self._names:
                raise duplicate_name(node.name)
            # Every check passed: commit.
            if renamed:
                if current.name is not None:
                    self._names.pop(current.name, None)
                if node.name is not None:
                    self._names[node.name] = node.uuid
            created = node.created_at or current.created_at
            self._nodes[node.uuid] = Record(node, data, node.version + 1, current.seq, created)
            if history:
                self._history.setdefault(node.uuid, []).extend(history)
            node.version += 1

    def delete(self, ident: str) -> None:
        with self._lock:
            uuid = self._uuid(ident)
            record = self._nodes.pop(uuid)
            if record.name is not None:
                self._names.pop(record.name, None)
            self._history.pop(uuid, None)
            self._power_never.pop(uuid, None)
            self._power_synced.pop(uuid, None)  # its heap entries are stale from now on
        self.records.drop_node(uuid)  # its ports, groups, allocation, volume records

    # -- power sync (see PowerSyncStore) -------------------------------------------------

    def power_sync_due(self, before: datetime) -> builtins.list[PowerSyncRow]:
        """Nodes never synced, then those last synced at or before ``before``, oldest first.

        Costs what is due: the heap is popped only as far as ``before``
        (the due entries are pushed back: they stay due until marked).
        """
        check_sync_args((), before)
        with self._lock:
            uuids = list(self._power_never)
            heap, synced = self._power_heap, self._power_synced
            kept: dict[tuple[datetime, str], None] = {}  # a node deleted and made again
            while heap and heap[0][0] <= before:  # may have two entries of one time
                entry = heapq.heappop(heap)
                if synced.get(entry[1]) == entry[0]:
                    kept[entry] = None
            for entry in kept:
                heapq.heappush(heap, entry)
                uuids.append(entry[1])
            rows = []
            for uuid in uuids:
                r = self._nodes[uuid]
                fields = (r.driver, r.provision_state, r.maintenance, r.fault, r.reservation)
                rows.append(PowerSyncRow(uuid, *fields, synced.get(uuid), r.conductor_group))
            return rows

    def mark_power_synced(self, uuids: Sequence[str], when: datetime) -> None:
        wanted = check_sync_args(uuids, when)
        when = when.astimezone(_UTC)
        with self._lock:
            for uuid in wanted:
                if uuid not in self._nodes or self._power_synced.get(uuid) == when:
                    continue
                self._power_never.pop(uuid, None)
                self._power_synced[uuid] = when
                heapq.heappush(self._power_heap, (when, uuid))

    # -- node history (see HistoryStore) -------------------------------------------------

    def add_history(self, entries: Sequence[HistoryEntry]) -> None:
        check_history(entries)
        with self._lock:
            for entry in entries:
                if entry.node_uuid in self._nodes:
                    self._history.setdefault(entry.node_uuid, []).append(entry)

    def node_history(self, node_uuid: str) -> builtins.list[HistoryEntry]:
        with self._lock:
            entries = list(self._history.get(node_uuid, ()))
        entries.sort(key=lambda e: e.created_at.astimezone(_UTC))  # stable: ties as written
        return entries

    def trim_history(self, max_entries: int, *, before: datetime | None, limit: int) -> int:
        """See :meth:`HistoryStore.trim_history`; reads the nodes that have history."""
        if before is not None:
            check_time(before, "before")
        deleted = 0
        with self._lock:
            for uuid, entries in self._history.items():
                excess = len(entries) - max_entries
                if excess <= 0:
                    continue
                if deleted >= limit:
                    break
                ordered = sorted(
                    range(len(entries)), key=lambda i: entries[i].created_at.astimezone(_UTC)
                )
                doomed = set()
                for i in ordered[: min(excess, limit - deleted)]:
                    if before is not None and entries[i].created_at >= before:
                        break
                    doomed.add(i)
                if doomed:
                    self._history[uuid] = [e for i, e in enumerate(entries) if i not in doomed]
                    deleted += len(doomed)
        return deleted

    def reserve(self, ident: str, holder: str) -> Node:
        with self._lock:
            uuid = self._uuid(ident)
            record = self._nodes[uuid]
            if record.reservation is not None:
                raise locked_error(uuid, record.reservation)
            record.reservation = holder
            return record.node()

    def release(self, ident: str, holder: str) -> None:
        with self._lock:
            record = self._nodes.get(self._uuid(ident))
            if record is not None and record.reservation == holder:
                record.reservation = None

    def heartbeat(self, holder: str, now: datetime) -> None:
        with self._lock:
            self._holders[holder] = now

    def holders(self) -> dict[str, datetime]:
        with self._lock:
            return dict(self._holders)

    # -- the conductor registry (see ConductorRegistry) ---------------------------------------

    def register_conductor(
        self, record: ConductorRecord, *, replace_before: datetime | None = None
    ) -> None:
        check_registration(record, replace_before)
        with self._lock:
            for other in list(self._conductors.values()):
                if other.hostname == record.hostname and (
                    not other.online
                    or (replace_before is not None and other.updated_at < replace_before)
                ):
                    del self._conductors[other.holder]
            self._conductors[record.holder] = record

    def conductor_heartbeat(self, holder: str, now: datetime) -> bool:
        check_time(now, "now")
        with self._lock:
            record = self._conductors.get(holder)
            if record is None:
                return False
            self._conductors[holder] = record._replace(online=True, updated_at=now)
            return True

    def unregister_conductor(self, holder: str, now: datetime) -> None:
        check_time(now, "now")
        with self._lock:
            record = self._conductors.get(holder)
            if record is not None:
                self._conductors[holder] = record._replace(online=False, updated_at=now)

    def list_conductors(self) -> builtins.list[ConductorRecord]:
        with self._lock:
            return sorted(self._conductors.values(), key=conductor_order)

    # -- deploy templates and runbooks (see CatalogStore) ---------------------------------

    def list_entries(self, kind: CatalogKind) -> builtins.list[CatalogEntry]:
        """Copies of every entry of ``kind``, in creation order."""
        return self._catalog.list_entries(kind)

    def add_entry(self, kind: CatalogKind, entry: CatalogEntry) -> CatalogEntry:
        """Keep a copy of ``entry``; refused if its UUID or name is taken."""
        return self._catalog.add_entry(kind, entry)

    def get_entry(self, kind: CatalogKind, ident: str) -> CatalogEntry:
        """A copy of the entry with this UUID or name."""
        return self._catalog.get_entry(kind, ident)

    def delete_entry(self, kind: CatalogKind, ident: str) -> None:
        """Forget the entry with this UUID or name."""
        self._catalog.delete_entry(kind, ident)

    def replace_entry(self, kind: CatalogKind, entry: CatalogEntry) -> CatalogEntry:
        """Replace the entry with ``entry``'s UUID; refused if its name is another's."""
        return self._catalog.replace_entry(kind, entry)
