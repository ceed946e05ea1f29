"""Record changes told to the record listeners, as Ironic's API notifies them.

Ironic sends ``baremetal.node.<action>.start`` before a create, update,
delete or maintenance change, ``.end`` once it is saved and ``.error`` when
it failed; :class:`RecordNotices` does the same around the conductor's
record changes (:meth:`RecordNotices.around`), each event with the record
(as it was before, for ``start`` and ``error``; as saved, for ``end``; as
it was, for a delete). Nothing is read or built when nobody listens.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Final

from ironic_fsm.conductor.context import Context
from ironic_fsm.events import Event
from ironic_fsm.exceptions import IronicFSMError
from ironic_fsm.node import Node

__all__ = ["RecordListener", "RecordNotices", "record_event_name"]

LOG = logging.getLogger("ironic_fsm.conductor")

RecordListener = Callable[[Event, Node], None]
_PREFIX: Final = "baremetal.node"


def record_event_name(action: str, status: str) -> str:
    """``baremetal.node.<action>.<status>`` (``create``, ``update``, ``delete``,
    ``maintenance_set``; ``start``, ``end``, ``error``)."""
    return f"{_PREFIX}.{action}.{status}"


class RecordNotices:
    """The conductor's record listeners, and the events of its record changes."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        self.listeners: list[RecordListener] = []

    def changed(self, action: str, status: str, node: Node) -> None:
        """Tell every record listener of ``action``'s ``status`` for ``node``."""
        if not self.listeners:
            return
        name = record_event_name(action, status)
        event = Event(
            name=name, node=node.uuid, previous_state=None, event=None,
            state=node.provision_state, target=node.target_provision_state,
            timestamp=self._ctx.clock(), node_name=node.name,
        )  # fmt: skip
        for listener in self.listeners:
            try:
                listener(event, node)
            except Exception:
                LOG.exception("Record listener %r failed on %s", listener, name)

    @contextlib.contextmanager
    def around(self, action: str, before: Callable[[], Node | None]) -> Iterator[None]:
        """``start`` before the block, ``error`` if it raises one of ours (the change
        refused or failed), with the record ``before()`` gives (``None``: none to tell
        of, as for a create whose fields make no node). ``end`` is the caller's, with
        the record as saved."""
        node = None
        if self.listeners:
            try:
                node = before()
            except (IronicFSMError, TypeError, ValueError):  # no such node, or fields no
                # node has (refused, or an unknown name): the block raises it and says which
                node = None
        if node is not None:
            self.changed(action, "start", node)
        try:
            yield
        except IronicFSMError:
            if node is not None:
                self.changed(action, "error", node)
            raise
