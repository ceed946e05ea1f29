"""The conductor: takes verbs, drives nodes through the lifecycle, runs steps.

The conductor is the only part of ironic_fsm that does I/O: it reads and
writes the store and calls hardware interfaces. Without an ``executor`` it
works synchronously: a verb returns once the node has settled in a stable,
wait, hold or failure state. With an executor (anything with
``submit(fn, *args)``, such as :class:`concurrent.futures.ThreadPoolExecutor`)
the first transition happens in the caller and the rest in the executor.

A node is reserved in the store for the whole of an operation; a node that
is busy raises :class:`~ironic_fsm.exceptions.NodeLocked`. The node's state
and current step are saved before each step starts and after it ends, so
:meth:`Conductor.recover` can resume an interrupted flow at its step.

The package's modules, each importing only those listed before it (see
``docs/architecture.rst``): ``common`` (pure helpers), ``registry``
(hardware types and their declared steps), ``jobs`` (a reserved node at
work), ``runtime`` (reserve, checkpoint, events, spawn, power),
``plans`` (steps asked of drivers, templates, runbooks), ``engine`` (the
step engine and its per-phase table), ``flows`` (what each verb sets off),
``nodes`` (records and power), ``verbs`` (``do_provisioning_action``),
``ring`` (which live conductor owns a node: ``owns``, ``refresh_ring``),
``recovery`` (liveness, take-over, timeouts), ``reconcile`` (one verb toward
a wanted state), ``fleet`` (the conductor registry: register, heartbeat,
``list_conductors``), ``work`` (``claim_work``: the hand-off queue) and
``history`` (node history: read, trim). The queue itself (``hand_off``,
``drain``, ``running``) is kept by ``runtime``, where every flow starts.
:class:`Conductor` joins them.
"""

from __future__ import annotations

import os
import threading
import uuid as _uuid
from collections.abc import Callable, Iterable
from datetime import datetime

from ironic_fsm.conductor import runtime as _runtime
from ironic_fsm.conductor.common import process_start, utcnow
from ironic_fsm.conductor.fleet import Fleet
from ironic_fsm.conductor.history import History
from ironic_fsm.conductor.nodes import Nodes
from ironic_fsm.conductor.power_sync import PowerSync
from ironic_fsm.conductor.reconcile import Reconcile
from ironic_fsm.conductor.recovery import Recovery
from ironic_fsm.conductor.registry import HardwareRegistry
from ironic_fsm.conductor.runtime import Executor, Guard
from ironic_fsm.conductor.verbs import Verbs
from ironic_fsm.conductor.work import Work
from ironic_fsm.config import Config
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.hardware import HardwareType
from ironic_fsm.machine import LIFECYCLE, Lifecycle
from ironic_fsm.stores import MemoryStore, Store
from ironic_fsm.stores.base import CatalogStore, MemoryCatalog

__all__ = ["Conductor", "Guard", "Listener"]

#: A listener hears every :class:`~ironic_fsm.events.Event`.
Listener = _runtime.Listener


class Conductor(Fleet, History, Reconcile, Verbs, Work, PowerSync, Recovery, Nodes):
    """Drives nodes through Ironic's lifecycle.

    Args:
        store: Where nodes live; ``None`` means a new :class:`MemoryStore`.
        config: Operator settings; ``None`` means Ironic's defaults.
        listeners: Callables that receive every :class:`~ironic_fsm.events.Event`.
        clock: Returns the current time as an aware UTC datetime; injected
            so tests and simulations control time.
        executor: Runs long work in the background (``submit(fn, *args)``);
            ``None`` runs everything in the calling thread.
        lifecycle: The state machine; :data:`~ironic_fsm.LIFECYCLE` or one
            derived from it.
        guards: Callables that may veto user-requested transitions.
        hand_off: Queue the work a verb or callback sets off instead of
            running it: the first transition happens here, as always, then
            the node is saved in its working state, released and announced
            for a conductor service's :meth:`claim_work` (what a CLI or API
            process does when ``ironic-fsm serve`` processes do the work).
    """

    def __init__(
        self,
        store: Store | None = None,
        config: Config | None = None,
        listeners: Iterable[Listener] = (),
        clock: Callable[[], datetime] | None = None,
        executor: Executor | None = None,
        *,
        lifecycle: Lifecycle = LIFECYCLE,
        guards: Iterable[Guard] = (),
        hand_off: bool = False,
    ) -> None:
        if type(hand_off) is not bool:
            raise InvalidParameterValue(
                f"Conductor's hand_off must be True or False, not {hand_off!r}"
            )
        # The conductor's whole state; the mixins only declare what they use.
        self.store = store if store is not None else MemoryStore()
        self.config = config if config is not None else Config()
        self.lifecycle = lifecycle
        self._listeners = list(listeners)
        self._guards = list(guards)
        self._clock = clock or utcnow
        self._executor = executor
        self._registry = HardwareRegistry(self.config)
        self._templates = {}
        self._runbooks = {}
        self._catalog = self.store if isinstance(self.store, CatalogStore) else MemoryCatalog()
        self._hand_off = hand_off
        self._drain = threading.Event()
        self._flows_running = []
        #: This conductor's identity in reservations: host, process and instance.
        # The token carries the process start time, so that a reused PID is
        # not mistaken for this process after it is gone.
        started = process_start(os.getpid()) or "0"
        self.holder = f"{self.config.host}:{os.getpid()}:{started}-{_uuid.uuid4().hex[:8]}"

    def served_hardware_types(self) -> tuple[str, ...]:
        """The hardware types this conductor serves: enabled (default: installed) and registered.

        Raises DriverNotFound when ``Config.enabled_hardware_types`` names one that is neither.
        """
        return self._served_types()

    def add_listener(self, listener: Listener) -> None:
        """Start sending events to ``listener``."""
        self._listeners.append(listener)

    def add_guard(self, guard: Guard) -> None:
        """Let ``guard`` veto user-requested transitions."""
        self._guards.append(guard)

    def register_hardware_type(self, name: str, hardware_type: HardwareType) -> None:
        """Make ``hardware_type`` available to nodes whose ``driver`` is ``name``.

        Raises:
            InvalidParameterValue: two enabled clean steps of one interface
                share a priority (after the operator's overrides).
        """
        self._registry.register(name, hardware_type)
