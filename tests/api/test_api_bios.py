"""BIOS settings (1.40): what the node's BIOS interface last applied or read, through
``openstack baremetal node bios setting``, the API and the library."""

from __future__ import annotations

import json

import httpx
import pytest
from api_helpers import LATEST, cli_env, openstack

from ironic_fsm import Conductor, Config
from ironic_fsm import states as s
from ironic_fsm.exceptions import ResourceNotFound
from ironic_fsm.stores import MemoryStore

APPLY = [{"interface": "bios", "step": "apply_configuration",
          "args": {"settings": [{"name": "ProcTurbo", "value": "Disabled"},
                                {"name": "NumLock", "value": "On"}]}}]  # fmt: skip


def test_openstack_cli_lists_and_shows_applied_settings(served_url: str) -> None:
    env = cli_env(served_url, OS_BAREMETAL_API_VERSION="1.74")
    node = openstack(served_url, "node", "create", "--driver", "fake-hardware", "-f", "json",
                     env=env)  # fmt: skip
    assert openstack(served_url, "node", "bios", "setting", "list", node["uuid"], "-f", "json",
                     env=env) == []  # fmt: skip
    openstack(served_url, "node", "manage", node["uuid"], "--wait", "60", env=env)
    openstack(served_url, "node", "clean", node["uuid"], "--clean-steps", json.dumps(APPLY),
              "--wait", "60", env=env)  # fmt: skip
    listed = openstack(served_url, "node", "bios", "setting", "list", node["uuid"], "-f", "json",
                       env=env)  # fmt: skip
    assert [tuple(r.values()) for r in listed] == [
        ("NumLock", "On"), ("ProcTurbo", "Disabled"),
    ]  # fmt: skip
    shown = openstack(served_url, "node", "bios", "setting", "show", node["uuid"], "ProcTurbo",
                      "-f", "json", env=env)  # fmt: skip
    assert shown["value"] == "Disabled"
    with httpx.Client(base_url=served_url, headers=LATEST, timeout=60) as client:
        path = f"/v1/nodes/{node['uuid']}/bios"
        detail = client.get(path, params={"detail": "true"}).json()["bios"]
        assert detail[0]["attribute_type"] is None
        assert client.get(f"{path}/Nope").status_code == 404
        old = client.get(path, headers={"X-OpenStack-Ironic-API-Version": "1.39"})
        assert old.status_code == 404


def test_library_reads_what_the_interface_applied() -> None:
    conductor = Conductor(MemoryStore(), Config())
    node = conductor.create_node(driver="fake-hardware")
    conductor.do_provisioning_action(node.uuid, "manage")
    done = conductor.do_provisioning_action(node.uuid, "clean", clean_steps=APPLY)
    assert done.provision_state == s.MANAGEABLE, done.last_error
    assert [(b.name, b.value) for b in conductor.list_bios_settings(node.uuid)] == [
        ("NumLock", "On"), ("ProcTurbo", "Disabled"),
    ]  # fmt: skip
    assert conductor.get_bios_setting(node.uuid, "NumLock").value == "On"
    with pytest.raises(ResourceNotFound, match="BIOS setting 'Nope'"):
        conductor.get_bios_setting(node.uuid, "Nope")
