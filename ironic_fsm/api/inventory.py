"""``GET /v1/nodes/{node}/inventory`` (1.81): what the node's last inspection reported."""

from __future__ import annotations

from typing import Final

import falcon

from ironic_fsm.api.common import require_version, send
from ironic_fsm.conductor import Conductor

__all__ = ["NodeInventory"]

_INVENTORY: Final = (1, 81)


class NodeInventory:
    """The inventory and plugin data as the agent posted them; 404 when the node has none."""

    def __init__(self, conductor: Conductor) -> None:
        self._conductor = conductor

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, _INVENTORY, "inventory", status=404)
        kept = self._conductor.get_node_inventory(ident)
        send(resp, {"inventory": kept.inventory, "plugin_data": kept.plugin_data})
