"""The ``ipmi`` hardware type against two IPMI peers: pyghmi's BMC and OpenIPMI's ``ipmi_sim``.

:mod:`ironic_fsm.testing.ipmi_bmc` is built on pyghmi, the driver's own
client library; :mod:`ironic_fsm.testing.ipmi_sim` is OpenIPMI's BMC
simulator in C (Debian package ``openipmi``), whose chassis is a script
keeping its state in files. Where both should behave alike the tests are
parametrized over both; ``ipmi_sim``'s quirks (no boot flags read-back,
both BMC resets refused, no "safe" boot device) get their own tests.
``ipmitool`` (Debian package ``ipmitool``) cross-checks what the driver did.
Nothing skips: a missing ``ipmi_sim`` or ``ipmitool`` fails with the
package to install.

The stall tests time each call on the wall clock: 0.5-1 s stalls are the
defect they reproduce (pyghmi's session loop sleeping on a reply already
received), so they assert on latency, with bounds loose enough for two
busy cores.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ironic_fsm import Conductor, Config, Node, states
from ironic_fsm.drivers.ipmi import (
    IPMIVendor,
    _Connection,
    _session_class,
    ipmi_hardware,
    parse_driver_info,
)
from ironic_fsm.exceptions import BMCRequestFailed, InvalidParameterValue
from ironic_fsm.task import Task
from ironic_fsm.testing.ipmi_bmc import start_bmc
from ironic_fsm.testing.ipmi_sim import SimulatorMissing, start_sim

PEERS = ["pyghmi_bmc", "ipmi_sim"]
CALLS = 200


@dataclass
class Peer:
    """One running IPMI peer, seen the same way whichever it is."""

    kind: str
    address: str
    port: int
    user: str
    password: str = field(repr=False)
    state: Callable[[], dict[str, Any]] = field(repr=False)
    #: How the peer's chassis names a boot device the driver asked for.
    boot_names: dict[str, str] = field(repr=False)
    handle: Any = None  # the BMC or SimBMC object

    def driver_info(self, **overrides: Any) -> dict[str, Any]:
        return dict(self.handle.driver_info(**{"ipmi_timeout": 5, **overrides}))

    def power(self) -> str:
        return str(self.state()["power"])

    def boot_device(self) -> str:
        return str(self.state()["boot_device"])


def _start(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Peer:
    if kind == "pyghmi_bmc":
        bmc = start_bmc(tmp_path)
        request.addfinalizer(bmc.stop)
        names = {"pxe": "network", "disk": "hd", "cdrom": "optical", "bios": "setup"}
        return Peer(kind, bmc.address, bmc.port, bmc.user, bmc.password, bmc.state, names, bmc)
    sim = start_sim(tmp_path)
    request.addfinalizer(sim.stop)
    # ipmi_sim hands a disk request to its chassis as "default".
    names = {"pxe": "pxe", "disk": "default", "cdrom": "cdrom", "bios": "bios"}
    return Peer(kind, sim.address, sim.port, sim.user, sim.password, sim.state, names, sim)


@pytest.fixture(params=PEERS)
def peer(request: pytest.FixtureRequest, tmp_path: Path) -> Peer:
    return _start(request.param, tmp_path, request)


@pytest.fixture
def sim(request: pytest.FixtureRequest, tmp_path: Path) -> Peer:
    return _start("ipmi_sim", tmp_path, request)


def make_task(info: dict[str, Any]) -> Task:
    return Task(node=Node(driver="ipmi", driver_info=info), driver=ipmi_hardware(), config=Config())


def vendor(task: Task) -> IPMIVendor:
    assert isinstance(task.driver.vendor, IPMIVendor)
    return task.driver.vendor


def ipmitool(peer: Peer, *args: str) -> str:
    """``ipmitool -C 3`` against the peer (suite 3: ipmi_sim never lists its suites)."""
    binary = shutil.which("ipmitool")
    assert binary is not None, "ipmitool is not installed: apt-get install ipmitool"
    done = subprocess.run(
        [binary, "-I", "lanplus", "-C", "3", "-H", peer.address, "-p", str(peer.port),
         "-U", peer.user, "-E", *args],
        env={**os.environ, "IPMI_PASSWORD": peer.password},  # -E: not on the command line
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- the simulator itself -------------------------------------------------------------------


def test_missing_ipmi_sim_fails_naming_the_debian_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing in it
    with pytest.raises(SimulatorMissing, match=r"apt-get install openipmi"):
        start_sim(tmp_path)


def test_sim_keeps_its_password_out_of_reach(sim: Peer, tmp_path: Path) -> None:
    (directory,) = tmp_path.glob("ipmi-sim-*")
    assert directory.stat().st_mode & 0o077 == 0
    assert (directory / "lan.conf").stat().st_mode & 0o077 == 0
    assert sim.password not in repr(sim.handle)
    assert sim.password not in repr(sim)


# -- power, boot device and the lifecycle on both peers ---------------------------------------


def test_power_status_on_off_reboot(peer: Peer) -> None:
    task = make_task(peer.driver_info())
    power = task.driver.power
    assert power.get_power_state(task) == states.POWER_OFF
    power.set_power_state(task, states.POWER_ON)
    assert peer.power() == "on"
    assert power.get_power_state(task) == states.POWER_ON
    assert "Chassis Power is on" in ipmitool(peer, "chassis", "power", "status")
    power.reboot(task)
    assert peer.power() == "on"
    power.set_power_state(task, states.POWER_OFF)
    assert peer.power() == "off"
    assert power.get_power_state(task) == states.POWER_OFF
    assert "Chassis Power is off" in ipmitool(peer, "chassis", "power", "status")
    power.reboot(task)  # off: powered on, not reset
    assert peer.power() == "on"
    assert task.node.power_state == states.POWER_ON


def test_reboot_resets_a_node_that_is_on(sim: Peer) -> None:
    task = make_task(sim.driver_info())
    task.driver.power.set_power_state(task, states.POWER_ON)
    task.driver.power.reboot(task)
    task.driver.power.set_power_state(task, states.SOFT_POWER_OFF)
    assert sim.state()["actions"] == ["power 1", "reset 1", "shutdown 1"]
    assert sim.power() == "off"


@pytest.mark.parametrize("device", ["pxe", "disk", "cdrom", "bios"])
def test_boot_device_set(peer: Peer, device: str) -> None:
    task = make_task(peer.driver_info())
    task.driver.management.set_boot_device(task, device, persistent=True)
    assert peer.boot_device() == peer.boot_names[device]


def test_boot_device_reads_back_on_the_pyghmi_bmc(request: pytest.FixtureRequest,
                                                  tmp_path: Path) -> None:  # fmt: skip
    peer = _start("pyghmi_bmc", tmp_path, request)
    task = make_task(peer.driver_info())
    task.driver.management.set_boot_device(task, "pxe", persistent=True)
    assert task.driver.management.get_boot_device(task) == {
        "boot_device": "pxe",
        "persistent": True,
    }


def test_ipmi_sim_boot_flags_are_invalid_so_no_override_is_reported(sim: Peer) -> None:
    # ipmi_sim always reports the boot flags as invalid: the driver says
    # "no override known" rather than guessing, though the chassis has it.
    task = make_task(sim.driver_info())
    task.driver.management.set_boot_device(task, "pxe", persistent=True)
    assert sim.boot_device() == "pxe"
    assert task.driver.management.get_boot_device(task) == {
        "boot_device": None,
        "persistent": None,
    }
    assert "Boot Flag Invalid" in ipmitool(sim, "chassis", "bootparam", "get", "5")


def test_ipmi_sim_has_no_safe_boot_device(sim: Peer) -> None:
    task = make_task(sim.driver_info())
    with pytest.raises(BMCRequestFailed, match="safe") as caught:
        task.driver.management.set_boot_device(task, "safe")
    assert f"127.0.0.1:{sim.port}" in str(caught.value)
    assert sim.boot_device() == "default"
    task.driver.management.set_boot_device(task, "cdrom")  # the session survived
    assert sim.boot_device() == "cdrom"


def test_whole_lifecycle_through_the_conductor(peer: Peer) -> None:
    conductor = Conductor()
    node = conductor.create_node(driver="ipmi", driver_info=peer.driver_info())

    node = conductor.do_provisioning_action(node.uuid, "manage")
    assert node.provision_state == states.MANAGEABLE, node.last_error
    assert node.power_state == states.POWER_OFF

    node = conductor.do_provisioning_action(node.uuid, "provide")
    assert node.provision_state == states.AVAILABLE, node.last_error

    node = conductor.do_provisioning_action(node.uuid, "active")
    assert node.provision_state == states.ACTIVE, node.last_error
    assert node.power_state == states.POWER_ON
    assert peer.power() == "on"
    assert peer.boot_device() == peer.boot_names["disk"]

    node = conductor.do_provisioning_action(node.uuid, "deleted")
    assert node.provision_state == states.AVAILABLE, node.last_error
    assert node.power_state == states.POWER_OFF
    assert peer.power() == "off"
    stored = conductor.get_node(node.uuid)
    assert (stored.provision_state, stored.last_error, stored.reservation) == (
        states.AVAILABLE, None, None,
    )  # fmt: skip


# -- BMC reset: the completion code is read ---------------------------------------------------


@pytest.mark.parametrize("warm", [True, False])
def test_ipmi_sim_refused_reset_is_a_request_failure(sim: Peer, warm: bool) -> None:
    # Before the fix, the reset was sent without waiting for the reply and
    # logged as accepted; ipmi_sim answers both kinds with 0xC1.
    task = make_task(sim.driver_info(ipmi_reset_wait=2))
    task.driver.power.set_power_state(task, states.POWER_ON)
    started = time.monotonic()
    with pytest.raises(BMCRequestFailed, match="Invalid command") as caught:
        vendor(task).bmc_reset(task, warm=warm)
    assert time.monotonic() - started < 1.0  # refused at once, no wait for the BMC to return
    error = caught.value
    assert error.details["code"] == 0xC1
    assert ("warm reset" if warm else "cold reset") in str(error)
    assert f"127.0.0.1:{sim.port}" in str(error)
    assert sim.password not in str(error)
    assert sim.state()["actions"] == ["power 1"]  # the machine was not touched
    assert task.driver.power.get_power_state(task) == states.POWER_ON


def test_refused_reset_fails_the_clean_step_and_keeps_the_node(sim: Peer) -> None:
    conductor = Conductor()
    node = conductor.create_node(driver="ipmi", driver_info=sim.driver_info())
    node = conductor.do_provisioning_action(node.uuid, "manage")
    assert node.provision_state == states.MANAGEABLE, node.last_error
    node = conductor.do_provisioning_action(
        node.uuid, "clean",
        clean_steps=[{"interface": "vendor", "step": "bmc_reset", "args": {"warm": True}}],
    )  # fmt: skip
    assert node.provision_state == states.CLEANFAIL
    assert node.last_error is not None
    assert "Invalid command" in node.last_error
    assert "0xC1" in node.last_error
    assert conductor.get_node(node.uuid).reservation is None


@pytest.mark.parametrize("warm", [True, False])
def test_reset_refused_by_the_pyghmi_bmc_carries_its_code(
    request: pytest.FixtureRequest, tmp_path: Path, warm: bool
) -> None:
    bmc = start_bmc(tmp_path)
    request.addfinalizer(bmc.stop)
    bmc.set_faults({"reset_code": 0xD5})
    task = make_task(
        {"ipmi_address": bmc.address, "ipmi_port": bmc.port, "ipmi_username": bmc.user,
         "ipmi_password": bmc.password, "ipmi_timeout": 2}
    )  # fmt: skip
    with pytest.raises(BMCRequestFailed, match="present state") as caught:
        vendor(task).bmc_reset(task, warm=warm)
    assert caught.value.details["code"] == 0xD5
    assert bmc.state()["bmc_resets"] == 0


def test_reset_without_a_reply_counts_as_accepted(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # Documented choice: a BMC may reset before it answers; the driver then
    # waits for it to accept a login again.
    bmc = start_bmc(tmp_path)
    request.addfinalizer(bmc.stop)
    bmc.set_faults({"reset_no_reply": True, "reset_downtime": 0.3})
    task = make_task(
        {"ipmi_address": bmc.address, "ipmi_port": bmc.port, "ipmi_username": bmc.user,
         "ipmi_password": bmc.password, "ipmi_timeout": 2, "ipmi_reset_wait": 10}
    )  # fmt: skip
    started = time.monotonic()
    vendor(task).bmc_reset(task, warm=False)
    assert time.monotonic() - started >= 1.0  # it waited a second for the reply
    assert bmc.state()["cold_resets"] == 1
    assert task.driver.power.get_power_state(task) == states.POWER_OFF


# -- cipher suites ----------------------------------------------------------------------------


def test_cipher_suite_3_logs_in_on_both_peers(peer: Peer) -> None:
    task = make_task(peer.driver_info(ipmi_cipher_suite="3"))
    assert parse_driver_info(task.node).cipher_suite == 3
    task.driver.power.set_power_state(task, states.POWER_ON)
    assert peer.power() == "on"


def test_cipher_suite_17_only_is_refused_by_peers_without_it(peer: Peer) -> None:
    # Neither peer implements suite 17; asked for 17 only, the driver does
    # not fall back to 3 behind the operator's back.
    task = make_task(peer.driver_info(ipmi_cipher_suite=17, ipmi_timeout=3))
    with pytest.raises(BMCRequestFailed, match="cipher suite 17 only") as caught:
        task.driver.power.get_power_state(task)
    assert f"127.0.0.1:{peer.port}" in str(caught.value)
    # Unset: 17 proposed, 3 taken when refused.
    task = make_task(peer.driver_info())
    assert task.driver.power.get_power_state(task) == states.POWER_OFF


def test_cipher_suite_is_validated() -> None:
    info = {"ipmi_address": "192.0.2.1", "ipmi_username": "u", "ipmi_password": "p"}
    for bad in (5, "abc", True, 3.5):
        with pytest.raises(InvalidParameterValue, match="ipmi_cipher_suite") as caught:
            parse_driver_info(Node(driver="ipmi", driver_info={**info, "ipmi_cipher_suite": bad}))
        assert caught.value.details["invalid"] == ["ipmi_cipher_suite"]
    node = Node(driver="ipmi", driver_info={**info, "ipmi_cipher_suite": "17"})
    assert parse_driver_info(node).cipher_suite == 17
    assert parse_driver_info(Node(driver="ipmi", driver_info=info)).cipher_suite is None


# -- the stall --------------------------------------------------------------------------------


def test_no_stalls_over_many_calls(peer: Peer) -> None:
    # pyghmi's own loop sleeps 0.5-1 s on 1-25 % of calls (a reply filed
    # before it starts waiting); the driver's must not.  The bounds sit
    # below that stall's 0.5 s floor but well above what a busy two-core CI
    # box can add to one call by scheduling alone (a 253 ms call was seen
    # there with a 250 ms bound): the stall is caught, the box is not.
    task = make_task(peer.driver_info())
    seconds = []
    for _ in range(CALLS):
        started = time.perf_counter()
        assert task.driver.power.get_power_state(task) == states.POWER_OFF
        seconds.append(time.perf_counter() - started)
    p99 = statistics.quantiles(seconds, n=100, method="inclusive")[98]
    slow = sorted(round(s * 1e3) for s in seconds if s > 0.1)
    # p99 at half the stall's floor: a loaded box read 86.6 ms against an older 50 ms bound.
    assert p99 < 0.250, f"p99 {p99 * 1e3:.1f} ms; calls over 100 ms (ms): {slow}"
    assert max(seconds) < 0.450, f"max {max(seconds) * 1e3:.1f} ms; calls over 100 ms: {slow}"


@pytest.fixture
def session(peer: Peer) -> Iterator[Any]:
    """A logged-in session of the driver's kind on the peer, logged out afterwards."""
    task = make_task(peer.driver_info())
    connection = _Connection(task.node, parse_driver_info(task.node))
    with connection:
        yield connection.call("get session", lambda c: c.ipmi_session)


def _await_reply_already_received(session: Any) -> float:
    """Send Get Chassis Status, let its reply arrive, then wait for it; seconds waited."""
    session.lastresponse = None
    session.raw_command(netfn=0, command=1, callback=session._generic_callback)
    time.sleep(0.05)  # the reply arrives and pyghmi's IO thread files it
    started = time.perf_counter()
    try:
        session.awaitresponse(True, 1, 1)
    finally:
        session.incommand = False
    assert session.lastresponse["code"] == 0
    return time.perf_counter() - started


def test_a_reply_already_received_is_taken_at_once(session: Any) -> None:
    # The stall made deterministic: the reply is there before the wait starts.
    assert type(session) is _session_class(None)
    assert _await_reply_already_received(session) < 0.05


def test_pyghmi_alone_sleeps_on_a_reply_already_received(session: Any) -> None:
    # The same sequence with pyghmi's own Session: it sleeps until the
    # request's retry timer (0.5-1 s). If this starts failing, pyghmi fixed
    # its loop and PromptSession can go.
    session.__class__ = _session_class(None).__mro__[1]
    try:
        assert _await_reply_already_received(session) > 0.3
    finally:
        session.__class__ = _session_class(None)


def test_sessions_do_not_pile_up_in_pyghmi_queues(peer: Peer) -> None:
    # pyghmi notes every session that got a packet in a queue only its own
    # loop empties; the driver's sessions never run that loop, so they
    # remove themselves (else the queue grows per packet and keeps them alive).
    import pyghmi.ipmi.private.session as pyghmi_session

    task = make_task(peer.driver_info())
    for _ in range(20):
        task.driver.power.get_power_state(task)
    task.driver.power.set_power_state(task, states.POWER_ON)
    mine = [s for s in list(pyghmi_session.sessionqueue) if isinstance(s, _session_class(None))]
    assert mine == []
    assert not [s for s in pyghmi_session.Session.keepalive_sessions if s.port == peer.port]
