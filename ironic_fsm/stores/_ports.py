"""Ports as stores keep them: the MAC address unique, found by node and by port group."""

from __future__ import annotations

from typing import Final

from ironic_fsm.records import Port
from ironic_fsm.stores._records import Kind

__all__ = ["PORTS"]

#: A port is found by its address (the agent's lookup), its name, its node and its group.
PORTS: Final = Kind(
    Port,
    columns=("address", "name", "node_uuid", "portgroup_uuid"),
    unique=(("address",), ("name",)),
    labels={"address": "MAC address"},
)
