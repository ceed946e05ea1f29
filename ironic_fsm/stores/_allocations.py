"""Allocations as stores keep them: a node has at most one, names are unique."""

from __future__ import annotations

from typing import Final

from ironic_fsm.records import Allocation
from ironic_fsm.stores._records import Kind

__all__ = ["ALLOCATIONS"]

#: ``node_uuid`` unique: the store itself refuses to give one node to two allocations.
ALLOCATIONS: Final = Kind(
    Allocation,
    columns=("name", "node_uuid", "state", "resource_class", "owner"),
    unique=(("name",), ("node_uuid",)),
    labels={"node_uuid": "node"},
)
