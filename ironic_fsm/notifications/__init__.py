"""Ironic's versioned notifications, to listeners and optionally to a webhook.

:class:`Notifier` is a conductor listener. It only queues each event, so a
flow pays a deque append and nothing else; one thread of its own reads the
node, builds the notification (:mod:`._payloads`: Ironic's event types,
priorities and versioned payloads) and hands it, in the order the events
came, to its listeners and to the webhook (:mod:`._webhook`: CloudEvents
over HTTP, retried with tenacity). A dead or slow webhook delays the
notifications, never a flow. Needs the ``notify`` extra for the webhook
(httpx, tenacity, cloudevents); ``ironic-fsm serve --notify-url URL`` turns it on.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

from ironic_fsm.events import Event
from ironic_fsm.exceptions import IronicFSMError, NodeNotFound
from ironic_fsm.node import Node
from ironic_fsm.notifications._payloads import Notification, notification_for, provision_status

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor
    from ironic_fsm.notifications._webhook import WebhookSender

__all__ = ["MAX_QUEUED", "Notification", "Notifier", "notification_for", "provision_status"]

LOG = logging.getLogger("ironic_fsm.notifications")

#: Events held while the webhook is down, at most: beyond, the oldest is dropped (and
#: counted) rather than the process growing without end.
MAX_QUEUED: Final = 100_000


class Notifier:
    """Turns a conductor's events into notifications, off the flows' threads.

    Args:
        conductor: The conductor whose events are told (the notifier adds
            itself as a listener) and whose store the nodes are read from.
        listeners: Callables each given every :class:`Notification`.
        webhook_url: Also POST each one there as a CloudEvent.
        max_queued: Events held at most; beyond, the oldest is dropped
            (:attr:`dropped` counts them).
    """

    def __init__(
        self,
        conductor: Conductor,
        listeners: Iterable[Callable[[Notification], None]] = (),
        *,
        webhook_url: str | None = None,
        webhook: WebhookSender | None = None,
        max_queued: int = MAX_QUEUED,
    ) -> None:
        self._conductor = conductor
        self.listeners = list(listeners)
        if webhook is None and webhook_url is not None:
            from ironic_fsm.notifications._webhook import WebhookSender

            webhook = WebhookSender(webhook_url)
        self.webhook = webhook
        #: Events to tell, each with the record it is about when the conductor gave it.
        self._queue: deque[tuple[Event, Node | None]] = deque()
        self._max_queued = max_queued
        #: Events dropped because the queue was full.
        self.dropped = 0
        self._wake = threading.Condition()
        self._stopping = False
        self._idle = threading.Event()
        self._idle.set()
        self._thread = threading.Thread(target=self._run, name="ironic-fsm-notify", daemon=True)
        self._thread.start()
        conductor.add_listener(self)
        conductor.add_record_listener(self.record_changed)

    def __call__(self, event: Event) -> None:
        """The listener: queue the event (what the flow pays) and wake the thread."""
        self._put(event, None)

    def record_changed(self, event: Event, node: Node) -> None:
        """The record listener: a node created, updated or deleted, with its record."""
        self._put(event, node)

    def _put(self, event: Event, node: Node | None) -> None:
        with self._wake:
            if len(self._queue) >= self._max_queued:
                self._queue.popleft()
                self.dropped += 1
                if self.dropped == 1 or self.dropped % 1000 == 0:
                    LOG.warning("Notifications: %d dropped, the queue is full", self.dropped)
            self._queue.append((event, node))
            self._idle.clear()
            self._wake.notify()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued event has been told; whether it was within ``timeout``."""
        return self._idle.wait(timeout)

    def stop(self, timeout: float = 10.0) -> None:
        """Tell what is queued (for up to ``timeout`` seconds), then stop the thread."""
        self.flush(timeout)
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join(timeout)
        if self.webhook is not None:
            self.webhook.close()

    def _run(self) -> None:
        queue = self._queue
        while True:
            with self._wake:
                while not queue and not self._stopping:
                    self._idle.set()
                    self._wake.wait()
                if not queue:
                    return
            event, node = queue.popleft()
            try:
                self._tell(event, node)
            except Exception:
                LOG.exception("Notification of %s for node %s failed", event.name, event.node)

    def _tell(self, event: Event, node: Node | None) -> None:
        if node is None:
            node = self._read(event.node)
        notification = notification_for(event, node, self._conductor.config.host)
        if notification is None:
            return
        for listener in self.listeners:
            try:
                listener(notification)
            except Exception:
                LOG.exception("Notification listener %r failed", listener)
        if self.webhook is not None:
            self.webhook.send(notification)

    def _read(self, uuid: str) -> Node | None:
        try:
            return self._conductor.get_node(uuid)
        except NodeNotFound:
            return None
        except IronicFSMError as error:
            LOG.warning("Notification of node %s without its record: %s", uuid, error)
            return None
