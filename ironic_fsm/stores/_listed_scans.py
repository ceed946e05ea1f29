"""The periodic scans of :class:`~.base.ScanningStore` done on any store's ``list()``.

What the callers fall back on for a store that has only the first
release's methods (:class:`~.capabilities.StoreCapabilities`,
:func:`~.base.reserved`, :func:`~.base.in_states`, :func:`~.base.waking`),
and what :class:`~.base.ListScans` offers applications' own stores.
Correct on any store, but each call reads every node: a store that wants
scans to cost what is due answers them itself.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection
from datetime import datetime
from operator import attrgetter
from typing import Any, Final

from ironic_fsm.node import Node
from ironic_fsm.stores._query import Reserved, _scan_filters, oldest_due, wake_time

__all__ = ["ListedScans"]

_PROVISION_UPDATED: Final = attrgetter("provision_updated_at")
#: What answers a scan once its arguments are checked: (filters, time, limit) -> nodes.
_Due = Callable[[dict[str, Any], datetime | None, int | None], list[Node]]
_Woken = Callable[[dict[str, Any], datetime, int | None], list[Node]]


class ListedScans:
    """The scans of one ``list()``: every node read, then filtered and sorted here.

    Args:
        list_nodes: The store's ``list`` (called with no arguments: every node).
        due: What answers :meth:`in_states` once its arguments are checked: by
            default :meth:`due` (a :class:`~.base.ListScans` store passes its hook).
        woken: The same for :meth:`waking`: by default :meth:`woken`.
    """

    __slots__ = ("_due", "_list", "_woken")

    def __init__(
        self,
        list_nodes: Callable[[], builtins.list[Node]],
        *,
        due: _Due | None = None,
        woken: _Woken | None = None,
    ) -> None:
        self._list = list_nodes
        self._due: _Due = self.due if due is None else due
        self._woken: _Woken = self.woken if woken is None else woken

    def reserved(self) -> builtins.list[Reserved]:
        """Every reserved node's UUID, holder and ``updated_at``, in the store's order."""
        return [
            Reserved(n.uuid, n.reservation, n.updated_at)
            for n in self._list()
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
        """See :meth:`~.base.ScanningStore.in_states`: the arguments checked, then answered."""
        wanted = _scan_filters(states, limit, filters, updated_before)
        return [] if wanted is None else self._due(wanted, updated_before, limit)

    def waking(
        self, before: datetime, *, limit: int | None = None, **filters: Any
    ) -> builtins.list[Node]:
        """See :meth:`~.base.ScanningStore.waking`: the arguments checked, then answered."""
        wanted = _scan_filters(None, limit, filters, before)
        return [] if wanted is None else self._woken(wanted, before, limit)

    def due(
        self, wanted: dict[str, Any], updated_before: datetime | None, limit: int | None
    ) -> builtins.list[Node]:
        """:meth:`in_states` with its filters normalised (``provision_state`` among them)."""
        when = _PROVISION_UPDATED
        return oldest_due(self._list(), wanted, when, updated_before, inclusive=False, limit=limit)

    def woken(
        self, wanted: dict[str, Any], before: datetime, limit: int | None
    ) -> builtins.list[Node]:
        """:meth:`waking` with its filters normalised."""
        return oldest_due(self._list(), wanted, wake_time, before, inclusive=True, limit=limit)
