"""Power-sync bookkeeping: which nodes are due for a power-state sync, on any store.

The periodic power sync (``Conductor.sync_power_states``) must cost what is
due, not what the fleet holds. So a store remembers, per node, when its
power state was last synced, on an index: the pass reads the nodes not
synced since a cut-off and nothing else, without decoding a record.

* :class:`PowerSyncStore`: the two methods a store adds for that
  (:meth:`~PowerSyncStore.power_sync_due`, :meth:`~PowerSyncStore.mark_power_synced`).
  Both built-in stores have them.
* :func:`power_sync_due` and :func:`mark_power_synced`: what the conductor
  calls, on any store. A store without the methods falls back to one
  ``list()``: every node is due at every pass (Ironic's own behaviour,
  which reads the whole fleet each time), and marking is a no-op.
* The SQL side is :class:`~._sql_power.PowerSync`, a part of ``SQLStore``:
  the table ``node_power_sync`` (schema version 5, :mod:`._schema`).

This module imports nothing else of the stores package at run time, so
that :mod:`.base` can re-export it without loading the SQL modules.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple, Protocol, runtime_checkable

from ironic_fsm.exceptions import InvalidParameterValue

if TYPE_CHECKING:
    from ironic_fsm.stores.base import Store

__all__ = [
    "PowerSyncRow", "PowerSyncStore", "check_sync_args", "every_node_due", "mark_power_synced",
    "power_sync_due",
]  # fmt: skip


class PowerSyncRow(NamedTuple):
    """A node due for a power sync, as the scan sees it: indexed columns, no record decoded.

    Enough for the conductor to tell a candidate from a node to pass over
    (reserved, in maintenance, in a state where power must not be touched)
    and to ask the hash ring whether the node is its own.
    """

    uuid: str
    driver: str
    provision_state: str
    maintenance: bool
    fault: str | None
    reservation: str | None
    #: When its power state was last synced (``None``: never).
    synced_at: datetime | None
    #: Its conductor group: with ``driver``, which ring it hashes on (last: older callers
    #: build rows without it).
    conductor_group: str = ""


@runtime_checkable
class PowerSyncStore(Protocol):
    """A store that knows when each node's power state was last synced.

    Times are aware UTC datetimes chosen by the conductor's clock. A new
    node is due at once; deleting a node forgets it.
    """

    def power_sync_due(self, before: datetime) -> builtins.list[PowerSyncRow]:
        """Every node never synced, or last synced at or before ``before``.

        Reads an index of the sync times: a pass with nothing due costs the
        same for any fleet.
        """

    def mark_power_synced(self, uuids: Sequence[str], when: datetime) -> None:
        """Record that these nodes were synced at ``when`` (unknown UUIDs are ignored)."""


def power_sync_due(store: Store, before: datetime) -> builtins.list[PowerSyncRow]:
    """:meth:`PowerSyncStore.power_sync_due` on any store; else every node, from ``list()``."""
    if isinstance(store, PowerSyncStore):
        return store.power_sync_due(before)
    return every_node_due(store)


def every_node_due(store: Store) -> builtins.list[PowerSyncRow]:
    """The rows of a store without :class:`PowerSyncStore`: every node is due, from ``list()``."""
    return [
        PowerSyncRow(
            n.uuid,
            n.driver,
            n.provision_state,
            n.maintenance,
            n.fault,
            n.reservation,
            None,
            n.conductor_group,
        )
        for n in store.list()
    ]


def mark_power_synced(store: Store, uuids: Sequence[str], when: datetime) -> None:
    """:meth:`PowerSyncStore.mark_power_synced` on any store (a no-op on one without it)."""
    if uuids and isinstance(store, PowerSyncStore):
        store.mark_power_synced(uuids, when)


def check_sync_args(uuids: Iterable[object], when: object) -> builtins.list[str]:
    """Refuse, before anything is written, a UUID that is not text or a naive or odd time."""
    if not isinstance(when, datetime) or when.utcoffset() is None:
        raise InvalidParameterValue(
            f"A power-sync time must be a timezone-aware datetime, not {when!r}", field="when"
        )
    out = []
    for uuid in uuids:
        if not isinstance(uuid, str) or "\x00" in uuid:
            raise InvalidParameterValue(f"Not a node UUID: {uuid!r}", field="uuids")
        out.append(uuid)
    return out
