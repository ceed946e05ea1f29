"""``MemoryStore``: node records in this process's memory."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from ironic_fsm.exceptions import ConcurrentUpdate
from ironic_fsm.node import Node
from ironic_fsm.stores.base import (
    check_filters,
    duplicate_name,
    duplicate_uuid,
    encode,
    locked_error,
    matches,
    not_found,
)

__all__ = ["MemoryStore"]


class _Record:
    """One stored node: its JSON text, and the fields the store itself checks."""

    __slots__ = ("json", "name", "reservation", "version")

    def __init__(self, json: str, name: str | None, reservation: str | None, version: int) -> None:
        self.json = json
        self.name = name
        self.reservation = reservation
        self.version = version

    def node(self) -> Node:
        node = Node.from_json(self.json)
        node.reservation = self.reservation  # authoritative over the JSON
        node.version = self.version
        return node


class MemoryStore:
    """Nodes in this process's memory; the default, for tests and short-lived use.

    Records are kept as JSON text, so callers never share objects with the
    store, as with a database. Every change is checked in full before
    anything is touched, so a refused call changes nothing. Thread-safe.
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
            raise not_found(ident)
        return uuid

    def create(self, node: Node) -> None:
        data = encode(node)
        with self._lock:
            if node.uuid in self._nodes:
                raise duplicate_uuid(node.uuid)
            if node.name is not None and (node.name in self._names or node.name in self._nodes):
                raise duplicate_name(node.name)
            self._nodes[node.uuid] = _Record(data, node.name, node.reservation, 1)
            if node.name is not None:
                self._names[node.name] = node.uuid
        node.version = 1

    def get(self, ident: str) -> Node:
        with self._lock:
            return self._nodes[self._uuid(ident)].node()

    def list(self, **filters: Any) -> list[Node]:
        check_filters(filters)
        with self._lock:
            nodes = [r.node() for r in self._nodes.values()]
        return [n for n in nodes if matches(n, filters)]

    def save(self, node: Node) -> None:
        data = encode(node)  # first: a node that cannot be stored changes nothing
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
            self._nodes[node.uuid] = _Record(data, node.name, node.reservation, node.version + 1)
            node.version += 1

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
