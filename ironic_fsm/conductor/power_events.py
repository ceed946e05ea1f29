"""The events of a node's power, found or set: shared by the power sync and power requests.

Ironic's ``baremetal.node.power_set.{start,end,error}`` (a power change
asked for, or forced by the sync) and ``power_state_corrected.success`` (the
sync accepted the BMC's state). The provision state does not change: it is
both the event's previous and new state.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

import attrs

from ironic_fsm.events import Event
from ironic_fsm.node import Node

__all__ = [
    "POWER_SET_END", "POWER_SET_ERROR", "POWER_SET_START", "POWER_STATE_CORRECTED",
    "PowerEvent", "power_event",
]  # fmt: skip

POWER_STATE_CORRECTED: Final = "baremetal.node.power_state_corrected.success"
POWER_SET_START: Final = "baremetal.node.power_set.start"
POWER_SET_END: Final = "baremetal.node.power_set.end"
POWER_SET_ERROR: Final = "baremetal.node.power_set.error"


@attrs.frozen(kw_only=True)
class PowerEvent(Event):
    """An :class:`~ironic_fsm.events.Event` about a node's power, found or set by the sync.

    ``previous_state``, ``state`` and ``target`` are the provision state and
    target, which the sync leaves as they are.
    """

    #: The recorded power state before.
    previous_power_state: str | None = None
    #: The recorded (``power_state_corrected``) or requested (``power_set``) power state.
    power_state: str | None = None


def power_event(
    node: Node,
    name: str,
    previous: str | None,
    power_state: str | None,
    now: datetime,
    error: str | None = None,
) -> PowerEvent:
    """The :class:`PowerEvent` ``name`` of ``node`` at ``now`` (the conductor's clock, read by
    the caller): its power from ``previous`` to ``power_state`` (recorded, or asked for), its
    provision state unchanged."""
    # The provision state does not change: it is both the previous and the new one.
    same: dict[str, Any] = dict.fromkeys(("previous_state", "state"), node.provision_state)
    return PowerEvent(
        name=name, node=node.uuid, node_name=node.name, event=None,
        target=node.target_provision_state,
        previous_power_state=previous, power_state=power_state, error=error,
        timestamp=now, **same,
    )  # fmt: skip
