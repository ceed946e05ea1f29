"""Port groups: a node's ports bonded together (``mode``), each group's MAC unique.

As for ports, each method checks everything before the store is touched.
A group with ports is not deleted, and does not stop taking standalone
ports while PXE-enabled ports are in it (Ironic's rules).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from ironic_fsm.conductor.common import check_ident, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.records import (
    Shelf,
    check_dict,
    check_flag,
    check_known,
    check_text,
    new_uuid,
    normalize_mac,
)
from ironic_fsm.exceptions import InvalidParameterValue, InvalidState
from ironic_fsm.node import is_uuid_like
from ironic_fsm.records import Port, Portgroup
from ironic_fsm.stores.base import RecordQuery

__all__ = ["DEFAULT_PORTGROUP_MODE", "PORTGROUP_FIELDS", "Portgroups"]

#: Ironic's ``[DEFAULT]default_portgroup_mode``: a group created without a mode gets it.
DEFAULT_PORTGROUP_MODE: Final = "active-backup"
#: What a caller may set on a group (``node`` by UUID or name).
PORTGROUP_FIELDS: Final = frozenset(
    {"node", "address", "name", "mode", "properties", "standalone_ports_supported", "extra",
     "internal_info", "physical_network", "category"}
)  # fmt: skip
#: A logical name, as Ironic checks a group's (RFC 3986 unreserved characters).
_NAME_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


class Portgroups:
    """Create, read, change and delete port groups."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self._groups = Shelf(ctx, Portgroup)
        self._ports = Shelf(ctx, Port)

    def get_portgroup(self, ident: str) -> Portgroup:
        """The group with this UUID or name; ``ResourceNotFound`` if none."""
        return self._groups.find(ident)

    def list_portgroups(
        self, *, node: str | None = None, address: str | None = None, limit: int | None = None,
        marker: str | None = None, sort_key: str = "id", sort_dir: str = "asc",
    ) -> list[Portgroup]:  # fmt: skip
        """One page of groups, of ``node`` (UUID or name) or with this MAC ``address``."""
        filters: dict[str, Any] = {}
        if node is not None:
            filters["node_uuid"] = self._ctx.caps.store.get(check_ident(node)).uuid
        if address is not None:
            filters["address"] = normalize_mac(address)
        query = RecordQuery(filters, limit, marker, sort_key, sort_dir)
        return self._groups.page(query)

    def create_portgroup(self, node: str, *, uuid: str | None = None, **fields: Any) -> Portgroup:
        """A new group of ``node``; ``mode`` defaults to :data:`DEFAULT_PORTGROUP_MODE`.

        Raises:
            InvalidParameterValue: a field is wrong (the message names it).
            NodeNotFound: no such node.
            ResourceExists: another group has this address, name or UUID.
        """
        group = Portgroup(uuid=new_uuid(Portgroup, uuid))
        new = self._apply(group, {"node": node, **fields})
        if new.mode is None:
            new.mode = DEFAULT_PORTGROUP_MODE
        return self._groups.add(new)

    def update_portgroup(self, ident: str, **fields: Any) -> Portgroup:
        """Change some of a group's fields, all or nothing."""
        group = self.get_portgroup(ident)
        new = self._apply(group, fields)
        members = self._members(group.uuid)
        if new.node_uuid != group.node_uuid and members:
            raise InvalidParameterValue(
                f"Port group {group.uuid} cannot move to another node while it has ports",
                portgroup=group.uuid,
            )
        if not new.standalone_ports_supported and any(p.pxe_enabled for p in members):
            raise InvalidState(
                f"Port group {group.uuid} cannot stop taking standalone ports: some of its "
                "ports have pxe_enabled set",
                portgroup=group.uuid,
            )
        return self._groups.replace(new)

    def delete_portgroup(self, ident: str) -> None:
        group = self.get_portgroup(ident)
        self._groups.delete(group, holding="ports", held=self._members(group.uuid))

    def _members(self, uuid: str) -> list[Port]:
        return self._ports.page(RecordQuery({"portgroup_uuid": uuid}))

    def _apply(self, group: Portgroup, fields: dict[str, Any]) -> Portgroup:
        check_known(fields, PORTGROUP_FIELDS, "port group")
        changes: dict[str, Any] = {}
        for field, value in fields.items():
            changes[field if field != "node" else "node_uuid"] = self._checked(field, value)
        return attrs.evolve(group, **changes)

    def _checked(self, field: str, value: Any) -> Any:
        word = "Port group"
        if field == "node":
            return self._ctx.caps.store.get(check_ident(value)).uuid
        if field == "address":
            return None if value is None else normalize_mac(value)
        if field == "name":
            name = check_text(value, "name", word)
            if name is not None and (is_uuid_like(name) or not set(name) <= _NAME_CHARS):
                raise InvalidParameterValue(
                    f"Cannot create portgroup with invalid name {shown(name)}", field="name"
                )
            return name
        if field == "standalone_ports_supported":
            return check_flag(value, field, word)
        if field in ("properties", "extra", "internal_info"):
            return check_dict(value, field, word)
        most = {"mode": 255, "physical_network": 64, "category": 80}[field]
        return check_text(value, field, word, most=most)
