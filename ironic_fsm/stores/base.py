"""The :class:`Store` protocol and the helpers every built-in store shares."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from ironic_fsm.exceptions import InvalidParameterValue, NodeLocked, NodeNotFound
from ironic_fsm.node import NODE_FIELDS, Node

__all__ = [
    "Store",
    "check_filters",
    "duplicate_name",
    "duplicate_uuid",
    "encode",
    "locked_error",
    "matches",
    "not_found",
]


@runtime_checkable
class Store(Protocol):
    """What the conductor needs from persistence.

    Two kinds of change, kept apart: a *save* changes the record and is
    checked against, and bumps, its ``version``; a *reservation* is a lock,
    not data, so ``reserve`` and ``release`` change ``reservation`` and
    nothing else (not ``version``). A request refused after its node was
    reserved and released therefore leaves the record exactly as it was.
    """

    def create(self, node: Node) -> None:
        """Add a new record (its uuid and name must be unused); sets ``version`` to 1.

        A refused create changes neither the store nor ``node``.
        """

    def get(self, ident: str) -> Node:
        """A fresh copy of the node with this UUID or name; :class:`NodeNotFound` if none."""

    def list(self, **filters: Any) -> list[Node]:
        """Copies of the nodes whose fields equal every filter, ordered by creation."""

    def save(self, node: Node) -> None:
        """Write ``node`` if its version is current; bump ``node.version`` in place.

        All or nothing: a refused save (stale version, taken name, a value
        that cannot be stored) changes neither the store nor ``node``.
        """

    def delete(self, ident: str) -> None:
        """Remove the node; :class:`NodeNotFound` if none."""

    def reserve(self, ident: str, holder: str) -> Node:
        """Atomically set ``reservation = holder`` if nobody (not even ``holder``) has it.

        Returns the updated copy. Only ``reservation`` changes: the version
        stays, since a lock is not a change of the record. A reservation is
        exclusive per task: a conductor whose background work holds a node
        cannot take it again.
        """

    def release(self, ident: str, holder: str) -> None:
        """Clear the reservation if ``holder`` has it; nothing else changes, not the version."""

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


def encode(node: Node) -> str:
    """``node`` as the JSON text stores keep, or :class:`InvalidParameterValue` saying why not.

    Done before anything is written, so that a record that cannot be stored
    is refused with nothing changed.
    """
    try:
        return node.to_json()
    except (TypeError, ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise InvalidParameterValue(
            f"Node {node.uuid} cannot be stored: its fields must be JSON-serializable ({reason})",
            node=node.uuid,
        ) from exc


def locked_error(uuid: str, holder: str | None) -> NodeLocked:
    """The error for a node reserved by ``holder``."""
    return NodeLocked(
        f"Node {uuid} is locked by {holder}; the operation may be retried later",
        node=uuid,
        holder=holder,
    )


def not_found(ident: str) -> NodeNotFound:
    """The error for an identifier no node has."""
    return NodeNotFound(f"Node {ident} could not be found", node=ident)


def duplicate_name(name: str | None) -> InvalidParameterValue:
    """The error for a name another node has (or that is another node's UUID)."""
    return InvalidParameterValue(f"A node named {name!r} already exists", node=name, field="name")


def duplicate_uuid(uuid: str) -> InvalidParameterValue:
    """The error for a UUID another node has."""
    return InvalidParameterValue(f"A node with UUID {uuid} already exists", node=uuid, field="uuid")
