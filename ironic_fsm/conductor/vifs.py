"""VIFs: virtual network interfaces attached to a node, as Ironic's network interfaces do.

With the ``noop`` network interface nothing is recorded (attaching and
detaching succeed, the list is empty), as in Ironic. With ``flat`` (and any
other), a VIF is recorded on one of the node's port groups or ports, in
its ``internal_info['tenant_vif_port_id']``: a free one (no VIF yet; a
group only if it has ports), port groups first, then PXE-enabled ports, or
the one the caller names (``port_uuid`` / ``portgroup_uuid``). The node is
reserved while its VIFs change.
"""

from __future__ import annotations

from typing import Any, Final

from ironic_fsm.conductor.common import check_ident
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.records import Shelf
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.exceptions import InvalidParameterValue, ResourceExists
from ironic_fsm.node import Node
from ironic_fsm.records import Port, Portgroup
from ironic_fsm.stores.base import RecordQuery

__all__ = ["VIF_KEY", "Vifs"]

#: Where a port or port group records its tenant VIF (Ironic's key).
VIF_KEY: Final = "tenant_vif_port_id"
#: The network interface a node has when it names none (what the API shows).
_DEFAULT_NETWORK: Final = "noop"

PortLike = Port | Portgroup


def _network(node: Node) -> str:
    return getattr(node, "network_interface", None) or _DEFAULT_NETWORK


class Vifs:
    """Attach, list and detach a node's VIFs."""

    def __init__(self, ctx: Context, reservations: Reservations) -> None:
        self._ctx = ctx
        self._reservations = reservations
        self._ports = Shelf(ctx, Port)

    def _port_likes(self, node_uuid: str) -> list[PortLike]:
        """The node's port groups, then its ports."""
        query = RecordQuery({"node_uuid": node_uuid})
        records = self._ports.records
        groups: list[PortLike] = list(records.list_records(Portgroup, query))
        return [*groups, *records.list_records(Port, query)]

    def list_vifs(self, node: str) -> list[dict[str, str]]:
        """``[{'id': vif}]``: the VIFs recorded on the node's ports and port groups."""
        found = self._ctx.caps.store.get(check_ident(node))
        if _network(found) == "noop":
            return []
        likes = self._port_likes(found.uuid)
        return [{"id": p.internal_info[VIF_KEY]} for p in likes if VIF_KEY in p.internal_info]

    def attach_vif(self, node: str, vif: str, **info: Any) -> None:
        """Attach ``vif`` (``info``: ``port_uuid`` or ``portgroup_uuid`` to choose where).

        Raises:
            ResourceExists: the VIF is attached to this node already.
            InvalidParameterValue: no free port or port group (or the one named is not).
            NodeLocked: the node is busy.
        """
        if not isinstance(vif, str) or not vif or len(vif) > 255:
            raise InvalidParameterValue("A VIF is named by a non-empty ID string")
        with self._reservations.reserved(check_ident(node)) as job:
            if _network(job.node) == "noop":
                return
            likes = self._port_likes(job.node.uuid)
            for like in likes:
                if like.internal_info.get(VIF_KEY) == vif:
                    raise ResourceExists(
                        f"Unable to attach VIF because VIF {vif} is already attached to Ironic "
                        f"{like.word} {like.uuid}",
                        vif=vif,
                    )
            target = _free(likes, vif, info)
            target.internal_info = {**target.internal_info, VIF_KEY: vif}
            self._ports.records.replace_record(target)

    def detach_vif(self, node: str, vif: str) -> None:
        """Detach ``vif``; ``InvalidParameterValue`` if it is not attached to the node."""
        with self._reservations.reserved(check_ident(node)) as job:
            if _network(job.node) == "noop":
                return
            for like in self._port_likes(job.node.uuid):
                if like.internal_info.get(VIF_KEY) == vif:
                    like.internal_info = {
                        k: v for k, v in like.internal_info.items() if k != VIF_KEY
                    }
                    like.extra = {k: v for k, v in like.extra.items() if k != "vif_port_id"}
                    self._ports.records.replace_record(like)
                    return
            raise InvalidParameterValue(
                f"Unable to detach VIF {vif} from node {job.node.uuid} because it is not "
                "attached to it.",
                vif=vif,
            )


def _free(likes: list[PortLike], vif: str, info: dict[str, Any]) -> PortLike:
    """Where the VIF goes: the one named, else the best free one (Ironic's order)."""
    members = {p.portgroup_uuid for p in likes if isinstance(p, Port) and p.portgroup_uuid}
    free = [
        p for p in likes
        if VIF_KEY not in p.internal_info
        and (p.uuid in members if isinstance(p, Portgroup) else p.portgroup_uuid is None)
    ]  # fmt: skip
    named = info.get("port_uuid") or info.get("portgroup_uuid")
    if named is not None:
        free = [p for p in free if p.uuid == named]
    if not free:
        raise InvalidParameterValue(
            f"Unable to attach VIF {vif}, not enough free physical ports.", vif=vif
        )
    free.sort(key=lambda p: (isinstance(p, Portgroup), getattr(p, "pxe_enabled", True)),
              reverse=True)  # fmt: skip
    return free[0]
