"""Claiming queued work: how conductor services pick up what others handed off.

The work queue is no table of its own: it is the nodes in a working state
(:data:`~ironic_fsm.conductor.runtime.WORKING_STATES`) that nobody holds.
A conductor built with ``hand_off=True`` (a CLI's, an API's) puts nodes
there after a verb or callback; a draining conductor puts back the flows it
stops at a step boundary. Each such node carries the flow it owes
(:data:`~ironic_fsm.conductor.runtime.QUEUED_KEY`), and the store announces
it (``NOTIFY ironic_fsm_work`` on PostgreSQL). :meth:`Work.claim_work`
finds the queue through the store's state index, reserves the nodes this
conductor owns and runs their flows. The reservation stays the lock: of two
conductors claiming one node, one gets it and the other skips it.
"""

from __future__ import annotations

from typing import Any

from ironic_fsm.conductor.recovery import Recovery
from ironic_fsm.conductor.ring import node_group
from ironic_fsm.conductor.runtime import LOG, QUEUED_KEY, WORKING_STATES
from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError, NodeLocked
from ironic_fsm.stores.base import in_states

__all__ = ["Work"]


class _NotQueued(Exception):
    """The node left the queue between the scan and the reservation: release it unchanged."""


class Work(Recovery):
    """:meth:`claim_work`: start the queued flows this conductor owns."""

    def claim_work(self, limit: int | None = None) -> list[str]:
        """Reserve queued nodes this conductor owns, and run their flows; returns their UUIDs.

        A flow queued by a verb or callback starts as it would have in the
        caller (a step phase plans and starts its steps); one handed back by a
        drain goes on at its recorded step, so no step recorded done runs
        again; a working node queued by nothing (its flow ended unsaved)
        resumes as :meth:`recover` resumes one. With an executor the flows
        run there. ``limit`` caps how many nodes one call claims.

        Reads the queue through the store's state index: with nothing queued
        it decodes no node, whatever the size of the fleet. A node another
        conductor reserved first is skipped. A draining conductor, or one
        that hands work off itself, claims nothing.

        Raises:
            InvalidParameterValue: ``limit`` is not a positive integer.
        """
        if limit is not None and (type(limit) is not int or limit < 1):
            raise InvalidParameterValue(
                f"claim_work's limit must be a positive integer or None, not {limit!r}"
            )
        if self.draining or self._hand_off:
            return []
        queued = in_states(self.store, WORKING_STATES, reservation=None)
        if not queued:
            return []
        self.refresh_ring()
        claimed: list[str] = []
        for node in queued:
            if limit is not None and len(claimed) >= limit:
                break
            if self.owns(node.uuid, node.driver, node_group(node)) and self._claim(node.uuid):
                claimed.append(node.uuid)
        return claimed

    def _claim(self, uuid: str) -> bool:
        try:
            with self._reserved(uuid) as job:
                node = job.node
                if node.provision_state not in WORKING_STATES:
                    raise _NotQueued
                found = node.driver_internal_info.pop(QUEUED_KEY, None)
                flow: dict[str, Any] | None = found if isinstance(found, dict) else None
                LOG.info(
                    "Node %s: claimed by %s in %s (%s)",
                    uuid, self.holder, node.provision_state,
                    "queued " + str(flow.get("flow")) if flow else "no queued flow: resumed",
                )  # fmt: skip
                self._spawn(
                    job, lambda j: self._run_flow(j, flow), queued=flow or {"flow": "resume"}
                )
        except (_NotQueued, NodeLocked):
            return False
        except IronicFSMError as exc:
            LOG.info("Node %s: not claimed: %s", uuid, exc)
            return False
        return True
