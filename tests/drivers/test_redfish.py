"""The ``redfish`` hardware type against a real Redfish emulator on 127.0.0.1.

Every test talks HTTP to the project's extension of the sushy-tools
emulator (:mod:`ironic_fsm.testing.redfish_emulator`); nothing in sushy is
mocked. What the driver did is checked in the emulator's own state
(``/_peer/state``), not only in what the driver reports. Emulators run as
child processes: one shared by the tests that leave it as they found it,
one for fault injection, and one "limited" BMC (two systems, no storage, no
inventory, no Manager.Reset, BIOS changes applied at reboot, slow power
changes).
"""

from __future__ import annotations

import functools
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import clean_one, manageable_on, stopped_after, task_for

from ironic_fsm import Conductor, Config, states
from ironic_fsm.drivers import redfish
from ironic_fsm.exceptions import (
    BMCAuthError,
    BMCRequestFailed,
    BMCTimeout,
    BMCUnreachable,
    InvalidParameterValue,
    MissingDependency,
)
from ironic_fsm.node import Node
from ironic_fsm.testing.redfish_emulator import Emulator, FileServer, start_emulator

PASSWORD = "Redfish-Secret-42"
BIOS_DEFAULTS = {"ProcTurboMode": "Enabled", "NicBoot1": "NetworkBoot"}


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    yield from stopped_after(start_emulator(tmp_path_factory.mktemp("redfish"), password=PASSWORD))


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """An emulator for fault injection; faults are cleared after each test using it."""
    yield from stopped_after(
        start_emulator(tmp_path_factory.mktemp("redfish-faults"), password=PASSWORD)
    )


@pytest.fixture
def faults(faulty: Emulator) -> Iterator[Emulator]:
    faulty.clear_faults()
    faulty.clear_requests_log()
    redfish.clear_connection_cache()
    try:
        yield faulty
    finally:
        faulty.clear_faults()


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    yield from stopped_after(
        start_emulator(
            tmp_path_factory.mktemp("redfish-limited"),
            password=PASSWORD,
            power_delay=0.3,
            bios_apply="reboot",
            memory_gb=None,
            cpus=None,
            drives=None,
            extra_systems=1,
            extra_config={"SUSHY_EMULATOR_PEER_MANAGER_RESET": False},
        )
    )


@pytest.fixture(scope="module")
def hardware() -> Any:
    return redfish.redfish_hardware()


#: make_task(hardware, driver_info, **node_fields): a task on a new redfish node.
make_task = functools.partial(task_for, "redfish")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def new_conductor(**config: Any) -> Conductor:
    return Conductor(config=Config(**config))


def enroll_manageable(conductor: Conductor, emu: Emulator, **driver_info: Any) -> Node:
    return manageable_on(conductor, "redfish", emu.driver_info(**driver_info))


# -- driver_info -----------------------------------------------------------------------------------


def test_get_properties_documents_every_key(hardware: Any) -> None:
    props = hardware.power.get_properties()
    for key in (
        "redfish_address",
        "redfish_system_id",
        "redfish_username",
        "redfish_password",
        "redfish_verify_ca",
        "redfish_connect_timeout",
        "redfish_read_timeout",
        "redfish_server_side_retries",
        "redfish_server_side_retries_delay",
    ):
        assert props[key], key
    assert hardware.bios.get_properties() == props


def test_validate_names_every_bad_key_and_never_the_password(hardware: Any) -> None:
    task = make_task(
        hardware,
        {
            "redfish_password": PASSWORD,
            "redfish_username": "admin",
            "redfish_verify_ca": "/no/such/ca.pem",
            "redfish_read_timeout": "soon",
            "redfish_connect_timeout": 0,
            "redfish_server_side_retries": -1,
            "redfish_boot_mode": "efi",
            "redfish_deploy_iso": "ftp://x/y.iso",
        },
    )
    with pytest.raises(InvalidParameterValue) as info:
        hardware.power.validate(task)
    text = str(info.value)
    for key in (
        "redfish_address",
        "redfish_verify_ca",
        "redfish_read_timeout",
        "redfish_connect_timeout",
        "redfish_server_side_retries",
        "redfish_boot_mode",
        "redfish_deploy_iso",
    ):
        assert key in text
    assert PASSWORD not in text
    assert task.node.uuid in text


def test_validate_refuses_credentials_in_the_address(hardware: Any) -> None:
    task = make_task(hardware, {"redfish_address": f"https://admin:{PASSWORD}@10.0.0.1"})
    with pytest.raises(InvalidParameterValue, match="must not contain credentials") as info:
        hardware.management.validate(task)
    assert PASSWORD not in str(info.value)


def test_an_address_with_credentials_is_never_shown_whatever_else_is_wrong(hardware: Any) -> None:
    # A scheme other than http(s) used to be reported first, with the address
    # (and the password in it) quoted in the message.
    for address in (f"ftp://admin:{PASSWORD}@10.0.0.1", f"https://admin:{PASSWORD}@"):
        task = make_task(hardware, {"redfish_address": address})
        with pytest.raises(InvalidParameterValue, match="must not contain credentials") as info:
            hardware.power.validate(task)
        assert PASSWORD not in str(info.value)
        assert info.value.details["keys"] == ["redfish_address"]


def test_defaults_are_fast_and_zero_is_not_sushys_default(hardware: Any) -> None:
    info = redfish.parse_driver_info(Node(driver_info={"redfish_address": "10.0.0.1"}))
    assert info.address == "https://10.0.0.1"
    assert (info.connect_timeout, info.read_timeout) == (5, 10)
    assert (info.server_side_retries, info.server_side_retries_delay) == (2, 0.5)
    assert info.verify_ca is True
    zero = redfish.parse_driver_info(
        Node(
            driver_info={
                "redfish_address": "http://10.0.0.1:8000/",
                "redfish_system_id": "1",
                "redfish_server_side_retries": 0,
                "redfish_server_side_retries_delay": 0,
                "redfish_verify_ca": "false",
            }
        )
    )
    kwargs = zero.sushy_kwargs()
    # sushy reads 0 as "3 attempts, 2 s apart": 0 must reach it as the smallest positive value.
    assert kwargs["server_side_retries"] == 1
    assert 0 < kwargs["server_side_retries_delay"] < 0.01
    assert kwargs["verify"] is False
    assert zero.system_id == "/redfish/v1/Systems/1"
    assert PASSWORD not in repr(
        redfish.parse_driver_info(
            Node(
                driver_info={
                    "redfish_address": "h",
                    "redfish_username": "u",
                    "redfish_password": PASSWORD,
                }
            )
        )
    )


def test_missing_sushy_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    redfish._sushy.cache_clear()
    monkeypatch.setitem(sys.modules, "sushy", None)
    try:
        with pytest.raises(MissingDependency, match=r"ironic_fsm\[redfish\]") as info:
            redfish.redfish_hardware()
        assert info.value.extra == "redfish"
    finally:
        monkeypatch.undo()
        redfish._sushy.cache_clear()
    assert redfish.redfish_hardware() is not None


def test_entry_point_loads_the_redfish_type() -> None:
    conductor = new_conductor()
    node = conductor.create_node(driver="redfish")
    steps = {(s["interface"], s["step"]) for s in conductor.get_clean_steps(node.uuid)}
    assert {
        ("bios", "apply_configuration"),
        ("bios", "factory_reset"),
        ("raid", "create_configuration"),
        ("raid", "delete_configuration"),
        ("firmware", "update"),
        ("management", "reset_bmc"),
    } <= steps
    deploy = {
        (s["interface"], s["step"], s["priority"]) for s in conductor.get_deploy_steps(node.uuid)
    }
    assert ("deploy", "deploy", 100) in deploy
    assert ("bios", "apply_configuration", 0) in deploy
    assert ("raid", "create_configuration", 0) in deploy


# -- power and boot device -------------------------------------------------------------------------


def test_power_on_off_reboot_reach_the_bmc(emu: Emulator, hardware: Any) -> None:
    task = make_task(hardware, emu.driver_info())
    hardware.power.set_power_state(task, states.POWER_OFF)
    assert emu.system_state()["power_state"] == "Off"
    assert hardware.power.get_power_state(task) == states.POWER_OFF

    boots = len(emu.system_state().get("boot_history", []))
    hardware.power.set_power_state(task, states.POWER_ON)
    assert emu.system_state()["power_state"] == "On"
    assert hardware.power.get_power_state(task) == states.POWER_ON

    hardware.power.reboot(task)
    state = emu.system_state()
    assert state["power_state"] == "On"
    assert len(state["boot_history"]) == boots + 2  # power on, then the restart

    hardware.power.set_power_state(task, states.SOFT_POWER_OFF)
    assert emu.system_state()["power_state"] == "Off"
    hardware.power.set_power_state(task, states.REBOOT)  # off: reboot means power on
    assert emu.system_state()["power_state"] == "On"
    hardware.power.set_power_state(task, states.POWER_OFF)
    assert emu.system_state()["power_state"] == "Off"


def test_conductor_set_power_state(emu: Emulator) -> None:
    conductor = new_conductor()
    node = enroll_manageable(conductor, emu)
    node = conductor.set_power_state(node.uuid, states.POWER_ON)
    assert node.power_state == states.POWER_ON
    assert emu.system_state()["power_state"] == "On"
    node = conductor.set_power_state(node.uuid, states.POWER_OFF)
    assert node.power_state == states.POWER_OFF
    assert emu.system_state()["power_state"] == "Off"


def test_boot_device_set_and_read_back(emu: Emulator, hardware: Any) -> None:
    task = make_task(hardware, emu.driver_info())
    mgmt = hardware.management
    assert set(mgmt.get_supported_boot_devices(task)) >= {"pxe", "disk", "cdrom", "bios"}

    mgmt.set_boot_device(task, "pxe")
    assert mgmt.get_boot_device(task) == {"boot_device": "pxe", "persistent": False}
    state = emu.system_state()
    assert (state["boot_device"], state["boot_enabled"]) == ("Pxe", "Once")

    for device, target in (("disk", "Hdd"), ("cdrom", "Cd"), ("bios", "BiosSetup")):
        mgmt.set_boot_device(task, device, persistent=True)
        assert mgmt.get_boot_device(task) == {"boot_device": device, "persistent": True}
        assert emu.system_state()["boot_device"] == target

    # The boot mode goes along when driver_info asks for one.
    legacy = make_task(hardware, emu.driver_info(redfish_boot_mode="bios"))
    mgmt.set_boot_device(legacy, "disk", persistent=True)
    assert emu.system_state()["boot_mode"] == "Legacy"
    assert mgmt.get_boot_mode(legacy) == "bios"
    uefi = make_task(hardware, emu.driver_info(), properties={"capabilities": "boot_mode:uefi"})
    mgmt.set_boot_device(uefi, "disk", persistent=True)
    assert emu.system_state()["boot_mode"] == "UEFI"

    with pytest.raises(InvalidParameterValue, match="floppy"):
        mgmt.set_boot_device(task, "floppy")


def test_one_time_boot_is_consumed_by_the_next_power_on(emu: Emulator, hardware: Any) -> None:
    task = make_task(hardware, emu.driver_info())
    hardware.power.set_power_state(task, states.POWER_OFF)
    hardware.management.set_boot_device(task, "pxe", persistent=False)
    hardware.power.set_power_state(task, states.POWER_ON)
    state = emu.system_state()
    assert state["boot_history"][-1]["target"] == "Pxe"
    assert state["boot_history"][-1]["enabled"] == "Once"
    assert hardware.management.get_boot_device(task)["persistent"] is False
    hardware.power.set_power_state(task, states.POWER_OFF)


# -- BIOS, RAID, inspection, firmware through the conductor ----------------------------------------


def test_bios_apply_and_factory_reset_as_manual_clean_steps(emu: Emulator) -> None:
    conductor = new_conductor()
    node = enroll_manageable(conductor, emu)
    settings = [
        {"name": "ProcTurboMode", "value": "Disabled"},
        {"name": "NicBoot1", "value": "NetworkBootDisabled"},
    ]
    node = clean_one(conductor, node, "bios", "apply_configuration", settings=settings)
    assert node.provision_state == states.MANAGEABLE, node.last_error
    bios = emu.get(emu.system_id + "/BIOS")["Attributes"]
    assert bios["ProcTurboMode"] == "Disabled"
    assert bios["NicBoot1"] == "NetworkBootDisabled"
    assert node.driver_internal_info["redfish_bios_settings"]["ProcTurboMode"] == "Disabled"

    node = clean_one(conductor, node, "bios", "factory_reset")
    assert node.provision_state == states.MANAGEABLE, node.last_error
    bios = emu.get(emu.system_id + "/BIOS")["Attributes"]
    assert {k: bios[k] for k in BIOS_DEFAULTS} == BIOS_DEFAULTS
    assert node.driver_internal_info["redfish_bios_settings"]["ProcTurboMode"] == "Enabled"
    assert emu.system_state()["bios_resets"] >= 1


def test_bios_unknown_attribute_fails_cleaning_with_the_bmcs_answer(emu: Emulator) -> None:
    conductor = new_conductor()
    node = enroll_manageable(conductor, emu)
    knob = [{"name": "NoSuchKnob", "value": "1"}]
    node = clean_one(conductor, node, "bios", "apply_configuration", settings=knob)
    assert node.provision_state == states.CLEANFAIL
    assert "HTTP 400" in node.last_error
    assert "NoSuchKnob" in node.last_error
    assert emu.url in node.last_error
    assert PASSWORD not in node.last_error


def test_raid_create_and_delete_as_manual_clean_steps(emu: Emulator) -> None:
    conductor = new_conductor()
    node = enroll_manageable(conductor, emu)
    target = {
        "logical_disks": [
            {"size_gb": "MAX", "raid_level": "5"},
            {"size_gb": 50, "raid_level": "1", "is_root_volume": True, "volume_name": "root"},
        ]
    }
    node = conductor.update_node(node.uuid, target_raid_config=target)
    node = conductor.do_provisioning_action(
        node.uuid,
        "clean",
        clean_steps=[
            {"interface": "raid", "step": "delete_configuration"},
            {"interface": "raid", "step": "create_configuration"},
        ],
    )
    assert node.provision_state == states.MANAGEABLE, node.last_error
    volumes = {v["Name"]: v for v in emu.volumes()}
    assert set(volumes) == {"root", "RAID5-1"}
    assert volumes["root"]["RAIDType"] == "RAID1"
    assert volumes["root"]["CapacityBytes"] == 50 * 1024**3
    assert len(volumes["root"]["Links"]["Drives"]) == 2
    assert volumes["RAID5-1"]["RAIDType"] == "RAID5"
    assert len(volumes["RAID5-1"]["Links"]["Drives"]) == 3
    # The root volume is created first, on the smallest drives that fit.
    disks = node.raid_config["logical_disks"]
    assert [d.get("is_root_volume", False) for d in disks] == [True, False]
    assert disks[0]["physical_disks"] == ["disk0", "disk1"]
    assert disks[0]["volume_id"] == volumes["root"]["Id"]
    assert disks[1]["size_gb"] == 200  # 3 drives, smallest 100 GiB, one for parity
    # What the BMC serves, seen through Redfish.
    served = emu.get(f"{emu.system_id}/Storage/RAID/Volumes/{volumes['root']['Id']}")
    assert served["RAIDType"] == "RAID1"

    node = conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[{"interface": "raid", "step": "delete_configuration"}]
    )
    assert node.provision_state == states.MANAGEABLE, node.last_error
    assert emu.volumes() == []
    assert node.raid_config == {}


def test_raid_target_that_cannot_fit_fails_cleaning(emu: Emulator) -> None:
    conductor = new_conductor()
    node = enroll_manageable(conductor, emu)
    conductor.update_node(
        node.uuid, target_raid_config={"logical_disks": [{"size_gb": 5000, "raid_level": "1"}]}
    )
    node = conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[{"interface": "raid", "step": "create_configuration"}]
    )
    assert node.provision_state == states.CLEANFAIL
    assert "5000 GiB" in node.last_error
    assert emu.volumes() == []


def test_raid_target_is_validated(hardware: Any) -> None:
    task = make_task(hardware, {"redfish_address": "http://127.0.0.1:1"})
    bad = {
        "logical_disks": [
            {"size_gb": -1, "raid_level": "7"},
            {"size_gb": 1, "raid_level": "1", "is_root_volume": True},
            {"size_gb": 1, "raid_level": "1", "is_root_volume": True},
        ]
    }
    with pytest.raises(InvalidParameterValue) as info:
        hardware.raid.validate_raid_config(task, bad)
    text = str(info.value)
    assert "raid_level" in text
    assert "size_gb" in text
    assert "is_root_volume" in text


def test_inspect_fills_properties(emu: Emulator) -> None:
    conductor = new_conductor()
    node = enroll_manageable(conductor, emu)
    node = conductor.do_provisioning_action(node.uuid, "inspect")
    assert node.provision_state == states.MANAGEABLE, node.last_error
    props = node.properties
    assert props["memory_mb"] == 32 * 1024
    assert props["cpus"] == 8
    assert props["cpu_arch"] == "x86_64"
    assert props["local_gb"] == 199  # largest drive (200 GiB), minus 1 as Ironic does
    assert props["macs"] == sorted(emu.macs)
    assert "boot_mode:uefi" in props["capabilities"]


def test_firmware_update_bumps_the_bios_version(emu: Emulator) -> None:
    conductor = new_conductor()
    node = enroll_manageable(conductor, emu)
    before = emu.get(emu.system_id)["BiosVersion"]
    started = time.monotonic()
    image = [{"component": "bios", "url": "http://127.0.0.1:9/bios-2.bin"}]
    node = clean_one(conductor, node, "firmware", "update", settings=image)
    elapsed = time.monotonic() - started
    assert node.provision_state == states.MANAGEABLE, node.last_error
    after = emu.get(emu.system_id)["BiosVersion"]
    major, minor, patch = before.split(".")
    assert after == f"{major}.{int(minor) + 1}.{patch}"
    assert node.driver_internal_info["redfish_firmware"]["bios"] == after
    assert elapsed >= 0.3  # the task stayed "Running" for the emulator's update delay
    tasks = emu.state()["tasks"]
    assert any(
        t["image"].endswith("bios-2.bin") and t["state"] == "Completed" for t in tasks.values()
    )


def test_firmware_update_task_failure_fails_the_step(emu: Emulator) -> None:
    conductor = new_conductor()
    node = enroll_manageable(conductor, emu)
    before = emu.get(emu.system_id)["BiosVersion"]
    image = [{"component": "bios", "url": "http://127.0.0.1:9/fail.bin"}]
    node = clean_one(conductor, node, "firmware", "update", settings=image)
    assert node.provision_state == states.CLEANFAIL
    assert "Exception" in node.last_error
    assert emu.get(emu.system_id)["BiosVersion"] == before


def test_reset_bmc_step(emu: Emulator) -> None:
    conductor = new_conductor()
    node = enroll_manageable(conductor, emu)
    before = emu.system_state().get("manager_resets", 0)
    node = conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[{"interface": "management", "step": "reset_bmc"}]
    )
    assert node.provision_state == states.MANAGEABLE, node.last_error
    assert emu.system_state()["manager_resets"] == before + 1


# -- the whole lifecycle ---------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> Iterator[FileServer]:
    """An HTTP server for the images a BMC fetches: deploy.iso and rescue.iso."""
    images = tmp_path / "images"
    images.mkdir()
    for name in ("deploy.iso", "rescue.iso"):
        (images / name).write_bytes(b"\0" * 4096)
    yield from stopped_after(FileServer(images))


def test_full_lifecycle_with_virtual_media(emu: Emulator, files: FileServer) -> None:
    try:
        conductor = new_conductor(
            automated_cleaning_step_source="runbook",
            automated_cleaning_runbook="tenant-clean",
            automated_cleaning_runbook_validate_traits=False,
        )
        conductor.add_runbook(
            "tenant-clean",
            [
                {"interface": "raid", "step": "delete_configuration"},
                {"interface": "raid", "step": "create_configuration"},
                {
                    "interface": "bios",
                    "step": "apply_configuration",
                    "args": {"settings": [{"name": "ProcTurboMode", "value": "Disabled"}]},
                },
            ],
        )
        node = conductor.create_node(
            driver="redfish",
            name="rf-lifecycle",
            driver_info=emu.driver_info(redfish_deploy_iso=f"{files.url}/deploy.iso"),
            target_raid_config={
                "logical_disks": [{"size_gb": 100, "raid_level": "1", "is_root_volume": True}]
            },
        )
        emu.clear_requests_log()
        node = conductor.do_provisioning_action(node.uuid, "manage")
        assert node.provision_state == states.MANAGEABLE, node.last_error
        assert node.power_state == states.POWER_OFF
        assert any(r["path"] == emu.system_id for r in emu.requests_log())  # BMC contacted

        node = conductor.do_provisioning_action(node.uuid, "inspect")
        assert node.provision_state == states.MANAGEABLE, node.last_error
        assert node.properties["macs"] == sorted(emu.macs)

        node = conductor.do_provisioning_action(node.uuid, "provide")
        assert node.provision_state == states.AVAILABLE, node.last_error
        assert [v["RAIDType"] for v in emu.volumes()] == ["RAID1"]
        assert emu.get(emu.system_id + "/BIOS")["Attributes"]["ProcTurboMode"] == "Disabled"

        node = conductor.do_provisioning_action(node.uuid, "deploy")
        assert node.provision_state == states.ACTIVE, node.last_error
        state = emu.system_state()
        assert state["power_state"] == "On"
        first_boot = state["boot_history"][-1]
        assert (first_boot["target"], first_boot["enabled"]) == ("Cd", "Once")
        assert first_boot["cd_inserted"] is True
        assert state["vmedia"]["Cd"] == {"image_url": f"{files.url}/deploy.iso", "inserted": True}
        assert "/deploy.iso" in files.requests  # the BMC fetched the image
        assert (state["boot_device"], state["boot_enabled"]) == ("Hdd", "Continuous")
        assert node.power_state == states.POWER_ON

        node = conductor.do_provisioning_action(node.uuid, "undeploy")
        assert node.provision_state == states.AVAILABLE, node.last_error
        state = emu.system_state()
        assert state["power_state"] == "Off"
        assert state["vmedia"]["Cd"]["inserted"] is False
        assert node.power_state == states.POWER_OFF
        assert [v["RAIDType"] for v in emu.volumes()] == ["RAID1"]  # re-made by cleaning
    finally:
        # Leave the shared emulator as other tests expect it: no volumes, BIOS defaults.
        hardware = redfish.redfish_hardware()
        tidy = make_task(hardware, emu.driver_info())
        hardware.raid.delete_configuration(tidy)
        hardware.bios.factory_reset(tidy)


def test_rescue_boots_the_rescue_iso_and_unrescue_the_disk(
    emu: Emulator, files: FileServer
) -> None:
    try:
        conductor = new_conductor()
        node = conductor.create_node(
            driver="redfish",
            name="rf-rescue",
            provision_state=states.ACTIVE,
            driver_info=emu.driver_info(redfish_rescue_iso=f"{files.url}/rescue.iso"),
        )
        node = conductor.do_provisioning_action(node.uuid, "rescue", rescue_password="s3cr3t-pw")
        assert node.provision_state == states.RESCUE, node.last_error
        state = emu.system_state()
        assert state["power_state"] == "On"
        assert state["vmedia"]["Cd"] == {"image_url": f"{files.url}/rescue.iso", "inserted": True}
        assert (state["boot_history"][-1]["target"], state["boot_history"][-1]["enabled"]) == (
            "Cd",
            "Once",
        )
        assert "s3cr3t-pw" not in repr(node)
        node = conductor.do_provisioning_action(node.uuid, "unrescue")
        assert node.provision_state == states.ACTIVE, node.last_error
        state = emu.system_state()
        assert state["vmedia"]["Cd"]["inserted"] is False
        assert (state["boot_device"], state["boot_enabled"]) == ("Hdd", "Continuous")
        assert "rescue_password" not in node.instance_info
    finally:
        hardware = redfish.redfish_hardware()
        hardware.power.set_power_state(make_task(hardware, emu.driver_info()), states.POWER_OFF)


def test_rescue_iso_must_be_a_url(emu: Emulator) -> None:
    hardware = redfish.redfish_hardware()
    task = make_task(hardware, emu.driver_info(redfish_rescue_iso="ftp://nope/rescue.iso"))
    with pytest.raises(InvalidParameterValue, match="redfish_rescue_iso must be an http"):
        hardware.rescue.validate(task)


def test_deploy_without_virtual_media_boots_the_network(emu: Emulator, hardware: Any) -> None:
    task = make_task(hardware, emu.driver_info())
    hardware.power.set_power_state(task, states.POWER_OFF)
    hardware.deploy.deploy(task)
    state = emu.system_state()
    assert state["power_state"] == "On"
    assert (state["boot_history"][-1]["target"], state["boot_history"][-1]["enabled"]) == (
        "Pxe",
        "Once",
    )
    assert (state["boot_device"], state["boot_enabled"]) == ("Hdd", "Continuous")
    hardware.deploy.tear_down(task)
    assert emu.system_state()["power_state"] == "Off"


# -- faults ----------------------------------------------------------------------------------------


def test_wrong_credentials_raise_auth_error(emu: Emulator, hardware: Any) -> None:
    task = make_task(hardware, emu.driver_info(redfish_password="wrong-" + PASSWORD))
    started = time.monotonic()
    with pytest.raises(BMCAuthError) as info:
        hardware.power.get_power_state(task)
    assert time.monotonic() - started < 2
    text = str(info.value)
    assert "401" in text
    assert task.node.uuid in text
    assert emu.url in text
    assert PASSWORD not in text


def test_wrong_credentials_send_manage_back_to_enroll(emu: Emulator) -> None:
    conductor = new_conductor()
    bad_password = "Wrong-" + PASSWORD
    node = conductor.create_node(
        driver="redfish", driver_info=emu.driver_info(redfish_password=bad_password)
    )
    node = conductor.do_provisioning_action(node.uuid, "manage")
    assert node.provision_state == states.ENROLL
    assert "refused the credentials" in node.last_error
    assert node.uuid in node.last_error
    assert bad_password not in node.last_error
    assert PASSWORD not in node.last_error
    # Fixing the credentials is enough.
    conductor.update_node(node.uuid, driver_info=emu.driver_info())
    node = conductor.do_provisioning_action(node.uuid, "manage")
    assert node.provision_state == states.MANAGEABLE, node.last_error


def test_dead_bmc_is_unreachable_fast(hardware: Any) -> None:
    port = free_port()
    task = make_task(
        hardware,
        {
            "redfish_address": f"http://127.0.0.1:{port}",
            "redfish_username": "admin",
            "redfish_password": PASSWORD,
        },
    )  # the library's defaults: 2 attempts, 0.5 s apart
    started = time.monotonic()
    with pytest.raises(BMCUnreachable) as info:
        hardware.power.get_power_state(task)
    assert time.monotonic() - started < 3
    assert f"127.0.0.1:{port}" in str(info.value)
    assert PASSWORD not in str(info.value)


def test_5xx_answers_fail_after_the_configured_retries(faults: Emulator, hardware: Any) -> None:
    settings = faults.driver_info(
        redfish_server_side_retries=2, redfish_server_side_retries_delay=0.05
    )
    task = make_task(hardware, settings)
    hardware.power.get_power_state(task)  # connect (root GET) before the fault
    faults.clear_requests_log()
    faults.set_faults({"path_prefix": faults.system_id, "methods": ["GET"], "status": 503})
    started = time.monotonic()
    with pytest.raises(BMCRequestFailed) as info:
        hardware.power.get_power_state(task)
    elapsed = time.monotonic() - started
    assert info.value.status == 503
    assert "HTTP 503" in str(info.value)
    assert elapsed < 5
    gets = [r for r in faults.requests_log() if r["path"] == faults.system_id]
    assert len(gets) == 3  # the first try and two retries
    faults.clear_faults()
    assert hardware.power.get_power_state(task) in (states.POWER_ON, states.POWER_OFF)


def test_5xx_on_an_action_is_not_retried(faults: Emulator, hardware: Any) -> None:
    task = make_task(hardware, faults.driver_info())
    faults.set_faults({"path_prefix": faults.system_id + "/Actions", "status": 500})
    with pytest.raises(BMCRequestFailed) as info:
        hardware.power.set_power_state(task, states.POWER_ON)
    assert info.value.status == 500
    posts = [r for r in faults.requests_log() if r["path"].endswith("ComputerSystem.Reset")]
    assert len(posts) == 1


def test_transient_5xx_is_absorbed_by_retries(faults: Emulator, hardware: Any) -> None:
    task = make_task(hardware, faults.driver_info(redfish_server_side_retries=2))
    faults.set_faults(
        {"path_prefix": faults.system_id, "methods": ["GET"], "status": 503, "count": 1}
    )
    assert hardware.power.get_power_state(task) in (states.POWER_ON, states.POWER_OFF)
    assert faults.faults()[0]["hits"] == 1


def test_slow_bmc_times_out_within_timeout_times_attempts(faults: Emulator, hardware: Any) -> None:
    settings = faults.driver_info(
        redfish_read_timeout=1,
        redfish_server_side_retries=2,
        redfish_server_side_retries_delay=0.05,
    )
    task = make_task(hardware, settings)
    hardware.power.get_power_state(task)
    faults.set_faults({"path_prefix": faults.system_id, "delay": 3})
    started = time.monotonic()
    with pytest.raises(BMCTimeout) as info:
        hardware.power.get_power_state(task)
    elapsed = time.monotonic() - started
    assert 1.9 < elapsed < 4.5  # 2 attempts x 1 s, plus a pause
    assert "read timeout" in str(info.value)
    assert PASSWORD not in str(info.value)


def test_missing_system_is_a_404_naming_the_system_id(faults: Emulator, hardware: Any) -> None:
    task = make_task(
        hardware, faults.driver_info(redfish_system_id="/redfish/v1/Systems/no-such-system")
    )
    with pytest.raises(BMCRequestFailed, match="redfish_system_id") as info:
        hardware.power.get_power_state(task)
    assert info.value.status == 404


def test_connection_is_cached_and_rebuilt_after_an_auth_error(
    faults: Emulator, hardware: Any
) -> None:
    task = make_task(hardware, faults.driver_info())

    def root_gets() -> int:
        return sum(r["path"] == "/redfish/v1/" for r in faults.requests_log())

    hardware.power.get_power_state(task)
    hardware.management.get_boot_device(task)
    assert root_gets() == 1
    faults.set_faults({"path_prefix": faults.system_id, "status": 401, "count": 1})
    with pytest.raises(BMCAuthError):
        hardware.power.get_power_state(task)
    hardware.power.get_power_state(task)
    assert root_gets() == 2


# -- a limited BMC ---------------------------------------------------------------------------------


def test_several_systems_need_a_system_id(limited: Emulator, hardware: Any) -> None:
    task = make_task(hardware, limited.driver_info(redfish_system_id=None))
    with pytest.raises(InvalidParameterValue, match="redfish_system_id"):
        hardware.power.get_power_state(task)


def test_inspect_records_only_what_the_bmc_reports(limited: Emulator) -> None:
    conductor = new_conductor()
    node = enroll_manageable(conductor, limited)
    node = conductor.do_provisioning_action(node.uuid, "inspect")
    assert node.provision_state == states.MANAGEABLE, node.last_error
    assert node.properties["macs"] == sorted(limited.macs)
    for key in ("memory_mb", "cpus", "local_gb"):
        assert key not in node.properties


def test_raid_without_storage_fails_clearly(limited: Emulator, hardware: Any) -> None:
    task = make_task(
        hardware,
        limited.driver_info(),
        target_raid_config={"logical_disks": [{"size_gb": 10, "raid_level": "1"}]},
    )
    with pytest.raises(BMCRequestFailed) as info:
        hardware.raid.create_configuration(task)
    assert limited.url in str(info.value)


def test_missing_manager_reset_action_is_not_supported(limited: Emulator, hardware: Any) -> None:
    task = make_task(hardware, limited.driver_info())
    with pytest.raises(BMCRequestFailed, match="not supported by this BMC"):
        hardware.management.reset_bmc(task)


def test_power_changes_are_waited_for_within_the_deadline(limited: Emulator, hardware: Any) -> None:
    task = make_task(hardware, limited.driver_info())
    hardware.power.set_power_state(task, states.POWER_OFF)
    started = time.monotonic()
    hardware.power.set_power_state(task, states.POWER_ON)
    assert time.monotonic() - started >= 0.25  # the BMC takes 0.3 s
    assert limited.system_state()["power_state"] == "On"
    with pytest.raises(BMCTimeout, match="power off"):
        hardware.power.set_power_state(task, states.POWER_OFF, timeout=0.1)
    hardware.power.set_power_state(task, states.POWER_OFF)
    assert limited.system_state()["power_state"] == "Off"


def test_bios_changes_applied_at_reboot_are_waited_for(limited: Emulator, hardware: Any) -> None:
    task = make_task(hardware, limited.driver_info())
    hardware.power.set_power_state(task, states.POWER_OFF)
    hardware.bios.apply_configuration(task, [{"name": "ProcTurboMode", "value": "Disabled"}])
    state = limited.system_state()
    assert state["bios"]["ProcTurboMode"] == "Disabled"
    assert not state["bios_pending"]
    assert state["power_state"] == "Off"  # the power state it had before
    assert task.node.driver_internal_info["redfish_bios_settings"]["ProcTurboMode"] == "Disabled"
