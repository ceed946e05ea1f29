"""Virtual media on request (1.89) on a Redfish node: inserted into and ejected from the
sushy-tools emulator's slots through sushy, as the BMC reports them; and the API's answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_helpers import LATEST, api_in_process, error_text
from helpers import stopped_after

from ironic_fsm import Conductor, Config
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.stores import MemoryStore
from ironic_fsm.testing.redfish_emulator import Emulator, FileServer, start_emulator

PASSWORD = "Redfish-Secret-42"


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    yield from stopped_after(start_emulator(tmp_path_factory.mktemp("vmedia"), password=PASSWORD))


@pytest.fixture
def files(tmp_path: Path) -> Iterator[FileServer]:
    images = tmp_path / "images"
    images.mkdir()
    (images / "tools.iso").write_bytes(b"\0" * 4096)
    yield from stopped_after(FileServer(images))


def test_redfish_node_inserts_and_ejects_a_cd(emu: Emulator, files: FileServer) -> None:
    conductor = Conductor(MemoryStore(), Config())
    node = conductor.create_node(driver="redfish", driver_info=emu.driver_info())
    url = f"{files.url}/tools.iso"
    conductor.attach_virtual_media(node.uuid, "cdrom", url)
    assert emu.system_state()["vmedia"]["Cd"] == {"image_url": url, "inserted": True}
    conductor.detach_virtual_media(node.uuid, ["cdrom"])
    assert emu.system_state()["vmedia"]["Cd"]["inserted"] is False
    with pytest.raises(InvalidParameterValue, match="device_type must be one of"):
        conductor.attach_virtual_media(node.uuid, "tape", url)
    assert conductor.get_node(node.uuid).reservation is None


def test_api_attaches_and_detaches(tmp_path: Path, emu: Emulator, files: FileServer) -> None:
    with (
        api_in_process(tmp_path / "vmedia.sqlite") as (conductor, _, base),
        httpx.Client(base_url=base, headers=LATEST, timeout=60) as client,
    ):
        node = conductor.create_node(driver="redfish", driver_info=emu.driver_info())
        path = f"/v1/nodes/{node.uuid}/vmedia"
        url = f"{files.url}/tools.iso"
        attached = client.post(path, json={"device_type": "cdrom", "image_url": url})
        assert attached.status_code == 204, attached.text
        assert emu.system_state()["vmedia"]["Cd"] == {"image_url": url, "inserted": True}
        assert client.delete(path).status_code == 204
        assert emu.system_state()["vmedia"]["Cd"]["inserted"] is False
        bad = client.post(path, json={"device_type": "tape", "image_url": url})
        assert bad.status_code == 400
        old = client.post(path, json={"device_type": "cdrom", "image_url": url},
                          headers={"X-OpenStack-Ironic-API-Version": "1.88"})  # fmt: skip
        assert old.status_code == 404
        ipmi = conductor.create_node(driver="fake-hardware", management_interface="noop")
        refused = client.post(f"/v1/nodes/{ipmi.uuid}/vmedia",
                              json={"device_type": "cdrom", "image_url": url})  # fmt: skip
        assert refused.status_code == 400
        assert "attach_virtual_media" in error_text(refused)
        fake = conductor.create_node(driver="fake-hardware")
        ok = client.post(f"/v1/nodes/{fake.uuid}/vmedia",
                         json={"device_type": "cdrom", "image_url": url})  # fmt: skip
        assert ok.status_code == 204
        info = conductor.get_node(fake.uuid).driver_internal_info["fake_vmedia"]
        assert info == {"cdrom": {"image_url": url, "image_download_source": "local"}}
        firmware = client.get(f"/v1/nodes/{fake.uuid}/firmware")
        assert firmware.json() == {"firmware": []}
        conductor.record_firmware_components(
            fake.uuid, [{"component": "bmc", "current_version": "1.0"}]
        )
        conductor.record_firmware_components(
            fake.uuid, [{"component": "bmc", "current_version": "1.1"}]
        )
        [bmc] = client.get(f"/v1/nodes/{fake.uuid}/firmware").json()["firmware"]
        assert (bmc["component"], bmc["initial_version"], bmc["current_version"]) == (
            "bmc", "1.0", "1.1",
        )  # fmt: skip
        assert (
            client.get(
                f"/v1/nodes/{fake.uuid}/firmware",
                headers={"X-OpenStack-Ironic-API-Version": "1.85"},
            ).status_code
            == 404
        )
