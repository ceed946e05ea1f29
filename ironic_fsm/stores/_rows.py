"""A node as the row a SQL write sets: its JSON, its column values, its times as bound.

The one place the columns of :data:`~._schema._COLUMNS` are computed from
a node, for saves, creates and the migration that filled them (schema 2).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node
from ironic_fsm.stores._connect import _Database
from ironic_fsm.stores._query import wake_time
from ironic_fsm.stores._schema import _check_columns
from ironic_fsm.stores.base import encode

#: Most instants remembered as bound (a cache: a full one is emptied, at a cost only).
_BOUND_CAP: Final = 50_000


class Rows:
    """Node → row for one database; remembers the instants it bound lately."""

    def __init__(self, db: _Database) -> None:
        self._db = db
        #: Instants bound lately, as the database takes them (history entries reuse them).
        self.bound: dict[datetime, Any] = {}

    def time(self, node: Node, field: str) -> Any:
        """``node``'s datetime ``field`` as the database takes it (``None`` if unset)."""
        value = getattr(node, field)
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise InvalidParameterValue(
                f"Node {node.uuid} cannot be stored: {field} must be a datetime, "
                f"not {type(value).__name__}",
                node=node.uuid,
                field=field,
            )
        bound = self.bound.get(value)
        if bound is None:  # formatting costs more than the rest of a column: once per instant
            if len(self.bound) >= _BOUND_CAP:
                self.bound.clear()
            bound = self.bound[value] = self._db.bind_time(value)
        return bound

    def columns(self, node: Node) -> tuple[Any, ...]:
        """The values of :data:`~._schema._COLUMNS` for ``node``."""
        wake = wake_time(node)
        return (
            node.name,
            node.driver,
            node.provision_state,
            bool(node.maintenance),
            bool(node.retired),
            node.reservation,
            node.target_provision_state,
            node.power_state,
            bool(node.protected),
            node.resource_class,
            node.fault,
            self.time(node, "provision_updated_at"),
            self.time(node, "updated_at"),
            None if wake is None else self._db.bind_time(wake),
            node.conductor_group,
            node.owner,
            node.lessee,
            node.instance_uuid,
            node.shard,
            node.parent_node,
            node.instance_name,
        )

    def row(self, node: Node) -> tuple[str, tuple[Any, ...]]:
        """The node's JSON and column values (then ``created_at``), checked before any write."""
        _check_columns(node)  # first: its messages name the column's limit
        data = encode(node).decode()
        return data, (*self.columns(node), self.time(node, "created_at"))
