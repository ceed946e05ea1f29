"""A node's BIOS settings (1.40), as its BIOS interface last read or applied them.

Read from the node's record (each BIOS interface keeps its last reading
there: ``fake`` what it applied, ``redfish`` what the BMC reported after
each BIOS step), so listing them never asks the BMC. Ironic's 1.74
fields (``attribute_type``, ``allowable_values``...) come from a BIOS
registry that the interfaces here do not read: they are ``None``.
"""

from __future__ import annotations

import uuid as _uuid
from typing import Final

from ironic_fsm.conductor.common import check_ident
from ironic_fsm.conductor.context import Context
from ironic_fsm.exceptions import ResourceNotFound
from ironic_fsm.records import BiosSetting

__all__ = ["BiosSettings"]

#: The namespace of the UUIDs given to a node's settings (derived: node and name).
_SETTINGS: Final = _uuid.UUID("3d0b8f4e-6c1a-4b7e-8f52-9a4c2e1d7b60")


class BiosSettings:
    """List a node's BIOS settings, or read one."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def list_bios_settings(self, ident: str) -> list[BiosSetting]:
        node = self._ctx.caps.store.get(check_ident(ident))
        task = self._ctx.task_for(node)
        cached = task.driver.bios.cached_settings(task)
        return [
            BiosSetting(
                uuid=str(_uuid.uuid5(_SETTINGS, f"{node.uuid}/{name}")),
                node_uuid=node.uuid, name=name, value=None if value is None else str(value),
                created_at=node.created_at, updated_at=node.updated_at,
            )
            for name, value in sorted(cached.items())
        ]  # fmt: skip

    def get_bios_setting(self, ident: str, name: str) -> BiosSetting:
        for setting in self.list_bios_settings(ident):
            if setting.name == name:
                return setting
        raise ResourceNotFound(f"Node {ident} doesn't have a BIOS setting '{name}'", ident=name)
