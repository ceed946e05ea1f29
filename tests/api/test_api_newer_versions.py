"""What microversions 1.93 to 1.115 add to the resources served: node fields, deploy abort,
runbook description and traits, history fields, and ``/v1`` listing every resource."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import LATEST, api_in_process, error_text
from serve_fleet import wait_for

from ironic_fsm import Conductor, HardwareType
from ironic_fsm import states as s
from ironic_fsm.drivers.fake import FakeManagement, FakePower
from ironic_fsm.interfaces import DeployInterface
from ironic_fsm.steps import deploy_step
from ironic_fsm.task import Task


def at(version: str) -> dict[str, str]:
    return {"X-OpenStack-Ironic-API-Version": version}


class WaitingDeploy(DeployInterface):
    """Its deploy goes on asynchronously: the node waits in ``wait call-back``."""

    @deploy_step(priority=100)
    def deploy(self, task: Task) -> str | None:
        return s.DEPLOYWAIT


@pytest.fixture(name="api")
def api_fixture(tmp_path: Path) -> Iterator[tuple[Conductor, httpx.Client]]:
    with (
        api_in_process(tmp_path / "newer.sqlite") as (conductor, _, url),
        httpx.Client(base_url=url, headers=LATEST, timeout=60) as client,
    ):
        yield conductor, client


def _create(client: httpx.Client, **fields: Any) -> dict[str, Any]:
    made = client.post("/v1/nodes", json={"driver": "fake-hardware", **fields})
    assert made.status_code == 201, made.text
    return made.json()  # type: ignore[no-any-return]


def test_v1_lists_every_resource_ironic_lists(api: tuple[Conductor, httpx.Client]) -> None:
    _, client = api
    latest = client.get("/v1").json()
    for name in ("chassis", "nodes", "ports", "drivers", "portgroups", "volume", "lookup",
                 "heartbeat", "conductors", "allocations", "events", "deploy_templates",
                 "shards", "runbooks", "inspection_rules"):  # fmt: skip
        assert latest[name][0]["href"].endswith(f"/v1/{name}/"), name
    first = client.get("/v1", headers=at("1.1")).json()
    assert {"chassis", "nodes", "ports", "drivers"} <= set(first)
    assert "portgroups" not in first
    assert "inspection_rules" not in first
    assert client.get("/").json()["default_version"]["version"] == "1.115"


def test_disable_power_off_refuses_powering_off(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    node = _create(client, name="dpo", disable_power_off="True")  # the CLI sends text
    assert node["disable_power_off"] is True
    assert "disable_power_off" not in client.get("/v1/nodes/dpo", headers=at("1.94")).json()
    on = client.put("/v1/nodes/dpo/states/power", json={"target": "power on"})
    assert on.status_code == 202, on.text
    off = client.put("/v1/nodes/dpo/states/power", json={"target": "power off"})
    assert off.status_code == 409
    assert "disable_power_off" in error_text(off)
    assert conductor.get_node("dpo").power_state == s.POWER_ON
    cleared = client.patch(
        "/v1/nodes/dpo", json=[{"op": "replace", "path": "/disable_power_off", "value": False}]
    )
    assert cleared.json()["disable_power_off"] is False
    assert client.put("/v1/nodes/dpo/states/power", json={"target": "power off"}).status_code == 202


def test_instance_name_and_health(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    node = _create(client, name="n1", instance_name="vm-01")
    assert (node["instance_name"], node["health"]) == ("vm-01", None)
    old = client.get("/v1/nodes/n1", headers=at("1.103")).json()
    assert "instance_name" not in old
    assert "health" not in old
    assert "health" not in client.get("/v1/nodes/n1", headers=at("1.108")).json()
    refused = client.patch("/v1/nodes/n1", json=[{"op": "add", "path": "/health", "value": "OK"}])
    assert refused.status_code == 400  # the BMC's word, not a client's
    early = client.post(
        "/v1/nodes", json={"driver": "fake-hardware", "instance_name": "x"}, headers=at("1.103")
    )
    assert early.status_code == 406
    assert conductor.get_node("n1").health is None
    display = [{"op": "add", "path": "/instance_info", "value": {"display_name": "shown"}}]
    client.patch("/v1/nodes/n1", json=[{"op": "remove", "path": "/instance_name"}])
    assert client.patch("/v1/nodes/n1", json=display).json()["instance_name"] == "shown"
    again = [{"op": "add", "path": "/instance_info/display_name", "value": "other"}]
    assert client.patch("/v1/nodes/n1", json=again).json()["instance_name"] == "shown"


def test_undeploy_forgets_the_instance_name() -> None:
    conductor = Conductor()
    node = conductor.create_node(instance_name="vm-01", disable_power_off=True)
    for verb in ("manage", "provide", "deploy"):
        node = conductor.do_provisioning_action(node.uuid, verb)
    conductor.set_power_state(node.uuid, s.POWER_ON)
    node = conductor.do_provisioning_action(node.uuid, "undeploy")
    assert node.provision_state == s.AVAILABLE, node.last_error
    assert node.instance_name is None
    assert node.power_state == s.POWER_ON  # torn down without powering off


def test_abort_in_wait_call_back_needs_1_110(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    conductor.register_hardware_type(
        "waiting", HardwareType(power=FakePower(), management=FakeManagement(),
                                deploy=WaitingDeploy()),
    )  # fmt: skip
    node = conductor.create_node(driver="waiting", provision_state=s.AVAILABLE)
    conductor.do_provisioning_action(node.uuid, "deploy")
    wait_for(lambda: conductor.get_node(node.uuid).provision_state == s.DEPLOYWAIT, 60, "wait")
    path = f"/v1/nodes/{node.uuid}/states/provision"
    refused = client.put(path, json={"target": "abort"}, headers=at("1.109"))
    assert refused.status_code == 406
    assert conductor.get_node(node.uuid).provision_state == s.DEPLOYWAIT
    accepted = client.put(path, json={"target": "abort"}, headers=at("1.110"))
    assert accepted.status_code == 202, accepted.text
    wait_for(lambda: conductor.get_node(node.uuid).provision_state == s.DEPLOYFAIL, 60, "abort")


STEPS = [{"interface": "vendor", "step": "log_passthrough", "args": {}, "order": 1}]


def test_runbook_description_and_traits(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    old_body = {"name": "CUSTOM_OLD", "steps": STEPS, "traits": ["CUSTOM_A"]}
    early = client.post("/v1/runbooks", headers=at("1.111"), json=old_body)
    assert early.status_code == 406
    made = client.post("/v1/runbooks", json={
        "name": "wipe-and-log", "steps": STEPS, "description": "Logs once.",
        "traits": ["CUSTOM_A"],
    })  # fmt: skip
    assert made.status_code == 201, made.text
    assert (made.json()["description"], made.json()["traits"]) == ("Logs once.", ["CUSTOM_A"])
    hidden = client.get("/v1/runbooks/wipe-and-log", headers=at("1.111")).json()
    assert "traits" not in hidden
    assert "description" not in hidden
    assert client.put("/v1/runbooks/wipe-and-log/traits/CUSTOM_B").status_code == 204
    assert client.get("/v1/runbooks/wipe-and-log/traits").json() == {
        "traits": ["CUSTOM_A", "CUSTOM_B"]
    }
    assert client.delete("/v1/runbooks/wipe-and-log/traits/CUSTOM_A").status_code == 204
    assert client.delete("/v1/runbooks/wipe-and-log/traits/CUSTOM_A").status_code == 204  # no-op
    assert client.get("/v1/runbooks/wipe-and-log/traits", headers=at("1.111")).status_code == 404
    assert conductor.get_runbook("wipe-and-log").traits == ["CUSTOM_B"]
    bad = client.put("/v1/runbooks/wipe-and-log/traits", json={"traits": ["lower"]})
    assert bad.status_code == 400
    # Its traits, not its name, say which nodes may run it.
    node = conductor.create_node(provision_state=s.MANAGEABLE, traits=["CUSTOM_B"])
    conductor.do_provisioning_action(node.uuid, "clean", runbook="wipe-and-log")
    wait_for(lambda: conductor.get_node(node.uuid).provision_state == s.MANAGEABLE, 60, "clean")
    node = conductor.get_node(node.uuid)
    assert node.last_error is None
    assert node.driver_internal_info["fake_log_passthrough"] == 1
    other = conductor.create_node(provision_state=s.MANAGEABLE)
    with pytest.raises(Exception, match="trait"):
        conductor.do_provisioning_action(other.uuid, "clean", runbook="wipe-and-log")
    assert client.put("/v1/runbooks/wipe-and-log/traits", json={"traits": []}).status_code == 204
    assert conductor.get_runbook("wipe-and-log").traits == []
    spaced = client.post("/v1/runbooks", json={"name": "a b", "steps": STEPS})
    assert spaced.status_code == 400
    old_name = client.post("/v1/runbooks", headers=at("1.111"),
                           json={"name": "logical-name", "steps": STEPS})  # fmt: skip
    assert old_name.status_code == 400
    assert "does not match" in error_text(old_name)


def test_history_shows_the_newer_fields(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    _create(client, name="h1")
    client.put("/v1/nodes/h1/maintenance", json={"reason": "fan"})
    entries = client.get("/v1/nodes/h1/history", params={"detail": "true"}).json()["history"]
    assert entries
    assert {"project", "state", "target_provision_state", "duration_seconds"} <= set(entries[0])
    older = client.get(
        "/v1/nodes/h1/history", params={"detail": "true"}, headers=at("1.112")
    ).json()["history"]
    assert "project" not in older[0]
    assert conductor.get_node_history("h1")
