"""Events: what listeners hear about node lifecycles.

A listener is any callable taking one :class:`Event`. Events are immutable
and carry plain data only, so a listener may keep them, queue them or send
them elsewhere. Secrets are masked before an event is built.

Order, for one verb that runs steps synchronously::

    baremetal.node.provision_set.start   (stable -> working state)
    step.start, step.end                 (once per step; step.fail on failure)
    baremetal.node.provision_set.end     (working -> stable state)
    baremetal.node.provision_set.error   (instead: a ``fail`` event, or into a failure state)

Each transition produces exactly one ``provision_set`` event, emitted after
the new state is saved; step events are emitted after the step's state is
saved. A listener that raises is logged and does not stop the flow.

Changes of a node's record through the conductor (``create_node``,
``update_node``, ``delete_node``) are told, with the record, to the
conductor's *record listeners* only (``Conductor.add_record_listener``,
what notifications use), as Ironic's API tells them:
``baremetal.node.create.start`` before the change, ``.end`` after it is
saved, ``.error`` when it was refused or failed; likewise ``update``
(``maintenance_set`` when the change sets or clears maintenance) and
``delete``.

A power change asked of ``Conductor.set_power_state`` is told to the
listeners as ``baremetal.node.power_set.start`` when it begins and
``.end`` or ``.error`` when it is done (``PowerEvent``), as the power sync
tells what it forces.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from time import perf_counter
from typing import Any, Final

import attrs

__all__ = [
    "AGENT_COMMANDS",
    "AgentCommandWatch",
    "MAINTENANCE_SET_END",
    "MAINTENANCE_SET_ERROR",
    "MAINTENANCE_SET_START",
    "NODE_CREATE_END",
    "NODE_CREATE_ERROR",
    "NODE_CREATE_START",
    "NODE_DELETE_END",
    "NODE_DELETE_ERROR",
    "NODE_DELETE_START",
    "NODE_UPDATE_END",
    "NODE_UPDATE_ERROR",
    "NODE_UPDATE_START",
    "PROVISION_END",
    "PROVISION_ERROR",
    "PROVISION_START",
    "STEP_END",
    "STEP_FAIL",
    "STEP_START",
    "Event",
]

PROVISION_START: Final = "baremetal.node.provision_set.start"
PROVISION_END: Final = "baremetal.node.provision_set.end"
PROVISION_ERROR: Final = "baremetal.node.provision_set.error"
NODE_CREATE_END: Final = "baremetal.node.create.end"
NODE_UPDATE_END: Final = "baremetal.node.update.end"
NODE_DELETE_END: Final = "baremetal.node.delete.end"
MAINTENANCE_SET_END: Final = "baremetal.node.maintenance_set.end"
NODE_CREATE_START: Final = "baremetal.node.create.start"
NODE_CREATE_ERROR: Final = "baremetal.node.create.error"
NODE_UPDATE_START: Final = "baremetal.node.update.start"
NODE_UPDATE_ERROR: Final = "baremetal.node.update.error"
NODE_DELETE_START: Final = "baremetal.node.delete.start"
NODE_DELETE_ERROR: Final = "baremetal.node.delete.error"
MAINTENANCE_SET_START: Final = "baremetal.node.maintenance_set.start"
MAINTENANCE_SET_ERROR: Final = "baremetal.node.maintenance_set.error"
STEP_START: Final = "step.start"
STEP_END: Final = "step.end"
STEP_FAIL: Final = "step.fail"


@attrs.frozen
class Event:
    """Something happened to a node.

    Attributes:
        name: One of the ``PROVISION_*`` or ``STEP_*`` names above.
        node: The node's UUID.
        previous_state: The provision state before the transition (for step
            events, the state the step ran in).
        event: The machine event (``provide``, ``done``, ``fail``, ...), or
            ``None`` for step events.
        state: The provision state after the transition.
        target: The target provision state after the transition.
        step: The step involved (``interface``, ``step``, ``args``), if any.
        error: The error text for ``.error`` and ``step.fail`` events.
        timestamp: When it happened (the conductor's clock, UTC).
        node_name: The node's name when it happened (``None`` if it has
            none), so that a listener can say "dc-07 failed" without a store read.
    """

    name: str
    node: str
    previous_state: str | None
    event: str | None
    state: str
    target: str | None
    step: Mapping[str, Any] | None = None
    error: str | None = None
    timestamp: datetime | None = None
    node_name: str | None = None


#: A watcher of agent commands: ``(node, command, seconds, error class name or None)``.
AgentCommandWatcher = Callable[[str | None, str, float, str | None], None]


class AgentCommandWatch:
    """Who hears of each command sent to a ramdisk agent, and how long it took.

    The agent client serves every node of the process, so its commands are
    the process's: :data:`AGENT_COMMANDS` is the one watch, which the client
    times each request with (:meth:`timed`) and metrics subscribe to
    (:meth:`add`). With no watcher, a command pays one list test.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watchers: tuple[weakref.ref[AgentCommandWatcher], ...] = ()

    def add(self, watcher: AgentCommandWatcher) -> None:
        """Tell ``watcher`` of each command, while it lives: it is held weakly, so that
        the metrics of a conductor that is gone stop counting (and go)."""
        with self._lock:
            alive = tuple(ref for ref in self._watchers if ref() is not None)
            self._watchers = (*alive, weakref.ref(watcher))

    def remove(self, watcher: AgentCommandWatcher) -> None:
        with self._lock:
            self._watchers = tuple(ref for ref in self._watchers if ref() not in (None, watcher))

    @contextlib.contextmanager
    def timed(self, node: str | None, command: str) -> Iterator[None]:
        """Time the block: one command (``extension.name``, or ``list``) to ``node``'s agent;
        what it raised, if anything, is told by its class name (and raised on)."""
        watchers = self._watchers
        if not watchers:
            yield
            return
        started, error = perf_counter(), None
        try:
            yield
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            took = perf_counter() - started
            for ref in watchers:
                watcher = ref()
                if watcher is not None:
                    watcher(node, command, took, error)


#: The process's watch of agent commands (the line the agent client needs, in
#: ``AgentClient._request``: ``with AGENT_COMMANDS.timed(endpoint.node, command):``
#: around the request and the reading of its answer).
AGENT_COMMANDS: Final = AgentCommandWatch()
