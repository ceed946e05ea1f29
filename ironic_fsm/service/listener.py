"""Waking the service at once when work is queued on PostgreSQL (``LISTEN``).

Conductors that queue work announce it with ``NOTIFY ironic_fsm_work,
'<node uuid>'``. A listener holds one autocommit connection of its own
(never one of the store's pool, which a ``LISTEN`` would pin) and sets an
event on every notification; the claim task waits on that event, so new
work starts within a round trip instead of a poll period. The poll stays
as the safety net: a notification sent while the connection was being
re-opened is lost, and the next poll finds the work anyway.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import psycopg

__all__ = ["CHANNEL", "Listener", "conninfo"]

LOG = logging.getLogger("ironic_fsm.service")

#: The channel queued work is announced on (the conductor's ``NOTIFY``).
CHANNEL: Final = "ironic_fsm_work"
#: Seconds between two attempts to (re)open the listening connection.
RECONNECT_DELAY: Final = 2.0
#: Longest wait for one notification, so that a stop is noticed.
_NOTIFY_TIMEOUT: Final = 1.0


def conninfo(url: str) -> str | None:
    """The libpq connection string of a PostgreSQL store URL; ``None`` for any other kind."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ("postgresql", "postgresql+psycopg", "postgres"):
        return None
    return f"postgresql://{rest}"


class Listener:
    """A thread that ``LISTEN``s on :data:`CHANNEL` and sets ``wake`` on each notification."""

    def __init__(self, dsn: str, wake: threading.Event) -> None:
        self._dsn = dsn
        self._wake = wake
        self._stop = threading.Event()
        self._conn: psycopg.Connection[Any] | None = None
        #: Set once the first ``LISTEN`` is in place (tests wait on it).
        self.listening = threading.Event()
        #: Notifications received.
        self.received = 0
        self._thread = threading.Thread(target=self._loop, name="ironic-fsm-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> bool:
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _loop(self) -> None:
        import psycopg

        failed = 0  # tries failed in a row: an outage is logged once, and its end once
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._dsn, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.listening.set()
                    self._wake.set()  # work queued while we were not listening
                    if failed:
                        LOG.info("Listening for queued work again after %d failed tries", failed)
                        failed = 0
                    self._receive(conn)
            except psycopg.Error as exc:
                failed += 1
                # The message names the server, never the password (libpq does not echo it).
                LOG.log(
                    logging.WARNING if failed == 1 else logging.DEBUG,
                    "Listening for queued work failed (%s); polling until it is back, "
                    "trying again every %g s",
                    type(exc).__name__,
                    RECONNECT_DELAY,
                )
                self._stop.wait(RECONNECT_DELAY)

    def _receive(self, conn: psycopg.Connection[Any]) -> None:
        while not self._stop.is_set():
            for _ in conn.notifies(timeout=_NOTIFY_TIMEOUT, stop_after=1):
                self.received += 1
                self._wake.set()
