"""Holdings: the nodes this conductor's threads hold right now, whatever the store says.

The store knows which nodes this conductor has reserved; only the process
knows which of them a thread is still working on. A reservation whose
thread is gone (a flow stopped by a database outage, a release that never
reached the database, a reserve whose answer was lost with the connection)
is an orphan this conductor must take back itself
(:meth:`~ironic_fsm.conductor.recovery.Recovery.recover`), and it must never
take back one a thread still holds. Each hold is counted here *before* the
store is asked to reserve, so that a look between the two cannot miss it.
"""

from __future__ import annotations

import threading

from ironic_fsm.node import Node
from ironic_fsm.stores import Store

__all__ = ["Holdings"]


class Holdings:
    """A count per node identifier (UUID or name) of the holds in progress, under a lock."""

    __slots__ = ("_counts", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def add(self, ident: str) -> None:
        with self._lock:
            self._counts[ident] = self._counts.get(ident, 0) + 1

    def discard(self, ident: str) -> None:
        with self._lock:
            left = self._counts.get(ident, 0) - 1
            if left > 0:
                self._counts[ident] = left
            else:
                self._counts.pop(ident, None)

    def reserve(self, store: Store, ident: str, holder: str) -> Node:
        """``store.reserve(ident, holder)``, counted under the node's UUID from before the call."""
        self.add(ident)
        try:
            node = store.reserve(ident, holder)
        except BaseException:
            self.discard(ident)
            raise
        if node.uuid != ident:  # reserved by name: counted by UUID from now on
            self.add(node.uuid)
            self.discard(ident)
        return node

    def take(self, uuid: str) -> bool:
        """Count a hold on ``uuid`` only if there is none; whether it was counted."""
        with self._lock:
            if uuid in self._counts:
                return False
            self._counts[uuid] = 1
            return True

    def alone(self, uuid: str) -> bool:
        """Whether the one hold on ``uuid`` is the caller's (taken with :meth:`take`)."""
        with self._lock:
            return self._counts.get(uuid) == 1
