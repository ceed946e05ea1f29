"""Boot mode and secure boot: the management interface, the node's cached fields, the conductor.

On fake hardware (kept in ``driver_internal_info``) and against the Redfish
emulator on 127.0.0.1, whose own state shows what the BMC was asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import make_conductor, manageable_on, new_node, stopped_after, unchanged

from ironic_fsm import Conductor, Config, states
from ironic_fsm.conductor.nodes import BOOT_MODE_SET, SECURE_BOOT_SET
from ironic_fsm.drivers import redfish
from ironic_fsm.drivers.fake import FakeDeploy, FakePower, fake_hardware
from ironic_fsm.drivers.ipmi import ipmi_hardware
from ironic_fsm.events import Event
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    InvalidState,
    UnsupportedOperation,
)
from ironic_fsm.hardware import HardwareType
from ironic_fsm.interfaces import ManagementInterface
from ironic_fsm.node import Node, check_storable
from ironic_fsm.task import Task
from ironic_fsm.testing.ipmi_bmc import start_bmc
from ironic_fsm.testing.redfish_emulator import Emulator, start_emulator

FAKE = "fake-boot-modes"
BARE = "no-boot-modes"
PASSWORD = "Redfish-Boot-Secret-7"


@pytest.fixture
def heard() -> list[Event]:
    return []


@pytest.fixture
def conductor(heard: list[Event]) -> Conductor:
    conductor = make_conductor(listeners=[heard.append])
    conductor.register_hardware_type(FAKE, fake_hardware())
    bare = HardwareType(power=FakePower(), management=ManagementInterface(), deploy=FakeDeploy())
    conductor.register_hardware_type(BARE, bare)
    return conductor


# -- the node fields -----------------------------------------------------------------------


def test_fields_are_checked_and_survive_the_json_record() -> None:
    node = Node(driver=FAKE, boot_mode="uefi", secure_boot=True)
    again = Node.from_json(node.to_json())
    assert (again.boot_mode, again.secure_boot) == ("uefi", True)
    assert Node(driver=FAKE).secure_boot is None
    with pytest.raises(InvalidParameterValue, match="secure_boot"):
        Node(driver=FAKE, secure_boot="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterValue, match="boot_mode"):
        Node(driver=FAKE, boot_mode=1)  # type: ignore[arg-type]
    bad = Node(driver=FAKE)
    object.__setattr__(bad, "secure_boot", "on")
    with pytest.raises(InvalidParameterValue, match="secure_boot"):
        check_storable(bad)


def test_fields_are_read_only_for_users(conductor: Conductor) -> None:
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE)
    for fields in ({"boot_mode": "bios"}, {"secure_boot": True}):
        with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue):
            conductor.update_node(node.uuid, **fields)


# -- the conductor on fake hardware ----------------------------------------------------------


def test_set_boot_mode_sets_caches_saves_and_tells(
    conductor: Conductor, heard: list[Event]
) -> None:
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE)
    assert node.boot_mode is None
    done = conductor.set_boot_mode(node.uuid, "bios")
    stored = conductor.get_node(node.uuid)
    assert (done.boot_mode, stored.boot_mode) == ("bios", "bios")
    assert stored.driver_internal_info["fake_boot_mode"] == "bios"
    assert stored.reservation is None
    assert [e.name for e in heard] == [BOOT_MODE_SET]
    assert heard[0].state == states.MANAGEABLE
    conductor.set_boot_mode(node.uuid, "uefi")
    assert conductor.get_node(node.uuid).boot_mode == "uefi"


def test_set_secure_boot_state(conductor: Conductor, heard: list[Event]) -> None:
    node = new_node(conductor, states.ACTIVE, driver=FAKE)
    conductor.set_secure_boot_state(node.uuid, True)
    stored = conductor.get_node(node.uuid)
    assert (stored.secure_boot, stored.boot_mode) == (True, None)
    assert stored.driver_internal_info["fake_secure_boot"] is True
    conductor.set_secure_boot_state(node.uuid, False)
    assert conductor.get_node(node.uuid).secure_boot is False
    assert [e.name for e in heard] == [SECURE_BOOT_SET, SECURE_BOOT_SET]


@pytest.mark.parametrize("mode", ["UEFI", "legacy", "", None, 1, True])
def test_invalid_boot_mode_is_refused_and_changes_nothing(
    conductor: Conductor, heard: list[Event], mode: Any
) -> None:
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue, match="uefi"):
        conductor.set_boot_mode(node.uuid, mode)
    assert conductor.get_node(node.uuid).reservation is None
    assert heard == []


@pytest.mark.parametrize("value", ["true", 1, None])
def test_invalid_secure_boot_state_is_refused(conductor: Conductor, value: Any) -> None:
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue, match="True"):
        conductor.set_secure_boot_state(node.uuid, value)


@pytest.mark.parametrize(
    ("state", "driver", "error", "match"),
    [
        (states.CLEANING, FAKE, InvalidState, "transient"),
        (states.DEPLOYING, FAKE, InvalidState, "transient"),
        (states.VERIFYING, FAKE, InvalidState, "transient"),
        (states.MANAGEABLE, BARE, UnsupportedOperation, "does not support"),
    ],
)
def test_refusals_change_nothing(
    conductor: Conductor, state: str, driver: str, error: type[Exception], match: str
) -> None:
    """A transient state (a 409 over the API), or a driver without boot modes."""
    node = new_node(conductor, state, driver=driver)
    with unchanged(conductor, node.uuid):
        with pytest.raises(error, match=match) as mode:
            conductor.set_boot_mode(node.uuid, "bios")
        with pytest.raises(error, match=match) as secure:
            conductor.set_secure_boot_state(node.uuid, True)
    assert type(mode.value) is type(secure.value) is error  # InvalidState: not a 400's subclass
    assert conductor.get_node(node.uuid).reservation is None


# -- against the Redfish emulator -------------------------------------------------------------


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    yield from stopped_after(start_emulator(tmp_path_factory.mktemp("boot"), password=PASSWORD))


def test_redfish_boot_mode_and_secure_boot(emu: Emulator) -> None:
    redfish.clear_connection_cache()
    conductor = make_conductor()
    node = manageable_on(conductor, "redfish", emu.driver_info())
    conductor.set_boot_mode(node.uuid, "bios")
    assert emu.system_state()["boot_mode"] == "Legacy"
    assert conductor.get_node(node.uuid).boot_mode == "bios"
    conductor.set_boot_mode(node.uuid, "uefi")
    assert emu.system_state()["boot_mode"] == "UEFI"
    assert conductor.get_node(node.uuid).boot_mode == "uefi"

    conductor.set_secure_boot_state(node.uuid, True)
    assert emu.get(f"{emu.system_id}/SecureBoot")["SecureBootEnable"] is True
    assert conductor.get_node(node.uuid).secure_boot is True
    conductor.set_secure_boot_state(node.uuid, False)
    assert emu.get(f"{emu.system_id}/SecureBoot")["SecureBootEnable"] is False
    stored = conductor.get_node(node.uuid)
    assert (stored.secure_boot, stored.reservation) == (False, None)

    # As Ironic: nothing is sent when the BMC already reports the value asked for.
    emu.clear_requests_log()
    conductor.set_boot_mode(node.uuid, "uefi")
    conductor.set_secure_boot_state(node.uuid, False)
    log = emu.requests_log()
    assert log
    assert [r for r in log if r["method"] != "GET"] == []


# -- against pyghmi's BMC over IPMI -----------------------------------------------------------


def test_ipmi_reads_the_boot_mode_of_the_override_and_cannot_set_one(tmp_path: Path) -> None:
    """IPMI carries the mode only inside a boot device override: readable, not settable."""
    bmc = start_bmc(tmp_path)
    try:
        conductor = make_conductor()
        node = manageable_on(conductor, "ipmi", bmc.driver_info(ipmi_boot_mode="uefi"))
        task = Task(node=node, driver=ipmi_hardware(), config=Config())
        assert task.driver.management.get_boot_mode(task) is None  # no override yet
        conductor.set_boot_device(node.uuid, "disk", persistent=True)
        assert bmc.state()["boot_uefi"] is True
        assert task.driver.management.get_boot_mode(task) == "uefi"
        with unchanged(conductor, node.uuid):
            with pytest.raises(UnsupportedOperation, match="set_boot_mode"):
                conductor.set_boot_mode(node.uuid, "bios")
            with pytest.raises(UnsupportedOperation, match="set_secure_boot_state"):
                conductor.set_secure_boot_state(node.uuid, True)
    finally:
        bmc.stop()
