"""A job: one reserved node at work, and the checks the conductor makes on it.

Drivers get the job's :class:`~ironic_fsm.task.Task` (node, driver,
config); the conductor keeps its own notes on the job beside it. Split
from :mod:`.runtime` (which re-exports :class:`Job` and :func:`driver_call`)
to keep that module walkable.
"""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Any

from ironic_fsm.conductor.common import driver_error
from ironic_fsm.exceptions import IronicFSMError
from ironic_fsm.node import Node, check_name, check_storable
from ironic_fsm.task import Task

if TYPE_CHECKING:
    from ironic_fsm.events import Event
    from ironic_fsm.hardware import HardwareType

__all__ = ["Job", "check_fields", "check_name_once", "driver_call"]


class Job:
    """One reserved node at work: the task drivers get, and the conductor's notes on it.

    A plain slotted class: one is made per request, on the hot path.
    """

    __slots__ = (
        "announce", "detached", "events", "history", "name_ok", "ran_flow", "task", "took_entry",
    )  # fmt: skip

    def __init__(self, task: Task) -> None:
        self.task = task
        #: Events waiting for the save that records them.
        self.events: list[Event] = []
        #: History waiting for the save that records it: (severity, event type, text or
        #: ``None`` for the node's ``last_error`` as saved, user).
        self.history: list[tuple[str, str, str | None, str | None]] = []
        #: The reservation went elsewhere (a background worker) or the node is gone.
        self.detached = False
        #: The node was queued: announce it once the release has been saved.
        self.announce = False
        #: The name last found to follow Ironic's rules (a str never changes: one check
        #: per name, not per save).
        self.name_ok: str | None = None
        #: A flow ran (:meth:`~.runtime.Runtime._guarded`): the final save also judges what it left.
        self.ran_flow = False
        #: The node's queue entry was taken at a claim: a re-read copy drops it too.
        self.took_entry = False

    # Read on every line of every flow: C-level getters, no Python call.
    if TYPE_CHECKING:

        @property
        def node(self) -> Node: ...

        @node.setter
        def node(self, node: Node) -> None: ...

        @property
        def driver(self) -> HardwareType: ...

    else:

        def _set_node(self, node):
            self.task.node = node

        node = property(attrgetter("task.node"), _set_node)
        driver = property(attrgetter("task.driver"))


def check_name_once(job: Job) -> None:
    """Ironic's name rules; a bad name raises what :meth:`Node.check_types` would."""
    node = job.node
    name = node.name
    if name is None or name is job.name_ok:
        return
    try:
        check_name(name)
    except Exception:
        node.check_types()  # a field of the wrong type is named first, as it always was
        raise
    job.name_ok = name


def check_fields(job: Job) -> None:
    """:meth:`Node.check_types`, the name checked once per job (see :attr:`Job.name_ok`)."""
    check_storable(job.node)
    check_name_once(job)


def driver_call(job: Job, kind: str, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``driver.<kind>.<method>(task, ...)``; foreign errors become DriverError.

    Third-party interfaces raise whatever they like, often with the
    credentials they were given in the text: callers get one typed,
    scrubbed error, with the original chained.
    """
    try:
        return getattr(getattr(job.driver, kind), method)(job.task, *args, **kwargs)
    except IronicFSMError:
        raise
    except Exception as exc:
        raise driver_error(exc, job.node, kind, method) from exc
