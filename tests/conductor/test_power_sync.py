"""Power-state sync (``Conductor.sync_power_states``) as Ironic's ``sync_power_states``.

Two kinds of peer. On every store (memory, SQLite, PostgreSQL), a lab BMC:
a power interface whose power lives in a dict the test changes "behind the
conductor's back", and which counts every read and write it serves. Then
the real BMC emulators over the wire on 127.0.0.1: the sushy-tools Redfish
emulator and the project's pyghmi IPMI BMC, where the test changes the
power with its own client and checks the emulator's own state.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import requests

from ironic_fsm import Conductor, Config, HardwareType, states
from ironic_fsm.conductor.power_sync import (
    POWER_FAILURE,
    POWER_SET_END,
    POWER_SET_ERROR,
    POWER_SET_START,
    POWER_STATE_CORRECTED,
    PowerEvent,
    PowerSyncReport,
)
from ironic_fsm.drivers.fake import FakeDeploy
from ironic_fsm.events import Event
from ironic_fsm.exceptions import BMCUnreachable, InvalidParameterValue
from ironic_fsm.interfaces import PowerInterface
from ironic_fsm.node import Node
from ironic_fsm.stores import Store
from ironic_fsm.task import Task

UTC = timezone.utc
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SECRET = "Lab-BMC-Secret-77"
INTERVAL = 60


class LabPower(PowerInterface):
    """A BMC per node, in a dict: what the hardware says, whatever the record says.

    ``broken`` nodes' BMCs fail every request with an error that quotes the
    BMC password, as careless drivers do; ``refuse_set`` ones read but
    cannot be set. ``on_read`` runs inside every read (to race the sync).
    """

    def __init__(self) -> None:
        self.power: dict[str, str] = {}
        self.reads: list[str] = []
        self.sets: list[tuple[str, str]] = []
        self.broken: set[str] = set()
        self.refuse_set: set[str] = set()
        self.on_read: Any = None
        self._lock = threading.Lock()

    def validate(self, task: Task) -> None:
        if "lab_password" not in task.node.driver_info:
            raise InvalidParameterValue(f"Node {task.node.uuid}: lab_password missing")

    def get_power_state(self, task: Task) -> str:
        uuid = task.node.uuid
        with self._lock:
            self.reads.append(uuid)
        if self.on_read is not None:
            self.on_read(task)
        if uuid in self.broken:
            raise BMCUnreachable(f"no route to BMC admin:{task.node.driver_info['lab_password']}")
        return self.power[uuid]

    def set_power_state(self, task: Task, power_state: str, timeout: float | None = None) -> None:
        uuid = task.node.uuid
        with self._lock:
            self.sets.append((uuid, power_state))
        if uuid in self.refuse_set:
            raise BMCUnreachable(
                f"BMC refused with password {task.node.driver_info['lab_password']}"
            )
        self.power[uuid] = power_state

    def reboot(self, task: Task, timeout: float | None = None) -> None:
        self.set_power_state(task, states.POWER_ON)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float = INTERVAL) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


class Lab:
    """A conductor on the test's store, the lab BMCs, the events heard and the clock."""

    def __init__(self, store: Store, **config: Any) -> None:
        self.bmc = LabPower()
        self.events: list[Event] = []
        self.clock = Clock()
        self.conductor = Conductor(
            store=store,
            config=Config(**{"host": "lab-host", "sync_power_state_interval": INTERVAL, **config}),
            listeners=[self.events.append],
            clock=self.clock,
        )
        self.conductor.register_hardware_type(
            "lab", HardwareType(power=self.bmc, deploy=FakeDeploy())
        )

    def node(self, bmc: str | None, **fields: Any) -> Node:
        fields.setdefault("provision_state", states.ACTIVE)
        fields.setdefault("power_state", states.POWER_ON)
        node = self.conductor.create_node(
            driver="lab", driver_info={"lab_password": SECRET}, **fields
        )
        if bmc is not None:
            self.bmc.power[node.uuid] = bmc
        return node

    def sync(self, advance: float = INTERVAL) -> PowerSyncReport:
        return self.conductor.sync_power_states(self.clock.advance(advance))

    def get(self, node: Node) -> Node:
        return self.conductor.get_node(node.uuid)

    def history(self, node: Node) -> list[tuple[str, str, str]]:
        return [
            (e.severity, e.event_type, e.event) for e in self.conductor.get_node_history(node.uuid)
        ]

    def power_events(self) -> list[PowerEvent]:
        return [e for e in self.events if isinstance(e, PowerEvent)]


@pytest.fixture
def lab(store: Store) -> Lab:
    return Lab(store)


# -- what a pass does to a node ---------------------------------------------------------------


def test_a_discrepancy_is_recorded_and_the_recorded_state_forced_back(lab: Lab) -> None:
    node = lab.node(states.POWER_OFF)  # recorded on, the BMC says off
    report = lab.sync()
    assert report.checked == report.discrepancies == report.forced == (node.uuid,)
    assert report.accepted == report.failed == report.maintenance_set == ()
    assert lab.bmc.power[node.uuid] == states.POWER_ON  # the BMC was set back
    assert lab.bmc.sets == [(node.uuid, states.POWER_ON)]
    after = lab.get(node)
    assert after.power_state == states.POWER_ON
    assert after.target_power_state is None
    assert after.reservation is None
    [entry] = lab.history(node)
    assert entry[:2] == ("WARNING", "power")
    assert "'power off' on its BMC but recorded as 'power on'" in entry[2]
    assert "sets it back to 'power on'" in entry[2]
    [event] = lab.power_events()
    assert event.name == POWER_SET_END
    assert event.node == node.uuid
    assert (event.previous_power_state, event.power_state) == (states.POWER_OFF, states.POWER_ON)
    assert event.state == states.ACTIVE


def test_without_forcing_the_bmcs_state_is_accepted(store: Store) -> None:
    lab = Lab(store, force_power_state_during_sync=False)
    node = lab.node(states.POWER_OFF)
    report = lab.sync()
    assert report.discrepancies == report.accepted == (node.uuid,)
    assert report.forced == ()
    assert lab.bmc.sets == []  # the BMC is left as it is
    assert lab.get(node).power_state == states.POWER_OFF
    [entry] = lab.history(node)
    assert "the record now says 'power off'" in entry[2]
    [event] = lab.power_events()
    assert event.name == POWER_STATE_CORRECTED
    assert (event.previous_power_state, event.power_state) == (states.POWER_ON, states.POWER_OFF)
    # The next pass agrees: nothing more happens.
    report = lab.sync()
    assert report.checked == (node.uuid,)
    assert report.discrepancies == ()


def test_a_node_with_no_recorded_power_takes_the_bmcs_without_a_discrepancy(lab: Lab) -> None:
    node = lab.node(states.POWER_ON, power_state=None)
    report = lab.sync()
    assert report.checked == (node.uuid,)
    assert report.discrepancies == report.forced == report.accepted == ()
    assert lab.get(node).power_state == states.POWER_ON
    assert lab.history(node) == []
    assert [e.name for e in lab.power_events()] == [POWER_STATE_CORRECTED]


def test_agreeing_power_changes_nothing(lab: Lab) -> None:
    node = lab.node(states.POWER_ON)
    version = lab.get(node).version
    report = lab.sync()
    assert report.checked == (node.uuid,)
    assert report.discrepancies == ()
    assert lab.get(node).version == version  # not even saved
    assert lab.events == []
    assert lab.bmc.sets == []


def test_a_node_without_power_and_without_driver_info_is_passed_over(lab: Lab) -> None:
    node = lab.conductor.create_node(driver="lab", provision_state=states.MANAGEABLE)
    report = lab.sync()
    assert report == PowerSyncReport()
    assert lab.bmc.reads == []
    assert lab.get(node).power_state is None


# -- failures and maintenance -------------------------------------------------------------


def fail_until_maintenance(lab: Lab, node: Node, passes: int) -> Node:
    """Run ``passes`` failing passes, checking that only the last sets maintenance."""
    for _ in range(passes - 1):  # the first attempt and the retries but one: warnings only
        report = lab.sync()
        assert report.failed == (node.uuid,)
        assert report.maintenance_set == ()
        assert not lab.get(node).maintenance
    report = lab.sync()  # the last retry fails too
    assert report.failed == report.maintenance_set == (node.uuid,)
    return lab.get(node)


def test_maintenance_after_the_first_attempt_and_max_retries_failed_reads(store: Store) -> None:
    lab = Lab(store, power_state_sync_max_retries=2)
    node = lab.node(states.POWER_ON)
    lab.bmc.broken.add(node.uuid)
    after = fail_until_maintenance(lab, node, passes=3)
    assert after.maintenance
    assert after.fault == POWER_FAILURE
    reason = after.maintenance_reason or ""
    assert "failed 3 times in a row" in reason
    assert "power_state_sync_max_retries=2" in reason
    assert "could not read its power state: no route to BMC" in reason
    assert SECRET not in reason
    assert after.power_state is None  # as Ironic: the BMC's word, which is none
    assert lab.history(node) == [("ERROR", "maintenance", reason)]


def test_a_power_failure_is_read_again_but_never_forced(store: Store) -> None:
    lab = Lab(store, power_state_sync_max_retries=0)
    node = lab.node(states.POWER_ON)
    lab.bmc.broken.add(node.uuid)
    fail_until_maintenance(lab, node, passes=1)
    report = lab.sync()
    assert report.failed == (node.uuid,)
    assert report.maintenance_set == ()
    assert lab.bmc.reads == [node.uuid, node.uuid]
    assert lab.bmc.sets == []
    assert lab.get(node).maintenance


def test_a_readable_bmc_brings_a_power_failure_out_of_maintenance(lab: Lab) -> None:
    node = lab.node(states.POWER_OFF, maintenance=True, fault=POWER_FAILURE,
                    maintenance_reason="power sync failed")  # fmt: skip
    report = lab.sync()
    assert report.recovered == report.checked == (node.uuid,)
    after = lab.get(node)
    assert not after.maintenance
    assert after.fault is None
    assert after.maintenance_reason is None
    assert after.power_state == states.POWER_OFF  # the BMC's, not forced
    assert lab.bmc.sets == []
    assert lab.history(node)[-1][:2] == ("INFO", "maintenance")


def test_a_later_good_read_resets_the_count(store: Store) -> None:
    lab = Lab(store, power_state_sync_max_retries=1)
    node = lab.node(states.POWER_ON)
    for broken in (True, False, True, False, True):
        (lab.bmc.broken.add if broken else lab.bmc.broken.discard)(node.uuid)
        lab.sync()
        assert not lab.get(node).maintenance


def test_a_discrepancy_that_keeps_coming_back_ends_in_maintenance(store: Store) -> None:
    lab = Lab(store, power_state_sync_max_retries=1)
    node = lab.node(states.POWER_OFF)
    lab.bmc.refuse_set.add(node.uuid)
    report = lab.sync()
    assert report.discrepancies == report.failed == (node.uuid,)
    [event] = lab.power_events()
    assert event.name == POWER_SET_ERROR
    assert SECRET not in (event.error or "")
    assert lab.history(node)[-1][:2] == ("ERROR", "power")
    assert lab.get(node).power_state == states.POWER_ON  # the record is kept
    report = lab.sync()
    assert report.maintenance_set == (node.uuid,)
    after = lab.get(node)
    assert after.maintenance
    assert after.fault == POWER_FAILURE
    assert "BMC reports 'power off' but the record says 'power on'" in (
        after.maintenance_reason or ""
    )
    assert after.power_state == states.POWER_OFF
    assert SECRET not in repr(lab.history(node))


def test_no_secret_reaches_the_log(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    lab = Lab(store, power_state_sync_max_retries=1)
    node = lab.node(states.POWER_OFF)
    lab.bmc.broken.add(node.uuid)
    with caplog.at_level(logging.DEBUG, logger="ironic_fsm"):
        lab.sync()
        lab.sync()
        lab.bmc.broken.clear()
        lab.bmc.refuse_set.add(node.uuid)
        lab.conductor.update_node(node.uuid, maintenance=False)
        lab.sync()
    assert "could not read" in caplog.text
    assert SECRET not in caplog.text


# -- who is read, and when ------------------------------------------------------------------


def test_reserved_maintenance_and_busy_nodes_are_not_touched(lab: Lab) -> None:
    reserved = lab.node(states.POWER_OFF)
    lab.conductor.store.reserve(reserved.uuid, "other-host:1:1-aaaa")
    kept = [
        reserved,
        lab.node(states.POWER_OFF, maintenance=True, maintenance_reason="by hand"),
        lab.node(states.POWER_OFF, provision_state=states.CLEANING),
        lab.node(states.POWER_OFF, provision_state=states.CLEANWAIT),
        lab.node(states.POWER_OFF, provision_state=states.DEPLOYHOLD),
        lab.node(states.POWER_OFF, provision_state=states.RESCUEWAIT),
        lab.node(states.POWER_OFF, provision_state=states.ENROLL),
        lab.node(states.POWER_OFF, provision_state=states.ADOPTFAIL),
    ]
    synced = [
        lab.node(states.POWER_OFF, provision_state=state)
        for state in (states.MANAGEABLE, states.CLEANFAIL, states.ERROR, states.RESCUE)
    ]
    before = {n.uuid: lab.get(n) for n in kept}
    report = lab.sync()
    assert set(report.forced) == {n.uuid for n in synced}
    assert set(lab.bmc.reads) == {n.uuid for n in synced}
    assert {n.uuid: lab.get(n) for n in kept} == before  # not even saved


def test_nothing_due_means_no_bmc_call(lab: Lab) -> None:
    node = lab.node(states.POWER_ON)
    assert lab.sync().checked == (node.uuid,)
    assert lab.sync(advance=INTERVAL - 1) == PowerSyncReport()
    assert lab.bmc.reads == [node.uuid]
    assert lab.sync(advance=1).checked == (node.uuid,)  # due again one interval later
    assert lab.bmc.reads == [node.uuid, node.uuid]


def test_a_new_node_is_due_at_once_and_a_deleted_one_is_forgotten(lab: Lab) -> None:
    first = lab.node(states.POWER_ON, provision_state=states.MANAGEABLE)
    lab.sync()
    second = lab.node(states.POWER_ON)
    assert lab.sync(advance=1).checked == (second.uuid,)
    lab.conductor.delete_node(first.uuid)
    assert lab.sync().checked == (second.uuid,)


def test_a_node_reserved_during_the_read_is_left_alone_and_due_again(lab: Lab) -> None:
    node = lab.node(states.POWER_OFF)
    store = lab.conductor.store

    def race(task: Task) -> None:  # another conductor takes the node meanwhile
        lab.bmc.on_read = None
        store.reserve(task.node.uuid, "other-host:1:1-bbbb")

    lab.bmc.on_read = race
    before = lab.get(node)
    report = lab.sync()
    assert report.skipped == (node.uuid,)
    assert report.forced == ()
    after = lab.get(node)
    assert lab.bmc.sets == []
    assert after.reservation == "other-host:1:1-bbbb"
    after.reservation = None
    assert after == before  # nothing saved
    store.release(node.uuid, "other-host:1:1-bbbb")
    assert lab.sync(advance=1).forced == (node.uuid,)  # not marked synced: due at once


def test_nodes_another_conductor_owns_are_neither_read_nor_marked(store: Store) -> None:
    lab = Lab(store)
    mine, theirs = lab.node(states.POWER_ON), lab.node(states.POWER_ON)
    lab.conductor.owns = lambda node_uuid, driver, conductor_group: node_uuid == mine.uuid  # type: ignore[method-assign]
    assert lab.sync().checked == (mine.uuid,)
    assert lab.bmc.reads == [mine.uuid]
    other = Conductor(store=store, config=Config(host="other"), clock=lab.clock)
    other.register_hardware_type("lab", HardwareType(power=lab.bmc))
    assert other.sync_power_states(lab.clock.advance(1)).checked == (theirs.uuid,)


def test_reads_run_on_a_bounded_pool(store: Store) -> None:
    lab = Lab(store, sync_power_state_workers=3)
    nodes = [lab.node(states.POWER_ON) for _ in range(9)]
    active, peak = [0], [0]
    lock = threading.Lock()

    def slow(task: Task) -> None:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1

    lab.bmc.on_read = slow
    report = lab.sync()
    assert sorted(report.checked) == sorted(n.uuid for n in nodes)
    assert peak[0] == 3


def test_a_draining_conductor_syncs_nothing_and_leaves_the_nodes_due(store: Store) -> None:
    lab = Lab(store)
    first, second = lab.node(states.POWER_OFF), lab.node(states.POWER_OFF)
    lab.conductor.drain()
    assert lab.sync() == PowerSyncReport()
    assert lab.bmc.reads == []
    other = Conductor(store=store, config=Config(host="other"), clock=lab.clock)
    other.register_hardware_type("lab", HardwareType(power=lab.bmc))
    assert sorted(other.sync_power_states(lab.clock.now).forced) == sorted(
        [first.uuid, second.uuid]
    )


def test_a_drain_during_a_pass_leaves_the_unread_nodes_due(store: Store) -> None:
    lab = Lab(store, sync_power_state_workers=1)
    nodes = [lab.node(states.POWER_ON) for _ in range(3)]
    lab.bmc.on_read = lambda task: lab.conductor.drain()  # the drain begins at the first read
    report = lab.sync()
    assert len(report.checked) == 1
    assert len(report.skipped) == 2
    other = Conductor(store=store, config=Config(host="other"), clock=lab.clock)
    other.register_hardware_type("lab", HardwareType(power=lab.bmc))
    lab.bmc.on_read = None
    assert sorted(other.sync_power_states(lab.clock.now).checked) == sorted(
        n.uuid for n in nodes if n.uuid not in report.checked
    )


def test_now_must_be_aware(lab: Lab) -> None:
    with pytest.raises(InvalidParameterValue, match="timezone-aware"):
        lab.conductor.sync_power_states(datetime(2026, 1, 1))
    assert lab.bmc.reads == []


# -- over the wire: the Redfish emulator and the IPMI BMC -----------------------------------

PASSWORD = "Wire-Secret-1234"


@pytest.fixture(scope="module")
def emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from ironic_fsm.testing.redfish_emulator import start_emulator

    emulator = start_emulator(
        tmp_path_factory.mktemp("redfish-sync"), password=PASSWORD, power_state="On"
    )
    try:
        yield emulator
    finally:
        emulator.stop()


def reset_behind_the_back(emu: Any, reset_type: str) -> None:
    """What an operator at the BMC's own console does: a Redfish reset, not through us."""
    response = requests.post(
        f"{emu.url}{emu.system_id}/Actions/ComputerSystem.Reset",
        json={"ResetType": reset_type},
        auth=(emu.user, emu.password),
        timeout=10,
    )
    response.raise_for_status()


def redfish_conductor(**config: Any) -> tuple[Conductor, list[Event]]:
    heard: list[Event] = []
    conductor = Conductor(
        config=Config(host="wire", power_state_sync_max_retries=1, **config),
        listeners=[heard.append],
    )
    return conductor, heard


@pytest.mark.parametrize("force", [True, False])
def test_redfish_power_changed_behind_the_conductors_back(emu: Any, force: bool) -> None:
    conductor, heard = redfish_conductor(force_power_state_during_sync=force)
    node = conductor.create_node(
        driver="redfish", driver_info=emu.driver_info(), provision_state=states.ACTIVE
    )
    conductor.set_power_state(node.uuid, states.POWER_ON)
    assert conductor.sync_power_states().discrepancies == ()
    reset_behind_the_back(emu, "ForceOff")
    assert emu.system_state()["power_state"] == "Off"
    report = conductor.sync_power_states(datetime.now(UTC) + timedelta(minutes=5))
    assert report.discrepancies == (node.uuid,)
    [entry] = conductor.get_node_history(node.uuid)
    assert "'power off' on its BMC but recorded as 'power on'" in entry.event
    asked, done, event = [e for e in heard if isinstance(e, PowerEvent)]
    # The request's own start and end, then the sync's.
    assert (asked.name, done.name) == (POWER_SET_START, POWER_SET_END)
    if force:
        assert report.forced == (node.uuid,)
        assert emu.system_state()["power_state"] == "On"  # set back on the BMC itself
        assert event.name == POWER_SET_END
        assert conductor.get_node(node.uuid).power_state == states.POWER_ON
    else:
        assert report.accepted == (node.uuid,)
        assert emu.system_state()["power_state"] == "Off"
        assert event.name == POWER_STATE_CORRECTED
        assert conductor.get_node(node.uuid).power_state == states.POWER_OFF
        reset_behind_the_back(emu, "On")


def test_an_unreachable_redfish_bmc_ends_in_maintenance(emu: Any) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    conductor, _ = redfish_conductor()
    node = conductor.create_node(
        driver="redfish",
        driver_info=emu.driver_info(redfish_address=closed),
        provision_state=states.ACTIVE,
        power_state=states.POWER_ON,
    )
    start = datetime.now(UTC)
    first = conductor.sync_power_states(start)
    assert first.failed == (node.uuid,)
    assert not conductor.get_node(node.uuid).maintenance
    second = conductor.sync_power_states(start + timedelta(minutes=2))
    assert second.maintenance_set == (node.uuid,)
    after = conductor.get_node(node.uuid)
    assert after.maintenance
    assert after.fault == POWER_FAILURE
    assert "failed 2 times in a row" in (after.maintenance_reason or "")
    assert PASSWORD not in (after.maintenance_reason or "")
    # The BMC is back (the address fixed): out of maintenance at the next pass.
    conductor.update_node(node.uuid, driver_info=emu.driver_info())
    third = conductor.sync_power_states(start + timedelta(minutes=4))
    assert third.recovered == (node.uuid,)
    assert not conductor.get_node(node.uuid).maintenance


@pytest.fixture
def ipmi_peer(tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    from ironic_fsm.testing.ipmi_bmc import start_bmc

    peer = start_bmc(tmp_path)
    request.addfinalizer(peer.stop)  # noqa: PT021 - registered the moment the peer exists
    return peer


def test_ipmi_power_changed_behind_the_back_then_the_bmc_goes_silent(ipmi_peer: Any) -> None:
    from ironic_fsm.drivers.ipmi import ipmi_hardware

    info = {
        "ipmi_address": ipmi_peer.address,
        "ipmi_port": ipmi_peer.port,
        "ipmi_username": ipmi_peer.user,
        "ipmi_password": ipmi_peer.password,
        "ipmi_timeout": 1,
    }
    conductor, heard = redfish_conductor()
    node = conductor.create_node(driver="ipmi", driver_info=info, provision_state=states.ACTIVE)
    conductor.set_power_state(node.uuid, states.POWER_ON)
    assert ipmi_peer.state()["power"] == "on"
    # Someone else's IPMI session powers it off.
    other = Task(
        node=Node(driver="ipmi", driver_info=info), driver=ipmi_hardware(), config=Config()
    )
    ipmi_hardware().power.set_power_state(other, states.POWER_OFF)
    assert ipmi_peer.state()["power"] == "off"
    start = datetime.now(UTC)
    report = conductor.sync_power_states(start)
    assert report.forced == (node.uuid,)
    assert ipmi_peer.state()["power"] == "on"
    assert any(e.name == POWER_SET_END for e in heard)
    assert conductor.get_node_history(node.uuid)[-1].event_type == "power"
    # A pass that finds the BMC agreeing resets the count (a discrepancy counts, as in Ironic).
    assert conductor.sync_power_states(start + timedelta(minutes=2)).discrepancies == ()
    # Then the BMC stops answering: maintenance after the first attempt and one retry.
    ipmi_peer.set_faults({"silent": True})
    assert conductor.sync_power_states(start + timedelta(minutes=4)).failed == (node.uuid,)
    report = conductor.sync_power_states(start + timedelta(minutes=6))
    assert report.maintenance_set == (node.uuid,)
    after = conductor.get_node(node.uuid)
    assert after.maintenance
    assert after.fault == POWER_FAILURE
    assert ipmi_peer.password not in (after.maintenance_reason or "")
