"""Outage: what a flow does while the database is unavailable (docs/fleet.rst).

A save that fails with a retryable store error (:class:`StoreUnavailable`,
:class:`StoreBusy`) is tried again with growing, jittered waits for up to
``Config.store_retry_timeout`` seconds (:func:`save_through`). A save the
database committed just before the connection broke comes back as stale on
the next try; it is recognised as saved rather than refused. A flow still
failing when the time is up stops (:func:`stalling`): the node stays
reserved at its last recorded step, never failed for it, and the conductor
takes it back once the database is back (:meth:`.Recovery.recover`).

tenacity is imported on the first retry only: it costs ``import ironic_fsm``
nothing, and a healthy database never pays for it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import attrs

from ironic_fsm.exceptions import ConcurrentUpdate, IronicFSMError, StoreBusy, StoreUnavailable

if TYPE_CHECKING:
    from ironic_fsm.conductor.context import Context
    from ironic_fsm.conductor.jobs import Job
    from ironic_fsm.node import Node

__all__ = ["RETRYABLE", "NodeLost", "ended_unsaved", "lost", "save_through", "stalling"]

LOG = logging.getLogger("ironic_fsm.conductor")

#: The store errors that say "nothing was written, try again later".
RETRYABLE: Final = (StoreUnavailable, StoreBusy)
#: The scale of the waits between two tries and the longest (seconds): random, doubling.
_FIRST_WAIT: Final = 0.05
_LONGEST_WAIT: Final = 2.0


class NodeLost(Exception):
    """A flow's save found its node no longer held by this conductor: taken over.

    Another conductor took the node over (this one looked dead to it, e.g.
    while a save waited out a database outage longer than
    ``heartbeat_timeout``) and goes on with it from its recorded step. The
    flow stops where it is: nothing is saved, released or failed here
    (:func:`lost`). ``cause`` is the store's refusal.
    """

    def __init__(self, cause: IronicFSMError) -> None:
        super().__init__(str(cause))
        self.cause = cause


def save_through(ctx: Context, node: Node, save: Callable[[], None], error: Exception) -> None:
    """Retry ``save`` (which just failed with ``error``) until it works or time is up.

    Raises the last retryable error when ``store_retry_timeout`` runs out
    (at once when it is 0), or what ``save`` raises that is not retryable.
    """
    timeout = ctx.config.store_retry_timeout
    if not timeout:
        raise error
    import tenacity  # only now: see the module's description

    LOG.warning(
        "Node %s: the store is unavailable (%s); retrying its save for up to %g s",
        node.uuid, error, timeout,
    )  # fmt: skip
    started = time.monotonic()
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(RETRYABLE),
        wait=tenacity.wait_random_exponential(multiplier=_FIRST_WAIT, max=_LONGEST_WAIT),
        stop=tenacity.stop_after_delay(timeout),
        reraise=True,
    )
    for attempt in retrying:
        with attempt:
            _save_once_more(ctx, node, save)
    LOG.info("Node %s: saved after %.1f s of retries", node.uuid, time.monotonic() - started)


def _save_once_more(ctx: Context, node: Node, save: Callable[[], None]) -> None:
    try:
        save()
    except ConcurrentUpdate:
        if not _saved_before(ctx, node):
            raise


def _saved_before(ctx: Context, node: Node) -> bool:
    """Whether an earlier try committed ``node`` as it is (its answer lost with the connection).

    Then the record is ours exactly, one version on: take that version.
    """
    stored = ctx.caps.store.get(node.uuid)
    if stored.version != node.version + 1 or attrs.evolve(stored, version=node.version) != node:
        return False
    node.version = stored.version
    return True


def stalling(work: Callable[[Job], None]) -> Callable[[Job], None]:
    """``work``, stopped rather than failed when the store stays unavailable (see above).

    The job is then detached: nothing tries to save or release the node,
    which stays reserved at its last recorded step for :meth:`.Recovery.recover`.
    ``job.stalled`` keeps the error.
    """

    def run(job: Job) -> None:
        try:
            work(job)
        except RETRYABLE as exc:
            LOG.warning(
                "Node %s: the store is unavailable (%s); the flow stops at its last "
                "recorded step, and this conductor resumes it once the store is back",
                job.node.uuid, exc,
            )  # fmt: skip
            job.stalled = exc
            job.detached = True

    return run


def ended_unsaved(uuid: str, what: str, exc: Exception) -> None:
    """Log a flow whose final save (its release) failed; an outage is said plainly.

    The node stays reserved at its last recorded step either way, for
    :meth:`.Recovery.recover` to take back.
    """
    if isinstance(exc, RETRYABLE):
        LOG.warning(
            "Node %s: the store is unavailable (%s); the flow's final save could not be "
            "made, the flow stops at its last recorded step, and this conductor resumes it "
            "once the store is back",
            uuid, exc,
        )  # fmt: skip
    else:
        LOG.error("Node %s: %s ended unsaved", uuid, what, exc_info=exc)


def lost(job: Job, exc: NodeLost) -> None:
    """Stop a flow whose node was taken over (:class:`NodeLost`): logged, nothing else.

    Not the node's failure and not this conductor's to save, release or
    fail any more: its new holder goes on from the recorded step.
    """
    LOG.warning(
        "Node %s: taken over by another conductor while this flow ran (%s); the flow "
        "stops here, and its new holder goes on from the recorded step",
        job.task.node.uuid, exc.cause,
    )  # fmt: skip
    job.detached = True
