"""Draining and the count of running flows: what a conductor's service watches as it stops.

Split from :mod:`.runtime` (which uses it) to keep that module walkable.
"""

from __future__ import annotations

import logging
import threading

from ironic_fsm.conductor.common import describe_exc
from ironic_fsm.stores import Store
from ironic_fsm.stores.base import announce_work

__all__ = ["Draining"]

LOG = logging.getLogger("ironic_fsm.conductor")


class Draining:
    """``drain``, ``draining`` and ``running``; the announcement of queued work."""

    store: Store
    holder: str
    _drain: threading.Event
    #: One entry per running flow: ``list.append`` and ``list.pop`` are atomic, so the
    #: count needs no lock on every verb.
    _flows_running: list[None]

    def drain(self) -> None:
        """Stop taking work, and hand running flows back at their next step boundary.

        From now on ``claim_work``, ``recover`` and ``check_timeouts`` take
        nothing, a flow about to start is queued instead, and a flow running
        steps stops before its next step (its position saved, the node
        queued, released and announced) so that another conductor's
        ``claim_work`` goes on from there. Flows outside steps (verify,
        inspect, power) finish. Wait for :meth:`running` to reach 0. Not undone.
        """
        if not self._drain.is_set():
            LOG.info("Conductor %s draining: no new work, flows hand back at a step", self.holder)
        self._drain.set()

    @property
    def draining(self) -> bool:
        """Whether :meth:`drain` was called."""
        return self._drain.is_set()

    def running(self) -> int:
        """Flows this conductor runs now, or has submitted to its executor and not finished."""
        return len(self._flows_running)

    def _flow_count(self, delta: int) -> None:
        if delta > 0:
            self._flows_running.append(None)
        else:
            self._flows_running.pop()

    def _announce(self, uuid: str) -> None:
        """Wake the conductors listening for work; never fails the release it follows."""
        try:
            announce_work(self.store, uuid)
        except Exception as exc:
            LOG.warning("Node %s: queued, but not announced: %s", uuid, describe_exc(exc))
