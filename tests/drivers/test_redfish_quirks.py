"""The ``redfish`` driver against BMC shapes the schema allows but our stock emulator never served.

Each test switches on one quirk of the project's emulator (``QUIRKS`` in
:mod:`ironic_fsm.testing.redfish_fake_driver`, which runs in the
emulator's process, not this one) and checks that the driver believes
what the BMC says rather than what the schema would allow: BIOS settings
the BMC rejected after accepting the PATCH, a virtual CD that cannot be
driven, a firmware update or a volume creation that completes within the
request, NICs that are not enabled or lead to the BMC itself, processors
that are not CPUs, and narrower reset type, boot target, boot mode and
boot override lists.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import manageable_on, stopped_after, task_for

from ironic_fsm import Conductor, Config, states
from ironic_fsm.drivers import redfish
from ironic_fsm.exceptions import BMCRequestFailed, InvalidParameterValue
from ironic_fsm.node import Node
from ironic_fsm.testing.redfish_emulator import Emulator, FileServer, start_emulator

PASSWORD = "Quirky-Secret-77"


def _start(tmp_path_factory: pytest.TempPathFactory, name: str, **kwargs: Any) -> Emulator:
    return start_emulator(tmp_path_factory.mktemp(name), password=PASSWORD, **kwargs)


@pytest.fixture(scope="module")
def quirky_bmc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    yield from stopped_after(_start(tmp_path_factory, "redfish-quirks", nics=4))


@pytest.fixture
def quirky(quirky_bmc: Emulator) -> Iterator[Emulator]:
    """The shared quirky emulator with no quirk set, power off, and an empty request log."""
    quirky_bmc.clear_quirks()
    quirky_bmc.clear_requests_log()
    yield quirky_bmc
    quirky_bmc.clear_quirks()


@pytest.fixture(scope="module")
def at_reboot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    """A BMC that applies BIOS changes at the next boot, as most real ones do."""
    yield from stopped_after(_start(tmp_path_factory, "redfish-quirks-reboot", bios_apply="reboot"))


@pytest.fixture(scope="module")
def hardware() -> Any:
    return redfish.redfish_hardware()


#: make_task(hardware, driver_info, **node_fields): a task on a new redfish node.
make_task = functools.partial(task_for, "redfish")


def manageable(conductor: Conductor, emu: Emulator, **driver_info: Any) -> Node:
    return manageable_on(conductor, "redfish", emu.driver_info(**driver_info))


def clean(conductor: Conductor, node: Node, interface: str, step: str, **args: Any) -> Node:
    return conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[{"interface": interface, "step": step, "args": args}]
    )


def writes(emu: Emulator) -> list[dict[str, Any]]:
    """The requests that could have changed something on the BMC."""
    return [r for r in emu.requests_log() if r["method"] in ("POST", "PATCH", "PUT", "DELETE")]


# -- BIOS settings the BMC rejects after accepting them --------------------------------------------


def test_rejected_bios_setting_fails_at_once_with_the_bmcs_message(quirky: Emulator) -> None:
    message = f"ProcTurboMode cannot be Disabled while NicBoot1 is set (auth {PASSWORD})"
    quirky.set_quirks(bios_reject={"ProcTurboMode": message})
    conductor = Conductor(config=Config())
    node = manageable(conductor, quirky)
    info = redfish.parse_driver_info(node)
    assert info.task_timeout == 600  # left large on purpose
    started = time.monotonic()
    node = clean(
        conductor,
        node,
        "bios",
        "apply_configuration",
        settings=[
            {"name": "ProcTurboMode", "value": "Disabled"},
            {"name": "NicBoot1", "value": "NetworkBootDisabled"},
        ],
    )
    elapsed = time.monotonic() - started
    assert node.provision_state == states.CLEANFAIL
    assert elapsed < 2  # the whole clean request; not redfish_task_timeout (600 s)
    error = node.last_error
    assert "ProcTurboMode cannot be Disabled while NicBoot1 is set" in error
    assert "Base.1.0.SettingsFailed" in error
    assert "rejected" in error
    assert PASSWORD not in error
    assert node.uuid in error
    state = quirky.system_state()
    assert state["bios"]["NicBoot1"] == "NetworkBootDisabled"  # the BMC took this one
    assert state["bios"].get("ProcTurboMode", "Enabled") == "Enabled"
    # No reboot was tried for settings the BMC had already refused.
    assert not [r for r in writes(quirky) if r["path"].endswith("ComputerSystem.Reset")]
    redfish_hw = redfish.redfish_hardware()
    redfish_hw.bios.factory_reset(make_task(redfish_hw, quirky.driver_info()))


def test_rejected_bios_setting_raises_a_typed_error(quirky: Emulator, hardware: Any) -> None:
    quirky.set_quirks(bios_reject={"NicBoot1": None})
    task = make_task(hardware, quirky.driver_info())
    started = time.monotonic()
    with pytest.raises(redfish.BIOSSettingsRejected) as info:
        hardware.bios.apply_configuration(task, [{"name": "NicBoot1", "value": "Off"}])
    assert time.monotonic() - started < 1  # redfish_task_timeout is 600 s
    assert isinstance(info.value, BMCRequestFailed)
    assert info.value.attributes == ["NicBoot1"]
    assert "NicBoot1" in str(info.value)
    assert quirky.url in str(info.value)


def test_an_old_rejection_does_not_fail_the_next_change(at_reboot: Emulator, hardware: Any) -> None:
    # Until the next boot applies the new settings, the BMC still shows the verdict on the
    # previous attempt: that must not count against this one.
    task = make_task(hardware, at_reboot.driver_info())
    hardware.power.set_power_state(task, states.POWER_OFF)
    at_reboot.set_quirks(bios_reject={"NicBoot1": None})
    with pytest.raises(redfish.BIOSSettingsRejected):
        hardware.bios.apply_configuration(task, [{"name": "NicBoot1", "value": "Off"}])
    at_reboot.set_quirks(bios_reject=None)
    settings = at_reboot.get(at_reboot.system_id + "/BIOS")["@Redfish.Settings"]
    assert settings["Messages"][0]["MessageId"] == "Base.1.0.SettingsFailed"
    hardware.bios.apply_configuration(task, [{"name": "NicBoot1", "value": "Off"}])
    assert at_reboot.system_state()["bios"]["NicBoot1"] == "Off"
    hardware.bios.factory_reset(task)


def test_rejection_without_a_settings_time_is_still_seen(quirky: Emulator, hardware: Any) -> None:
    # sushy's update_status says "no updates" without a Time: the raw messages tell.
    quirky.set_quirks(bios_reject={"ProcTurboMode": "Locked by policy"}, bios_untimed=True)
    task = make_task(hardware, quirky.driver_info())
    started = time.monotonic()
    with pytest.raises(redfish.BIOSSettingsRejected, match="Locked by policy") as info:
        hardware.bios.apply_configuration(task, [{"name": "ProcTurboMode", "value": "Disabled"}])
    assert time.monotonic() - started < 1
    assert info.value.attributes == ["ProcTurboMode"]
    assert "Time" not in quirky.get(quirky.system_id + "/BIOS")["@Redfish.Settings"]


def test_rejection_reported_after_the_reboot_fails_without_waiting(
    at_reboot: Emulator, hardware: Any
) -> None:
    at_reboot.set_quirks(bios_reject={"ProcTurboMode": "Unsupported on this CPU"})
    task = make_task(hardware, at_reboot.driver_info())
    hardware.power.set_power_state(task, states.POWER_OFF)
    boots = len(at_reboot.system_state().get("boot_history") or [])
    started = time.monotonic()
    with pytest.raises(redfish.BIOSSettingsRejected, match="Unsupported on this CPU"):
        hardware.bios.apply_configuration(task, [{"name": "ProcTurboMode", "value": "Disabled"}])
    assert time.monotonic() - started < 2  # power off, reboot, verdict, power off again
    state = at_reboot.system_state()
    assert len(state["boot_history"]) == boots + 1  # the one boot that applies settings
    assert state["power_state"] == "Off"  # as it was before the step
    assert state["bios"].get("ProcTurboMode", "Enabled") == "Enabled"
    at_reboot.set_quirks(bios_reject=None)


# -- virtual media the BMC cannot drive -----------------------------------------------------------


def test_cd_slot_without_actions_or_patch_fails_deploy_validation(
    quirky: Emulator, tmp_path: Path
) -> None:
    quirky.set_quirks(vmedia="none")
    conductor = Conductor(config=Config())
    node = conductor.create_node(
        driver="redfish",
        provision_state=states.AVAILABLE,
        power_state=states.POWER_OFF,
        driver_info=quirky.driver_info(redfish_deploy_iso="http://127.0.0.1:9/deploy.iso"),
    )
    before = quirky.system_state()
    quirky.clear_requests_log()
    with pytest.raises(InvalidParameterValue) as info:
        conductor.do_provisioning_action(node.uuid, "deploy")
    text = str(info.value)
    assert "/VirtualMedia/Cd" in text
    assert "InsertMedia" in text
    assert "PATCH" in text
    assert PASSWORD not in text
    after = conductor.get_node(node.uuid)
    assert after.provision_state == states.AVAILABLE
    assert after.power_state == states.POWER_OFF
    assert after.reservation is None
    assert writes(quirky) == []
    state = quirky.system_state()
    for key in ("power_state", "boot_device", "boot_enabled", "boot_history", "vmedia"):
        assert state.get(key) == before.get(key), key


def test_rescue_validation_checks_the_cd_slot(quirky: Emulator, hardware: Any) -> None:
    quirky.set_quirks(vmedia="none")
    task = make_task(
        hardware, quirky.driver_info(redfish_rescue_iso="http://127.0.0.1:9/rescue.iso")
    )
    with pytest.raises(InvalidParameterValue, match="EjectMedia"):
        hardware.rescue.validate(task)
    assert hardware.boot.supports_virtual_media(task) is False


def test_cd_slot_driven_by_patch_is_used(quirky: Emulator, hardware: Any, tmp_path: Path) -> None:
    quirky.set_quirks(vmedia="patch")
    images = tmp_path / "images"
    images.mkdir()
    (images / "deploy.iso").write_bytes(b"\0" * 4096)
    files = FileServer(images)
    try:
        task = make_task(hardware, quirky.driver_info(redfish_deploy_iso=f"{files.url}/deploy.iso"))
        hardware.deploy.validate(task)
        assert hardware.boot.supports_virtual_media(task) is True
        hardware.power.set_power_state(task, states.POWER_OFF)
        hardware.deploy.deploy(task)
        state = quirky.system_state()
        assert state["vmedia"]["Cd"] == {"image_url": f"{files.url}/deploy.iso", "inserted": True}
        assert (state["boot_history"][-1]["target"], state["boot_history"][-1]["cd_inserted"]) == (
            "Cd",
            True,
        )
        assert task.node.driver_internal_info["redfish_deploy"] == {"ramdisk_boot": "cdrom"}
        assert any(r["method"] == "PATCH" and r["path"].endswith("/Cd") for r in writes(quirky))
        hardware.deploy.tear_down(task)
        assert quirky.system_state()["vmedia"]["Cd"]["inserted"] is False
    finally:
        files.stop()


# -- firmware updates that finish within the request -----------------------------------------------


def _update(conductor: Conductor, node: Node, url: str) -> Node:
    return clean(
        conductor, node, "firmware", "update", settings=[{"component": "bios", "url": url}]
    )


def test_synchronous_firmware_update_is_done(quirky: Emulator) -> None:
    quirky.set_quirks(update="sync-bump")
    conductor = Conductor(config=Config())
    node = manageable(conductor, quirky)
    before = quirky.get(quirky.system_id)["BiosVersion"]
    tasks = len(quirky.state()["tasks"])
    node = _update(conductor, node, "http://127.0.0.1:9/bios-sync.bin")
    assert node.provision_state == states.MANAGEABLE, node.last_error
    after = quirky.get(quirky.system_id)["BiosVersion"]
    assert after != before
    assert node.driver_internal_info["redfish_firmware"]["bios"] == after
    assert len(quirky.state()["tasks"]) == tasks  # no task was involved


def test_synchronous_update_that_changed_nothing_fails_clearly(quirky: Emulator) -> None:
    quirky.set_quirks(update="sync")
    conductor = Conductor(config=Config())
    node = manageable(conductor, quirky)
    before = quirky.get(quirky.system_id)["BiosVersion"]
    node = _update(conductor, node, "http://user:tok3n@127.0.0.1:9/bios-noop.bin?sig=abc")
    assert node.provision_state == states.CLEANFAIL
    assert f"still reports version {before}" in node.last_error
    assert "tok3n" not in node.last_error
    assert "sig=abc" not in node.last_error
    assert quirky.get(quirky.system_id)["BiosVersion"] == before


# -- inspection: what the BMC says is enabled ------------------------------------------------------


@pytest.mark.parametrize("host_nic_id", ["ToManager", "usb0"])
def test_inspection_skips_disabled_nics_and_the_host_interface(
    quirky: Emulator, host_nic_id: str
) -> None:
    # "ToManager" is known by its Id; "usb0" only through the manager's HostInterfaces.
    macs = quirky.macs
    quirky.set_quirks(
        nic_states={macs[1]: "Disabled", macs[2]: "StandbyOffline"},
        host_interface=macs[3],
        host_interface_id=host_nic_id,
    )
    conductor = Conductor(config=Config())
    node = manageable(conductor, quirky)
    node = conductor.do_provisioning_action(node.uuid, "inspect")
    assert node.provision_state == states.MANAGEABLE, node.last_error
    assert node.properties["macs"] == [macs[0]]


def test_inspection_counts_only_enabled_cpus(quirky: Emulator) -> None:
    quirky.set_quirks(
        extra_processors=[{"id": "GPU0", "threads": 64}, {"id": "CPU1", "threads": 8}],
        processor_overrides={
            "GPU0": {"ProcessorType": "GPU", "InstructionSet": None},
            "CPU1": {"Status": {"State": "Disabled"}},
        },
    )
    conductor = Conductor(config=Config())
    node = manageable(conductor, quirky)
    node = conductor.do_provisioning_action(node.uuid, "inspect")
    assert node.provision_state == states.MANAGEABLE, node.last_error
    assert node.properties["cpus"] == 8  # CPU0's threads; not the GPU, not the disabled socket
    assert node.properties["cpu_arch"] == "x86_64"


# -- boot devices and modes: what the BMC allows ---------------------------------------------------


def test_supported_boot_devices_are_what_the_bmc_allows(quirky: Emulator, hardware: Any) -> None:
    task = make_task(hardware, quirky.driver_info())
    quirky.set_quirks(boot_targets=["Pxe", "Hdd"])
    assert hardware.management.get_supported_boot_devices(task) == ["pxe", "disk"]
    quirky.clear_requests_log()
    with pytest.raises(InvalidParameterValue) as info:
        hardware.management.set_boot_device(task, "uefi-http")
    assert "uefi-http" in str(info.value)
    assert "pxe, disk" in str(info.value)
    assert writes(quirky) == []  # refused before sending
    hardware.management.set_boot_device(task, "pxe", persistent=True)
    assert quirky.system_state()["boot_device"] == "Pxe"

    quirky.set_quirks(boot_targets=[])  # publishes none: the schema's list
    assert set(hardware.management.get_supported_boot_devices(task)) == set(redfish.BOOT_DEVICE_MAP)


def test_cdrom_is_the_usb_cd_where_the_bmc_offers_only_that(
    quirky: Emulator, hardware: Any
) -> None:
    quirky.set_quirks(boot_targets=["Pxe", "Hdd", "UsbCd"])
    task = make_task(hardware, quirky.driver_info())
    assert "cdrom" in hardware.management.get_supported_boot_devices(task)
    hardware.management.set_boot_device(task, "cdrom")
    assert quirky.system_state()["boot_device"] == "UsbCd"
    assert hardware.management.get_boot_device(task)["boot_device"] == "cdrom"
    hardware.management.set_boot_device(task, "disk", persistent=True)


def test_boot_mode_the_bmc_does_not_allow_is_refused_before_sending(
    quirky: Emulator, hardware: Any
) -> None:
    quirky.set_quirks(boot_modes=["UEFI"])
    task = make_task(hardware, quirky.driver_info(redfish_boot_mode="bios"))
    quirky.clear_requests_log()
    with pytest.raises(InvalidParameterValue, match="boot mode 'bios'") as info:
        hardware.management.set_boot_device(task, "disk", persistent=True)
    assert "uefi" in str(info.value)
    assert writes(quirky) == []
    uefi = make_task(hardware, quirky.driver_info(redfish_boot_mode="uefi"))
    hardware.management.set_boot_device(uefi, "disk", persistent=True)
    assert quirky.system_state()["boot_mode"] == "UEFI"


# -- power: the reset types the BMC allows -------------------------------------------------------


def test_power_uses_the_reset_types_the_bmc_allows(quirky: Emulator, hardware: Any) -> None:
    task = make_task(hardware, quirky.driver_info())
    hardware.power.set_power_state(task, states.POWER_OFF)
    quirky.set_quirks(reset_types=["ForceOn", "ForceOff", "PowerCycle", "Nmi"])
    assert hardware.power.get_supported_power_states(task) == [
        states.POWER_ON,
        states.POWER_OFF,
        states.REBOOT,
    ]
    quirky.clear_requests_log()
    hardware.power.set_power_state(task, states.POWER_ON)  # no "On": ForceOn
    hardware.power.reboot(task)  # no "ForceRestart": PowerCycle
    state = quirky.system_state()
    assert state["power_state"] == "On"
    resets = [r for r in writes(quirky) if r["path"].endswith("ComputerSystem.Reset")]
    assert [r["status"] for r in resets] == [204, 204]
    with pytest.raises(BMCRequestFailed, match="GracefulShutdown") as info:
        hardware.power.set_power_state(task, states.SOFT_POWER_OFF)
    assert "ForceOff" in str(info.value)  # what it allows instead
    assert len([r for r in writes(quirky) if r["path"].endswith("ComputerSystem.Reset")]) == 2
    assert quirky.system_state()["power_state"] == "On"
    hardware.power.set_power_state(task, states.POWER_OFF)


def test_persistent_boot_device_without_continuous_is_set_before_every_boot(
    quirky: Emulator, hardware: Any
) -> None:
    quirky.set_quirks(boot_enabled=["Once", "Disabled"])
    task = make_task(hardware, quirky.driver_info())
    hardware.power.set_power_state(task, states.POWER_OFF)
    hardware.management.set_boot_device(task, "disk", persistent=True)
    state = quirky.system_state()
    assert (state["boot_device"], state["boot_enabled"]) == ("Hdd", "Once")
    assert task.node.driver_internal_info[redfish.PERSISTENT_BOOT_DEVICE_KEY] == "disk"
    assert hardware.management.get_boot_device(task) == {"boot_device": "disk", "persistent": True}

    hardware.power.set_power_state(task, states.POWER_ON)
    hardware.power.reboot(task)  # the BMC consumed the override: the driver sets it again
    boots = quirky.system_state()["boot_history"]
    assert [(b["target"], b["enabled"]) for b in boots[-2:]] == [("Hdd", "Once")] * 2

    hardware.management.set_boot_device(task, "pxe")  # a one-time boot takes precedence ...
    hardware.power.reboot(task)
    hardware.power.reboot(task)  # ... and the persistent device comes back after it
    boots = quirky.system_state()["boot_history"]
    assert [b["target"] for b in boots[-2:]] == ["Pxe", "Hdd"]

    quirky.set_quirks(boot_enabled=None)  # a BMC with Continuous: no more re-setting
    hardware.management.set_boot_device(task, "disk", persistent=True)
    assert redfish.PERSISTENT_BOOT_DEVICE_KEY not in task.node.driver_internal_info
    assert quirky.system_state()["boot_enabled"] == "Continuous"
    hardware.power.set_power_state(task, states.POWER_OFF)


# -- RAID volumes created without a Location -------------------------------------------------------


@pytest.mark.parametrize("answer", ["sync", "accepted"])
def test_volume_created_without_a_location_is_found_by_name(quirky: Emulator, answer: str) -> None:
    quirky.set_quirks(volume_create=answer)  # 204, or 202 with nothing to follow
    conductor = Conductor(config=Config())
    node = manageable(conductor, quirky, redfish_task_timeout=5)  # a hang fails in 5 s
    target = {"logical_disks": [{"size_gb": 50, "raid_level": "1", "volume_name": "root"}]}
    conductor.update_node(node.uuid, target_raid_config=target)
    node = clean(conductor, node, "raid", "create_configuration")
    try:
        assert node.provision_state == states.MANAGEABLE, node.last_error
        volumes = quirky.volumes()
        assert [v["Name"] for v in volumes] == ["root"]
        assert node.raid_config["logical_disks"][0]["volume_id"] == volumes[0]["Id"]
    finally:
        node = clean(conductor, node, "raid", "delete_configuration")
        assert quirky.volumes() == []
