"""A store on any key-value database with compare-and-set: write four methods, get nine.

Most coordination databases (etcd, Consul, ZooKeeper, Redis with
``WATCH``, DynamoDB with conditions, a dict under a lock) offer the same
primitive: read a key with its revision, write it only if the revision is
still the one read. :class:`KeyValueStore` builds the whole
:class:`~ironic_fsm.stores.Store` protocol on that primitive, so the rules
every store must keep stay here, in the library, not in each application:

* optimistic versions: a save of a stale record is refused
  (:class:`~ironic_fsm.exceptions.ConcurrentUpdate`) and changes nothing;
* unique names: a name is a key of its own, claimed by a create-if-absent
  write before the record that uses it, and given back when the record
  stops using it;
* atomic reservations: ``reserve`` takes a node only if nobody holds it,
  and changes nothing but the reservation (not the version);
* heartbeats of reservation holders.

Layout: ``node/<uuid>`` holds :meth:`Node.to_json`, ``name/<name>`` the
UUID, ``holder/<holder>`` the last heartbeat. Listing reads every record
(``scan("node/")``): fine for thousands of nodes; fleets of more use
:class:`~ironic_fsm.stores.SQLStore`.
"""

from __future__ import annotations

import abc
import builtins
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Final

from ironic_fsm.exceptions import ConcurrentUpdate, NodeLocked
from ironic_fsm.node import Node
from ironic_fsm.stores._query import matches, normalize_filters
from ironic_fsm.stores.base import duplicate_name, duplicate_uuid, locked_error, not_found

__all__ = ["KeyValueStore"]

#: How often a reservation or a heartbeat is tried again when another writer came first.
_ATTEMPTS: Final = 16


class KeyValueStore(abc.ABC):
    """The :class:`~ironic_fsm.stores.Store` protocol over four key-value methods.

    A subclass implements :meth:`read`, :meth:`write`, :meth:`remove` and
    :meth:`scan` on its database; a revision is any integer the database
    changes on every write of a key (etcd's ``mod_revision``, a counter).
    """

    # -- what a subclass provides -----------------------------------------------------

    @abc.abstractmethod
    def read(self, key: str) -> tuple[str, int] | None:
        """The value of ``key`` and its revision, or ``None`` when there is no such key."""

    @abc.abstractmethod
    def write(self, key: str, value: str, revision: int | None) -> bool:
        """Set ``key`` if its revision is still ``revision`` (``None``: if it does not exist).

        Returns whether it was written; atomic against every other writer.
        """

    @abc.abstractmethod
    def remove(self, key: str, revision: int) -> bool:
        """Delete ``key`` if its revision is still ``revision``; whether it was deleted."""

    @abc.abstractmethod
    def scan(self, prefix: str) -> Iterable[tuple[str, str]]:
        """Every ``(key, value)`` whose key starts with ``prefix``."""

    # -- the Store protocol -----------------------------------------------------------------

    def create(self, node: Node) -> None:
        """Add ``node``: its name is claimed first, so two creates never share one."""
        if self.read(_node_key(node.uuid)) is not None:
            raise duplicate_uuid(node.uuid)
        if node.name is not None:
            self._claim(node.name, node.uuid)
        record = _encode(node, version=1)
        if not self.write(_node_key(node.uuid), record, None):
            self._give_back(node.name, node.uuid)
            raise duplicate_uuid(node.uuid)
        node.version = 1

    def get(self, ident: str) -> Node:
        found = self._find(ident)
        if found is None:
            raise not_found(ident)
        return _decode(found[0])

    def list(self, **filters: Any) -> builtins.list[Node]:
        """Every node matching the filters, as the other stores match them, oldest first."""
        wanted = normalize_filters(filters)
        if wanted is None:
            return []
        nodes = [_decode(value) for _, value in self.scan("node/")]
        nodes.sort(key=lambda n: (n.created_at is None, n.created_at, n.uuid))
        return [n for n in nodes if matches(n, wanted)]

    def save(self, node: Node) -> None:
        """Write ``node`` if it is the stored version; its name follows, all or nothing."""
        key = _node_key(node.uuid)
        found = self.read(key)
        if found is None:
            raise not_found(node.uuid)
        stored = _decode(found[0])
        if stored.version != node.version:
            raise _stale(node.uuid)
        renamed = node.name != stored.name
        if renamed and node.name is not None:
            self._claim(node.name, node.uuid)
        if not self.write(key, _encode(node, version=node.version + 1), found[1]):
            if renamed:
                self._give_back(node.name, node.uuid)
            raise _stale(node.uuid)
        if renamed:
            self._give_back(stored.name, node.uuid)
        node.version += 1

    def delete(self, ident: str) -> None:
        found = self._find(ident)
        if found is None:
            raise not_found(ident)
        node = _decode(found[0])
        if not self.remove(_node_key(node.uuid), found[1]):
            raise _stale(node.uuid)
        self._give_back(node.name, node.uuid)

    def reserve(self, ident: str, holder: str) -> Node:
        """Take the node for ``holder`` if nobody has it; only ``reservation`` changes."""

        def take(node: Node) -> bool:
            if node.reservation is not None:
                raise locked_error(node.uuid, node.reservation)
            node.reservation = holder
            return True

        return self._change_reservation(ident, take)

    def release(self, ident: str, holder: str) -> None:
        def free(node: Node) -> bool:
            if node.reservation != holder:
                return False  # not ours: nothing to do
            node.reservation = None
            return True

        self._change_reservation(ident, free)

    def heartbeat(self, holder: str, now: datetime) -> None:
        key = f"holder/{holder}"
        for _ in range(_ATTEMPTS):
            found = self.read(key)
            if self.write(key, now.isoformat(), None if found is None else found[1]):
                return
        raise _stale(holder)

    def holders(self) -> dict[str, datetime]:
        start = len("holder/")
        return {key[start:]: datetime.fromisoformat(when) for key, when in self.scan("holder/")}

    # -- helpers ------------------------------------------------------------------------

    def _find(self, ident: str) -> tuple[str, int] | None:
        """The record of the node whose UUID, or else name, is ``ident``."""
        found = self.read(_node_key(ident))
        if found is None:
            named = self.read(_name_key(ident))
            if named is not None:
                found = self.read(_node_key(named[0]))
        return found

    def _claim(self, name: str, uuid: str) -> None:
        """Take ``name`` for ``uuid``: refused if another node has it, or has it as its UUID."""
        if self.read(_node_key(name)) is not None or not self.write(_name_key(name), uuid, None):
            raise duplicate_name(name)

    def _change_reservation(self, ident: str, change: Callable[[Node], bool]) -> Node:
        """Apply ``change`` to the stored node (the version stays: a lock is not data),
        from a new read each time another writer came first; ``False``: nothing to write."""
        for _ in range(_ATTEMPTS):
            found = self._find(ident)
            if found is None:
                raise not_found(ident)
            node = _decode(found[0])
            if not change(node):
                return node
            if self.write(_node_key(node.uuid), _encode(node, node.version), found[1]):
                return node
        raise NodeLocked(f"Node {ident} is busy; the operation may be retried", node=ident)

    def _give_back(self, name: str | None, uuid: str) -> None:
        """Free ``name`` if it still names ``uuid`` (never another node's)."""
        if name is None:
            return
        found = self.read(_name_key(name))
        if found is not None and found[0] == uuid:
            self.remove(_name_key(name), found[1])


def _node_key(uuid: str) -> str:
    return f"node/{uuid}"


def _name_key(name: str) -> str:
    return f"name/{name}"


def _encode(node: Node, version: int) -> str:
    saved = node.version
    node.version = version
    try:
        return node.to_json()
    finally:
        node.version = saved


def _decode(value: str) -> Node:
    return Node.from_json(value)


def _stale(ident: str) -> ConcurrentUpdate:
    return ConcurrentUpdate(
        f"Node {ident} was changed by someone else; re-read it and retry", node=ident
    )
