"""What ``write_image`` hands the real IPA 13.0.0 beyond a whole-disk image: a partition image
and a config drive, each checked on the sandbox's loop device afterwards.

The loop device is a sparse 2 GiB file: a partition image's root partition
is ``root_gb`` GiB (Ironic counts it in GiB), and IPA puts a config drive in
the last 64 MiB of a disk. The images are small ext4 file systems made here
(in files, never on a device), so their UUID and label can be read back.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import re
import subprocess
import uuid as uuidlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from ipa_harness import HEARTBEAT_TIMEOUT, MAC, Peer, image_server, running_peer
from ipa_sandbox import Sandbox, SandboxManagement

from ironic_fsm import Config
from ironic_fsm.drivers.generic import PXEBoot
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node

#: IPA's MBR config drive partition: the disk's last 64 MiB.
CONFIG_DRIVE_MIB = 64


def _filesystem(path: Path, mib: int, label: str) -> str:
    """An ext4 file system of ``mib`` MiB in the file ``path``, labelled; its UUID."""
    made = str(uuidlib.uuid4())
    path.write_bytes(b"")
    subprocess.run(["truncate", "-s", f"{mib}M", str(path)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", label, "-U", made, str(path)], check=True)
    return made


def _partitions(device: str) -> list[dict[str, Any]]:
    """The device's MBR partitions in table order: start and size in 512-byte sectors."""
    with open(device, "rb") as disk:
        mbr = disk.read(512)
    assert mbr[510:] == b"\x55\xaa", f"no MBR on {device}"
    entries = [mbr[446 + 16 * i : 462 + 16 * i] for i in range(4)]
    return [
        {"type": entry[4], "start": int.from_bytes(entry[8:12], "little"),
         "size": int.from_bytes(entry[12:16], "little")}
        for entry in entries if entry[4]
    ]  # fmt: skip


def _read(device: str, partition: dict[str, Any], length: int) -> bytes:
    with open(device, "rb") as disk:
        disk.seek(partition["start"] * 512)
        return disk.read(length)


def _configdrive(content: bytes) -> str:
    """A config drive as Ironic hands it to the agent: gzipped, then base64."""
    return base64.b64encode(gzip.compress(content)).decode()


@attrs.define
class Writer:
    peer: Peer
    url: str
    folder: Path

    def instance(self, image: Path, **changes: Any) -> dict[str, Any]:
        return {
            "image_source": f"{self.url}/{image.name}",
            "image_os_hash_algo": "sha256",
            "image_os_hash_value": hashlib.sha256(image.read_bytes()).hexdigest(),
            "image_disk_format": "raw",
            **changes,
        }

    def deploy(self, instance_info: dict[str, Any], **request: Any) -> Node:
        node = self.peer.node(
            provision_state="available", power_state="power off", instance_info=instance_info,
            properties={"capabilities": "boot_mode:bios"},
        )  # fmt: skip
        self.peer.conductor.do_provisioning_action(node.uuid, "deploy", **request)
        return self.peer.wait_for(
            node.uuid, lambda n: n.provision_state in ("active", "deploy failed"), timeout=240
        )


@pytest.fixture
def writer(tmp_path: Path, make_sandbox: Callable[..., Sandbox], ipa: Path) -> Iterator[Writer]:
    sandbox = make_sandbox(MAC, size_mib=2048)
    served = tmp_path / "images"
    served.mkdir()
    config = Config(
        ramdisk_heartbeat_timeout=HEARTBEAT_TIMEOUT, post_deploy_get_power_state_retry_interval=0.5
    )

    def kinds(power: Any) -> dict[str, Any]:
        return {"management": SandboxManagement(power), "boot": PXEBoot()}

    with (
        image_server(served, sandbox.host_ip) as url,
        running_peer(tmp_path, sandbox, ipa, config=config, kinds=kinds) as peer,
    ):
        yield Writer(peer, url, served)


def test_a_partition_image_and_its_config_drive_land_in_their_partitions(writer: Writer) -> None:
    """IPA makes the root partition (root_gb) and the config drive's, writes the image and the
    drive; the conductor records the root's UUID and has the agent install the bootloader
    (a BIOS one, which IPA 13 refuses unless told to let it pass: the sandbox tells it)."""
    writer.peer.sandbox.ipa_options["ignore_bootloader_failure"] = "true"
    root = writer.folder / "root.img"
    root_uuid = _filesystem(root, 8, "instance-root")
    drive = writer.folder / "drive.img"
    _filesystem(drive, 2, "config-2")
    done = writer.deploy(writer.instance(
        root, image_type="partition", root_gb=1, configdrive=_configdrive(drive.read_bytes()),
    ))  # fmt: skip
    assert done.provision_state == "active", done.last_error
    disk = writer.peer.sandbox.disk
    # IPA's layout for a BIOS partition image: the config drive's partition first (the
    # drive's size), then the root partition of root_gb (in MiB: 1024 x 2048 sectors).
    first, second = _partitions(disk)
    assert (first["size"], second["size"]) == (2 * 2048, 1024 * 2048)
    assert _read(disk, first, drive.stat().st_size) == drive.read_bytes()
    assert _read(disk, second, root.stat().st_size) == root.read_bytes()
    info = done.driver_internal_info
    assert info["root_uuid_or_disk_id"] == root_uuid
    assert info["is_whole_disk_image"] is False
    log = writer.peer.sandbox.ipa_log()
    assert "install_bootloader" in log
    assert "Install of legacy BIOS bootloaders disabled" in log  # asked, refused, let pass
    assert writer.peer.power.boot_device[done.uuid] == "disk"


def test_a_bios_partition_image_fails_where_ipa_refuses_its_bootloader(writer: Writer) -> None:
    """Without the agent's leave, IPA 13 refuses a BIOS bootloader: the deploy fails with its
    words, after the image was written, and the token is wiped."""
    root = writer.folder / "root.img"
    _filesystem(root, 8, "instance-root")
    done = writer.deploy(writer.instance(root, image_type="partition", root_gb=1))
    assert done.provision_state == "deploy failed"
    error = done.last_error or ""
    assert f"Failed to install a bootloader when deploying node {done.uuid}: " in error
    assert "legacy BIOS bootloaders disabled" in error
    assert not {"agent_secret_token", "agent_url"} & set(done.driver_internal_info)
    (part,) = _partitions(writer.peer.sandbox.disk)
    assert _read(writer.peer.sandbox.disk, part, root.stat().st_size) == root.read_bytes()


def test_a_whole_disk_image_with_a_config_drive(writer: Writer) -> None:
    """The config drive goes to a new partition in the disk's last 64 MiB, labelled config-2."""
    image = writer.folder / "disk.raw"
    subprocess.run(["truncate", "-s", "8M", str(image)], check=True)
    subprocess.run(["parted", "-s", str(image), "mklabel", "msdos", "mkpart", "primary",
                    "1MiB", "100%"], check=True)  # fmt: skip
    drive = writer.folder / "drive.img"
    _filesystem(drive, 2, "config-2")
    done = writer.deploy(writer.instance(image, configdrive=_configdrive(drive.read_bytes())))
    assert done.provision_state == "active", done.last_error
    disk = writer.peer.sandbox.disk
    with open(disk, "rb") as device:
        assert device.read(512)[:446] == image.read_bytes()[:446]  # the image's boot code
    first, last = _partitions(disk)
    assert first["size"] * 512 == (8 - 1) << 20
    assert last["size"] // 2048 == CONFIG_DRIVE_MIB
    assert _read(disk, last, drive.stat().st_size) == drive.read_bytes()
    assert done.driver_internal_info["is_whole_disk_image"] is True


def _whole_disk(folder: Path) -> Path:
    image = folder / "disk.raw"
    subprocess.run(["truncate", "-s", "8M", str(image)], check=True)
    subprocess.run(["parted", "-s", str(image), "mklabel", "msdos", "mkpart", "primary",
                    "1MiB", "100%"], check=True)  # fmt: skip
    return image


def test_a_config_drive_in_its_json_form_is_built_and_written(writer: Writer) -> None:
    """Given with the deploy request as an object (API 1.56's form), the drive is kept in
    instance_info as given and made into a config-2 ISO 9660 image when the agent writes it:
    read back from the disk's last 64 MiB, it holds the files cloud-init reads."""
    import pycdlib

    image = _whole_disk(writer.folder)
    drive = {
        "meta_data": {"hostname": "web-1", "public_keys": {"0": "ssh-ed25519 AAAA test"}},
        "network_data": {"links": [{"id": "eth0", "type": "phy"}]},
        "user_data": "#cloud-config\nruncmd: [true]\n",
    }
    done = writer.deploy(writer.instance(image), configdrive=drive)
    assert done.provision_state == "active", done.last_error
    assert done.instance_info["configdrive"] == drive  # kept in its JSON form
    disk = writer.peer.sandbox.disk
    _, last = _partitions(disk)
    assert last["size"] // 2048 == CONFIG_DRIVE_MIB
    iso = pycdlib.PyCdlib()
    with open(disk, "rb") as device:
        device.seek(last["start"] * 512)
        iso.open_fp(io.BytesIO(device.read(CONFIG_DRIVE_MIB << 20)))
    assert iso.pvd.volume_identifier.rstrip() == b"config-2"

    def read(path: str) -> bytes:
        out = io.BytesIO()
        iso.get_file_from_iso_fp(out, rr_path=path)
        return out.getvalue()

    for version in ("2012-08-10", "latest"):
        meta = json.loads(read(f"/openstack/{version}/meta_data.json"))
        assert meta == {**drive["meta_data"], "uuid": done.uuid}  # the node's uuid added
        assert json.loads(read(f"/openstack/{version}/network_data.json")) == drive["network_data"]
        assert read(f"/openstack/{version}/user_data").decode() == drive["user_data"]
    iso.close()


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"image_type": "partition"}, "Missing are: ['root_gb']"),
        ({"image_type": "partition", "root_gb": "ten"}, "Invalid parameter root_gb: ten is not"),
        ({"image_type": "netboot"}, 'Invalid image_type "netboot", valid are partition'),
        ({"swap_mb": 512}, "Cannot deploy whole disk image with swap or ephemeral size set"),
        ({"kernel": "http://x/k", "root_gb": 1, "preserve_ephemeral": "maybe"},
         "Invalid parameter preserve_ephemeral: 'maybe' is not a Boolean"),
    ],
)  # fmt: skip
def test_a_bad_partition_layout_is_refused_and_the_node_left_as_it_was(
    writer: Writer, changes: dict[str, Any], words: str
) -> None:
    root = writer.folder / "root.img"
    _filesystem(root, 8, "instance-root")
    node = writer.peer.node(provision_state="available", power_state="power off",
                            instance_info=writer.instance(root, **changes))  # fmt: skip
    with pytest.raises(InvalidParameterValue, match=re.escape(words)):
        writer.peer.conductor.do_provisioning_action(node.uuid, "deploy")
    after = writer.peer.conductor.get_node(node.uuid)
    assert (after.provision_state, after.reservation) == ("available", None)
    assert not writer.peer.sandbox.running()
