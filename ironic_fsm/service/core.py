"""The service around one conductor: flow threads, periodic duties, a clean stop.

A :class:`~ironic_fsm.Conductor` does the work when asked; a fleet needs
something that asks: claims queued work, heartbeats, takes over the nodes
of dead conductors, times out waits, syncs power and trims history, each
on its own timer with Ironic's option names. :class:`Service` is that
something, for ``ironic-fsm serve`` and for applications that embed it.
It never configures logging and installs signal handlers only when asked
(``ironic-fsm serve`` asks).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import FrameType
from typing import TYPE_CHECKING, Any, Final

import attrs

from ironic_fsm.service.listener import Listener
from ironic_fsm.service.periodic import Periodic

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor

__all__ = [
    "DEFAULT_WORKERS", "EXIT_FORCED", "EXIT_OK", "FlowExecutor", "Service", "ServiceOptions",
]  # fmt: skip

LOG = logging.getLogger("ironic_fsm.service")

#: Exit code of a service that drained and went offline.
EXIT_OK: Final = 0
#: Exit code of a service stopped at once (second signal, or the graceful timeout):
#: flows in progress were abandoned, to be resumed by the other conductors.
EXIT_FORCED: Final = 3
#: Flow threads by default. Ironic's ``workers_pool_size`` (300 green threads)
#: assumes eventlet; here each flow is an OS thread that mostly waits on a BMC
#: or the database, so a few per core keep two cores busy without piling up
#: reservations that another, idle conductor could have run.
DEFAULT_WORKERS: Final = 8
#: Claim poll period on SQLite (no notifications there) and as PostgreSQL's safety net.
POLL_SQLITE: Final = 1.0
POLL_POSTGRES: Final = 10.0
#: Seconds a woken claim waits for the rest of its burst (notifications, flows ending at
#: once): measured on bench_scaleout, a fifth fewer claim passes for 2 ms of latency.
CLAIM_SETTLE: Final = 0.002
#: How often a draining service looks at what is still running.
_DRAIN_TICK: Final = 0.05
#: How often a running service looks for signals (its handler only notes them).
_SIGNAL_TICK: Final = 0.2


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not value > 0):
        raise ValueError(f"{attribute.name} must be > 0, not {value!r}")


@attrs.frozen(kw_only=True)
class ServiceOptions:
    """How the service runs; the conductor's own options stay in :class:`~ironic_fsm.Config`."""

    #: Flow threads (and the most nodes this service claims at once).
    workers: int = attrs.field(default=DEFAULT_WORKERS, validator=_positive)
    #: Seconds between two claims of queued work; ``None``: 1 on SQLite, 10 with ``listen_dsn``.
    poll_interval: float | None = attrs.field(default=None, validator=_positive)
    #: Ironic's option: seconds a drain waits for running flows before stopping at once.
    graceful_shutdown_timeout: float = attrs.field(default=60.0)
    #: PostgreSQL connection string to ``LISTEN`` on for queued work (``None``: poll only).
    #: Left out of the repr: it may carry the database password.
    listen_dsn: str | None = attrs.field(default=None, repr=False)


class FlowExecutor(ThreadPoolExecutor):
    """The conductor's flow threads; each flow that ends lets the service claim more at once.

    Without it a service with every thread busy would pick up the next
    queued node only at its next poll or notification.
    """

    def __init__(self, workers: int, on_done: Callable[[], None] | None = None) -> None:
        super().__init__(max_workers=workers, thread_name_prefix="ironic-fsm-flow")
        #: Called after each flow; the service sets it.
        self.on_done = on_done

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        future.add_done_callback(self._finished)
        return future

    def _finished(self, _future: Future[Any]) -> None:
        if self.on_done is not None:
            self.on_done()


class Service:
    """Runs one conductor as a service until stopped; see ``docs/fleet.rst``.

    Args:
        conductor: The conductor, built with ``executor`` as its executor.
        executor: Its :class:`FlowExecutor` (``None``: the conductor runs
            flows in the service's own threads, for tests and tiny setups).
        options: How the service runs.
    """

    def __init__(
        self,
        conductor: Conductor,
        *,
        executor: FlowExecutor | None = None,
        options: ServiceOptions | None = None,
    ) -> None:
        self.conductor = conductor
        self.executor = executor
        self.options = options or ServiceOptions()
        #: Set when new work can be claimed: a notification, a finished flow, a stop.
        self.wake = threading.Event()
        if executor is not None and executor.on_done is None:
            executor.on_done = self.wake.set
        self._stopping = threading.Event()
        self._forced = threading.Event()
        #: Signals received (appended by the handler) and how many were acted on.
        self._signals: list[int] = []
        self._signals_seen = 0
        self._started = False
        self.draining = False
        self.tasks: dict[str, Periodic] = {}
        self.listener: Listener | None = None
        #: Called once the conductor is registered and the duties run (the API starts here).
        self.on_started: list[Callable[[], None]] = []
        #: Called first when stopping, before the drain (the API stops here).
        self.on_stopping: list[Callable[[], None]] = []

    # -- the public face ----------------------------------------------------------------------

    def run(self, *, handle_signals: bool = False) -> int:
        """Start, block until stopped, shut down; :data:`EXIT_OK` or :data:`EXIT_FORCED`.

        With ``handle_signals`` (main thread only), the first SIGTERM or
        SIGINT drains and the second stops at once.
        """
        previous = self._install_signals() if handle_signals else {}
        try:
            self.start()
            while not self._stopping.wait(_SIGNAL_TICK):
                self._act_on_signals()
            return self._shut_down()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def stop(self, graceful: bool = True) -> None:
        """Ask :meth:`run` to drain (``graceful``) or to stop at once; safe from any thread."""
        if not graceful or self._stopping.is_set():
            self._forced.set()
        self._stopping.set()

    def running(self) -> int:
        """Flows queued or running in this service's conductor."""
        return self.conductor.running()

    def start(self) -> None:
        """Register the conductor and start the duties; :meth:`run` calls it.

        Registering happens here, in the caller, so that a conductor that
        cannot serve what it is told to (an enabled hardware type missing)
        fails to start rather than failing in a thread.
        """
        if self._started:
            return
        self._started = True
        self.conductor.heartbeat()
        if self.options.listen_dsn is not None:
            self.listener = Listener(self.options.listen_dsn, self.wake)
            self.listener.start()
        for task in self._duties():
            self.tasks[task.name] = task
            task.start()
        LOG.info(
            "Conductor %s serving: %d flow threads, duties %s",
            self.conductor.holder, self.options.workers, ", ".join(self.tasks) or "none",
        )  # fmt: skip
        try:
            for hook in self.on_started:
                hook()
        except BaseException:
            # A front end that cannot start (its port taken, say): undo, so that the
            # conductor does not stay registered as alive with nobody behind it.
            if self.listener is not None:
                self.listener.stop()
            self._stop_threads(forced=False)
            self.conductor.unregister()
            raise

    # -- the duties ----------------------------------------------------------------------------

    def _duties(self) -> list[Periodic]:
        """Each periodic duty the conductor offers and the settings enable."""
        conductor, config = self.conductor, self.conductor.config
        beat = config.heartbeat_interval
        duties = [
            Periodic("heartbeat", conductor.heartbeat, beat, first_delay=beat),
            # As Ironic checks for dead conductors: once per heartbeat period.
            Periodic("takeover", conductor.recover, beat),
            Periodic(
                "claim", self._claim, self._poll_interval(), wake=self.wake, settle=CLAIM_SETTLE
            ),
        ]
        optional: list[tuple[str, Callable[[], object], float]] = [
            ("timeouts", conductor.check_timeouts, config.check_provision_state_interval),
            ("power_sync", conductor.sync_power_states, config.sync_power_state_interval),
            ("history_trim", conductor.trim_node_history, config.node_history_cleanup_interval),
        ]
        if config.send_sensor_data:
            optional.append(
                ("sensors", conductor.send_sensor_data, config.send_sensor_data_interval)
            )
        duties += [Periodic(name, duty, every) for name, duty, every in optional if every > 0]
        return duties

    def _poll_interval(self) -> float:
        if self.options.poll_interval is not None:
            return self.options.poll_interval
        return POLL_POSTGRES if self.options.listen_dsn is not None else POLL_SQLITE

    def _claim(self) -> None:
        """Claim queued work, as much as there are free flow threads."""
        if self.draining:
            return
        free = self.options.workers - self.running()
        if free > 0:
            self.conductor.claim_work(limit=free)

    # -- stopping -----------------------------------------------------------------------------

    def _install_signals(self) -> dict[int, Any]:
        def handler(signum: int, _frame: FrameType | None) -> None:
            # Only count: a handler runs between two bytecodes of the main thread, which
            # may hold the very lock an Event or a log handler would take here.
            self._signals.append(signum)

        return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}

    def _act_on_signals(self) -> None:
        """Stop for each signal the handler counted: drain on the first, at once on the next."""
        while len(self._signals) > self._signals_seen:
            signum = self._signals[self._signals_seen]
            self._signals_seen += 1
            how = "at once" if self._stopping.is_set() else "after draining"
            LOG.warning("Signal %s: stopping %s", signal.Signals(signum).name, how)
            self.stop()

    def _shut_down(self) -> int:
        """Drain (unless forced), stop the duties, go offline; the exit code."""
        for hook in self.on_stopping:
            try:
                hook()
            except Exception:
                LOG.exception("Stopping a front end failed")
        self.draining = True
        for name, task in self.tasks.items():
            if name != "heartbeat":  # others must keep seeing us alive while we drain
                task.stop()
        if self.listener is not None:
            self.listener.stop()
        self.conductor.drain()
        forced = not self._wait_drained()
        self._stop_threads(forced)
        try:
            self.conductor.unregister()
        except Exception:
            LOG.exception("Going offline failed; the others see this conductor dead in time")
        if forced:
            LOG.warning(
                "Stopped at once with %d flow(s) unfinished: the other conductors resume "
                "them at their recorded step",
                self.running(),
            )
            return EXIT_FORCED
        LOG.info("Conductor %s drained and offline", self.conductor.holder)
        return EXIT_OK

    def _stop_threads(self, forced: bool) -> None:
        """Stop the timers and the flow threads; wait for them unless stopping at once."""
        for task in self.tasks.values():
            task.stop()
        if self.executor is not None:
            self.executor.shutdown(wait=not forced, cancel_futures=forced)
        if not forced:
            for task in self.tasks.values():
                task.join()

    def _wait_drained(self) -> bool:
        """Wait for running flows to end; ``False`` when forced or out of time."""
        deadline = time.monotonic() + self.options.graceful_shutdown_timeout
        while self.running() > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                LOG.warning(
                    "Drain: %d flow(s) still running after graceful_shutdown_timeout (%g s)",
                    self.running(), self.options.graceful_shutdown_timeout,
                )  # fmt: skip
                return False
            self._act_on_signals()
            if self._forced.wait(min(_DRAIN_TICK, left)):
                return False
        return True
