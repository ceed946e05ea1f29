"""Reservations: a node held for one operation, released in the write of its final state.

The rule kept here: a refused request drops its in-memory changes and releases
the node unsaved (:meth:`Reservations.reserved`), and a flow that fails on a bug
fails its node instead of leaving it stuck (:meth:`Reservations.guarded`).

A store that can take a reservation in a save (a
:class:`~ironic_fsm.stores.capabilities.ReservingStore`) lets a verb skip the
separate reservation: :meth:`Reservations.taking` makes a job on the copy of
the node the verb decided on, and its first checkpoint takes the reservation
in the same write, only if nobody took it or saved the node since; nothing
before that save touches hardware (the conductor saves before it does), so
a refused verb has written nothing and holds nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from ironic_fsm import states as s
from ironic_fsm.conductor.common import check_ident, describe_exc, scrub_node
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.holdings import Holdings
from ironic_fsm.conductor.jobs import Job, NotTaken, check_fields
from ironic_fsm.conductor.outage import NodeLost, lost
from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError, NodeNotFound, StoreError
from ironic_fsm.node import NODE_FIELDS, Node
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


class _Taking:
    """:meth:`Reservations.taking`: a job on a node not reserved yet; its first save takes it."""

    __slots__ = ("job", "node", "owner")

    def __init__(self, owner: Reservations, node: Node) -> None:
        self.owner = owner
        self.node = node
        self.job: Job | None = None

    def __enter__(self) -> Job:
        ctx = self.owner.ctx
        node = self.node
        driver = ctx.registry.driver_for(node)  # refused: nothing to release
        node.reservation = ctx.holder  # as the first save will write it
        job = self.job = Job(Task(node=node, driver=driver, config=ctx.config), ctx)
        job.taking = True
        # Counted before the save that takes it, as every hold is (see Holdings): a look
        # for this conductor's orphans between the two must not take it back.
        self.owner.held.add(node.uuid)
        return job

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        job = self.job
        assert job is not None
        try:
            if kind is None:
                self.owner.release(job)
            elif not job.taking:  # taken by a save, then refused: release it unsaved
                self.owner.drop(job.task.node.uuid)
        finally:
            self.owner.held.discard(job.task.node.uuid)

    @property
    def pending(self) -> bool:
        """Nothing written yet: the reservation was not taken (or no job was made)."""
        return self.job is None or self.job.taking


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

    @property
    def can_take(self) -> bool:
        """Whether the store takes reservations in a save (:meth:`taking` may be used)."""
        return self.ctx.caps.reserving is not None

    def taking(self, node: Node) -> _Taking:
        """A job on ``node`` (a copy the caller read, unreserved), reserved by its first save.

        On the way out, save and release as :meth:`reserved` does; a save
        that finds the node taken or changed since ``node`` raises
        :class:`~.jobs.NotTaken` (nothing written, nothing held). Only for a
        store with :attr:`can_take`, and work that saves before it touches
        hardware.
        """
        return _Taking(self, node)

    def read(self, ident: str, fresh: bool) -> tuple[Node, bool]:
        """The node to decide a verb on, and whether it was read now: unless ``fresh``, the
        copy the store last wrote (maybe stale: only :meth:`taking` may act on it)."""
        if not fresh:
            known = self.ctx.caps.last_written(ident)
            if known is not None:
                return known, False
        return self.ctx.caps.store.get(ident), True

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
        except NodeLost as exc:
            lost(job, exc)  # not ours to release any more
            return
        except BaseException as exc:
            if not job.taking:  # else never reserved: nothing to release, nothing written
                self.drop(node.uuid)
            if isinstance(exc, Exception) and not isinstance(exc, (IronicFSMError, NotTaken)):
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
        except NotTaken:
            raise  # the flow's first save found the node taken or changed: nothing was done
        except NodeLost as exc:
            lost(job, exc)  # taken over meanwhile: its new holder goes on with it
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
