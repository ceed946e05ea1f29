"""Port groups as stores keep them: address and name unique, found by node."""

from __future__ import annotations

from typing import Final

from ironic_fsm.records import Portgroup
from ironic_fsm.stores._records import Kind

__all__ = ["PORTGROUPS"]

PORTGROUPS: Final = Kind(
    Portgroup,
    columns=("address", "name", "node_uuid"),
    unique=(("address",), ("name",)),
    labels={"address": "MAC address"},
)
