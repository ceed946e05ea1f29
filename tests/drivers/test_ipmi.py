"""The ``ipmi`` hardware type against a real IPMI peer on 127.0.0.1 (docs/drivers/ipmi.rst).

Every test that talks to a BMC talks to :mod:`ironic_fsm.testing.ipmi_bmc`, a pyghmi
server in a child process, over real UDP; nothing in pyghmi is mocked. The
peer's state file shows what the BMC really did, and its faults file makes
it misbehave. Fault tests use ``ipmi_timeout=2`` to stay quick. The same
behaviour against OpenIPMI's ``ipmi_sim``, and the reproducer of pyghmi's
0.5-1 s stalls (which the driver's sessions no longer have), are in
``test_ipmi_sim.py``.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ironic_fsm import Conductor, Config, Node, states
from ironic_fsm.drivers.ipmi import (
    COMMON_PROPERTIES,
    DiskBootDeploy,
    IPMIManagement,
    IPMIPower,
    IPMIVendor,
    ipmi_hardware,
    parse_driver_info,
)
from ironic_fsm.exceptions import (
    BMCAuthError,
    BMCRequestFailed,
    BMCTimeout,
    BMCUnreachable,
    HardwareError,
    InvalidParameterValue,
    MissingDependency,
    StepNotAllowed,
)
from ironic_fsm.hardware import HardwareType
from ironic_fsm.task import Task
from ironic_fsm.testing.ipmi_bmc import BMC, start_bmc, start_bmcs

FAULT_TIMEOUT = 2.0
SLACK = 2.0  # allowed beyond a deadline: thread hand-off, pyghmi's occasional stalls


@pytest.fixture
def bmc(request: pytest.FixtureRequest, tmp_path: Path) -> BMC:
    """A fresh peer BMC (unique password) for this test, stopped by PID afterwards."""
    peer = start_bmc(tmp_path)
    request.addfinalizer(peer.stop)  # noqa: PT021 - registered the moment the peer exists
    return peer


def make_task(info: dict[str, Any], **node_fields: Any) -> Task:
    node = Node(driver="ipmi", driver_info=info, **node_fields)
    return Task(node=node, driver=ipmi_hardware(), config=Config())


def free_udp_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# -- hardware type and driver_info ---------------------------------------------------------


def test_hardware_type_is_installed_and_built_from_ipmi_interfaces() -> None:
    hw = ipmi_hardware()
    assert isinstance(hw.power, IPMIPower)
    assert isinstance(hw.management, IPMIManagement)
    assert isinstance(hw.vendor, IPMIVendor)
    assert isinstance(hw.deploy, DiskBootDeploy)
    assert type(hw.boot).__name__ == "IPXEBoot"  # Ironic's generic choice, not a fake
    assert hw.raid.no_op  # no-raid: Ironic's first for ipmi
    conductor = Conductor()
    node = conductor.create_node(driver="ipmi")
    steps = conductor.get_deploy_steps(node.uuid)
    assert {"interface": "deploy", "step": "deploy", "priority": 100}.items() <= steps[0].items()
    clean = {(st["interface"], st["step"]): st for st in conductor.get_clean_steps(node.uuid)}
    assert clean[("vendor", "bmc_reset")]["priority"] == 0
    assert clean[("vendor", "bmc_reset")]["argsinfo"]["warm"]["required"] is False
    assert clean[("vendor", "send_raw")]["argsinfo"]["raw_bytes"]["required"] is True


def test_get_properties_documents_every_key() -> None:
    for iface in (IPMIPower(), IPMIManagement(), IPMIVendor()):
        props = iface.get_properties()
        assert props == dict(COMMON_PROPERTIES)
    for key in ("ipmi_address", "ipmi_username", "ipmi_password"):
        assert "Required" in COMMON_PROPERTIES[key]
    for key in ("ipmi_port", "ipmi_timeout", "ipmi_power_wait"):
        assert "Optional" in COMMON_PROPERTIES[key]


def test_validate_names_every_missing_key() -> None:
    task = make_task({})
    with pytest.raises(InvalidParameterValue) as caught:
        task.driver.power.validate(task)
    message = str(caught.value)
    for key in ("ipmi_address", "ipmi_username", "ipmi_password"):
        assert key in message
    assert caught.value.missing == ["ipmi_address", "ipmi_username", "ipmi_password"]
    assert task.node.uuid in message


def test_validate_names_malformed_keys_and_never_the_password() -> None:
    secret = "s3cr3t-" + "x" * 20  # too long for IPMI
    task = make_task(
        {
            "ipmi_address": "",
            "ipmi_username": "u" * 17,
            "ipmi_password": secret,
            "ipmi_port": "not-a-port",
            "ipmi_timeout": -1,
            "ipmi_power_wait": True,
            "ipmi_boot_mode": "legacy",
        }
    )
    with pytest.raises(InvalidParameterValue) as caught:
        task.driver.management.validate(task)
    error = caught.value
    assert set(error.invalid) == {
        "ipmi_address", "ipmi_username", "ipmi_password", "ipmi_port", "ipmi_timeout",
        "ipmi_power_wait", "ipmi_boot_mode",
    }  # fmt: skip
    assert error.missing == []
    assert "'not-a-port'" in str(error)
    assert secret not in str(error)
    assert secret not in repr(error.details)


def test_validate_accepts_good_info_without_contacting_the_bmc() -> None:
    # 192.0.2.1 (TEST-NET-1) answers nothing: validate must not even try.
    task = make_task(
        {"ipmi_address": "192.0.2.1", "ipmi_username": "admin", "ipmi_password": "pw",
         "ipmi_port": "6230", "ipmi_timeout": "2.5"}
    )  # fmt: skip
    started = time.monotonic()
    for iface in (task.driver.power, task.driver.management, task.driver.vendor):
        iface.validate(task)
    assert time.monotonic() - started < 1
    info = parse_driver_info(task.node)
    assert (info.port, info.timeout, info.power_wait) == (6230, 2.5, 30.0)
    assert "pw" not in repr(info).replace("ipmi", "")


def test_missing_pyghmi_raises_missing_dependency(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "pyghmi", "pyghmi.exceptions", "pyghmi.ipmi", "pyghmi.ipmi.command",
        "pyghmi.ipmi.private", "pyghmi.ipmi.private.session",
    ):  # fmt: skip
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    with pytest.raises(MissingDependency, match=r"pip install ironic_fsm\[ipmi\]") as caught:
        ipmi_hardware()
    assert caught.value.extra == "ipmi"
    # An interface built earlier reports it too, at validation, before any BMC call.
    info = {"ipmi_address": "h", "ipmi_username": "u", "ipmi_password": "p"}
    task = Task(node=Node(driver="ipmi", driver_info=info), driver=HardwareType(), config=Config())
    with pytest.raises(MissingDependency, match="ipmi"):
        IPMIPower().validate(task)


# -- power --------------------------------------------------------------------------------


def test_power_status_on_off_reboot(bmc: BMC) -> None:
    task = make_task(bmc.driver_info())
    power = task.driver.power
    assert power.get_power_state(task) == states.POWER_OFF
    power.set_power_state(task, states.POWER_ON)
    assert bmc.state()["power"] == "on"
    assert power.get_power_state(task) == states.POWER_ON
    assert task.node.power_state == states.POWER_ON
    power.reboot(task)  # on: a hard reset, and on again
    state = bmc.state()
    assert state["power"] == "on"
    assert state["power_actions"] == {"on": 1, "reset": 1}
    assert state["boots"] == 2
    power.set_power_state(task, states.POWER_OFF)
    assert bmc.state()["power"] == "off"
    assert power.get_power_state(task) == states.POWER_OFF
    power.reboot(task)  # off: powered on, not reset
    state = bmc.state()
    assert state["power"] == "on"
    assert state["power_actions"] == {"on": 2, "reset": 1, "off": 1}
    power.set_power_state(task, states.POWER_ON)  # already on: nothing sent
    assert bmc.state()["power_actions"]["on"] == 2


def test_soft_power_off_and_soft_reboot(bmc: BMC) -> None:
    task = make_task(bmc.driver_info())
    power = task.driver.power
    power.set_power_state(task, states.SOFT_REBOOT)  # off → just on
    assert bmc.state()["power"] == "on"
    power.set_power_state(task, states.SOFT_REBOOT)
    power.set_power_state(task, states.SOFT_POWER_OFF)
    state = bmc.state()
    assert state["power"] == "off"
    assert state["power_actions"] == {"on": 2, "shutdown": 2}
    assert task.node.power_state == states.POWER_OFF
    with pytest.raises(InvalidParameterValue, match="cannot set power state"):
        power.set_power_state(task, "power cycle")


def test_power_change_waits_until_the_bmc_reports_it(bmc: BMC) -> None:
    bmc.set_faults({"power_delay": 0.6})
    task = make_task(bmc.driver_info())
    started = time.monotonic()
    task.driver.power.set_power_state(task, states.POWER_ON)
    elapsed = time.monotonic() - started
    assert elapsed >= 0.55  # it did wait for the change
    assert elapsed < 0.6 + SLACK  # and polled faster than pyghmi's once a second
    assert bmc.state()["power"] == "on"


def test_power_change_not_seen_in_time_is_a_timeout(bmc: BMC) -> None:
    bmc.set_faults({"power_delay": 30})
    task = make_task(bmc.driver_info(ipmi_power_wait=0.5))
    started = time.monotonic()
    with pytest.raises(BMCTimeout, match="ipmi_power_wait") as caught:
        task.driver.power.set_power_state(task, states.POWER_ON)
    assert 0.5 <= time.monotonic() - started < 0.5 + SLACK
    assert f"127.0.0.1:{bmc.port}" in str(caught.value)
    assert task.node.uuid in str(caught.value)
    assert bmc.state()["pending_power"] == "on"


# -- boot device --------------------------------------------------------------------------


def test_boot_device_persistent_and_once(bmc: BMC) -> None:
    task = make_task(bmc.driver_info())
    mgmt = task.driver.management
    assert mgmt.get_supported_boot_devices(task) == ["pxe", "disk", "cdrom", "bios", "safe"]
    assert mgmt.get_boot_device(task) == {"boot_device": None, "persistent": None}

    mgmt.set_boot_device(task, "disk", persistent=True)
    state = bmc.state()
    assert (state["boot_device"], state["boot_persistent"], state["boot_uefi"]) == (
        "hd", True, False,
    )  # fmt: skip
    assert mgmt.get_boot_device(task) == {"boot_device": "disk", "persistent": True}

    mgmt.set_boot_device(task, "pxe")
    assert bmc.state()["boot_device"] == "network"
    assert mgmt.get_boot_device(task) == {"boot_device": "pxe", "persistent": False}

    # A one-time override is used up by the next boot.
    task.driver.power.set_power_state(task, states.POWER_ON)
    state = bmc.state()
    assert state["last_boot"] == {"device": "network", "uefi": False}
    assert state["boot_valid"] is False
    assert mgmt.get_boot_device(task) == {"boot_device": None, "persistent": None}


@pytest.mark.parametrize(
    ("device", "on_the_wire"),
    [("pxe", "network"), ("disk", "hd"), ("cdrom", "optical"), ("bios", "setup"),
     ("safe", "safe")],
)  # fmt: skip
def test_boot_device_names_are_translated_both_ways(
    bmc: BMC, device: str, on_the_wire: str
) -> None:
    task = make_task(bmc.driver_info())
    task.driver.management.set_boot_device(task, device, persistent=True)
    assert bmc.state()["boot_device"] == on_the_wire
    assert task.driver.management.get_boot_device(task) == {
        "boot_device": device,
        "persistent": True,
    }


def test_uefi_flag_from_capabilities_or_driver_info(bmc: BMC) -> None:
    task = make_task(bmc.driver_info(), properties={"capabilities": "cpu_vt:true,boot_mode:uefi"})
    task.driver.management.set_boot_device(task, "pxe")
    assert bmc.state()["boot_uefi"] is True

    task = make_task(bmc.driver_info(ipmi_boot_mode="uefi"))
    task.driver.management.set_boot_device(task, "disk", persistent=True)
    state = bmc.state()
    assert (state["boot_device"], state["boot_persistent"], state["boot_uefi"]) == (
        "hd", True, True,
    )  # fmt: skip

    # driver_info wins over the capability.
    task = make_task(
        bmc.driver_info(ipmi_boot_mode="bios"), properties={"capabilities": {"boot_mode": "uefi"}}
    )
    task.driver.management.set_boot_device(task, "disk")
    assert bmc.state()["boot_uefi"] is False


def test_unsupported_boot_device_is_refused_before_any_bmc_call(bmc: BMC) -> None:
    task = make_task(bmc.driver_info())
    with pytest.raises(InvalidParameterValue, match="floppy"):
        task.driver.management.set_boot_device(task, "floppy")
    assert bmc.state()["sessions_opened"] == 0


# -- the whole lifecycle through the conductor -----------------------------------------------


def test_full_lifecycle_against_the_bmc(bmc: BMC) -> None:
    conductor = Conductor()
    node = conductor.create_node(driver="ipmi", driver_info=bmc.driver_info())

    node = conductor.do_provisioning_action(node.uuid, "manage")
    assert node.provision_state == states.MANAGEABLE, node.last_error
    assert node.power_state == states.POWER_OFF  # really read from the BMC
    assert bmc.state()["sessions_opened"] >= 1

    node = conductor.do_provisioning_action(node.uuid, "provide")
    assert node.provision_state == states.AVAILABLE, node.last_error

    node = conductor.do_provisioning_action(node.uuid, "active")
    assert node.provision_state == states.ACTIVE, node.last_error
    assert node.power_state == states.POWER_ON
    state = bmc.state()
    assert state["power"] == "on"
    assert (state["boot_device"], state["boot_persistent"]) == ("hd", True)
    assert state["last_boot"] == {"device": "hd", "uefi": False}

    node = conductor.do_provisioning_action(node.uuid, "deleted")
    assert node.provision_state == states.AVAILABLE, node.last_error
    assert node.power_state == states.POWER_OFF
    assert bmc.state()["power"] == "off"


# -- refusals and faults ----------------------------------------------------------------------


def test_wrong_password_is_an_auth_error_within_the_deadline(bmc: BMC) -> None:
    wrong = "not-" + bmc.password
    task = make_task(bmc.driver_info(ipmi_password=wrong, ipmi_timeout=FAULT_TIMEOUT))
    started = time.monotonic()
    with pytest.raises(BMCAuthError, match="wrong password") as caught:
        task.driver.power.get_power_state(task)
    assert time.monotonic() - started < FAULT_TIMEOUT
    message = str(caught.value)
    assert f"127.0.0.1:{bmc.port}" in message
    assert task.node.uuid in message
    assert wrong not in message
    assert bmc.password not in message


def test_manage_with_wrong_password_returns_to_enroll(bmc: BMC) -> None:
    wrong = "bad-" + bmc.password
    conductor = Conductor()
    node = conductor.create_node(
        driver="ipmi", driver_info=bmc.driver_info(ipmi_password=wrong, ipmi_timeout=2)
    )
    node = conductor.do_provisioning_action(node.uuid, "manage")
    assert node.provision_state == states.ENROLL
    assert node.last_error is not None
    assert "authentication" in node.last_error
    assert wrong not in node.last_error
    assert wrong not in repr(node)


def test_unknown_user_is_an_auth_error(bmc: BMC) -> None:
    task = make_task(bmc.driver_info(ipmi_username="nobody", ipmi_timeout=FAULT_TIMEOUT))
    started = time.monotonic()
    with pytest.raises(BMCAuthError, match="unknown user"):
        task.driver.power.get_power_state(task)
    assert time.monotonic() - started < FAULT_TIMEOUT


def test_nothing_listening_is_unreachable_at_the_deadline() -> None:
    port = free_udp_port()
    task = make_task(
        {"ipmi_address": "127.0.0.1", "ipmi_port": port, "ipmi_username": "admin",
         "ipmi_password": "pw-closed-port", "ipmi_timeout": FAULT_TIMEOUT}
    )  # fmt: skip
    started = time.monotonic()
    with pytest.raises(BMCUnreachable, match="no answer") as caught:
        task.driver.power.get_power_state(task)
    elapsed = time.monotonic() - started
    # Our deadline (2 s) comes before pyghmi's own login timeout (~5 s).
    assert FAULT_TIMEOUT - 0.1 <= elapsed < FAULT_TIMEOUT + SLACK
    assert f"127.0.0.1:{port}" in str(caught.value)


def test_silent_bmc_at_login_is_unreachable(bmc: BMC) -> None:
    bmc.set_faults({"silent": True})
    task = make_task(bmc.driver_info(ipmi_timeout=FAULT_TIMEOUT))
    started = time.monotonic()
    with pytest.raises(BMCUnreachable):
        task.driver.power.get_power_state(task)
    assert FAULT_TIMEOUT - 0.1 <= time.monotonic() - started < FAULT_TIMEOUT + SLACK


def test_bmc_going_silent_mid_session_times_out_then_recovers(bmc: BMC) -> None:
    # The BMC accepts "power on" but applies it late, so the driver keeps
    # polling on its session; once the BMC has the command, it stops
    # answering altogether.
    bmc.set_faults({"power_delay": 30})
    task = make_task(bmc.driver_info(ipmi_timeout=FAULT_TIMEOUT))
    silenced_at: list[float] = []

    def silence() -> None:
        bmc.wait_state(lambda st: st["pending_power"] == "on", timeout=10)
        bmc.set_faults({"silent": True, "power_delay": 30})
        silenced_at.append(time.monotonic())

    silencer = threading.Thread(target=silence)
    silencer.start()
    try:
        with pytest.raises(BMCTimeout, match="stopped answering") as caught:
            task.driver.power.set_power_state(task, states.POWER_ON)
    finally:
        silencer.join()
    elapsed = time.monotonic() - silenced_at[0]
    # The call in flight when the BMC fell silent started at most a poll earlier.
    assert FAULT_TIMEOUT - 0.6 <= elapsed < FAULT_TIMEOUT + SLACK
    assert bmc.state()["power_actions"] == {"on": 1}
    assert task.node.uuid in str(caught.value)
    assert f"127.0.0.1:{bmc.port}" in str(caught.value)

    # The dead session was dropped: once the BMC answers, the next call logs in afresh
    # (the delayed power-on has not landed yet).
    bmc.set_faults({"power_delay": 30})
    started = time.monotonic()
    assert task.driver.power.get_power_state(task) == states.POWER_OFF
    assert time.monotonic() - started < FAULT_TIMEOUT


def test_completion_code_is_a_request_failure(bmc: BMC) -> None:
    bmc.set_faults({"completion_code": 0xC0})
    task = make_task(bmc.driver_info(ipmi_timeout=FAULT_TIMEOUT))
    with pytest.raises(BMCRequestFailed, match="Node Busy") as caught:
        task.driver.power.set_power_state(task, states.POWER_ON)
    assert isinstance(caught.value, HardwareError)
    assert bmc.state()["power"] == "off"
    bmc.set_faults({})
    task.driver.power.set_power_state(task, states.POWER_ON)
    assert bmc.state()["power"] == "on"


# -- vendor steps --------------------------------------------------------------------------


def _manageable(conductor: Conductor, info: dict[str, Any]) -> Node:
    node = conductor.create_node(driver="ipmi", driver_info=info)
    node = conductor.do_provisioning_action(node.uuid, "manage")
    assert node.provision_state == states.MANAGEABLE, node.last_error
    return node


def test_bmc_reset_clean_step_resets_and_waits_for_the_bmc(bmc: BMC) -> None:
    bmc.set_faults({"reset_downtime": 1.0})  # deaf for 1 s after each reset
    conductor = Conductor()
    node = _manageable(conductor, bmc.driver_info(ipmi_timeout=FAULT_TIMEOUT))

    started = time.monotonic()
    node = conductor.do_provisioning_action(
        node.uuid, "clean", clean_steps=[{"interface": "vendor", "step": "bmc_reset"}]
    )
    assert node.provision_state == states.MANAGEABLE, node.last_error
    assert time.monotonic() - started >= 1.0  # it waited until the BMC answered again
    state = bmc.state()
    assert (state["cold_resets"], state["warm_resets"], state["bmc_resets"]) == (1, 0, 1)

    node = conductor.do_provisioning_action(
        node.uuid, "clean",
        clean_steps=[{"interface": "vendor", "step": "bmc_reset", "args": {"warm": True}}],
    )  # fmt: skip
    assert node.provision_state == states.MANAGEABLE, node.last_error
    assert bmc.state()["warm_resets"] == 1


def test_send_raw_is_disallowed_by_default(bmc: BMC) -> None:
    conductor = Conductor()
    node = _manageable(conductor, bmc.driver_info())
    raw = [{"interface": "vendor", "step": "send_raw", "args": {"raw_bytes": "0x06 0x01"}}]
    with pytest.raises(StepNotAllowed, match=r"vendor\.send_raw"):
        conductor.do_provisioning_action(node.uuid, "clean", clean_steps=raw)
    assert conductor.get_node(node.uuid).provision_state == states.MANAGEABLE


def test_send_raw_runs_when_allowed(bmc: BMC) -> None:
    conductor = Conductor(config=Config(disallow_clean_steps=[]))
    node = _manageable(conductor, bmc.driver_info())
    raw = [{"interface": "vendor", "step": "send_raw", "args": {"raw_bytes": "0x06 0x01"}}]
    node = conductor.do_provisioning_action(node.uuid, "clean", clean_steps=raw)
    assert node.provision_state == states.MANAGEABLE, node.last_error
    reply = node.driver_internal_info["ipmi_raw_reply"]
    assert (reply["netfn"], reply["command"], reply["code"]) == (7, 1, 0)  # Get Device ID
    assert reply["data"].startswith("0x00 0x00 0x01 0x00")  # device 0, firmware 1.00

    # An unknown command: the BMC's completion code fails the step.
    bad = [{"interface": "vendor", "step": "send_raw", "args": {"raw_bytes": "0x30 0x99"}}]
    node = conductor.do_provisioning_action(node.uuid, "clean", clean_steps=bad)
    assert node.provision_state == states.CLEANFAIL
    assert node.last_error is not None
    assert "Invalid command" in node.last_error


def test_two_bmcs_used_in_parallel_are_independent(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    first, second = start_bmcs(tmp_path, 2)
    request.addfinalizer(first.stop)
    request.addfinalizer(second.stop)
    assert first.port != second.port
    assert first.process is not second.process  # one process per BMC, like real hardware
    one, two = make_task(first.driver_info()), make_task(second.driver_info())
    errors: list[BaseException] = []

    def run(action: Any) -> None:
        try:
            action()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [
        threading.Thread(
            target=run, args=(lambda: one.driver.power.set_power_state(one, states.POWER_ON),)
        ),
        threading.Thread(
            target=run, args=(lambda: two.driver.management.set_boot_device(two, "cdrom"),)
        ),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert (first.state()["power"], first.state()["boot_device"]) == ("on", "default")
    assert (second.state()["power"], second.state()["boot_device"]) == ("off", "optical")
