"""Claiming the work queue in batches: read it without decoding, reserve many in one statement.

The work queue is the nodes in a working state that nobody holds (see
``Conductor.claim_work``). A conductor service looks at it each time it is
woken: on every ``NOTIFY``, and after each flow it finishes. Reading whole
records there, and reserving them one round trip at a time, made the claim
thread the bottleneck of a service: it decoded every queued node, the other
conductors' too, on every wake, and spent a round trip per node claimed
while its flow threads waited.

* :class:`QueueStore`: the two methods a store adds for that.
  :meth:`~QueueStore.queued_work` reads the queue from indexed columns
  (UUID, hardware type, conductor group: what the hash ring needs);
  :meth:`~QueueStore.reserve_queued` reserves the chosen nodes in one
  statement and returns the records it got, decoded only then.
* :func:`queued_work` and :func:`reserve_queued`: what the conductor calls,
  on any store; without the methods they fall back to the store's
  ``in_states`` (or ``list()``) and one ``reserve`` per node.
* The SQL side is :class:`~._sql_claims.Claims`, a part of ``SQLStore``.

This module imports nothing else of the stores package, so that :mod:`.base`
can re-export it without loading the SQL modules.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from ironic_fsm.exceptions import NodeLocked, NodeNotFound
from ironic_fsm.node import Node

if TYPE_CHECKING:
    from ironic_fsm.stores.base import Store

__all__ = [
    "QueueStore", "QueuedNode", "queued_work", "reserve_each", "reserve_queued", "scan_queue",
]  # fmt: skip


class QueuedNode(NamedTuple):
    """A node waiting in the work queue, as the scan sees it: indexed columns, nothing decoded."""

    uuid: str
    #: Its hardware type; with ``conductor_group``, the hash ring it belongs to.
    driver: str
    conductor_group: str


@runtime_checkable
class QueueStore(Protocol):
    """A store that reads the work queue without decoding it and reserves from it in batches."""

    def queued_work(
        self, states: Collection[str], limit: int | None = None
    ) -> builtins.list[QueuedNode]:
        """The unreserved nodes in ``states``, the longest in their state first.

        ``limit``: only the first that many (``None``: all of them).
        """

    def reserve_queued(
        self, uuids: Sequence[str], holder: str, states: Collection[str]
    ) -> builtins.list[Node]:
        """Reserve for ``holder`` those of ``uuids`` still unreserved and in ``states``.

        Atomic per node: each one returned is now ``holder``'s, each other
        one is left exactly as it was (taken by someone else, gone, or out of
        the queue). Returns the reserved records, in any order.
        """


def queued_work(
    store: Store, states: Collection[str], limit: int | None = None
) -> builtins.list[QueuedNode]:
    """:meth:`QueueStore.queued_work` on any store; else its ``in_states`` or ``list()``."""
    if isinstance(store, QueueStore):
        return store.queued_work(states) if limit is None else store.queued_work(states, limit)
    return scan_queue(store, states, limit)


def scan_queue(
    store: Store, states: Collection[str], limit: int | None = None
) -> builtins.list[QueuedNode]:
    """The work queue of a store without :class:`QueueStore`: its ``in_states``, or ``list()``."""
    scan = getattr(store, "in_states", None)  # a ScanningStore's (base is not imported here)
    if callable(scan):
        nodes: builtins.list[Node] = scan(states, reservation=None, limit=limit)
    else:
        every = store.list()
        nodes = [n for n in every if n.provision_state in states and n.reservation is None][:limit]
    return [QueuedNode(n.uuid, n.driver, n.conductor_group) for n in nodes]


def reserve_queued(
    store: Store, uuids: Sequence[str], holder: str, states: Collection[str]
) -> builtins.list[Node]:
    """:meth:`QueueStore.reserve_queued` on any store; else one ``reserve`` per node."""
    if isinstance(store, QueueStore):
        return store.reserve_queued(uuids, holder, states)
    return reserve_each(store, uuids, holder, states)


def reserve_each(
    store: Store, uuids: Sequence[str], holder: str, states: Collection[str]
) -> builtins.list[Node]:
    """One ``reserve`` per node: a node that left the queue since it was read is given back.

    So is every node reserved before the store failed half-way: a node held
    by a live conductor that runs nothing on it would never be recovered.
    """
    got: builtins.list[Node] = []
    try:
        for uuid in uuids:
            try:
                node = store.reserve(uuid, holder)
            except (NodeLocked, NodeNotFound):
                continue
            if node.provision_state in states:
                got.append(node)
            else:
                store.release(uuid, holder)  # a lock only: the record is as it was
    except BaseException:
        for node in got:
            store.release(node.uuid, holder)
        raise
    return got
