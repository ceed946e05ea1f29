"""A webhook for notifications: each one POSTed as a CloudEvent (structured JSON mode).

The CloudEvent is made by the CloudEvents SDK (``cloudevents``): ``id`` is
the notification's ``message_id`` (a receiver drops a copy it has seen),
``type`` its ``event_type``, ``source`` the publisher, ``subject`` the
node's UUID, ``time`` the event's, ``data`` the whole notification.

A POST is retried with tenacity while the receiver is unreachable, times
out or answers 5xx or 429, with growing waits, for at most
``give_up_after`` seconds; then the notification is dropped, counted and
logged. Any other 4xx is final (the receiver refuses that one).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, Final

import httpx
from cloudevents.core.bindings.http import to_structured_event
from cloudevents.core.v1.event import CloudEvent
from tenacity import (
    Retrying,
    retry_if_exception_type,
    stop_after_delay,
    wait_exponential,
)

from ironic_fsm.notifications._payloads import Notification

__all__ = ["GIVE_UP_AFTER", "RetryableAnswer", "WebhookSender"]

LOG = logging.getLogger("ironic_fsm.notifications")

#: Seconds one notification is retried before it is dropped.
GIVE_UP_AFTER: Final = 600.0
#: Seconds one POST may take (a slow receiver is waited for, not sent a copy).
POST_TIMEOUT: Final = 30.0


class RetryableAnswer(Exception):
    """The receiver answered 5xx or 429: try again later."""


class WebhookSender:
    """POSTs notifications to one URL, in the caller's thread, retrying as above."""

    def __init__(
        self, url: str, *, give_up_after: float = GIVE_UP_AFTER, timeout: float = POST_TIMEOUT
    ) -> None:
        self.url = url
        self._client = httpx.Client(timeout=timeout)
        self._give_up_after = give_up_after
        #: Notifications delivered, and dropped after the retries or refused.
        self.delivered = 0
        self.dropped = 0

    def close(self) -> None:
        self._client.close()

    def send(self, notification: Notification) -> bool:
        """Deliver ``notification``; False when it was dropped (logged)."""
        attributes: dict[str, Any] = {
            "id": notification.message_id,
            "type": notification.event_type,
            "source": notification.publisher_id,
            "subject": notification.node,
            "datacontenttype": "application/json",
        }
        if notification.timestamp:
            attributes["time"] = datetime.fromisoformat(notification.timestamp)
        event = CloudEvent(attributes=attributes, data=notification.to_dict())
        message = to_structured_event(event)
        retrying = Retrying(
            retry=retry_if_exception_type((httpx.TransportError, RetryableAnswer)),
            wait=wait_exponential(multiplier=0.1, max=5),
            stop=stop_after_delay(self._give_up_after),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    self._post(message.headers, message.body)
        except (httpx.HTTPError, RetryableAnswer, _Refused) as error:
            self.dropped += 1
            LOG.warning(
                "Notification %s of node %s dropped: %s",
                notification.event_type, notification.node, error,
            )  # fmt: skip
            return False
        self.delivered += 1
        return True

    def _post(self, headers: dict[str, str], body: bytes) -> None:
        answer = self._client.post(self.url, headers=headers, content=body)
        status = answer.status_code
        if status >= 500 or status == 429:
            raise RetryableAnswer(f"the receiver answered {status}")
        if status >= 400:
            raise _Refused(f"the receiver refused it ({status})")


class _Refused(Exception):
    """The receiver answered 4xx: not retried."""
