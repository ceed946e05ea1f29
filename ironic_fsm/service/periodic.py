"""A periodic task: one duty of the conductor, on its own thread and its own timer.

One thread per duty rather than one scheduler: there are half a dozen of
them, each spends its time waiting on the database or on BMCs, and a
thread of its own is the simplest way to make sure a slow pass (a power
sync over hundreds of BMCs, a trim deleting a backlog) never delays the
heartbeat that keeps this conductor alive in the eyes of the others.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

from ironic_fsm.exceptions import StoreUnavailable

__all__ = ["Periodic"]

LOG = logging.getLogger("ironic_fsm.service")


# No generated repr or eq: a duty's repr may show its owner, and each task is its own.
@attrs.define(repr=False, eq=False)
class Periodic:
    """Call ``duty`` every ``interval`` seconds until stopped; an error is logged, not fatal.

    The interval runs from the start of one pass to the start of the next,
    so that a pass that takes time does not push the schedule back; a pass
    longer than the interval is followed by the next one at once. ``wake``
    (optional) cuts a wait short, for duties that new work should start at
    once (claiming on a PostgreSQL notification); ``settle`` then lets the
    rest of a burst of wakes arrive, so that one pass serves them all.
    """

    name: str
    _duty: Callable[[], Any]
    interval: float
    _wake: threading.Event | None = attrs.field(default=None, kw_only=True)
    _first_delay: float = attrs.field(default=0.0, kw_only=True)
    #: Seconds a wake waits for the others of its burst before the pass.
    settle: float = attrs.field(default=0.0, kw_only=True)
    _stop: threading.Event = attrs.field(factory=threading.Event, init=False)
    #: Completed passes and failed ones (for tests and the operator's logs).
    passes: int = attrs.field(default=0, init=False)
    failures: int = attrs.field(default=0, init=False)
    #: Passes failed in a row because the store is unavailable (0: none now).
    _outage: int = attrs.field(default=0, init=False)
    _thread: threading.Thread = attrs.field(init=False)

    @_thread.default
    def _new_thread(self) -> threading.Thread:
        return threading.Thread(target=self._loop, name=f"ironic-fsm-{self.name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Ask the loop to end after the pass in progress (it is not interrupted)."""
        self._stop.set()
        if self._wake is not None:
            self._wake.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the loop to end; whether it did within ``timeout``."""
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _pause(self, seconds: float) -> None:
        if seconds <= 0:
            return
        if self._wake is None:
            self._stop.wait(seconds)
            return
        if self._wake.wait(seconds) and self.settle > 0:
            self._stop.wait(self.settle)  # let the wakes of a burst arrive: one pass for all
        self._wake.clear()

    def _loop(self) -> None:
        self._pause(self._first_delay)
        while not self._stop.is_set():
            started = time.monotonic()
            self.run_once()
            self._pause(self.interval - (time.monotonic() - started))

    def run_once(self) -> None:
        """One pass; whatever it raises is logged and counted, and the next pass comes anyway.

        A store that is unavailable (a database restarting, a disk full) is
        logged once when the outage starts and once when the task runs
        again, not with a traceback on every pass of the outage.
        """
        try:
            self._duty()
        except StoreUnavailable as exc:
            self.failures += 1
            self._outage += 1
            if self._outage == 1:
                LOG.warning(
                    "Periodic task %s: the store is unavailable (%s); retrying every %g s",
                    self.name, exc, self.interval,
                )  # fmt: skip
        except Exception:
            self.failures += 1
            LOG.exception(
                "Periodic task %s failed; it runs again in %g s", self.name, self.interval
            )
        else:
            self.passes += 1
            if self._outage:
                LOG.info(
                    "Periodic task %s: the store is back after %d failed passes",
                    self.name, self._outage,
                )  # fmt: skip
                self._outage = 0
