"""One node as :class:`~ironic_fsm.stores.MemoryStore` keeps it: a snapshot and its columns."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from ironic_fsm.node import Node, Snapshot, thaw
from ironic_fsm.stores._query import COLUMN_FIELDS, WAIT_UNTIL_SUFFIX, wake_time

__all__ = ["COPIED", "Record"]

#: The node fields a record keeps as plain attributes, what filters and sorts read: the
#: SQL store's columns, less those the record sets itself.
COPIED: Final = tuple(sorted(COLUMN_FIELDS - {"reservation", "version", "created_at"}))
#: How a waiting key ends in the keys of ``driver_internal_info`` joined by newlines.
_WAITING: Final = WAIT_UNTIL_SUFFIX + "\n"


class Record:
    """One stored node: its snapshot, and the fields filters, sorts and scans read.

    Those are plain attributes, so listing and scanning build only the
    nodes they return, as the SQL store reads only its columns. The snapshot
    (:func:`~ironic_fsm.node.freeze`) is immutable: every read builds new
    containers from it, so no caller ever holds an object the store keeps.
    """

    __slots__ = ("frozen", "reservation", "version", "seq", "created_at", "wake", *COPIED)

    def __init__(
        self, node: Node, frozen: Snapshot, version: int, seq: int, created: datetime
    ) -> None:
        self.frozen = frozen
        self.reservation = node.reservation
        self.version = version
        self.seq = seq
        self.created_at = created  # as SQL: the node's, else the time it was stored
        # The wake time is parsed only if a key ends like a waiting one: one search, in C.
        # The node was frozen, so its keys are strings.
        info = node.driver_internal_info
        waiting = info and _WAITING in "\n".join(info) + "\n"
        self.wake = wake_time(node) if waiting else None
        # One by one rather than a loop over COPIED: this runs on every save.
        self.uuid = node.uuid
        self.name = node.name
        self.driver = node.driver
        self.provision_state = node.provision_state
        self.target_provision_state = node.target_provision_state
        self.power_state = node.power_state
        self.maintenance = node.maintenance
        self.retired = node.retired
        self.protected = node.protected
        self.resource_class = node.resource_class
        self.fault = node.fault
        self.conductor_group = node.conductor_group
        self.owner = node.owner
        self.lessee = node.lessee
        self.instance_uuid = node.instance_uuid
        self.shard = node.shard
        self.instance_name = node.instance_name
        self.parent_node = node.parent_node
        self.updated_at = node.updated_at
        self.provision_updated_at = node.provision_updated_at

    def node(self) -> Node:
        node = thaw(self.frozen)  # checked when it was frozen
        node.reservation = self.reservation  # authoritative over the snapshot
        node.version = self.version
        return node
