"""RAID (1.12): a node's target configuration, checked by its RAID interface, built by the
``fake`` interface's clean step; through ``openstack baremetal``, the API and the library."""

from __future__ import annotations

import json

import httpx
import pytest
from api_helpers import LATEST, cli_env, error_text, openstack
from cli_harness import Run, ok

from ironic_fsm import Conductor, Config
from ironic_fsm import states as s
from ironic_fsm.exceptions import InvalidParameterValue, UnsupportedDriverExtension
from ironic_fsm.raid import LOGICAL_DISK_PROPERTIES
from ironic_fsm.stores import MemoryStore

TARGET = {"logical_disks": [{"size_gb": "MAX", "raid_level": "1", "is_root_volume": True}]}


def test_openstack_cli_sets_and_unsets_a_target(served_url: str) -> None:
    env = cli_env(served_url, OS_BAREMETAL_API_VERSION="1.12")
    node = openstack(served_url, "node", "create", "--driver", "fake-hardware", "-f", "json",
                     env=env)  # fmt: skip
    openstack(served_url, "node", "set", node["uuid"], "--target-raid-config",
              json.dumps(TARGET), env=env)  # fmt: skip
    shown = openstack(served_url, "node", "show", node["uuid"], "-f", "json", env=env)
    assert shown["target_raid_config"] == TARGET
    bad = openstack(served_url, "node", "set", node["uuid"], "--target-raid-config",
                    '{"logical_disks": [{"size_gb": 10, "raid_level": "7"}]}', env=env,
                    check=False)  # fmt: skip
    assert bad.returncode != 0
    assert "RAID config validation error" in bad.stderr
    again = openstack(served_url, "node", "show", node["uuid"], "-f", "json", env=env)
    assert again["target_raid_config"] == TARGET  # left as it was
    openstack(served_url, "node", "unset", node["uuid"], "--target-raid-config", env=env)
    cleared = openstack(served_url, "node", "show", node["uuid"], "-f", "json", env=env)
    assert cleared["target_raid_config"] == {}
    props = openstack(served_url, "driver", "raid", "property", "list", "fake-hardware",
                      "-f", "json", env=env)  # fmt: skip
    assert {next(iter(row.values())) for row in props} == set(LOGICAL_DISK_PROPERTIES)


def test_api_answers_as_ironic_does(served_url: str) -> None:
    with httpx.Client(base_url=served_url, headers=LATEST, timeout=60) as client:
        made = client.post("/v1/nodes", json={"driver": "fake-hardware", "raid_interface":
                                              "no-raid"}).json()  # fmt: skip
        path = f"/v1/nodes/{made['uuid']}/states/raid"
        refused = client.put(path, json=TARGET)
        assert refused.status_code == 404, refused.text
        assert "no-raid" in error_text(refused)
        assert client.put(path, json={}).status_code == 204  # clearing needs no RAID
        old = client.put(path, json=TARGET, headers={"X-OpenStack-Ironic-API-Version": "1.11"})
        assert old.status_code == 406
        two_roots = {"logical_disks": [{"size_gb": 10, "raid_level": "0", "is_root_volume": True},
                                       {"size_gb": 10, "raid_level": "0",
                                        "is_root_volume": True}]}  # fmt: skip
        client.patch(
            f"/v1/nodes/{made['uuid']}",
            json=[{"op": "replace", "path": "/raid_interface", "value": "fake"}],
        )
        bad = client.put(path, json=two_roots)
        assert bad.status_code == 400
        assert "more than one root volume" in error_text(bad)
        assert client.get(f"/v1/nodes/{made['uuid']}").json()["target_raid_config"] == {}
        unknown = client.get("/v1/drivers/nope/raid/logical_disk_properties")
        assert unknown.status_code == 404


def test_the_fake_clean_step_builds_and_deletes_the_target() -> None:
    conductor = Conductor(MemoryStore(), Config())
    node = conductor.create_node(driver="fake-hardware")
    conductor.do_provisioning_action(node.uuid, "manage")
    conductor.set_target_raid_config(node.uuid, TARGET)
    built = conductor.do_provisioning_action(
        node.uuid, "clean",
        clean_steps=[{"interface": "raid", "step": "create_configuration"}],
    )  # fmt: skip
    assert built.provision_state == s.MANAGEABLE, built.last_error
    assert built.raid_config["logical_disks"] == TARGET["logical_disks"]
    gone = conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[{"interface": "raid", "step": "delete_configuration"}]
    )
    assert gone.raid_config == {}
    with pytest.raises(InvalidParameterValue, match="RAID config validation error"):
        conductor.set_target_raid_config(node.uuid, {"logical_disks": []})
    conductor.update_node(node.uuid, raid_interface="no-raid")
    with pytest.raises(UnsupportedDriverExtension):
        conductor.set_target_raid_config(node.uuid, TARGET)
    assert conductor.get_node(node.uuid).target_raid_config == TARGET


def test_ironic_fsm_cli_checks_the_target(run: Run) -> None:
    ok(run("node", "create", "--name", "r1"))
    bad = run("node", "set", "r1", "--target-raid-config", '{"logical_disks": [{"size_gb": 1}]}')
    assert bad.code == 1
    assert "RAID config validation error" in bad.err
    ok(run("node", "set", "r1", "--target-raid-config", json.dumps(TARGET)))
    shown = json.loads(ok(run("node", "show", "r1", "-f", "json")).out)
    assert shown["target_raid_config"] == TARGET
