"""Announcing queued work: how a store wakes the conductors waiting for it.

A node queued for any conductor to claim (see ``Conductor(hand_off=True)``
and ``Conductor.claim_work``) is announced once its release is saved. On
PostgreSQL that is ``NOTIFY ironic_fsm_work, '<node uuid>'``, so that a
service ``LISTEN``ing on :data:`WORK_CHANNEL` wakes at once; other stores
have no way to tell, and their services poll.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["WORK_CHANNEL", "WorkAnnouncer", "announce_work"]

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


class _SQLAnnounce:
    """:class:`WorkAnnouncer` for ``SQLStore``: PostgreSQL notifies, SQLite cannot."""

    _db: Any

    def announce_work(self, uuid: str) -> None:
        """``NOTIFY`` on PostgreSQL, after the release committed; nothing on SQLite."""
        announce = getattr(self._db, "announce_work", None)  # only PostgresDB has one
        if announce is not None:
            announce(uuid)
