"""The conductor registry (docs/operator.rst): register, heartbeat, go offline, see each other.

On every store (``store``: memory, a SQLite file, the real PostgreSQL),
through the store's methods and through :class:`Conductor`, with the
injected clock deciding who is alive; two conductors on one store see each
other, and so do two processes on one SQLite file or PostgreSQL database.
``ironic-fsm conductor list`` is driven in-process on a SQLite file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from helpers import T0, Clock

import ironic_fsm
from ironic_fsm import Conductor, ConductorInfo, Config, cli
from ironic_fsm.drivers.fake import fake_hardware
from ironic_fsm.exceptions import DriverNotFound, InvalidParameterValue
from ironic_fsm.hardware import installed_hardware_types
from ironic_fsm.node import Node
from ironic_fsm.stores import ConductorRecord, ConductorRegistry, MemoryStore, SQLStore, Store

UTC = timezone.utc
INSTALLED = tuple(installed_hardware_types())


def record(holder: str = "a:1:1-aaaa", **changes: Any) -> ConductorRecord:
    base = ConductorRecord(
        holder=holder,
        hostname=holder.partition(":")[0],
        conductor_group="",
        hardware_types=("ipmi",),
        online=True,
        started_at=T0,
        updated_at=T0,
    )
    return base._replace(**changes)


def conductor(store: Store, clock: Clock, **options: Any) -> Conductor:
    options.setdefault("host", "host-a")
    return Conductor(store=store, config=Config(**options), clock=clock)


def beating(store: Store, clock: Clock, **options: Any) -> Conductor:
    """A conductor that has sent its first heartbeat: registered and alive."""
    here = conductor(store, clock, **options)
    here.heartbeat()
    return here


# -- the store's registry ---------------------------------------------------------------------


def test_store_registers_heartbeats_unregisters_and_lists(store: Store) -> None:
    assert isinstance(store, ConductorRegistry)
    assert store.list_conductors() == []
    first = record("b:1:1-bbbb", hardware_types=("ipmi", "redfish"), conductor_group="rack-2")
    second = record("a:2:1-aaaa", started_at=T0 + timedelta(microseconds=250))
    store.register_conductor(first)
    store.register_conductor(second)
    assert store.list_conductors() == [second, first]  # by hostname

    later = T0 + timedelta(seconds=10, microseconds=123456)
    assert store.conductor_heartbeat(first.holder, later) is True
    assert store.conductor_heartbeat("nobody:1:1-0000", later) is False
    beaten = first._replace(updated_at=later)
    assert store.list_conductors() == [second, beaten]

    store.unregister_conductor(second.holder, later)
    store.unregister_conductor("nobody:1:1-0000", later)  # no row: nothing
    offline = second._replace(online=False, updated_at=later)
    got = store.list_conductors()
    assert got == [offline, beaten]
    assert all(r.updated_at.utcoffset() == timedelta(0) for r in got)

    # A heartbeat brings a row back online; registering again replaces the row.
    assert store.conductor_heartbeat(second.holder, later)
    store.register_conductor(first._replace(hardware_types=(), updated_at=later))
    assert store.list_conductors()[1].hardware_types == ()
    assert len(store.list_conductors()) == 2


def test_registering_replaces_the_hosts_stopped_and_dead_rows_only(store: Store) -> None:
    assert isinstance(store, ConductorRegistry)
    stopped = record("a:1:1-0001", online=False)
    dead = record("a:2:1-0002", updated_at=T0 - timedelta(seconds=61))
    live = record("a:3:1-0003", updated_at=T0 - timedelta(seconds=59))
    elsewhere = record("b:4:1-0004", online=False)
    for row in (stopped, dead, live, elsewhere):
        store.register_conductor(row)
    restarted = record("a:5:1-0005")
    store.register_conductor(restarted, replace_before=T0 - timedelta(seconds=60))
    holders = {r.holder for r in store.list_conductors()}
    assert holders == {live.holder, elsewhere.holder, restarted.holder}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"holder": ""}, "holder"),
        ({"holder": "x" * 256}, "holder"),
        ({"hostname": "a\x00b"}, "hostname"),
        ({"conductor_group": None}, "conductor_group"),
        ({"hardware_types": ["ipmi"]}, "hardware_types"),
        ({"hardware_types": ("ipmi", 5)}, "hardware_types"),
        ({"online": 1}, "online"),
        ({"updated_at": datetime(2030, 1, 1)}, "updated_at"),  # naive
        ({"started_at": "2030-01-01"}, "started_at"),
    ],
)
def test_store_refuses_a_bad_record_and_keeps_what_it_had(
    store: Store, changes: dict[str, Any], field: str
) -> None:
    assert isinstance(store, ConductorRegistry)
    kept = record()
    store.register_conductor(kept)
    with pytest.raises(InvalidParameterValue, match=field):
        store.register_conductor(record(**changes))
    assert store.list_conductors() == [kept]


# -- a conductor in the registry --------------------------------------------------------------


def test_building_a_conductor_writes_nothing(store: Store) -> None:
    assert isinstance(store, ConductorRegistry)
    here = conductor(store, Clock())
    assert here.list_conductors() == []
    assert store.list_conductors() == []


def test_first_heartbeat_registers_the_conductor(store: Store) -> None:
    clock = Clock()
    here = conductor(store, clock, conductor_group="Rack-1")
    here.register_hardware_type("mine", fake_hardware())
    here.heartbeat()
    expected_types = tuple(sorted({*INSTALLED, "mine"}))
    assert here.list_conductors() == [
        ConductorInfo(
            hostname="host-a",
            conductor_group="rack-1",
            hardware_types=expected_types,
            alive=True,
            updated_at=T0,
        )
    ]
    assert isinstance(store, ConductorRegistry)
    (row,) = store.list_conductors()
    assert (row.holder, row.started_at, row.online) == (here.holder, T0, True)
    assert store.holders() == {here.holder: T0}  # the reservation holder's heartbeat too


def test_a_conductor_that_stops_heartbeating_is_dead_after_heartbeat_timeout(
    store: Store,
) -> None:
    clock = Clock()
    here = beating(store, clock, heartbeat_timeout=60)
    clock.advance(59.999999)
    assert [c.alive for c in here.list_conductors()] == [True]
    clock.advance(0.000001)
    (info,) = here.list_conductors()
    assert (info.alive, info.updated_at) == (False, T0)
    here.heartbeat()  # back
    (info,) = here.list_conductors()
    assert (info.alive, info.updated_at) == (True, clock.now)
    assert isinstance(store, ConductorRegistry)
    assert store.list_conductors()[0].started_at == T0  # the same conductor, not a new one


def test_unregister_is_offline_at_once_and_a_late_heartbeat_does_not_undo_it(
    store: Store,
) -> None:
    clock = Clock()
    here = beating(store, clock)
    clock.advance(1)
    here.unregister()
    (info,) = here.list_conductors()
    assert (info.alive, info.updated_at) == (False, clock.now)
    clock.advance(1)
    here.heartbeat()  # a timer that fired late
    assert [c.alive for c in here.list_conductors()] == [False]
    assert here.register().alive is True
    (info,) = here.list_conductors()
    assert (info.alive, info.updated_at) == (True, clock.now)


def test_two_conductors_on_one_store_see_each_other(store: Store) -> None:
    clock = Clock()
    other_store: Store = store
    if isinstance(store, SQLStore):
        other_store = SQLStore(store.url)  # a second connection (the test URLs hold no password)
    try:
        here = conductor(store, clock, host="host-a")
        there = conductor(other_store, clock, host="host-b", conductor_group="g2")
        here.heartbeat()
        clock.advance(30)
        there.heartbeat()
        for viewer in (here, there):
            seen = [(c.hostname, c.conductor_group, c.alive) for c in viewer.list_conductors()]
            assert seen == [("host-a", "", True), ("host-b", "g2", True)]
        clock.advance(30)  # host-a silent for 60 s: dead, host-b not
        assert [c.alive for c in there.list_conductors()] == [False, True]
        there.unregister()
        assert [c.alive for c in here.list_conductors()] == [False, False]
    finally:
        if other_store is not store:
            assert isinstance(other_store, SQLStore)
            other_store.close()


def test_two_conductors_of_one_host_both_stay_and_a_restart_replaces_the_dead(
    store: Store,
) -> None:
    clock = Clock()
    first = conductor(store, clock)
    second = conductor(store, clock)
    first.heartbeat()
    second.heartbeat()
    assert [c.alive for c in first.list_conductors()] == [True, True]
    clock.advance(61)  # first dies; second goes on
    second.heartbeat()
    conductor(store, clock).heartbeat()  # first's restart, on the same host
    assert isinstance(store, ConductorRegistry)
    holders = [r.holder for r in store.list_conductors()]
    assert first.holder not in holders
    assert second.holder in holders
    assert len(holders) == 2


def test_enabled_hardware_types_are_what_the_conductor_advertises(store: Store) -> None:
    here = conductor(store, Clock(), enabled_hardware_types=["redfish"])
    here.register_hardware_type("mine", fake_hardware())
    (info,) = [here.register()]
    assert info.hardware_types == ("mine", "redfish")
    assert here.list_conductors()[0].hardware_types == ("mine", "redfish")


def test_an_enabled_hardware_type_that_is_not_there_stops_registration(store: Store) -> None:
    here = conductor(store, Clock(), enabled_hardware_types=["ipmi", "no-such-type"])
    with pytest.raises(DriverNotFound, match="no-such-type"):
        here.heartbeat()
    assert isinstance(store, ConductorRegistry)
    assert store.list_conductors() == []


def test_a_hardware_type_registered_later_is_advertised_at_the_next_heartbeat(
    store: Store,
) -> None:
    clock = Clock()
    here = beating(store, clock)
    assert "late" not in here.list_conductors()[0].hardware_types
    here.register_hardware_type("late", fake_hardware())
    clock.advance(5)
    here.heartbeat()
    (info,) = here.list_conductors()
    assert "late" in info.hardware_types
    assert isinstance(store, ConductorRegistry)
    assert store.list_conductors()[0].started_at == T0


def test_a_row_lost_from_the_store_is_written_again_by_the_next_heartbeat(store: Store) -> None:
    clock = Clock()
    here = beating(store, clock)
    sibling = conductor(store, clock)
    clock.advance(61)  # here is late; its sibling starts and replaces it
    sibling.heartbeat()
    assert isinstance(store, ConductorRegistry)
    assert here.holder not in {r.holder for r in store.list_conductors()}
    here.heartbeat()
    assert {r.holder for r in store.list_conductors()} == {here.holder, sibling.holder}
    assert [c.alive for c in here.list_conductors()] == [True, True]


class _FirstReleaseStore:
    """A store written for the first release: no registry methods."""

    def __init__(self) -> None:
        inner = MemoryStore()
        self.create, self.get, self.list, self.save = (
            inner.create,
            inner.get,
            inner.list,
            inner.save,
        )
        self.delete, self.reserve, self.release = inner.delete, inner.reserve, inner.release
        self.heartbeat, self.holders = inner.heartbeat, inner.holders


def test_a_store_without_the_registry_lists_only_this_conductor() -> None:
    old = _FirstReleaseStore()
    assert isinstance(old, Store)
    assert not isinstance(old, ConductorRegistry)
    clock = Clock()
    here = conductor(old, clock)
    assert here.list_conductors() == []
    here.heartbeat()
    (info,) = here.list_conductors()
    assert (info.hostname, info.alive, info.updated_at) == ("host-a", True, T0)
    clock.advance(61)
    assert [c.alive for c in here.list_conductors()] == [False]
    here.heartbeat()
    here.unregister()
    assert [c.alive for c in here.list_conductors()] == [False]
    assert old.holders() == {here.holder: clock.now}


def test_conductor_info_is_frozen_and_exported() -> None:
    info = ConductorInfo(
        hostname="h", conductor_group="", hardware_types=["ipmi"], alive=True, updated_at=T0
    )
    assert info.hardware_types == ("ipmi",)
    assert ironic_fsm.ConductorInfo is ConductorInfo
    with pytest.raises(AttributeError):
        info.alive = False  # type: ignore[misc]


# -- two processes on one database ------------------------------------------------------------

_WORKER = textwrap.dedent(
    """
    import sys
    from ironic_fsm import Conductor, Config
    from ironic_fsm.stores import SQLStore

    url, host, action = sys.argv[1:4]
    with SQLStore(url) as store:
        here = Conductor(store=store, config=Config(host=host, conductor_group="far"))
        here.heartbeat()
        if action == "stop":
            here.unregister()
        print(here.holder)
    """
)


def _worker(url: str, host: str, action: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _WORKER, url, host, action],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_conductors_in_two_processes_see_each_other(sql_url: str) -> None:
    with SQLStore(sql_url) as store:
        start = datetime.now(UTC)
        clock = Clock(start)
        here = beating(store, clock, host="host-here")
        died = _worker(sql_url, "host-died", "exit")  # heartbeats once, exits without a word
        stopped = _worker(sql_url, "host-stopped", "stop")
        seen = {c.hostname: c for c in here.list_conductors()}
        assert set(seen) == {"host-here", "host-died", "host-stopped"}
        assert seen["host-died"].alive is True
        assert seen["host-died"].conductor_group == "far"
        assert seen["host-died"].hardware_types == INSTALLED
        assert seen["host-stopped"].alive is False  # at once
        assert {r.holder for r in store.list_conductors()} == {here.holder, died, stopped}
        # heartbeat_timeout later (by this process's clock), the silent one is dead.
        clock.now = seen["host-died"].updated_at + timedelta(seconds=60)
        here.heartbeat()
        alive = {c.hostname: c.alive for c in here.list_conductors()}
        assert alive == {"host-here": True, "host-died": False, "host-stopped": False}


# -- ironic-fsm conductor list ---------------------------------------------------------------


def _cli(db: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(["--db", str(db), *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def fleet_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A SQLite file with two conductors: ``alpha`` alive, ``beta`` stopped."""
    monkeypatch.delenv(cli.CONFIG_ENV, raising=False)
    db = tmp_path / "fleet.sqlite"
    with SQLStore(f"sqlite:///{db}") as store:
        now = datetime.now(UTC)
        alpha = conductor(store, Clock(now), host="alpha", enabled_hardware_types=["ipmi"])
        alpha.heartbeat()
        beta = conductor(store, Clock(now), host="beta", conductor_group="g2")
        beta.heartbeat()
        beta.unregister()
        store.create(Node(name="not-a-conductor"))
    return db


def test_cli_conductor_list_shows_hostname_group_and_alive(
    fleet_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(fleet_db, capsys, "conductor", "list", "-f", "json")
    assert (code, err) == (0, "")
    assert json.loads(out) == [
        {"hostname": "alpha", "conductor_group": "", "alive": True},
        {"hostname": "beta", "conductor_group": "g2", "alive": False},
    ]
    code, out, _ = _cli(fleet_db, capsys, "conductor", "list")
    assert code == 0
    lines = out.splitlines()
    assert [cell.strip() for cell in lines[1].strip("|").split("|")] == [
        "hostname",
        "conductor_group",
        "alive",
    ]
    assert any("alpha" in line and "True" in line for line in lines)
    assert any("beta" in line and "g2" in line and "False" in line for line in lines)


def test_cli_conductor_list_long_and_columns(
    fleet_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(fleet_db, capsys, "conductor", "list", "--long", "-f", "json")
    assert code == 0
    rows = json.loads(out)
    assert [list(row) for row in rows] == [
        ["hostname", "conductor_group", "alive", "drivers", "created_at", "updated_at"]
    ] * 2
    assert rows[0]["drivers"] == ["ipmi"]
    assert rows[1]["drivers"] == list(INSTALLED)
    assert datetime.fromisoformat(rows[0]["updated_at"]).utcoffset() == timedelta(0)
    code, out, _ = _cli(fleet_db, capsys, "conductor", "list", "-c", "hostname", "-f", "value")
    assert (code, out) == (0, "alpha\nbeta\n")
    code, out, _ = _cli(fleet_db, capsys, "conductor", "list", "--long", "-f", "csv")
    assert out.splitlines()[0] == (
        '"hostname","conductor_group","alive","drivers","created_at","updated_at"'
    )
    assert '"ipmi"' in out.splitlines()[1]
    code, _, err = _cli(fleet_db, capsys, "conductor", "list", "-c", "Drivers")
    assert code == 2
    assert "Drivers" in err


def test_cli_conductor_list_on_an_empty_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(cli.CONFIG_ENV, raising=False)
    code, out, err = _cli(tmp_path / "empty.sqlite", capsys, "conductor", "list", "-f", "json")
    assert (code, json.loads(out), err) == (0, [], "")
