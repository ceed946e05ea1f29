"""Pages and periodic scans of :class:`~ironic_fsm.stores.MemoryStore`, on its records.

The memory store's counterpart of the SQL store's ``_paging`` and ``_scans``:
given arguments already checked (:func:`~._query.page_query`, the scans'
filters), it reads the records' plain attributes and builds only the nodes
it returns. It shares the store's records and lock, never replaces them.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable
from datetime import datetime
from operator import attrgetter
from typing import Any, Final

from ironic_fsm.node import Node
from ironic_fsm.stores._memory_record import Record
from ironic_fsm.stores._query import (
    COLUMN_FIELDS,
    NodeFields,
    PageQuery,
    Reserved,
    oldest_due,
    order_key,
    pick_page,
    project,
)

__all__ = ["MemoryScans"]

#: A record's times that the scans read.
_UPDATED: Final = attrgetter("provision_updated_at")
_WAKE: Final = attrgetter("wake")


class MemoryScans:
    """``list``'s pages and the scans ``reserved``, ``in_states`` and ``waking``.

    Args:
        records: The store's records by UUID (read under ``lock``).
        lock: The store's lock.
    """

    __slots__ = ("_lock", "_records")

    def __init__(self, records: dict[str, Record], lock: threading.Lock) -> None:
        self._records = records
        self._lock = lock

    def page(self, query: PageQuery) -> builtins.list[Node] | builtins.list[NodeFields]:
        """A page, built from the records' attributes alone when every field asked is one.

        Whole nodes, or fields beyond :data:`~ironic_fsm.stores.base.COLUMN_FIELDS`, thaw
        only the records on the page.
        """
        sort_key, names = query.sort_key, query.fields

        def key(record: Record) -> tuple[Any, ...]:
            return order_key(sort_key, getattr(record, sort_key), record.seq, record.uuid)

        records = self._records
        with self._lock:
            page = pick_page(records.values(), key, records.get, query)
            if names is None:
                return [r.node() for r in page]
            if COLUMN_FIELDS.issuperset(names):
                return [NodeFields((name, getattr(r, name)) for name in names) for r in page]
            return [project(r.node(), names) for r in page]

    def reserved(self) -> builtins.list[Reserved]:
        """Every reserved node's UUID, holder and ``updated_at``, in creation order."""
        with self._lock:
            return [
                Reserved(r.uuid, r.reservation, r.updated_at)
                for r in self._records.values()
                if r.reservation is not None
            ]

    def in_states(
        self, wanted: dict[str, Any], updated_before: datetime | None, limit: int | None
    ) -> builtins.list[Node]:
        """In the states asked (changed before ``updated_before``), oldest first."""
        return self._due(wanted, _UPDATED, updated_before, False, limit)

    def waking(
        self, wanted: dict[str, Any], before: datetime, limit: int | None
    ) -> builtins.list[Node]:
        """Whose ``wait`` step is up at ``before``, earliest first."""
        return self._due(wanted, _WAKE, before, True, limit)

    def _due(
        self,
        wanted: dict[str, Any],
        when_of: Callable[[Record], datetime | None],
        before: datetime | None,
        inclusive: bool,
        limit: int | None,
    ) -> builtins.list[Node]:
        """The scans on the records' copies of their times; only the nodes returned are thawed."""
        with self._lock:
            due = oldest_due(
                self._records.values(), wanted, when_of, before, inclusive=inclusive, limit=limit
            )
            return [r.node() for r in due]
