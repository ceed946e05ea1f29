"""The agent's lookup and heartbeat over HTTP (no IPA here): versions, states, texts, the token.

The real IPA speaks the same calls in test_ipa_peer.py; here every refusal
Ironic documents is met one by one, each asserting that the node is exactly
as it was.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bcrypt
import httpx
import pytest
from api_helpers import error_text

from ironic_fsm import Conductor, Config
from ironic_fsm.api import start_api
from ironic_fsm.events import Event
from ironic_fsm.stores import SQLStore

V162 = {"X-OpenStack-Ironic-API-Version": "1.62"}
V168 = {"X-OpenStack-Ironic-API-Version": "1.68"}
CALLBACK = "http://192.0.2.10:9999"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Conductor, httpx.Client, list[Event]]]:
    """A conductor on SQLite, its API with http_basic auth, and a client with no credentials."""
    users = tmp_path / "htpasswd"
    users.write_text(f"admin:{bcrypt.hashpw(b'pw', bcrypt.gensalt(rounds=4)).decode()}\n")
    events: list[Event] = []
    store = SQLStore(f"sqlite:///{tmp_path / 'nodes.sqlite'}")
    conductor = Conductor(store, Config(), listeners=[events.append])
    server = start_api(conductor, host="127.0.0.1", port=0, auth="http_basic", htpasswd=str(users))
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=60) as client:
            yield conductor, client, events
    finally:
        server.stop()
        store.close()


def _waiting(conductor: Conductor, state: str = "clean wait") -> str:
    return conductor.create_node(driver="fake-hardware", provision_state=state).uuid


def _lookup(client: httpx.Client, uuid: str, headers: dict[str, str] = V162) -> httpx.Response:
    return client.get("/v1/lookup", params={"node_uuid": uuid}, headers=headers)


def _heartbeat(client: httpx.Client, uuid: str, **body: Any) -> httpx.Response:
    body.setdefault("callback_url", CALLBACK)
    body.setdefault("agent_version", "13.0.0")
    sent = {name: value for name, value in body.items() if value is not None}  # None: left out
    return client.post(f"/v1/heartbeat/{uuid}", json=sent, headers=V168)


def test_lookup_needs_the_version_that_brought_it_and_an_address(served: Any) -> None:
    conductor, client, _ = served
    uuid = _waiting(conductor)
    assert _lookup(client, uuid, headers={}).status_code == 404  # 1.1: no such endpoint
    assert _lookup(client, uuid, {"X-OpenStack-Ironic-API-Version": "1.21"}).status_code == 404
    bare = client.get("/v1/lookup", headers=V162)
    assert bare.status_code == 400
    assert error_text(bare) == "At least one of 'addresses' and 'node_uuid' parameters is required"
    bad_macs = client.get("/v1/lookup", params={"addresses": "not-a-mac,zz"}, headers=V162)
    assert bad_macs.status_code == 400
    assert conductor.get_node(uuid).driver_internal_info == {}


@pytest.mark.parametrize("state", ["available", "manageable", "active", "enroll", "clean failed"])
def test_lookup_finds_no_node_that_expects_no_agent(served: Any, state: str) -> None:
    conductor, client, _ = served
    uuid = _waiting(conductor, state)
    answer = _lookup(client, uuid)
    assert answer.status_code == 404
    assert error_text(answer) == "Resource could not be found."
    # The same answer as for no node at all: a caller learns nothing more.
    missing = _lookup(client, "8c2a3f0e-0000-4000-8000-000000000000")
    assert (missing.status_code, error_text(missing)) == (404, "Resource could not be found.")
    assert conductor.get_node(uuid).driver_internal_info == {}


def test_the_token_is_given_once_then_masked_and_never_shown(
    served: Any, caplog: pytest.LogCaptureFixture
) -> None:
    conductor, client, events = served
    caplog.set_level(logging.DEBUG)
    uuid = _waiting(conductor, "deploying")
    first = _lookup(client, uuid)
    assert first.status_code == 200, first.text
    body = first.json()
    token = body["config"]["agent_token"]
    assert len(token) == 43
    assert token != "******"
    assert body["config"]["agent_token_required"] is True
    assert body["config"]["heartbeat_timeout"] == 300
    assert body["node"]["uuid"] == uuid
    assert set(body["node"]) == {"uuid", "properties", "instance_info", "driver_internal_info",
                                 "links"}  # fmt: skip
    assert body["node"]["driver_internal_info"] == {"agent_secret_token": "******"}
    assert conductor.get_node(uuid).driver_internal_info["agent_secret_token"] == token
    again = _lookup(client, uuid)
    assert again.json()["config"]["agent_token"] == "******"
    assert conductor.get_node(uuid).driver_internal_info["agent_secret_token"] == token

    assert _heartbeat(client, uuid, agent_token=token).status_code == 202
    shown = client.get(f"/v1/nodes/{uuid}", headers=V162, auth=("admin", "pw"))
    assert shown.status_code == 200
    assert shown.json()["driver_internal_info"]["agent_secret_token"] == "******"
    assert token not in shown.text
    assert token not in repr(conductor.get_node(uuid))
    assert all(token not in repr(event) for event in events)
    assert token not in caplog.text
    history = client.get(
        f"/v1/nodes/{uuid}/history",
        headers={"X-OpenStack-Ironic-API-Version": "1.78"},
        auth=("admin", "pw"),
    )
    assert token not in history.text


def test_a_heartbeat_records_the_agent(served: Any) -> None:
    conductor, client, _ = served
    uuid = _waiting(conductor)
    token = _lookup(client, uuid).json()["config"]["agent_token"]
    answer = _heartbeat(client, uuid, agent_token=token)
    assert answer.status_code == 202
    assert answer.content == b""
    info = conductor.get_node(uuid).driver_internal_info
    assert info["agent_url"] == CALLBACK
    assert info["agent_version"] == "13.0.0"
    assert info["agent_last_heartbeat"].startswith("20")
    # The heartbeat is public: no credentials were sent, and none are needed.
    assert client.get(f"/v1/nodes/{uuid}", headers=V162).status_code == 401


@pytest.mark.parametrize(
    ("change", "text"),
    [
        ({"agent_token": None}, "Agent token is required for heartbeat processing."),
        ({"agent_token": "x" * 43}, "Invalid or missing agent token received."),
        ({"callback_url": "http://192.0.2.66:9999"},
         'Detected change in ramdisk provided "callback_url"'),
        ({"callback_url": "ftp://192.0.2.10"},
         'An issue with the supplied "callback_url" has been detected.'),
        ({"agent_version": None},
         "Agent did not transmit a version, and a version is required. "
         "Please update the agent being used."),
        ({"agent_verify_ca": "-----BEGIN CERTIFICATE-----\nother\n"},
         'Detected change in ramdisk provided "agent_verify_ca"'),
    ],
)  # fmt: skip
def test_a_refused_heartbeat_changes_nothing(
    served: Any, change: dict[str, Any], text: str
) -> None:
    conductor, client, _ = served
    uuid = _waiting(conductor)
    token = _lookup(client, uuid).json()["config"]["agent_token"]
    pem = "-----BEGIN CERTIFICATE-----\nmine\n"
    assert _heartbeat(client, uuid, agent_token=token, agent_verify_ca=pem).status_code == 202
    before = conductor.get_node(uuid)
    body = {"agent_token": token, "agent_verify_ca": pem, **change}
    answer = _heartbeat(client, uuid, **body)
    assert answer.status_code == 400, answer.text
    assert error_text(answer) == text
    after = conductor.get_node(uuid)
    assert after.driver_internal_info == before.driver_internal_info
    assert after.version == before.version
    assert token not in answer.text


def test_heartbeat_fields_follow_the_version(served: Any) -> None:
    conductor, client, _ = served
    uuid = _waiting(conductor)
    token = _lookup(client, uuid).json()["config"]["agent_token"]
    old = {"X-OpenStack-Ironic-API-Version": "1.62"}
    answer = client.post(
        f"/v1/heartbeat/{uuid}",
        json={"callback_url": CALLBACK, "agent_version": "13.0.0", "agent_token": token,
              "agent_verify_ca": "pem"},
        headers=old,
    )  # fmt: skip
    assert answer.status_code == 400
    assert error_text(answer) == 'Field "agent_verify_ca" not recognised in this version'
    no_ramdisk = client.post(f"/v1/heartbeat/{uuid}", json={"callback_url": CALLBACK})
    assert no_ramdisk.status_code == 404
    assert "agent_url" not in conductor.get_node(uuid).driver_internal_info


def test_power_off_and_failure_wipe_the_token(served: Any) -> None:
    conductor, client, _ = served
    uuid = _waiting(conductor)
    token = _lookup(client, uuid).json()["config"]["agent_token"]
    assert _heartbeat(client, uuid, agent_token=token).status_code == 202
    # Abort in clean wait: a failure of the flow (clean failed) ends the agent's part.
    conductor.do_provisioning_action(uuid, "abort")
    node = conductor.get_node(uuid)
    assert node.provision_state == "clean failed"
    assert not {"agent_secret_token", "agent_url"} & set(node.driver_internal_info)
    rejected = _heartbeat(client, uuid, agent_token=token)
    assert (rejected.status_code, error_text(rejected)) == (
        400, "Invalid or missing agent token received.",
    )  # fmt: skip

    other = conductor.create_node(
        driver="fake-hardware", provision_state="manageable", power_state="power on",
        driver_internal_info={"agent_secret_token": "t" * 43, "agent_url": CALLBACK,
                              "agent_verify_ca": "pem", "keep": 1},
    )  # fmt: skip
    conductor.set_power_state(other.uuid, "power off")
    assert conductor.get_node(other.uuid).driver_internal_info == {"keep": 1}


def test_lookup_answer_is_json_ipa_reads(served: Any) -> None:
    conductor, client, _ = served
    uuid = _waiting(conductor, "inspect wait")
    body = json.loads(_lookup(client, uuid).content)
    assert body["node"]["links"][0]["href"].endswith(f"/v1/nodes/{uuid}")
    assert "metrics" not in body["config"]  # IPA 13 copies all of config into [metrics] if sent


def test_lookup_by_mac_finds_the_port_s_node(served: Any) -> None:
    conductor, client, _ = served
    uuid = _waiting(conductor, "clean wait")
    conductor.create_port("52:54:00:AB:CD:01", uuid)
    other = _waiting(conductor, "available")
    conductor.create_port("52:54:00:ab:cd:02", other)
    # IPA sends every MAC it has, in its own spelling; one of them is the node's port.
    found = client.get(
        "/v1/lookup", params={"addresses": "52-54-00-ab-cd-01,00:11:22:33:44:55"}, headers=V162
    )
    assert found.status_code == 200, found.text
    assert found.json()["node"]["uuid"] == uuid
    # The other node's port: a node that expects no agent is not found.
    wrong_state = client.get("/v1/lookup", params={"addresses": "52:54:00:ab:cd:02"}, headers=V162)
    assert wrong_state.status_code == 404
    assert error_text(wrong_state) == "Resource could not be found."
    nobody = client.get("/v1/lookup", params={"addresses": "00:11:22:33:44:55"}, headers=V162)
    assert nobody.status_code == 404
    assert "agent_secret_token" not in conductor.get_node(other).driver_internal_info
