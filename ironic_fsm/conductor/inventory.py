"""A node's inventory (1.81): what its agent reported at inspection, kept and served.

The inventory is kept as the agent sent it, with its plugin data (the rest
of what the agent posted), one per node (each inspection replaces it,
deleting the node deletes it). Ports the inspect interface asks for are
made beside it; an address some port already has is left to that port, as
Ironic leaves it.
"""

from __future__ import annotations

import logging
import uuid as _uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ironic_fsm.conductor.common import check_ident
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.records import Shelf
from ironic_fsm.exceptions import ResourceExists, ResourceNotFound
from ironic_fsm.records import NodeInventory, Port
from ironic_fsm.stores.base import RecordQuery

__all__ = ["Inventories"]

LOG = logging.getLogger("ironic_fsm.conductor")


class Inventories:
    """Keeps each node's last inventory and makes the ports inspection found."""

    def __init__(self, ctx: Context) -> None:
        self._store = ctx.caps.store  # the nodes: the only other thing it uses
        self._inventories = Shelf(ctx, NodeInventory)
        self._ports = Shelf(ctx, Port)

    def get_inventory(self, ident: str) -> NodeInventory:
        """The inventory of node ``ident`` (UUID or name); ``ResourceNotFound`` if it has none."""
        node = self._store.get(check_ident(ident))
        found = self._inventories.records.find_record(NodeInventory, "node_uuid", node.uuid)
        if found is None:
            raise ResourceNotFound(f"Inventory not found for node {node.uuid}.", ident=node.uuid)
        return found

    def keep(
        self, node_uuid: str, inventory: Mapping[str, Any], plugin_data: Mapping[str, Any]
    ) -> NodeInventory:
        """Store ``inventory`` as node ``node_uuid``'s, in place of any earlier one."""
        records = self._inventories.records
        kept = NodeInventory(
            uuid=str(_uuid.uuid5(_uuid.NAMESPACE_URL, f"node_inventory/{node_uuid}")),
            node_uuid=node_uuid,
            inventory=dict(inventory),
            plugin_data=dict(plugin_data),
        )
        if records.find_record(NodeInventory, "node_uuid", node_uuid) is None:
            return records.add_record(kept)
        return records.replace_record(kept)

    def node_ports(self, node_uuid: str) -> list[Port]:
        """Every port of node ``node_uuid``."""
        return self._ports.page(RecordQuery({"node_uuid": node_uuid}))

    def change_ports(self, node_uuid: str, changes: Sequence[Mapping[str, Any]]) -> None:
        """Apply the inspect interface's ``changes`` to node ``node_uuid``'s ports, by address:
        delete the port, or set its ``pxe_enabled`` and ``extra['client-id']``."""
        ports = {port.address: port for port in self.node_ports(node_uuid)}
        for change in changes:
            port = ports.get(str(change.get("address")))
            if port is None:
                continue
            if change.get("delete"):
                LOG.info("Node %s: port %s (%s) deleted: inspection did not find it as "
                         "keep_ports asks", node_uuid, port.uuid, port.address)  # fmt: skip
                self._ports.delete(port)
                continue
            if change.get("pxe_enabled") is not None:
                port.pxe_enabled = bool(change["pxe_enabled"])
            if change.get("client_id"):
                port.extra = {**port.extra, "client-id": change["client_id"]}
            self._ports.replace(port)

    def add_ports(self, node_uuid: str, wanted: Sequence[Mapping[str, Any]]) -> list[Port]:
        """A port for each of ``wanted`` (``address``, ``pxe_enabled``, ``extra``) whose
        address no port has yet."""
        made = []
        for fields in wanted:
            port = Port(uuid=str(_uuid.uuid4()), node_uuid=node_uuid, **fields)
            try:
                made.append(self._ports.add(port))
            except ResourceExists:
                LOG.info("Node %s: a port with address %s exists already", node_uuid,
                         port.address)  # fmt: skip
                continue
            LOG.info("Node %s: port %s made for address %s%s", node_uuid, port.uuid,
                     port.address, " (PXE)" if port.pxe_enabled else "")  # fmt: skip
        return made
