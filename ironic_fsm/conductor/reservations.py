"""Reservations: a node held for one operation, released in the write of its final state.

The rule kept here: a refused request drops its in-memory changes and releases
the node unsaved (:meth:`Reservations.reserved`), and a flow that fails on a bug
fails its node instead of leaving it stuck (:meth:`Reservations.guarded`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from ironic_fsm import states as s
from ironic_fsm.conductor.common import check_ident, describe_exc, scrub_node
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.holdings import Holdings
from ironic_fsm.conductor.jobs import Job, check_fields
from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError, NodeNotFound, StoreError
from ironic_fsm.node import NODE_FIELDS
from ironic_fsm.task import Task

__all__ = ["QUEUED_KEY", "Reservations"]

LOG = logging.getLogger("ironic_fsm.conductor")

#: ``driver_internal_info`` key of a queued node: the flow it owes (``{"flow": name, ...}``).
QUEUED_KEY: Final = "queued_flow"


class _Reserved:
    """:meth:`Reservations.reserved`: a plain class, not a generator, as it runs on every verb."""

    __slots__ = ("ident", "job", "owner", "uuid")

    def __init__(self, owner: Reservations, ident: str) -> None:
        self.owner = owner
        self.ident = ident

    def __enter__(self) -> Job:
        ctx = self.owner.ctx
        node = self.owner.held.reserve(ctx.caps.store, self.ident, ctx.holder)
        self.uuid = node.uuid
        try:
            driver = ctx.registry.driver_for(node)
        except BaseException:
            self.owner.drop(self.uuid)
            self.owner.held.discard(self.uuid)
            raise
        self.job = Job(Task(node=node, driver=driver, config=ctx.config), ctx)
        return self.job

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is None:
                self.owner.release(self.job)
            else:
                self.owner.drop(self.uuid)
        finally:
            self.owner.held.discard(self.uuid)


class Reservations:
    """Reserve, release, drop; run a flow guarded; fail it from its saved copy."""

    __slots__ = ("ctx", "held")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        #: The nodes this process's threads hold now (see :mod:`.holdings`).
        self.held = Holdings()

    def reserved(self, ident: str, *, checked: bool = False) -> _Reserved:
        """Reserve the node and yield a job; on the way out, save and release.

        If the body raises, the node's in-memory changes are dropped and the
        reservation is simply released: a refused request changes nothing.
        ``checked``: ``ident`` already went through :func:`check_ident`.
        """
        return _Reserved(self, ident if checked else check_ident(ident))

    def drop(self, uuid: str) -> None:
        """Release our reservation without saving; never masks the error being handled."""
        ctx = self.ctx
        try:
            ctx.caps.store.release(uuid, ctx.holder)
        except NodeNotFound:
            pass
        except BaseException:
            LOG.exception("Node %s: could not release the reservation", uuid)

    def release(self, job: Job) -> None:
        """Clear our reservation in the same write as the node's final state.

        If that write fails, the reservation is still released and the
        failure is raised: an unsaved result is never reported as done.
        """
        if job.detached:
            return
        node = job.task.node
        node.reservation = None
        try:
            try:
                job.checkpoint()
            except InvalidParameterValue:
                if not (job.ran_flow and self._failed_unstorable(job)):
                    raise
        except BaseException as exc:
            self.drop(node.uuid)
            if isinstance(exc, Exception) and not isinstance(exc, IronicFSMError):
                raise StoreError(
                    f"Node {node.uuid}: the store could not save the node: {describe_exc(exc)}",
                    node=node.uuid,
                ) from exc
            raise
        if job.announce:
            job.announce = False
            self.announce(node.uuid)

    def announce(self, uuid: str) -> None:
        """Wake the conductors listening for work; never fails the release it follows."""
        try:
            self.ctx.caps.announce_work(uuid)
        except Exception as exc:
            LOG.warning("Node %s: queued, but not announced: %s", uuid, describe_exc(exc))

    def guarded(self, job: Job, work: Callable[[Job], None]) -> None:
        """Run a flow; a bug in it fails the node instead of leaving it stuck.

        A flow whose driver assigned a field a value the record cannot hold
        fails too, from the last saved copy of the node: the failure state
        is what gets saved, never the bad value. The final save finds such
        a value (:meth:`release`), as it checks every field anyway.
        """
        job.ran_flow = True
        try:
            work(job)
        except Exception as exc:
            self.fail_flow(job, exc)

    def fail_flow(self, job: Job, exc: Exception) -> None:
        """Fail the flow's node for ``exc``: from its saved copy if it holds a bad value."""
        try:
            check_fields(job)
        except InvalidParameterValue:
            self.reread(job)
        node = job.task.node
        message = scrub_node(
            node,
            f"Unexpected error on node {node.uuid} in {node.provision_state}: " + describe_exc(exc),
        )
        LOG.error("%s", message)
        node.last_error = message
        if s.FAIL_EVENT in self.ctx.lifecycle.allowed_events(node.provision_state):
            job.fire(s.FAIL_EVENT)

    def _failed_unstorable(self, job: Job) -> bool:
        """After a flow's final save was refused: if for a value the record cannot hold,
        fail the node from its saved copy and save that; ``False`` if for another reason."""
        try:
            check_fields(job)
        except InvalidParameterValue as exc:
            self.fail_flow(job, exc)
            job.task.node.reservation = None
            job.checkpoint()
            return True
        return False

    def reread(self, job: Job) -> None:
        """The node as last saved (still reserved by us), in place: whoever holds it sees it."""
        node = job.task.node
        saved = self.ctx.caps.store.get(node.uuid)
        for name in NODE_FIELDS:
            setattr(node, name, getattr(saved, name))
        if job.took_entry:  # taken at the claim; the saved copy still has it
            node.driver_internal_info.pop(QUEUED_KEY, None)
        job.events = []  # they told of changes now dropped
        job.history = []
