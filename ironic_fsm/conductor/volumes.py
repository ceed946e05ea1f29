"""Volume connectors and targets: how a node reaches remote storage, kept as data.

Ironic's ``noop`` storage interface does nothing with them; they are
recorded for whoever boots from volumes. As in Ironic, a node's volume
records change only while it is powered off (or, to delete them, in a state
where the node itself may be deleted); a connector's ``(type,
connector_id)`` and a target's ``boot_index`` on its node are unique.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import attrs

from ironic_fsm import states as s
from ironic_fsm.conductor.common import check_ident, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.records import check_dict, check_known, check_text, new_uuid, records_of
from ironic_fsm.exceptions import InvalidParameterValue, InvalidStateRequested, ResourceNotFound
from ironic_fsm.node import is_uuid_like
from ironic_fsm.records import VolumeConnector, VolumeTarget
from ironic_fsm.stores.base import RecordQuery

__all__ = ["CONNECTOR_FIELDS", "TARGET_FIELDS", "Volumes"]

V = TypeVar("V", VolumeConnector, VolumeTarget)
CONNECTOR_FIELDS: Final = frozenset({"node", "type", "connector_id", "extra"})
TARGET_FIELDS: Final = frozenset(
    {"node", "volume_type", "volume_id", "boot_index", "properties", "extra"}
)
#: Ironic's ``DELETE_ALLOWED_STATES``: a node's volume records go in these whatever its power.
_DELETE_ALLOWED: Final = frozenset({s.AVAILABLE, s.MANAGEABLE, s.ENROLL, s.ADOPTFAIL})
_WIDTHS: Final = {"type": 32, "connector_id": 255, "volume_type": 64, "volume_id": 36}


class Volumes:
    """Create, read, change and delete volume connectors and targets."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        #: The two kinds (the facade names them through here: it does not import records).
        self.connector: type[VolumeConnector] = VolumeConnector
        self.target: type[VolumeTarget] = VolumeTarget

    def get(self, kind: type[V], uuid: str) -> V:
        """The connector or target with this UUID (they have no names)."""
        if not is_uuid_like(uuid):
            raise ResourceNotFound(f"{kind.word} {uuid} could not be found.", ident=uuid)
        return records_of(self._ctx, kind).get_record(kind, uuid.lower())

    def list(self, kind: type[V], *, node: str | None = None, **page: Any) -> list[V]:
        """One page of connectors or targets, of ``node`` (UUID or name) if given."""
        filters = {} if node is None else {"node_uuid": self._node_uuid(node)}
        return records_of(self._ctx, kind).list_records(kind, RecordQuery(filters, **page))

    def create(self, kind: type[V], node: str, *, uuid: str | None = None, **fields: Any) -> V:
        record = self._apply(kind(uuid=new_uuid(kind, uuid)), {"node": node, **fields})
        return records_of(self._ctx, kind).add_record(record)

    def update(self, kind: type[V], uuid: str, **fields: Any) -> V:
        record = self.get(kind, uuid)
        new = self._apply(record, fields)
        self._check_power(record, "update")
        if new.node_uuid != record.node_uuid:
            self._check_power(new, "update")
        return records_of(self._ctx, kind).replace_record(new)

    def delete(self, kind: type[V], uuid: str) -> None:
        record = self.get(kind, uuid)
        self._check_power(record, "deletion")
        records_of(self._ctx, kind).delete_record(kind, record.uuid)

    def _node_uuid(self, node: object) -> str:
        return self._ctx.caps.store.get(check_ident(node)).uuid

    def _check_power(self, record: VolumeConnector | VolumeTarget, action: str) -> None:
        """Ironic's rule: a node's volume records change while it is powered off."""
        node = self._ctx.caps.store.get(record.node_uuid)
        if node.power_state == s.POWER_OFF:
            return
        if action == "deletion" and node.provision_state in _DELETE_ALLOWED:
            return
        raise InvalidStateRequested(
            f'The requested action "{record.word.lower()} {action}" can not be performed on '
            f'node "{node.uuid}" while it is in state "{node.power_state}".',
            node=node.uuid,
        )

    def _apply(self, record: V, fields: dict[str, Any]) -> V:
        allowed = CONNECTOR_FIELDS if isinstance(record, VolumeConnector) else TARGET_FIELDS
        check_known(fields, allowed, record.word.lower())
        changes: dict[str, Any] = {}
        for field, value in fields.items():
            if field == "node":
                changes["node_uuid"] = self._node_uuid(value)
            elif field in ("extra", "properties"):
                changes[field] = check_dict(value, field, record.word)
            elif field == "boot_index":
                if type(value) is not int or value < 0:
                    raise InvalidParameterValue(
                        f"Volume target boot_index must be an integer >= 0, not {shown(value)}",
                        field=field,
                    )
                changes[field] = value
            else:
                text = check_text(value, field, record.word, most=_WIDTHS[field])
                if text is None:
                    raise InvalidParameterValue(f"{record.word} {field} is required", field=field)
                changes[field] = text
        return attrs.evolve(record, **changes)
