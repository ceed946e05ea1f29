"""Chassis as stores keep them: nothing to find them by but their UUID."""

from __future__ import annotations

from typing import Final

from ironic_fsm.records import Chassis
from ironic_fsm.stores._records import Kind

__all__ = ["CHASSIS"]

#: A chassis outlives its nodes (it cannot be deleted while it has any).
CHASSIS: Final = Kind(Chassis, columns=(), by_node=None)
