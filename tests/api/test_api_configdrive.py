"""A config drive with the deploy request, through every door, as Ironic 39 takes one.

openstacksdk over HTTP (SQLite and PostgreSQL) deploys with the drive's JSON
form: kept in ``instance_info`` as given, shown as ``******``, gone after
the tear-down. Each request Ironic refuses is refused with its words, the
node left as it was and unreserved; the library and the CLI refuse the same
mistakes. (The drive written by the real agent is in
``tests/agent/test_ipa_images.py``.)
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest
from api_helpers import database_of
from cli_harness import Run, ok

from ironic_fsm import Conductor, Config
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.stores import MemoryStore, SQLStore

DRIVE = {"meta_data": {"hostname": "web-1"}, "user_data": {"ignition": {"version": "3.4.0"}}}


def _available(client: httpx.Client, name: str) -> str:
    made = client.post("/v1/nodes", json={"driver": "fake-hardware", "name": name})
    assert made.status_code == 201, made.text
    for target, state in (("manage", "manageable"), ("provide", "available")):
        moved = client.put(f"/v1/nodes/{name}/states/provision", json={"target": target})
        assert moved.status_code == 202, moved.text
        _wait(client, name, state)
    return str(made.json()["uuid"])


def _wait(client: httpx.Client, name: str, state: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        node: dict[str, Any] = client.get(f"/v1/nodes/{name}").json()
        if node["provision_state"] == state and node["reservation"] is None:
            return node
        assert time.monotonic() < deadline, node
        time.sleep(0.05)


def test_sdk_deploys_with_a_config_drive_in_its_json_form(
    served_sdk: Any, served_url: str, served_http: httpx.Client
) -> None:
    uuid = _available(served_http, "cd-json")
    served_sdk.baremetal.set_node_provision_state(
        uuid, "active", config_drive=DRIVE, wait=True, timeout=60
    )
    shown = served_http.get(f"/v1/nodes/{uuid}").json()
    assert shown["provision_state"] == "active"
    assert shown["instance_info"]["configdrive"] == "******"
    with SQLStore(database_of(served_url)) as store:
        assert store.get(uuid).instance_info["configdrive"] == DRIVE  # as given
    served_sdk.baremetal.set_node_provision_state(uuid, "deleted", wait=True, timeout=60)
    gone = served_http.get(f"/v1/nodes/{uuid}").json()
    assert "configdrive" not in gone["instance_info"]


@pytest.mark.parametrize(
    ("target", "drive", "version", "words"),
    [
        ("manage", "H4sI", "1.92", "Adding a config drive is only supported when setting "
         "provision state to active, rebuild"),
        ("rebuild", "H4sI", "1.34", "only supported when setting provision state to active"),
        ("deploy", "H4sI", "1.92", "only supported when setting provision state to active, "
         "rebuild"),
        ("active", DRIVE, "1.55", "Providing a JSON object for configdrive is only supported "
         "starting with API version 1.56"),
        ("active", {"vendor_data": {}}, "1.58", "Providing vendor_data in configdrive is only "
         "supported starting with API version 1.59"),
        ("active", "not base64!", "1.92", "Invalid configdrive format: it is neither a JSON, "
         "nor a URL, nor a base64 string"),
        ("active", {"bogus": {}}, "1.92", "Invalid input"),
        ("active", {"meta_data": "text"}, "1.92", "Invalid input"),
    ],
)  # fmt: skip
def test_the_api_refuses_what_ironic_refuses_and_changes_nothing(
    served_http: httpx.Client, target: str, drive: Any, version: str, words: str
) -> None:
    name = f"cd-bad-{abs(hash((target, json.dumps(drive), version))) % 10**8}"
    _available(served_http, name)
    if target == "rebuild":  # an active node, so that only the drive is wrong
        served_http.put(f"/v1/nodes/{name}/states/provision", json={"target": "active"})
        _wait(served_http, name, "active")
    before = served_http.get(f"/v1/nodes/{name}").json()
    answer = served_http.put(
        f"/v1/nodes/{name}/states/provision",
        json={"target": target, "configdrive": drive},
        headers={"X-OpenStack-Ironic-API-Version": version},
    )
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["error_message"]
    after = served_http.get(f"/v1/nodes/{name}").json()
    assert after == before
    assert after["reservation"] is None


def test_the_library_refuses_the_same_mistakes() -> None:
    conductor = Conductor(MemoryStore(), Config())
    node = conductor.create_node(driver="fake-hardware", name="lib")
    conductor.do_provisioning_action(node.uuid, "manage")
    conductor.do_provisioning_action(node.uuid, "provide")
    before = conductor.get_node(node.uuid)
    for verb, drive, words in (
        ("manage", "H4sI", "configdrive may only be given with 'active', 'deploy' or 'rebuild'"),
        ("deploy", {"bogus": {}}, "configdrive has an unknown key 'bogus'"),
        ("deploy", {"network_data": []}, "configdrive's network_data must be an object"),
        ("deploy", 7, "configdrive must be a string or an object"),
    ):
        with pytest.raises(InvalidParameterValue, match=words.replace("(", r"\(")):
            conductor.do_provisioning_action(node.uuid, verb, configdrive=drive)
        after = conductor.get_node(node.uuid)
        assert (after.provision_state, after.reservation, after.instance_info) == (
            before.provision_state, None, before.instance_info,
        )  # fmt: skip
    done = conductor.do_provisioning_action(node.uuid, "deploy", configdrive=DRIVE)
    assert (done.provision_state, done.instance_info["configdrive"]) == ("active", DRIVE)


def test_the_cli_takes_the_drive_as_openstack_baremetal_does(run: Run, tmp_path: Any) -> None:
    ok(run("node", "create", "--name", "c1"))
    ok(run("node", "manage", "c1"))
    ok(run("node", "provide", "c1"))
    refused = run("node", "manage", "c1", "--config-drive", "H4sI")
    assert refused.code == 2
    assert "--config-drive can only be used with 'deploy' or 'rebuild'" in refused.err
    drive_file = tmp_path / "drive.json"
    drive_file.write_text(json.dumps(DRIVE))
    ok(run("node", "deploy", "c1", "--config-drive", str(drive_file)))
    shown = json.loads(ok(run("node", "show", "c1", "-f", "json")).out)
    assert shown["provision_state"] == "active"
    assert shown["instance_info"]["configdrive"] == "******"
