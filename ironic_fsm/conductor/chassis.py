"""Chassis: groups of nodes (``Node.chassis_uuid``), with a description and extra data.

A chassis is named by its UUID only; one with nodes is not deleted
(Ironic's rule). Which nodes are in a chassis is read from the nodes'
records, so it costs a pass over the fleet: chassis are an inventory
label, looked up rarely.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.records import Shelf, check_dict, described_changes, new_uuid
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node
from ironic_fsm.records import Chassis
from ironic_fsm.stores.base import RecordQuery

__all__ = ["CHASSIS_FIELDS", "ChassisPart"]

#: What a caller may set on a chassis.
CHASSIS_FIELDS: Final = frozenset({"description", "extra"})


class ChassisPart:
    """Create, read, change and delete chassis; list the nodes in one."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._chassis = Shelf(ctx, Chassis)

    def get_chassis(self, uuid: str) -> Chassis:
        """The chassis with this UUID; ``ResourceNotFound`` if none."""
        return self._chassis.get(uuid)

    def list_chassis(self, **page: Any) -> list[Chassis]:
        """One page of chassis (``limit``, ``marker``, ``sort_key``, ``sort_dir``)."""
        return self._chassis.page(RecordQuery(**page))

    def create_chassis(self, *, uuid: str | None = None, **fields: Any) -> Chassis:
        chassis = self._apply(Chassis(uuid=new_uuid(Chassis, uuid)), fields)
        return self._chassis.add(chassis)

    def update_chassis(self, uuid: str, **fields: Any) -> Chassis:
        return self._chassis.replace(self._apply(self.get_chassis(uuid), fields))

    def delete_chassis(self, uuid: str) -> None:
        chassis = self.get_chassis(uuid)
        self._chassis.delete(chassis, holding="nodes", held=self.chassis_nodes(chassis.uuid))

    def chassis_nodes(self, uuid: str) -> list[Node]:
        """The nodes whose ``chassis_uuid`` is this chassis', in creation order."""
        chassis = self.get_chassis(uuid)
        return [n for n in self._ctx.caps.list_page() if n.chassis_uuid == chassis.uuid]

    def check_chassis(self, uuid: object) -> str | None:
        """A node's ``chassis_uuid``, checked: ``None``, or an existing chassis' UUID."""
        if uuid is None:
            return None
        if not isinstance(uuid, str):
            raise InvalidParameterValue("A node's chassis_uuid must be a UUID string")
        return self.get_chassis(uuid).uuid

    def _apply(self, chassis: Chassis, fields: dict[str, Any]) -> Chassis:
        changes = described_changes(fields, CHASSIS_FIELDS, "Chassis")
        if "extra" in fields:
            changes["extra"] = check_dict(fields["extra"], "extra", "Chassis")
        return attrs.evolve(chassis, **changes)
