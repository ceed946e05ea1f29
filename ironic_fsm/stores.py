"""Persistence the embedding application controls.

A store keeps node records. The conductor reads a node, reserves it,
changes it and saves it; the store guarantees two things:

* **optimistic versions**: :meth:`Store.save` refuses a record whose
  ``version`` is not the stored one (:class:`~ironic_fsm.exceptions.ConcurrentUpdate`)
  and bumps the version of the record it accepts, in place;
* **reservations**: :meth:`Store.reserve` sets ``reservation`` only when the
  node is free (:class:`~ironic_fsm.exceptions.NodeLocked` otherwise).

Built in: :class:`MemoryStore`, and ``SQLStore`` (SQLite or PostgreSQL,
through SQLAlchemy, imported only when used). Applications may pass any
object with the methods of :class:`Store`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ironic_fsm.exceptions import (
    ConcurrentUpdate,
    InvalidParameterValue,
    NodeLocked,
    NodeNotFound,
)
from ironic_fsm.node import NODE_FIELDS, Node

if TYPE_CHECKING:
    from ironic_fsm._sqlstore import SQLStore

__all__ = ["MemoryStore", "SQLStore", "Store", "matches"]


@runtime_checkable
class Store(Protocol):
    """What the conductor needs from persistence."""

    def create(self, node: Node) -> None:
        """Add a new record (its uuid and name must be unused); sets ``version`` to 1."""

    def get(self, ident: str) -> Node:
        """A fresh copy of the node with this UUID or name; :class:`NodeNotFound` if none."""

    def list(self, **filters: Any) -> list[Node]:
        """Copies of the nodes whose fields equal every filter, ordered by creation."""

    def save(self, node: Node) -> None:
        """Write ``node`` if its version is current; bump ``node.version`` in place."""

    def delete(self, ident: str) -> None:
        """Remove the node; :class:`NodeNotFound` if none."""

    def reserve(self, ident: str, holder: str) -> Node:
        """Atomically set ``reservation = holder`` if nobody (not even ``holder``) has it.

        Returns the updated copy. A reservation is exclusive per task: a
        conductor whose background work holds a node cannot take it again.
        """

    def release(self, ident: str, holder: str) -> None:
        """Clear the reservation if ``holder`` has it (used for clean-up and recovery)."""

    def heartbeat(self, holder: str, now: datetime) -> None:
        """Record that ``holder`` is alive at ``now``."""

    def holders(self) -> dict[str, datetime]:
        """Every holder's last heartbeat."""


def matches(node: Node, filters: dict[str, Any]) -> bool:
    """Whether ``node``'s fields equal every filter (the semantics of ``list``)."""
    return all(getattr(node, key) == value for key, value in filters.items())


def check_filters(filters: Iterable[str]) -> None:
    """Refuse filters that are not node fields, naming them."""
    unknown = sorted(set(filters) - set(NODE_FIELDS))
    if unknown:
        raise InvalidParameterValue(
            f"Cannot filter nodes on unknown field(s): {', '.join(unknown)}", fields=unknown
        )


def locked_error(uuid: str, holder: str | None) -> NodeLocked:
    """The error for a node reserved by ``holder``."""
    return NodeLocked(
        f"Node {uuid} is locked by {holder}; the operation may be retried later",
        node=uuid,
        holder=holder,
    )


class _Record:
    """One stored node: its JSON text, and the fields the store itself checks."""

    __slots__ = ("json", "name", "reservation", "version")

    def __init__(self, node: Node) -> None:
        self.json = node.to_json()
        self.name = node.name
        self.reservation = node.reservation
        self.version = node.version

    def node(self) -> Node:
        node = Node.from_json(self.json)
        node.reservation = self.reservation  # authoritative over the JSON
        node.version = self.version
        return node


class MemoryStore:
    """Nodes in this process's memory; the default, for tests and short-lived use.

    Records are kept as JSON text, so callers never share objects with the
    store, as with a database. Thread-safe.
    """

    def __init__(self) -> None:
        self._nodes: dict[str, _Record] = {}
        self._names: dict[str, str] = {}
        self._holders: dict[str, datetime] = {}
        self._lock = threading.Lock()

    def _uuid(self, ident: str) -> str:
        if ident in self._nodes:
            return ident
        uuid = self._names.get(ident)
        if uuid is None:
            raise NodeNotFound(f"Node {ident} could not be found", node=ident)
        return uuid

    def create(self, node: Node) -> None:
        with self._lock:
            if node.uuid in self._nodes:
                raise InvalidParameterValue(
                    f"A node with UUID {node.uuid} already exists", node=node.uuid
                )
            if node.name is not None and (node.name in self._names or node.name in self._nodes):
                raise InvalidParameterValue(
                    f"A node named {node.name!r} already exists", node=node.name
                )
            node.version = 1
            self._nodes[node.uuid] = _Record(node)
            if node.name is not None:
                self._names[node.name] = node.uuid

    def get(self, ident: str) -> Node:
        with self._lock:
            return self._nodes[self._uuid(ident)].node()

    def list(self, **filters: Any) -> list[Node]:
        check_filters(filters)
        with self._lock:
            nodes = [r.node() for r in self._nodes.values()]
        return [n for n in nodes if matches(n, filters)]

    def save(self, node: Node) -> None:
        with self._lock:
            current = self._nodes.get(node.uuid)
            if current is None:
                raise NodeNotFound(f"Node {node.uuid} could not be found", node=node.uuid)
            if current.version != node.version:
                raise ConcurrentUpdate(
                    f"Node {node.uuid} was changed by someone else (version "
                    f"{current.version}, ours {node.version}); re-read it and retry",
                    node=node.uuid,
                )
            if node.name != current.name:
                if node.name is not None and node.name in self._names:
                    raise InvalidParameterValue(
                        f"A node named {node.name!r} already exists", node=node.name
                    )
                if current.name is not None:
                    self._names.pop(current.name, None)
                if node.name is not None:
                    self._names[node.name] = node.uuid
            node.version += 1
            self._nodes[node.uuid] = _Record(node)

    def delete(self, ident: str) -> None:
        with self._lock:
            uuid = self._uuid(ident)
            record = self._nodes.pop(uuid)
            if record.name is not None:
                self._names.pop(record.name, None)

    def reserve(self, ident: str, holder: str) -> Node:
        with self._lock:
            uuid = self._uuid(ident)
            record = self._nodes[uuid]
            if record.reservation is not None:
                raise locked_error(uuid, record.reservation)
            record.reservation = holder
            record.version += 1
            return record.node()

    def release(self, ident: str, holder: str) -> None:
        with self._lock:
            record = self._nodes.get(self._uuid(ident))
            if record is not None and record.reservation == holder:
                record.reservation = None
                record.version += 1

    def heartbeat(self, holder: str, now: datetime) -> None:
        with self._lock:
            self._holders[holder] = now

    def holders(self) -> dict[str, datetime]:
        with self._lock:
            return dict(self._holders)


def __getattr__(name: str) -> Any:
    # SQLStore pulls in SQLAlchemy: load it only when someone asks for it.
    if name == "SQLStore":
        from ironic_fsm._sqlstore import SQLStore

        return SQLStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
