"""Provisioning, power, boot device, maintenance, traits, validate and history over HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from api_helpers import api_client, error_text

from ironic_fsm import Conductor
from ironic_fsm import states as s
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.interfaces import INTERFACE_KINDS


@pytest.fixture
def api(tmp_path: Any) -> Iterator[tuple[Conductor, httpx.Client]]:
    with api_client(tmp_path / "nodes.sqlite") as pair:
        yield pair


def _node(client: httpx.Client, name: str = "n1") -> str:
    response = client.post("/v1/nodes", json={"driver": "fake-hardware", "name": name})
    assert response.status_code == 201
    return str(response.json()["uuid"])


_RESTING = s.HOLD_STATES | s.FAILURE_STATES


def _settle(conductor: Conductor, ident: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        node = conductor.get_node(ident)
        resting = node.target_provision_state is None or node.provision_state in _RESTING
        if resting and node.reservation is None:
            return node
        time.sleep(0.02)
    raise AssertionError(f"node {ident} did not settle")


def _provision(client: httpx.Client, ident: str, **body: Any) -> httpx.Response:
    return client.put(f"/v1/nodes/{ident}/states/provision", json=body)


def test_provision_answers_after_the_target_is_saved(
    api: tuple[Conductor, httpx.Client],
) -> None:
    conductor, client = api
    uuid = _node(client)
    seen: list[tuple[str, str | None]] = []
    for verb, end in (("manage", s.MANAGEABLE), ("provide", s.AVAILABLE),
                      ("deploy", s.ACTIVE), ("undeploy", s.AVAILABLE)):  # fmt: skip
        response = _provision(client, "n1", target=verb)
        assert response.status_code == 202, response.text
        assert response.headers["Location"] == f"{client.base_url}/v1/nodes/{uuid}/states"
        assert response.content == b""
        node = conductor.get_node(uuid)
        # Either still moving toward the end state, or already there: never stable with no target.
        seen.append((node.provision_state, node.target_provision_state))
        assert node.target_provision_state == end or node.provision_state == end
        assert _settle(conductor, uuid).provision_state == end
    states = client.get("/v1/nodes/n1/states").json()
    assert states["provision_state"] == s.AVAILABLE
    assert states["target_provision_state"] is None
    assert "raid_config" in states
    assert "boot_mode" in states


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"target": "active"}, 400, "enroll"),
        ({"target": "fly"}, 400, "target"),
        ({}, 400, "target"),
        ({"target": "manage", "rescue_password": "x"}, 400, "rescue_password"),
        ({"target": "rescue"}, 400, "rescue_password"),
        ({"target": "clean"}, 400, "clean_steps"),
        ({"target": "manage", "clean_steps": []}, 400, "clean_steps"),
        ({"target": "manage", "disable_ramdisk": True}, 400, "disable_ramdisk"),
        ({"target": "manage", "configdrive": "abc"}, 400, "Adding a config drive is only"),
        ({"target": "manage", "configdrive": 7}, 400, "Invalid input"),
        ({"target": "manage", "bogus": 1}, 400, "bogus"),
    ],
)
def test_refused_provisioning_changes_nothing(
    api: tuple[Conductor, httpx.Client], body: dict[str, Any], status: int, words: str
) -> None:
    conductor, client = api
    uuid = _node(client)
    before = conductor.get_node(uuid)
    response = _provision(client, uuid, **body)
    assert response.status_code == status
    assert words in error_text(response)
    assert conductor.get_node(uuid) == before


@pytest.mark.parametrize(
    ("target", "version"), [("manage", "1.3"), ("deploy", "1.72"), ("unhold", "1.84"),
                            ("service", "1.86"), ("rescue", "1.37")],
)  # fmt: skip
def test_verb_newer_than_the_version_is_406(
    api: tuple[Conductor, httpx.Client], target: str, version: str
) -> None:
    conductor, client = api
    uuid = _node(client)
    response = client.put(
        f"/v1/nodes/{uuid}/states/provision", json={"target": target, "rescue_password": "p"}
        if target == "rescue" else {"target": target},
        headers={"X-OpenStack-Ironic-API-Version": version},
    )  # fmt: skip
    assert response.status_code == 406
    assert conductor.get_node(uuid).provision_state == s.ENROLL


def test_manual_clean_with_steps_ends_manageable(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    uuid = _node(client)
    _provision(client, uuid, target="manage")
    _settle(conductor, uuid)
    steps = [{"interface": "vendor", "step": "log_passthrough", "args": {}}]
    response = _provision(client, uuid, target="clean", clean_steps=steps)
    assert response.status_code == 202, response.text
    assert _settle(conductor, uuid).provision_state == s.MANAGEABLE
    unknown = [{"interface": "deploy", "step": "no_such_step"}]
    refused = _provision(client, uuid, target="clean", clean_steps=unknown)
    assert refused.status_code == 400
    assert "no_such_step" in error_text(refused)


def test_deploy_in_maintenance_is_400(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    uuid = _node(client)
    for verb in ("manage", "provide"):
        _provision(client, uuid, target=verb)
        _settle(conductor, uuid)
    client.put(f"/v1/nodes/{uuid}/maintenance", json={"reason": "broken"})
    response = _provision(client, uuid, target="active")
    assert response.status_code == 400
    assert conductor.get_node(uuid).provision_state == s.AVAILABLE


def test_locked_node_is_409(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    uuid = _node(client)
    conductor.store.reserve(uuid, "someone-else:1:1")
    try:
        response = _provision(client, uuid, target="manage")
        assert response.status_code == 409
        assert "someone-else" in error_text(response)
        patch = client.patch(f"/v1/nodes/{uuid}", json=[
            {"op": "add", "path": "/extra/a", "value": 1}])  # fmt: skip
        assert patch.status_code == 409
    finally:
        conductor.store.release(uuid, "someone-else:1:1")
    assert conductor.get_node(uuid).provision_state == s.ENROLL
    assert conductor.get_node(uuid).extra == {}


def test_power_targets_and_versions(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    uuid = _node(client)
    response = client.put(f"/v1/nodes/{uuid}/states/power", json={"target": "power on"})
    assert response.status_code == 202
    assert conductor.get_node(uuid).power_state == s.POWER_ON
    soft = client.put(
        f"/v1/nodes/{uuid}/states/power", json={"target": "soft power off", "timeout": 10}
    )
    assert soft.status_code == 202, soft.text
    assert conductor.get_node(uuid).power_state == s.POWER_OFF
    old = client.put(
        f"/v1/nodes/{uuid}/states/power", json={"target": "soft rebooting"},
        headers={"X-OpenStack-Ironic-API-Version": "1.26"},
    )  # fmt: skip
    assert old.status_code == 406
    for bad in ({"target": "power on", "timeout": 0}, {"target": "sideways"}):
        assert client.put(f"/v1/nodes/{uuid}/states/power", json=bad).status_code == 400
    assert conductor.get_node(uuid).power_state == s.POWER_OFF


def test_boot_device(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    uuid = _node(client)
    # A new fake-hardware node boots from PXE, as Ironic's fake management answers.
    fresh = client.get(f"/v1/nodes/{uuid}/management/boot_device").json()
    assert fresh == {"boot_device": "pxe", "persistent": False}
    supported = client.get(f"/v1/nodes/{uuid}/management/boot_device/supported").json()
    assert "pxe" in supported["supported_boot_devices"]
    put = client.put(
        f"/v1/nodes/{uuid}/management/boot_device",
        json={"boot_device": "pxe", "persistent": True},
    )
    assert put.status_code == 204, put.text
    got = client.get(f"/v1/nodes/{uuid}/management/boot_device").json()
    assert got == {"boot_device": "pxe", "persistent": True}
    bad = client.put(f"/v1/nodes/{uuid}/management/boot_device", json={"boot_device": "floppy"})
    assert bad.status_code == 400
    assert conductor.get_node(uuid).reservation is None


def test_maintenance_set_and_unset(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    uuid = _node(client)
    assert client.put(f"/v1/nodes/{uuid}/maintenance", json={"reason": "fan"}).status_code == 202
    node = conductor.get_node(uuid)
    assert (node.maintenance, node.maintenance_reason) == (True, "fan")
    assert client.delete(f"/v1/nodes/{uuid}/maintenance").status_code == 202
    node = conductor.get_node(uuid)
    assert (node.maintenance, node.maintenance_reason) == (False, None)


def test_traits(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    uuid = _node(client)
    base = f"/v1/nodes/{uuid}/traits"
    assert client.put(base, json={"traits": ["CUSTOM_A", "HW_CPU_X86_VMX"]}).status_code == 204
    added = client.put(f"{base}/CUSTOM_B")
    assert added.status_code == 204
    assert added.headers["Location"].endswith(f"{base}/CUSTOM_B")
    assert client.get(base).json() == {"traits": ["CUSTOM_A", "HW_CPU_X86_VMX", "CUSTOM_B"]}
    assert client.delete(f"{base}/CUSTOM_A").status_code == 204
    assert client.delete(f"{base}/CUSTOM_A").status_code == 404
    assert client.put(f"{base}/lower_case").status_code == 400
    assert client.put(base, json={"traits": ["CUSTOM_X"] * 51}).status_code == 400
    assert conductor.get_node(uuid).traits == ["HW_CPU_X86_VMX", "CUSTOM_B"]
    assert client.delete(base).status_code == 204
    assert conductor.get_node(uuid).traits == []
    # Below 1.37, as Ironic: a read is not acceptable (406), a write not allowed (405).
    old_version = {"X-OpenStack-Ironic-API-Version": "1.36"}
    assert client.get(base, headers=old_version).status_code == 406
    assert client.put(base, json={"traits": []}, headers=old_version).status_code == 405
    assert client.put(f"{base}/CUSTOM_C", headers=old_version).status_code == 405
    assert client.delete(base, headers=old_version).status_code == 405
    assert conductor.get_node(uuid).traits == []


def test_validate_both_paths(api: tuple[Conductor, httpx.Client]) -> None:
    _, client = api
    uuid = _node(client)
    for url in (f"/v1/nodes/{uuid}/validate", f"/v1/nodes/validate?node={uuid}"):
        body = client.get(url).json()
        assert body["power"] == {"result": True, "reason": None}
        assert {"boot", "deploy", "management", "network", "storage"} <= set(body)


def test_validate_reports_bad_driver_info_without_secrets(
    api: tuple[Conductor, httpx.Client],
) -> None:
    _, client = api
    created = client.post("/v1/nodes", json={
        "driver": "ipmi", "driver_info": {"ipmi_password": "s3cret-pass"}})  # fmt: skip
    assert created.status_code == 201, created.text
    body = client.get(f"/v1/nodes/{created.json()['uuid']}/validate")
    assert body.json()["power"]["result"] is False
    assert "ipmi_address" in body.json()["power"]["reason"]
    assert "s3cret-pass" not in body.text


def test_history(api: tuple[Conductor, httpx.Client]) -> None:
    _conductor, client = api
    uuid = _node(client)
    client.put(f"/v1/nodes/{uuid}/maintenance", json={"reason": "fan"})
    entries = client.get(f"/v1/nodes/{uuid}/history").json()["history"]
    assert entries
    assert "fan" in entries[-1]["event"]
    assert set(entries[0]) == {"uuid", "created_at", "severity", "event", "links"}
    detail = client.get(f"/v1/nodes/{uuid}/history", params={"detail": "true"}).json()
    assert detail["history"][-1]["event_type"] == "maintenance"
    one = client.get(f"/v1/nodes/{uuid}/history/{entries[-1]['uuid']}")
    assert one.status_code == 200
    assert one.json()["uuid"] == entries[-1]["uuid"]
    old = client.get(
        f"/v1/nodes/{uuid}/history", headers={"X-OpenStack-Ironic-API-Version": "1.77"}
    )
    assert old.status_code == 404


def _walk(conductor: Conductor, client: httpx.Client, uuid: str, *steps: Any) -> None:
    for body, end in steps:
        response = _provision(client, uuid, **body)
        assert response.status_code == 202, (body, response.text)
        node = _settle(conductor, uuid)
        assert node.provision_state == end, (body, node.provision_state, node.last_error)


def test_every_target_through_the_api(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    uuid = _node(client)
    hold = [{"interface": "deploy", "step": "hold"}]
    log = [{"interface": "vendor", "step": "log_passthrough", "args": {}}]
    _walk(
        conductor, client, uuid,
        ({"target": "manage"}, s.MANAGEABLE),
        ({"target": "inspect"}, s.MANAGEABLE),
        ({"target": "clean", "clean_steps": log}, s.MANAGEABLE),
        ({"target": "clean", "clean_steps": hold}, s.CLEANHOLD),
        ({"target": "abort"}, s.CLEANFAIL),
        ({"target": "manage"}, s.MANAGEABLE),
        ({"target": "clean", "clean_steps": hold + log}, s.CLEANHOLD),
        ({"target": "unhold"}, s.MANAGEABLE),
        ({"target": "adopt"}, s.ACTIVE),
        ({"target": "rescue", "rescue_password": "Rescue-Secret-9"}, s.RESCUE),
        ({"target": "unrescue"}, s.ACTIVE),
        ({"target": "service", "service_steps": log}, s.ACTIVE),
        ({"target": "rebuild"}, s.ACTIVE),
        ({"target": "deleted"}, s.AVAILABLE),
        ({"target": "active", "deploy_steps": []}, s.ACTIVE),
        ({"target": "undeploy"}, s.AVAILABLE),
    )  # fmt: skip
    node = conductor.get_node(uuid)
    assert node.reservation is None
    assert "Rescue-Secret-9" not in client.get(f"/v1/nodes/{uuid}").text


def test_runbook_needs_1_92(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    uuid = _node(client)
    conductor.create_runbook("CUSTOM_RB", [{"interface": "vendor", "step": "x", "order": 1}])
    response = client.put(
        f"/v1/nodes/{uuid}/states/provision", json={"target": "clean", "runbook": "CUSTOM_RB"},
        headers={"X-OpenStack-Ironic-API-Version": "1.91"},
    )  # fmt: skip
    assert response.status_code == 406
    assert conductor.get_node(uuid).provision_state == s.ENROLL


def test_a_stored_runbook_cleans_a_node_that_carries_its_name(
    api: tuple[Conductor, httpx.Client],
) -> None:
    conductor, client = api
    uuid = _node(client)
    steps = [{"interface": "vendor", "step": "log_passthrough", "order": 1}]
    made = client.post("/v1/runbooks", json={"name": "CUSTOM_RB", "steps": steps})
    assert made.status_code == 201, made.text
    assert _provision(client, uuid, target="manage").status_code == 202
    assert _settle(conductor, uuid).provision_state == s.MANAGEABLE
    refused = _provision(client, uuid, target="clean", runbook="CUSTOM_RB")
    assert refused.status_code == 400  # the node lacks the runbook's trait
    assert "CUSTOM_RB" in error_text(refused)
    assert conductor.get_node(uuid).provision_state == s.MANAGEABLE
    assert client.put(f"/v1/nodes/{uuid}/traits/CUSTOM_RB").status_code == 204
    assert _provision(client, uuid, target="clean", runbook="CUSTOM_RB").status_code == 202
    node = _settle(conductor, uuid)
    assert (node.provision_state, node.last_error) == (s.MANAGEABLE, None)


# -- the conductor's public methods the API is built on ----------------------------------------


def test_boot_device_and_validate_are_conductor_methods(
    api: tuple[Conductor, httpx.Client],
) -> None:
    conductor, client = api
    uuid = _node(client)
    assert "disk" in conductor.get_supported_boot_devices(uuid)
    conductor.set_boot_device(uuid, "disk", persistent=True)
    assert conductor.get_boot_device(uuid) == {"boot_device": "disk", "persistent": True}
    before = conductor.get_node(uuid)
    with pytest.raises(InvalidParameterValue, match="floppy"):
        conductor.set_boot_device(uuid, "floppy")
    with pytest.raises(InvalidParameterValue):
        conductor.set_boot_device(uuid, "pxe", persistent="yes")  # type: ignore[arg-type]
    assert conductor.get_boot_device(uuid)["boot_device"] == "disk"
    assert conductor.get_node(uuid).reservation is None
    assert conductor.get_node(uuid).driver_info == before.driver_info
    found = conductor.validate(uuid)
    assert found["power"] is None
    assert set(found) == set(INTERFACE_KINDS)
    assert "fake-hardware" in conductor.served_hardware_types()
    conductor.add_deploy_template("CUSTOM_T", [{"interface": "deploy", "step": "deploy",
                                                "args": {}, "priority": 1}])  # fmt: skip
    copies = conductor.added_deploy_templates()
    copies["CUSTOM_T"][0]["priority"] = 99
    assert conductor.added_deploy_templates()["CUSTOM_T"][0]["priority"] == 1


def test_a_rescued_node_may_be_protected(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    uuid = _node(client)
    for body in ({"target": "manage"}, {"target": "provide"}, {"target": "active"},
                 {"target": "rescue", "rescue_password": "pw-1"}):  # fmt: skip
        assert _provision(client, uuid, **body).status_code == 202
        _settle(conductor, uuid)
    assert conductor.get_node(uuid).provision_state == s.RESCUE
    patch = [{"op": "replace", "path": "/protected", "value": True}]
    response = client.patch(f"/v1/nodes/{uuid}", json=patch)
    assert response.status_code == 200, response.text
    assert conductor.get_node(uuid).protected is True
