"""``GET /v1/nodes/{node}/inventory`` (1.81): what the node's last inspection reported."""

from __future__ import annotations

from typing import Final

import falcon

from ironic_fsm.api.common import Resource, require_version, send

__all__ = ["NodeInventory"]

_INVENTORY: Final = (1, 81)


class NodeInventory(Resource):
    """The inventory and plugin data as the agent posted them; 404 when the node has none."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, _INVENTORY, "inventory", status=404)
        kept = self._conductor.get_node_inventory(ident)
        send(resp, {"inventory": kept.inventory, "plugin_data": kept.plugin_data})
