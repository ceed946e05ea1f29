"""Where the API answered differently from Ironic 39 on resources it serves (issue 20).

Each was checked request by request against real Ironic; each test sends
the same request over HTTP to a real server process and expects Ironic's
status and, where clients match it by regular expression, Ironic's words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest
from api_helpers import LATEST, api_process


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with api_process(tmp_path_factory.mktemp("differences") / "nodes.sqlite") as base:
        yield base


def _message(answer: httpx.Response) -> str:
    return str(json.loads(answer.json()["error_message"])["faultstring"])


def _node(url: str, **fields: object) -> dict[str, object]:
    answer = httpx.post(
        f"{url}/v1/nodes", json={"driver": "fake-hardware", **fields}, headers=LATEST, timeout=60
    )
    assert answer.status_code == 201, answer.text
    return answer.json()  # type: ignore[no-any-return]


def test_paths_without_v1_are_routed_to_v1(url: str) -> None:
    node = _node(url, name="no-prefix", instance_uuid="6f4b1a53-9a49-4f5e-a0a4-6f9c3f1d1e11")
    found = httpx.get(
        f"{url}/nodes/detail",
        params={"instance_uuid": "6f4b1a53-9a49-4f5e-a0a4-6f9c3f1d1e11"},
        headers=LATEST,
        timeout=60,
    )
    assert found.status_code == 200, found.text
    assert [n["uuid"] for n in found.json()["nodes"]] == [node["uuid"]]
    driver = httpx.get(f"{url}/drivers/fake-hardware", headers=LATEST, timeout=60)
    assert driver.status_code == 200, driver.text
    assert driver.json()["name"] == "fake-hardware"
    # The server's own root paths stay where they are.
    assert httpx.get(f"{url}/", timeout=60).json()["name"] == "OpenStack Ironic API"


def test_a_trailing_json_is_stripped_below_1_91_only(url: str) -> None:
    node = _node(url, name="suffix")
    old = {"X-OpenStack-Ironic-API-Version": "1.90"}
    stripped = httpx.get(f"{url}/v1/nodes/suffix.json", headers=old, timeout=60)
    assert stripped.status_code == 200, stripped.text
    assert stripped.json()["uuid"] == node["uuid"]
    kept = httpx.get(f"{url}/v1/nodes/suffix.json", headers=LATEST, timeout=60)
    assert kept.status_code == 404  # at 1.91 and later, "suffix.json" is a name
    assert httpx.get(f"{url}/v1/nodes.json", headers=old, timeout=60).status_code == 200


def test_traits_below_1_37_are_406_to_read_and_405_to_write(url: str) -> None:
    node = _node(url, name="traits-old")
    old = {"X-OpenStack-Ironic-API-Version": "1.36"}
    traits = f"{url}/v1/nodes/{node['uuid']}/traits"
    assert httpx.get(traits, headers=old, timeout=60).status_code == 406
    assert (
        httpx.put(traits, json={"traits": ["CUSTOM_A"]}, headers=old, timeout=60).status_code == 405
    )
    shown = httpx.get(traits, headers=LATEST, timeout=60).json()
    assert shown == {"traits": []}


def test_an_unknown_fault_filter_is_400(url: str) -> None:
    answer = httpx.get(f"{url}/v1/nodes", params={"fault": "somefake"}, headers=LATEST, timeout=60)
    assert answer.status_code == 400
    assert _message(answer).startswith('Unrecognized fault "somefake" is specified')
    known = httpx.get(
        f"{url}/v1/nodes", params={"fault": "clean failure"}, headers=LATEST, timeout=60
    )
    assert known.status_code == 200


def test_a_new_fake_node_boots_from_pxe(url: str) -> None:
    node = _node(url)
    answer = httpx.get(
        f"{url}/v1/nodes/{node['uuid']}/management/boot_device", headers=LATEST, timeout=60
    )
    assert answer.json() == {"boot_device": "pxe", "persistent": False}


def test_states_at_1_1_name_available_as_the_node_does(url: str) -> None:
    node = _node(url, name="old-client")
    for verb in ("manage", "provide"):
        moved = httpx.put(
            f"{url}/v1/nodes/old-client/states/provision",
            json={"target": verb}, headers=LATEST, timeout=60,
        )  # fmt: skip
        assert moved.status_code == 202, moved.text
        for _ in range(600):
            shown = httpx.get(f"{url}/v1/nodes/old-client", headers=LATEST, timeout=60).json()
            if shown["target_provision_state"] is None:
                break
    assert shown["provision_state"] == "available"
    v11 = {"X-OpenStack-Ironic-API-Version": "1.1"}
    whole = httpx.get(f"{url}/v1/nodes/{node['uuid']}", headers=v11, timeout=60).json()
    states = httpx.get(f"{url}/v1/nodes/{node['uuid']}/states", headers=v11, timeout=60).json()
    assert whole["provision_state"] is None
    assert states["provision_state"] is None


def test_error_texts_clients_match_are_ironics(url: str) -> None:
    bad_uuid = httpx.post(
        f"{url}/v1/nodes", json={"driver": "fake-hardware", "uuid": "not-a-uuid"},
        headers=LATEST, timeout=60,
    )  # fmt: skip
    assert bad_uuid.status_code == 400
    assert _message(bad_uuid) == "Expected UUID for uuid: not-a-uuid"

    no_driver = httpx.post(
        f"{url}/v1/nodes", json={"driver": "no-such-driver"}, headers=LATEST, timeout=60
    )
    assert no_driver.status_code == 400
    assert re.match(
        r"No valid host was found\. Reason: No conductor service registered which supports "
        r'driver no-such-driver for conductor group ""',
        _message(no_driver),
    ), _message(no_driver)

    node = _node(url, extra={"kept": 1})
    removed = httpx.patch(
        f"{url}/v1/nodes/{node['uuid']}",
        json=[{"op": "remove", "path": "/extra/absent"}], headers=LATEST, timeout=60,
    )  # fmt: skip
    assert removed.status_code == 400
    assert "can't remove a non-existent object 'absent'" in _message(removed)

    template = httpx.post(
        f"{url}/v1/deploy_templates",
        json={"name": "not-a-trait", "steps": [{"interface": "bios", "step": "apply_configuration",
                                                 "args": {}, "priority": 10}]},
        headers=LATEST, timeout=60,
    )  # fmt: skip
    assert template.status_code == 400
    assert "does not match '^CUSTOM_[A-Z0-9_]+$'" in _message(template)
