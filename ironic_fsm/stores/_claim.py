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
* :class:`_SQLClaims`: the SQL side, inherited by ``SQLStore``. On
  PostgreSQL the reservation is ``UPDATE ... WHERE uuid IN (SELECT ... FOR
  UPDATE SKIP LOCKED) RETURNING``: two conductors reserving at once never
  wait for each other's row locks, and each node goes to one of them.

This module imports nothing else of the stores package, so that :mod:`.base`
can re-export it without loading the SQL modules.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from ironic_fsm.exceptions import InvalidParameterValue, NodeLocked, NodeNotFound
from ironic_fsm.node import Node

if TYPE_CHECKING:
    from ironic_fsm.stores._connect import _Database
    from ironic_fsm.stores.base import Store

__all__ = [
    "QueueStore", "QueuedNode", "queued_work", "reserve_each", "reserve_queued", "scan_queue",
]  # fmt: skip

#: Most UUIDs bound to one SQLite statement (its limit on variables is far above).
_CHUNK = 500


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


#: The name the SQL store's claims call it by.
_reserve_each = reserve_each


def _decoded(data: str, reservation: str | None, version: int) -> Node:
    """A returned row as a node: the columns win over the JSON, as in every read."""
    node = Node.from_json(data)
    node.reservation = reservation
    node.version = version
    return node


class _SQLClaims:
    """:class:`QueueStore` on SQL: the state index for the scan, ``RETURNING`` for the claim.

    A mixin of ``SQLStore``; what it uses of the store is declared here
    rather than inherited, so that this module loads no SQL code of its own.
    """

    if TYPE_CHECKING:
        _db: _Database
        _echo: bool
        _q: str

        def _log(self, sql: str) -> None: ...

    def queued_work(
        self, states: Collection[str], limit: int | None = None
    ) -> builtins.list[QueuedNode]:
        """One range of the ``provision_state`` index per state.

        Without ``limit``, sorted here, not by ``ORDER BY``, for the reason
        ``in_states`` gives: the planner must search the index that finds the
        few queued nodes. With it, the server sorts what that index found
        and sends only the first rows: a claim pass wants a few nodes, and
        decoding (and ring-checking) a queue of thousands on every wake was
        the claim thread's cost. On PostgreSQL ``OFFSET 0`` keeps the scan
        apart from the sort (the planner would otherwise walk the
        ``provision_updated_at`` index of the whole fleet for the few queued).
        """
        wanted = sorted(states)
        if not wanted or (limit is not None and limit < 1):
            return []
        marks = ", ".join(self._q for _ in wanted)
        # SQLite, without statistics, would walk the free nodes (see ``_index_hint``).
        hint = " INDEXED BY nodes_provision_state_idx" if self._db.name == "sqlite" else ""
        sql = (
            f"SELECT provision_updated_at, seq, uuid, driver, conductor_group FROM nodes{hint} "
            f"WHERE provision_state IN ({marks}) AND reservation IS NULL"
        )
        params: builtins.list[Any] = list(wanted)
        if limit is not None:
            if self._db.name == "postgresql":
                sql = f"SELECT * FROM ({sql} OFFSET 0) AS queue"
            sql += (
                " ORDER BY provision_updated_at IS NULL, provision_updated_at, seq, uuid "
                f"LIMIT {self._q}"
            )
            params.append(limit)
        if self._echo:
            self._log(sql)
        with self._db.connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        rows.sort(key=lambda r: (r[0] is None, r[0] if r[0] is not None else "", r[1], r[2]))
        return [QueuedNode(r[2], r[3], r[4]) for r in rows]

    def reserve_queued(
        self, uuids: Sequence[str], holder: str, states: Collection[str]
    ) -> builtins.list[Node]:
        """One ``UPDATE ... RETURNING`` (per 500 UUIDs on SQLite); the records decoded after."""
        if not isinstance(holder, str) or "\x00" in holder or len(holder) > 255:
            raise InvalidParameterValue(f"Not a reservation holder: {holder!r}", field="holder")
        wanted = sorted(states)
        if not uuids or not wanted:
            return []
        if not self._db.returning:  # SQLite before 3.35
            return _reserve_each(self, uuids, holder, states)  # type: ignore[arg-type]
        rows: builtins.list[Any] = []
        with self._db.connection() as conn:
            if self._db.name == "postgresql":
                sql = (
                    "UPDATE nodes SET reservation = %s WHERE uuid IN (SELECT uuid FROM nodes "
                    "WHERE uuid = ANY(%s) AND reservation IS NULL AND provision_state = ANY(%s) "
                    "FOR UPDATE SKIP LOCKED) RETURNING data, reservation, version"
                )
                rows = self._claim_rows(conn, sql, [holder, list(uuids), wanted])
            else:
                for start in range(0, len(uuids), _CHUNK):
                    chunk = list(uuids[start : start + _CHUNK])
                    sql = (
                        "UPDATE nodes SET reservation = ? WHERE uuid IN "
                        f"({', '.join('?' for _ in chunk)}) AND reservation IS NULL AND "
                        f"provision_state IN ({', '.join('?' for _ in wanted)}) "
                        "RETURNING data, reservation, version"
                    )
                    rows += self._claim_rows(conn, sql, [holder, *chunk, *wanted])
        return [_decoded(*row) for row in rows]

    def _claim_rows(self, conn: Any, sql: str, params: Sequence[Any]) -> builtins.list[Any]:
        if self._echo:
            self._log(sql)
        return list(conn.execute(sql, params).fetchall())
