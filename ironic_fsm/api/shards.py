"""``/v1/shards`` (1.82) and ``/v1/nodes/{ident}/children`` (1.83): where nodes belong.

Both read only the stored columns (``shard``, ``parent_node``), so neither
decodes a node record.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import falcon

from ironic_fsm.api.common import Resource, require_version, send
from ironic_fsm.conductor import Conductor

__all__ = ["routes"]


class Shards(Resource):
    """``GET /v1/shards``: each shard and how many nodes it holds, the largest first.

    As Ironic: every node counts, children too, and the nodes without a
    shard are counted under the name ``"None"`` (Ironic's text for its null).
    Shards are few and change as they are read, so the list is not paged.
    """

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        require_version(req, (1, 82), "shards", status=404)
        rows = self._conductor.list_nodes(fields=("shard",))
        counts = Counter(str(row["shard"]) for row in rows)
        ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        send(resp, {"shards": [{"name": name, "count": count} for name, count in ordered]})


class Children(Resource):
    """``GET /v1/nodes/{ident}/children``: the UUIDs of the nodes whose parent it is."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        require_version(req, (1, 83), "children", status=404)
        parent = self._conductor.get_node(ident).uuid
        rows = self._conductor.list_nodes(fields=("uuid",), parent_node=parent)
        send(
            resp,
            {
                "children": [row["uuid"] for row in rows],
                # One link, not Ironic's usual pair: what Ironic answers here.
                "links": {
                    "href": f"{req.prefix}/v1/nodes?parent_node={parent}",
                    "rel": "children",
                },
            },
        )


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    return [
        ("/v1/shards", Shards(conductor), {}),
        ("/v1/nodes/{ident}/children", Children(conductor), {}),
    ]
