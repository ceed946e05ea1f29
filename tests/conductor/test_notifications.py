"""Ironic's versioned notifications: to listeners, and to a webhook that is down, slow, then up.

The receiver is a real HTTP server on loopback, reading the CloudEvents
structured JSON it is sent. Whatever it does, the flows do not wait for it:
the notifier's listener only queues. Once it answers, every notification
arrives exactly once, in the order of its node's events, with no secret.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from helpers import Recorder, make_conductor, new_node, step

from ironic_fsm import Conductor, states
from ironic_fsm.events import PROVISION_END, PROVISION_ERROR, PROVISION_START
from ironic_fsm.exceptions import DriverNotFound, InvalidState
from ironic_fsm.notifications import Notification, Notifier, provision_status

SECRET = "Notify-Secret-77"
PROVISION_EVENTS = {PROVISION_START, PROVISION_END, PROVISION_ERROR}


class Receiver:
    """A webhook on a fixed port: started late, slow at first, recording what it gets."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.delay = 0.0
        self.bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                time.sleep(receiver.delay)
                receiver.bodies.append(body)
                receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with socket.socket() as probe:  # a port nobody listens on yet
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    found = Receiver(port)
    yield found
    found.stop()


def _lifecycle(conductor: Conductor, name: str) -> float:
    """A node through manage, provide, deploy; the seconds the verbs took."""
    node = conductor.create_node(
        name=name,
        driver="fake-hardware",
        driver_info={"ipmi_password": SECRET},
        instance_info={"image_source": "http://images/one.qcow2", "image_token": SECRET},
    )
    started = time.monotonic()
    for verb in ("manage", "provide", "deploy"):
        conductor.do_provisioning_action(node.uuid, verb)
    assert conductor.get_node(node.uuid).provision_state == states.ACTIVE
    return time.monotonic() - started


def test_a_webhook_down_slow_then_up_gets_each_notification_once_in_order(
    receiver: Receiver,
) -> None:
    recorder = Recorder()
    heard: list[Notification] = []
    conductor = Conductor(listeners=[recorder])
    notifier = Notifier(
        conductor, [heard.append], webhook_url=f"http://127.0.0.1:{receiver.port}/hook"
    )
    try:
        # Down: nobody listens; the flows go on at their own pace.
        took = [_lifecycle(conductor, f"down-{i}") for i in range(2)]
        # Slow: each answer takes 0.5 s; the backlog drains slowly, the flows do not wait
        # (a flow waiting on the webhook would take 0.5 s a notification, 3.5 s a lifecycle).
        receiver.delay = 0.5
        receiver.start()
        took.append(_lifecycle(conductor, "slow"))
        assert max(took) < 2, took
        deadline = time.monotonic() + 60
        while len(receiver.bodies) < 3:  # some answered slowly, then it is up and quick
            assert time.monotonic() < deadline, "the receiver never got anything"
            time.sleep(0.05)
        receiver.delay = 0.0
        assert notifier.flush(timeout=120), "the notifications never all arrived"
    finally:
        notifier.stop()
    expected = [e for e in recorder.events if e.name in PROVISION_EVENTS]
    events = [json.loads(body) for body in receiver.bodies]
    assert all(h["content-type"].startswith("application/cloudevents+json")
               for h in receiver.headers)  # fmt: skip
    ids = [event["id"] for event in events]
    nodes = {e.node for e in expected}
    # Each node's creation (start, end), then its provision events: each exactly once.
    assert len(ids) == len(set(ids)) == len(expected) + 2 * len(nodes) == len(heard)
    for node in nodes:
        sent = [
            (e["type"], e["data"]["payload"]["ironic_object.data"]["provision_state"])
            for e in events
            if e["subject"] == node
        ]
        assert sent == [
            ("baremetal.node.create.start", states.ENROLL),
            ("baremetal.node.create.end", states.ENROLL),
            *(
                (f"baremetal.node.provision_set.{provision_status(e)}", e.state)
                for e in expected
                if e.node == node
            ),
        ]  # in the node's order (start into work, end out of it: as Ironic's statuses)
    assert not any(SECRET.encode() in body for body in receiver.bodies)
    first = events[2]  # the first node's manage
    assert first["specversion"] == "1.0"
    assert first["source"] == f"ironic-conductor.{conductor.config.host}"
    payload = first["data"]["payload"]
    assert payload["ironic_object.name"] == "NodeSetProvisionStatePayload"
    assert payload["ironic_object.version"] == "1.18"
    assert payload["ironic_object.data"]["previous_provision_state"] == states.ENROLL
    assert payload["ironic_object.data"]["event"] == "manage"
    assert first["data"]["priority"] == "info"
    assert "driver_info" not in payload["ironic_object.data"]


def test_an_error_is_an_error_notification_and_listeners_hear_it() -> None:
    heard: list[Notification] = []
    conductor = make_conductor()
    notifier = Notifier(conductor, [heard.append])
    try:
        node = new_node(conductor, states.MANAGEABLE)
        conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "boom")])
        assert notifier.flush(timeout=60)
    finally:
        notifier.stop()
    assert [(n.event_type, n.priority) for n in heard if "provision_set" in n.event_type] == [
        ("baremetal.node.provision_set.start", "info"),
        ("baremetal.node.provision_set.error", "error"),
    ]
    data = heard[-1].payload["ironic_object.data"]
    assert data["provision_state"] == states.CLEANFAIL
    assert "disk on fire" in data["last_error"]


def test_record_changes_are_notified_in_order_with_their_record() -> None:
    heard: list[Notification] = []
    recorder = Recorder()
    conductor = Conductor(listeners=[recorder])
    notifier = Notifier(conductor, [heard.append])
    try:
        node = conductor.create_node(name="rec-1", driver="fake-hardware",
                                     driver_info={"ipmi_password": SECRET})  # fmt: skip
        conductor.update_node(node.uuid, extra={"rack": "r7"})
        conductor.update_node(node.uuid, maintenance=True, maintenance_reason="fan")
        conductor.update_node(node.uuid, maintenance=False)
        conductor.delete_node("rec-1")
        assert notifier.flush(timeout=60)
    finally:
        notifier.stop()
    assert recorder.events == []  # the other listeners hear no record change
    assert [n.event_type for n in heard] == [
        f"baremetal.node.{action}.{status}"
        for action in ("create", "update", "maintenance_set", "maintenance_set", "delete")
        for status in ("start", "end")
    ]
    ended = [n for n in heard if n.event_type.endswith(".end")]
    create, update, on, off, delete = (n.payload for n in ended)
    # A start tells of the record as it was before the change.
    assert heard[2].payload["ironic_object.data"]["extra"] == {}
    assert heard[4].payload["ironic_object.data"]["maintenance"] is False
    assert create["ironic_object.name"] == "NodeCRUDPayload"
    assert create["ironic_object.version"] == "1.15"
    assert create["ironic_object.data"]["driver_info"] == {"ipmi_password": "******"}
    assert update["ironic_object.data"]["extra"] == {"rack": "r7"}
    assert on["ironic_object.name"] == "NodePayload"
    assert on["ironic_object.data"]["maintenance"] is True
    assert on["ironic_object.data"]["maintenance_reason"] == "fan"
    assert off["ironic_object.data"]["maintenance"] is False
    assert delete["ironic_object.data"]["name"] == "rec-1"  # the record as it was
    assert not any(SECRET in json.dumps(n.to_dict()) for n in heard)


def test_a_full_queue_drops_the_oldest_and_counts_them(receiver: Receiver) -> None:
    conductor = Conductor()
    # Nobody listens at the webhook: the first notification waits in its retries.
    notifier = Notifier(conductor, webhook_url=f"http://127.0.0.1:{receiver.port}/hook",
                        max_queued=3)  # fmt: skip
    try:
        names = [f"q-{i}" for i in range(8)]
        for name in names:
            conductor.create_node(name=name, driver="fake-hardware")
        assert notifier.dropped >= 8 - 3 - 1  # one may be in the sender's hands
        receiver.start()
        assert notifier.flush(timeout=120)
    finally:
        notifier.stop()
    got = [json.loads(body)["data"]["payload"]["ironic_object.data"]["name"]
           for body in receiver.bodies]  # fmt: skip
    # Two a node (create.start, .end): the newest kept (and the one being retried), in order.
    assert got[-3:] == [names[-2], names[-1], names[-1]]
    assert got == sorted(got, key=names.index)
    assert len(got) + notifier.dropped == 2 * len(names)


def test_ironic_statuses_of_provision_power_and_refused_changes() -> None:
    heard: list[Notification] = []
    conductor = make_conductor()
    notifier = Notifier(conductor, [heard.append])
    try:
        node = new_node(conductor, states.ACTIVE, power_state=states.POWER_ON)
        conductor.do_provisioning_action(node.uuid, "undeploy")  # deleting -> cleaning: success
        conductor.set_power_state(node.uuid, states.POWER_OFF)
        with pytest.raises(DriverNotFound):
            conductor.update_node(node.uuid, driver="no-such-hardware")
        bad = new_node(conductor, states.MANAGEABLE, disable_power_off=True,
                       power_state=states.POWER_ON)  # fmt: skip
        with pytest.raises(InvalidState, match="disable_power_off"):
            conductor.set_power_state(bad.uuid, states.POWER_OFF)
        assert notifier.flush(timeout=60)
    finally:
        notifier.stop()
    mine = [(n.event_type, n.priority) for n in heard if n.node == node.uuid]
    assert [kind for kind in mine if "provision_set" in kind[0]] == [
        ("baremetal.node.provision_set.start", "info"),  # active -> deleting
        ("baremetal.node.provision_set.success", "info"),  # deleting -> cleaning
        ("baremetal.node.provision_set.end", "info"),  # cleaning -> available
    ]
    power = [n for n in heard if "power_set" in n.event_type]
    assert [(n.event_type, n.node) for n in power] == [
        ("baremetal.node.power_set.start", node.uuid),
        ("baremetal.node.power_set.end", node.uuid),
        ("baremetal.node.power_set.start", bad.uuid),
        ("baremetal.node.power_set.error", bad.uuid),
    ]
    assert {n.payload["ironic_object.data"]["to_power"] for n in power} == {states.POWER_OFF}
    assert power[-1].priority == "error"
    refused = [n for n in mine if "update" in n[0]]
    assert refused == [("baremetal.node.update.start", "info"),
                       ("baremetal.node.update.error", "error")]  # fmt: skip
    assert conductor.get_node(node.uuid).driver == node.driver  # the record as it was
