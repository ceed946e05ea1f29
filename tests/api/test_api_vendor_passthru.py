"""Vendor pass-through (``/v1/{nodes,drivers}/{id}/vendor_passthru[/methods]``): through
openstacksdk, the ``openstack baremetal`` CLI, plain HTTP and the library, on SQLite and
PostgreSQL; the ipmi hardware type's ``send_raw`` and ``bmc_reset`` over the wire to
OpenIPMI's ``ipmi_sim``, and redfish's ``eject_vmedia`` on the sushy-tools emulator.

Refused calls (unknown method, wrong HTTP method, missing or unexpected
arguments, ``no-vendor``) answer 400 and leave the node as it was, unreserved.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import LATEST, api_process, openstack, sdk
from helpers import stopped_after
from openstack.exceptions import BadRequestException, ResourceNotFound

from ironic_fsm import Conductor, Config
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.passthru import passthru
from ironic_fsm.stores import MemoryStore
from ironic_fsm.testing.ipmi_sim import start_sim
from ironic_fsm.testing.redfish_emulator import FileServer, start_emulator

#: A started peer (emulator, file server) as a context: stopped by its PID on the way out.
stopped = contextlib.contextmanager(stopped_after)

FAKE_METHODS = {"second_method", "third_method_sync", "fourth_method_shared_lock",
                "log_passthrough"}  # fmt: skip


def wait_for(read: Callable[[], Any], timeout: float = 60.0) -> Any:
    """``read()`` once it is truthy (the async method's effect), else fail."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if value:
            return value
        assert time.monotonic() < deadline, "the asynchronous vendor method never finished"
        time.sleep(0.05)


def test_sdk_lists_and_calls_node_methods(served_url: str) -> None:
    with sdk(served_url) as cloud:
        bm = cloud.baremetal
        node = bm.create_node(driver="fake-hardware")
        methods = bm.list_node_vendor_passthru(node)
        assert set(methods) == FAKE_METHODS
        assert methods["third_method_sync"] == {
            "http_methods": ["POST"], "async": False, "description": "Whether bar is 'meow'.",
            "attach": False, "require_exclusive_lock": True,
        }  # fmt: skip
        assert methods["fourth_method_shared_lock"]["require_exclusive_lock"] is False

        sync = bm.call_node_vendor_passthru(node, "POST", "third_method_sync", {"bar": "meow"})
        assert (sync.status_code, sync.json()) == (200, True)
        assert (
            bm.call_node_vendor_passthru(node, "POST", "third_method_sync", {"bar": "x"}).json()
            is False
        )
        assert bm.get_node(node.id).driver_internal_info["fake_vendor_bar"] == "x"

        later = bm.call_node_vendor_passthru(node, "POST", "second_method", {"bar": "kazoo"})
        assert (later.status_code, later.content) == (202, b"")
        info = wait_for(lambda: bm.get_node(node.id).driver_internal_info.get("fake_vendor_bar")
                        == "kazoo")  # fmt: skip
        assert info
        assert wait_for(lambda: bm.get_node(node.id).reservation is None)


def test_refused_calls_leave_the_node_as_it_was(served_url: str) -> None:
    with sdk(served_url) as cloud:
        node = cloud.baremetal.create_node(driver="fake-hardware")
    base = f"/v1/nodes/{node.id}/vendor_passthru"
    with httpx.Client(base_url=served_url, headers=LATEST, timeout=60) as client:
        before = client.get(f"/v1/nodes/{node.id}").json()
        refused = {
            "No handler for method 'nope'": client.post(f"{base}?method=nope", json={}),
            "does not support HTTP 'GET'": client.get(f"{base}?method=third_method_sync"),
            "missing required argument(s): bar": client.post(
                f"{base}?method=third_method_sync", json={}),
            "unexpected argument(s): baz": client.post(
                f"{base}/third_method_sync", json={"bar": "meow", "baz": 1}),
            "Method not specified": client.post(base, json={}),
            "arguments are a JSON object": client.post(f"{base}?method=third_method_sync",
                                                       json=["bar"]),
        }  # fmt: skip
        for text, answer in refused.items():
            assert answer.status_code == 400, (text, answer.text)
            assert text in answer.text, answer.text
        after = client.get(f"/v1/nodes/{node.id}").json()
        assert after == before
        assert after["reservation"] is None
        # The method named as the path's last segment, as Ironic routes it too.
        assert client.post(f"{base}/third_method_sync", json={"bar": "meow"}).json() is True
        assert (
            client.get(f"/v1/nodes/nope-{node.id[:8]}/vendor_passthru/methods").status_code == 404
        )

        plain = client.post("/v1/nodes", json={"driver": "fake-hardware",
                                               "vendor_interface": "no-vendor"}).json()  # fmt: skip
        assert client.get(f"/v1/nodes/{plain['uuid']}/vendor_passthru/methods").json() == {}
        nothing = client.post(f"/v1/nodes/{plain['uuid']}/vendor_passthru?method=second_method",
                              json={"bar": "kazoo"})  # fmt: skip
        assert nothing.status_code == 400
        assert "No handler for method 'second_method'" in nothing.text


def test_driver_methods_through_sdk_and_http(served_url: str) -> None:
    with sdk(served_url) as cloud:
        bm = cloud.baremetal
        methods = bm.list_driver_vendor_passthru("fake-hardware")
        echo = {"http_methods": ["GET", "POST"], "async": False,
                "description": "Its arguments, back.", "attach": False}  # fmt: skip
        assert methods == {"echo": echo}
        answer = bm.call_driver_vendor_passthru("fake-hardware", "POST", "echo", {"a": 1})
        assert answer.json() == {"http_method": "POST", "a": 1}
        with pytest.raises(ResourceNotFound):
            bm.list_driver_vendor_passthru("no-such-hardware")
    with httpx.Client(base_url=served_url, headers=LATEST, timeout=60) as client:
        got = client.get("/v1/drivers/fake-hardware/vendor_passthru?method=echo")
        assert got.json() == {"http_method": "GET"}
        assert client.delete("/v1/drivers/fake-hardware/vendor_passthru/echo").status_code == 400
        missing = client.post("/v1/drivers/no-such-hardware/vendor_passthru/echo", json={})
        assert missing.status_code == 404
        assert client.get("/v1/drivers/ipmi/vendor_passthru/methods").json() == {}


def test_openstack_cli_lists_and_calls(served_url: str) -> None:
    with sdk(served_url) as cloud:
        node = cloud.baremetal.create_node(driver="fake-hardware", name="passthru-cli")
    listed = openstack(served_url, "node", "passthru", "list", node.id, "-f", "json")
    assert {row["Name"] for row in listed} == FAKE_METHODS
    row = next(r for r in listed if r["Name"] == "third_method_sync")
    assert (row["Supported HTTP methods"], row["Async"]) == ("POST", False)
    # The client prints a dict's items only: log_passthrough (asynchronous) answers nothing.
    said = openstack(served_url, "node", "passthru", "call", "--arg", "note=one",
                     "passthru-cli", "log_passthrough")  # fmt: skip
    assert said.strip() == ""
    with sdk(served_url) as cloud:
        count = wait_for(lambda: cloud.baremetal.get_node(node.id).driver_internal_info.get(
            "fake_log_passthrough"))  # fmt: skip
    assert count == 1
    refused = openstack(served_url, "node", "passthru", "call", "passthru-cli", "nope",
                        check=False)  # fmt: skip
    assert refused.returncode != 0
    assert "No handler for method 'nope'" in refused.stderr
    drivers = openstack(served_url, "driver", "passthru", "list", "fake-hardware", "-f", "json")
    assert [row["name"] for row in drivers] == ["echo"]  # its columns are field names


def test_library_declares_and_checks_methods() -> None:
    conductor = Conductor(MemoryStore(), Config())
    node = conductor.create_node(driver="fake-hardware")
    done = conductor.vendor_passthru(node.uuid, "third_method_sync", "post", {"bar": "meow"})
    assert (done.value, done.async_call, done.attach) == (True, False, False)
    later = conductor.vendor_passthru(node.uuid, "second_method", "POST", {"bar": "kazoo"})
    assert (later.value, later.async_call) == (None, True)  # no executor: already ran
    assert conductor.get_node(node.uuid).driver_internal_info["fake_vendor_bar"] == "kazoo"
    with pytest.raises(InvalidParameterValue, match="does not support HTTP 'PUT'"):
        conductor.vendor_passthru(node.uuid, "second_method", "PUT", {"bar": "x"})
    assert conductor.get_node(node.uuid).driver_internal_info["fake_vendor_bar"] == "kazoo"
    assert conductor.get_node(node.uuid).reservation is None
    with pytest.raises(InvalidParameterValue, match="HTTP methods"):
        passthru(["FETCH"])
    with pytest.raises(InvalidParameterValue, match="HTTP methods"):
        passthru([])


# -- ipmi over the wire ------------------------------------------------------------------


def test_ipmi_send_raw_and_bmc_reset_reach_ipmi_sim(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    sim = start_sim(tmp_path)
    request.addfinalizer(sim.stop)
    with api_process(tmp_path / "ipmi.sqlite") as url, sdk(url) as cloud:
        bm = cloud.baremetal
        node = bm.create_node(driver="ipmi", driver_info=sim.driver_info(ipmi_timeout=5))
        assert set(bm.list_node_vendor_passthru(node)) == {"send_raw", "bmc_reset"}
        sent = bm.call_node_vendor_passthru(node, "POST", "send_raw", {"raw_bytes": "0x06 0x01"})
        assert sent.status_code == 202
        reply = wait_for(lambda: bm.get_node(node.id).driver_internal_info.get("ipmi_raw_reply"))
        assert (reply["netfn"], reply["command"], reply["code"]) == (7, 1, 0)  # Get Device ID
        wait_for(lambda: bm.get_node(node.id).reservation is None)

        # ipmi_sim refuses a BMC reset (0xC1); the refusal is the node's last_error.
        reset = bm.call_node_vendor_passthru(node, "POST", "bmc_reset", {"warm": True})
        assert reset.status_code == 202
        shown = wait_for(lambda: bm.get_node(node.id).last_error)
        assert "Invalid command" in shown
        assert "warm reset" in shown
        assert sim.password not in shown
        wait_for(lambda: bm.get_node(node.id).reservation is None)
        assert sim.state()["actions"] == []  # the machine was not touched

        with pytest.raises(BadRequestException, match=r"unexpected argument\(s\): cold"):
            bm.call_node_vendor_passthru(node, "POST", "bmc_reset", {"cold": True})


# -- redfish's eject_vmedia on the sushy-tools emulator -----------------------------------


def test_redfish_eject_vmedia_ejects_from_the_emulator(tmp_path: Path) -> None:
    images = tmp_path / "images"
    images.mkdir()
    (images / "tools.iso").write_bytes(b"\0" * 4096)
    with (
        stopped(start_emulator(tmp_path / "emu", password="Redfish-Vendor-Secret")) as emu,
        stopped(FileServer(images)) as files,
        api_process(tmp_path / "redfish.sqlite") as url,
        sdk(url) as cloud,
    ):
        bm = cloud.baremetal
        node = bm.create_node(driver="redfish", driver_info=emu.driver_info())
        assert node.vendor_interface == "redfish"
        assert set(bm.list_node_vendor_passthru(node)) == {"eject_vmedia"}
        image = f"{files.url}/tools.iso"
        bm.attach_vmedia_to_node(node, device_type="cdrom", image_url=image)
        assert emu.system_state()["vmedia"]["Cd"] == {"image_url": image, "inserted": True}

        # Checked as it runs (it is asynchronous, as Ironic's): the refusal is the last_error.
        refused = bm.call_node_vendor_passthru(
            node, "POST", "eject_vmedia", {"boot_device": "tape"}
        )
        assert refused.status_code == 202
        shown = wait_for(lambda: bm.get_node(node.id).last_error)
        assert "boot_device must be one of cd, dvd, usb, floppy, not 'tape'" in shown
        wait_for(lambda: bm.get_node(node.id).reservation is None)
        assert emu.system_state()["vmedia"]["Cd"]["inserted"] is True
        ejected = bm.call_node_vendor_passthru(node, "POST", "eject_vmedia", {"boot_device": "cd"})
        assert ejected.status_code == 202
        wait_for(lambda: emu.system_state()["vmedia"]["Cd"]["inserted"] is False)
        wait_for(lambda: bm.get_node(node.id).reservation is None)
