"""Power-state sync: each conductor reads its own nodes' power from their BMCs.

(Being written: see issue "A fleet, not a process".)
"""

from __future__ import annotations

from ironic_fsm.conductor.recovery import Recovery

__all__ = ["PowerSync"]


class PowerSync(Recovery):
    """Ironic's ``sync_power_states`` periodic task, for the nodes this conductor owns."""
