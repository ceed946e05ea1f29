"""Worker threads for pyghmi calls, and one lock per BMC.

pyghmi has no timeouts, so each of its calls runs in a worker and the
caller waits with a deadline (:mod:`.session`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ironic_fsm.drivers.ipmi.driver_info import IPMIInfo

T = TypeVar("T")


class _DaemonPool:
    """A small, lazily grown pool of daemon threads returning futures.

    Not :class:`concurrent.futures.ThreadPoolExecutor`: its workers are
    joined at interpreter exit, and a pyghmi call that never returns (a BMC
    that stops half-way through the login handshake) would then hang the
    application's exit. Daemon workers do not; idle ones exit after a while,
    and the pool grows when every worker is busy (or stuck), up to a bound.
    """

    def __init__(self, max_workers: int = 32, idle_seconds: float = 30.0) -> None:
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._max = max_workers
        self._idle_seconds = idle_seconds
        self._threads = 0
        self._idle = 0

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            self._queue.put((future, fn))
            if self._queue.qsize() > self._idle and self._threads < self._max:
                self._threads += 1
                self._idle += 1
                name = f"ironic_fsm-ipmi-{self._threads}"
                threading.Thread(target=self._work, name=name, daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            try:
                future, fn = self._queue.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._queue.qsize():
                        continue
                    self._idle -= 1
                    self._threads -= 1
                    return
            with self._lock:
                self._idle -= 1
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # handed to whoever waits on the future
                    future.set_exception(exc)
            del future, fn
            with self._lock:
                self._idle += 1


_POOL: _DaemonPool | None = None
_POOL_LOCK = threading.Lock()


def pool() -> _DaemonPool:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = _DaemonPool()
        return _POOL


# One operation at a time per BMC: operations log out when they finish, and
# pyghmi shares one session between all callers with the same credentials.
_BMC_LOCKS: dict[tuple[str, int], threading.Lock] = {}
_BMC_LOCKS_GUARD = threading.Lock()


def bmc_lock(info: IPMIInfo) -> threading.Lock:
    with _BMC_LOCKS_GUARD:
        return _BMC_LOCKS.setdefault((info.address, info.port), threading.Lock())
