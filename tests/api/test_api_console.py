"""Console (enable, disable, where) and inject NMI (1.29): through openstacksdk, the API and
the library; ``no-console`` and a management interface without NMI refuse with 400."""

from __future__ import annotations

import httpx
import openstack.exceptions
import pytest
from api_helpers import LATEST, sdk

from ironic_fsm import Conductor, Config
from ironic_fsm.exceptions import UnsupportedOperation
from ironic_fsm.stores import MemoryStore


def test_sdk_enables_reads_and_disables_the_console(served_url: str) -> None:
    with sdk(served_url) as cloud:
        bm = cloud.baremetal
        node = bm.create_node(driver="fake-hardware")
        assert bm.get_node_console(node) == {"console_enabled": False, "console_info": None}
        bm.enable_node_console(node)
        assert bm.get_node_console(node) == {
            "console_enabled": True, "console_info": {"type": "fake", "url": "fake://console"},
        }  # fmt: skip
        assert bm.get_node(node.id).is_console_enabled is True
        bm.disable_node_console(node)
        assert bm.get_node_console(node)["console_enabled"] is False
        bm.inject_nmi_to_node(node)
        without = bm.create_node(driver="fake-hardware", console_interface="no-console")
        with pytest.raises(openstack.exceptions.BadRequestException, match="no-console"):
            bm.enable_node_console(without)
        assert bm.get_node(without.id).is_console_enabled is False
    with httpx.Client(base_url=served_url, headers=LATEST, timeout=60) as client:
        path = f"/v1/nodes/{node.id}/management/inject_nmi"
        old = client.put(path, json={}, headers={"X-OpenStack-Ironic-API-Version": "1.28"})
        assert old.status_code == 404
        bad = client.put(f"/v1/nodes/{node.id}/states/console", json={"enabled": "yes"})
        assert bad.status_code == 400


def test_library_counts_the_fake_nmi_and_refuses_without_management() -> None:
    conductor = Conductor(MemoryStore(), Config())
    node = conductor.create_node(driver="fake-hardware")
    conductor.inject_nmi(node.uuid)
    conductor.inject_nmi(node.uuid)
    assert conductor.get_node(node.uuid).driver_internal_info["fake_nmi"] == 2
    plain = conductor.create_node(driver="fake-hardware", management_interface="noop")
    with pytest.raises(UnsupportedOperation):
        conductor.inject_nmi(plain.uuid)
    assert conductor.get_node(plain.uuid).reservation is None
