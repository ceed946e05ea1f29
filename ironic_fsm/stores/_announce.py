"""Announcing queued work: how a store wakes the conductors waiting for it.

A node queued for any conductor to claim (see ``Conductor(hand_off=True)``
and ``Conductor.claim_work``) is announced once its release is saved. On
PostgreSQL that is ``NOTIFY ironic_fsm_work, '<node uuid>'``, so that a
service ``LISTEN``ing on :data:`WORK_CHANNEL` wakes at once; other stores
have no way to tell, and their services poll.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["WORK_CHANNEL", "Coalescing", "WorkAnnouncer", "announce_work"]

LOG = logging.getLogger("ironic_fsm.stores.sql")

#: The PostgreSQL ``LISTEN``/``NOTIFY`` channel on which queued work is announced.
WORK_CHANNEL = "ironic_fsm_work"


@runtime_checkable
class WorkAnnouncer(Protocol):
    """A store that can wake the conductors waiting for queued work."""

    def announce_work(self, uuid: str) -> None:
        """Tell listeners that node ``uuid`` now waits, unreserved, in the work queue."""


def announce_work(store: object, uuid: str) -> None:
    """Announce queued work through ``store`` if it can; otherwise nothing (pollers find it)."""
    if isinstance(store, WorkAnnouncer):
        store.announce_work(uuid)


class Coalescing:
    """Announcements sent by one thread of their own, all those pending in one batch.

    A caller that queued work should not wait for a round trip that only
    wakes others, and a burst of queued nodes (a CLI or API moving hundreds
    at once) is told in one statement rather than one each: listeners are
    then woken once per batch, not once per node. ``send`` gets the UUIDs in
    the order they came; its errors are logged, not raised (the services'
    poll finds work whose announcement was lost). :meth:`close` sends what
    is pending before it returns.
    """

    def __init__(self, send: Callable[[list[str]], None]) -> None:
        self._send = send
        self._ready = threading.Condition()
        self._pending: list[str] = []
        self._closed = False
        self._thread: threading.Thread | None = None
        #: Batches sent (tests and benchmarks read it).
        self.batches = 0

    def add(self, uuid: str) -> None:
        """Queue one announcement; the thread starts on the first."""
        with self._ready:
            if self._closed:
                return
            self._pending.append(uuid)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="ironic-fsm-announce", daemon=True
                )
                self._thread.start()
            self._ready.notify()

    def close(self) -> None:
        """Send what is pending, then stop the thread; later announcements are dropped."""
        with self._ready:
            self._closed = True
            thread = self._thread
            self._ready.notify()
        if thread is not None:
            thread.join()

    def _loop(self) -> None:
        while True:
            with self._ready:
                while not self._pending and not self._closed:
                    self._ready.wait()
                batch, self._pending = self._pending, []
            if batch:
                try:
                    self._send(batch)
                    self.batches += 1
                except Exception as exc:
                    LOG.warning(
                        "%d queued node(s) not announced (%s); the services' poll finds them",
                        len(batch),
                        exc,
                    )
            elif self._closed:
                return
