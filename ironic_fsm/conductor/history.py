"""Node history: read a node's entries, and the periodic trim that bounds them.

Entries are written by the runtime, with the save of the change that
caused them (see :meth:`Runtime._record`); this part reads them back and
applies Ironic's retention options.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from ironic_fsm.conductor.common import check_ident
from ironic_fsm.conductor.context import Context
from ironic_fsm.exceptions import NodeNotFound
from ironic_fsm.history import HistoryEntry

__all__ = ["History"]

LOG = logging.getLogger("ironic_fsm.conductor")


class History:
    """``get_node_history``, ``get_node_history_entry`` and ``trim_node_history``."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def get_node_history(self, ident: str) -> list[HistoryEntry]:
        """The node's history, oldest first (``[]`` on a store that keeps none).

        Raises:
            NodeNotFound: no node has this UUID or name.
        """
        caps = self._ctx.caps
        node = caps.store.get(check_ident(ident))
        history = caps.history
        return [] if history is None else history.node_history(node.uuid)

    def get_node_history_entry(self, ident: str, entry_uuid: str) -> HistoryEntry:
        """One entry of the node's history, by its UUID.

        Raises:
            NodeNotFound: no such node, or the node has no entry with this UUID
                (Ironic answers 404 for both).
        """
        node = self._ctx.caps.store.get(check_ident(ident))
        for entry in self.get_node_history(node.uuid):
            if entry.uuid == entry_uuid:
                return entry
        raise NodeNotFound(
            f"Node {node.uuid} has no history entry {entry_uuid}",
            node=node.uuid,
            entry=entry_uuid,
        )

    def trim_node_history(self, now: datetime | None = None) -> int:
        """Delete the oldest entries beyond ``node_history_max_entries`` per node.

        Entries younger than ``node_history_minimum_days`` stay whatever
        their number. Deletes in batches of ``node_history_cleanup_batch_count``,
        each one transaction, until a batch finds less to do; the store
        reads only the nodes over the limit, so a trim costs what it
        deletes, not the fleet. Call it every ``node_history_cleanup_interval``
        seconds. Returns how many entries went.
        """
        store = self._ctx.caps.history
        if store is None:
            return 0
        config = self._ctx.config
        days = config.node_history_minimum_days
        before = (now or self._ctx.clock()) - timedelta(days=days) if days else None
        batch = config.node_history_cleanup_batch_count
        total = 0
        while True:
            gone = store.trim_history(config.node_history_max_entries, before=before, limit=batch)
            total += gone
            if gone < batch:
                break
        if total:
            LOG.info("Node history: trimmed %d entries", total)
        return total
