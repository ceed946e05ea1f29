"""``ironic-fsm serve --notify-url``: a real service posts its notifications to a webhook."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
from api_helpers import serve_api
from test_notifications import Receiver, receiver  # noqa: F401 - the fixture

HEADERS = {"X-OpenStack-Ironic-API-Version": "1.81"}


def test_serve_posts_the_notifications_of_a_verb(tmp_path: Path, receiver: Receiver) -> None:  # noqa: F811
    receiver.start()
    hook = f"http://127.0.0.1:{receiver.port}/hook"
    with serve_api("--db", str(tmp_path / "nodes.sqlite"), "serve", "--notify-url", hook) as (
        url, lines,
    ):  # fmt: skip
        created = httpx.post(f"{url}/v1/nodes", json={"driver": "fake-hardware"},
                             headers=HEADERS, timeout=60)  # fmt: skip
        assert created.status_code == 201, created.text
        uuid = created.json()["uuid"]
        answer = httpx.put(f"{url}/v1/nodes/{uuid}/states/provision", json={"target": "manage"},
                           headers=HEADERS, timeout=60)  # fmt: skip
        assert answer.status_code == 202, answer.text
        deadline = time.monotonic() + 60
        while len(receiver.bodies) < 4:
            assert time.monotonic() < deadline, lines
            time.sleep(0.1)
    events = [json.loads(body) for body in receiver.bodies]
    assert [(e["type"], e["subject"]) for e in events] == [
        ("baremetal.node.create.start", uuid),
        ("baremetal.node.create.end", uuid),
        ("baremetal.node.provision_set.start", uuid),
        ("baremetal.node.provision_set.end", uuid),
    ]
    data = events[-1]["data"]["payload"]["ironic_object.data"]
    assert data["provision_state"] == "manageable"
    assert data["previous_provision_state"] == "verifying"
