"""``ironic-fsm serve`` as a fleet: real processes, real signals, one real database.

Each test starts ``serve`` processes (``tests/serve_worker.py``: the real
command plus the ``serve-test`` hardware type) and drives nodes from
enroll to active through a hand-off conductor, playing the operator and
the ramdisk agent. Every step logs its runs by process
(``serve_hardware``): the counts show that no step recorded complete ran
twice and none was lost.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import fresh_postgres_url
from pgserver import PostgresServer
from serve_fleet import CONFIG, drive, fleet_nodes, operator, serve_fleet, wait_for
from serve_hardware import StepRuns

import ironic_fsm
from ironic_fsm import states
from ironic_fsm.stores import SQLStore
from ironic_fsm.stores.base import reserved


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    yield from fresh_postgres_url(postgres_server)


def _held_by(conductor: ironic_fsm.Conductor, pid: int) -> list[str]:
    """The nodes process ``pid`` holds (from the reservation index: cheap to poll)."""
    return [uuid for uuid, holder, _ in reserved(conductor.store) if f":{pid}:" in holder]


def _frozen_holding(
    conductor: ironic_fsm.Conductor, proc: subprocess.Popen[bytes], within: float = 5
) -> bool:
    """Freeze ``proc`` (SIGSTOP) at a moment it holds a node, mid-flow; whether it did in time.

    Frozen, it cannot release the node between the look and the signal
    that follows (SIGKILL acts at once; SIGTERM waits for the SIGCONT).
    """
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        proc.send_signal(signal.SIGSTOP)
        if _held_by(conductor, proc.pid):
            return True
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.01)
    return False


def _taken_over(node: ironic_fsm.Node, state_at_kill: str, pid: int) -> bool:
    """A survivor holds the node, or has moved it on since the kill."""
    if node.reservation is not None:
        return f":{pid}:" not in node.reservation
    return node.provision_state != state_at_kill


def _histories(conductor: ironic_fsm.Conductor, problems: list[str]) -> str:
    """What the conductors recorded about the nodes with a problem (for the failure message)."""
    lines = list(problems)
    for uuid in dict.fromkeys(problem.split()[0] for problem in problems):
        lines += [
            f"{e.created_at} {e.conductor} {e.event}" for e in conductor.get_node_history(uuid)
        ]
    return "\n".join(lines)


def _count(seen: dict[str, str], state: str) -> int:
    return sum(v == state for v in seen.values())


def test_sigkill_one_of_three_on_postgres_300_nodes(pg_url: str, tmp_path: Path) -> None:
    conductor, nodes, log = fleet_nodes(pg_url, tmp_path, 300, step_seconds=0.03)
    kill: dict[str, float] = {}
    held: dict[str, str] = {}  # the victim's nodes at the kill, and their state then
    # Three hosts: the dead one is known by its heartbeat alone, as across machines.
    with serve_fleet(pg_url, tmp_path, hosts=True) as fleet:
        fleet.start_many(conductor, 3)
        victim = fleet.procs[0]

        def kill_mid_flow(seen: dict[str, str]) -> None:
            if not kill:
                # Once a fifth are past cleaning, kill while it holds nodes (mid-step).
                if _count(seen, states.ACTIVE) + _count(seen, states.AVAILABLE) < 60:
                    return
                if _frozen_holding(conductor, victim):
                    victim.send_signal(signal.SIGKILL)
                    kill["at"] = time.monotonic()
                    victim.wait()
                    for uuid in _held_by(conductor, victim.pid):
                        held[uuid] = conductor.get_node(uuid).provision_state
            elif "took" not in kill and all(
                _taken_over(conductor.get_node(uuid), state, victim.pid)
                for uuid, state in held.items()
            ):
                kill["took"] = time.monotonic() - kill["at"]

        seen = drive(conductor, nodes, timeout=75, during=kill_mid_flow)
    assert kill, "the victim never held a node past the first fifth"
    assert {v for v in seen.values()} == {states.ACTIVE}, seen
    limit = CONFIG["heartbeat_timeout"] + CONFIG["heartbeat_interval"]
    assert kill["took"] <= limit + 1.0  # one second for the survivors' own work
    runs = StepRuns(log)
    dead = frozenset({victim.pid})
    problems = runs.problems(nodes, killed=dead)
    assert problems == [], _histories(conductor, problems)
    finished, repeated = runs.count(killed=dead)
    assert finished >= 3 * len(nodes)
    assert repeated <= len(held)  # only steps the dead process left unrecorded
    print(
        f"killed holding {len(held)} nodes; taken over in {kill['took']:.2f} s; "
        f"{finished} step runs finished, {repeated} repeated after the kill"
    )
    assert all(n.reservation is None for n in conductor.list_nodes())
    conductor.store.close()


def test_sigterm_one_of_three_drains_and_goes_offline(pg_url: str, tmp_path: Path) -> None:
    conductor, nodes, log = fleet_nodes(pg_url, tmp_path, 60, step_seconds=0.05)
    stopped: dict[str, object] = {}
    holding: dict[str, list[str]] = {}
    with serve_fleet(pg_url, tmp_path) as fleet:
        fleet.start_many(conductor, 3)
        victim = fleet.procs[0]

        def terminate(seen: dict[str, str]) -> None:
            if stopped or not _frozen_holding(conductor, victim, within=0.5):
                return
            holding["at_signal"] = _held_by(conductor, victim.pid)
            victim.send_signal(signal.SIGTERM)
            victim.send_signal(signal.SIGCONT)
            stopped["code"] = victim.wait(timeout=30)
            # Offline at once: not after heartbeat_timeout.
            stopped["alive"] = fleet.alive(conductor)
            stopped["held"] = _held_by(conductor, victim.pid)

        seen = drive(conductor, nodes, timeout=60, during=terminate)
        err = fleet.stderr(victim)
    assert stopped == {"code": 0, "alive": 2, "held": []}, err
    assert "drained and offline" in err
    assert {v for v in seen.values()} == {states.ACTIVE}, seen
    runs = StepRuns(log)
    assert runs.problems(nodes) == []  # no kill: every step ran exactly once
    # It drained with work in hand: nodes it held when signalled, all handed on (held: []).
    # Whether it had finished a step by then is timing (a node is held from the flow's
    # first save, which now also reserves it), so that is not asserted.
    assert holding["at_signal"], "the victim held nothing when signalled"
    conductor.store.close()


def test_a_fourth_process_joins_and_takes_a_share(pg_url: str, tmp_path: Path) -> None:
    conductor, nodes, log = fleet_nodes(pg_url, tmp_path, 120, step_seconds=0.05)
    with serve_fleet(pg_url, tmp_path) as fleet:
        fleet.start_many(conductor, 3)
        joined: list[subprocess.Popen[bytes]] = []

        def join(seen: dict[str, str]) -> None:
            # Early in the run: most cleaning and deploying is still to come.
            if not joined and len(seen) - _count(seen, states.ENROLL) >= 10:
                joined.append(fleet.start())

        seen = drive(conductor, nodes, timeout=60, during=join)
    assert {v for v in seen.values()} == {states.ACTIVE}, seen
    runs = StepRuns(log)
    assert runs.problems(nodes) == []
    assert joined
    assert joined[0].pid in runs.pids()  # the newcomer did part of the work
    conductor.store.close()


def test_queued_work_wakes_a_postgres_service_at_once(pg_url: str, tmp_path: Path) -> None:
    conductor, [node], _ = fleet_nodes(pg_url, tmp_path, 1, step_seconds=0)
    with serve_fleet(pg_url, tmp_path, poll=60) as fleet:  # the poll alone would take a minute
        fleet.start_many(conductor, 1)
        time.sleep(0.5)  # past the claim the service makes when it starts listening
        started = time.monotonic()
        conductor.do_provisioning_action(node, "manage")
        wait_for(lambda: conductor.get_node(node).provision_state == states.MANAGEABLE, 5, "manage")
    assert time.monotonic() - started < 2
    conductor.store.close()


def test_two_processes_on_one_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.sqlite'}"
    conductor, nodes, log = fleet_nodes(url, tmp_path, 60, step_seconds=0.05)
    killed: list[int] = []
    with serve_fleet(url, tmp_path) as fleet:
        fleet.start_many(conductor, 2)
        victim = fleet.procs[0]

        def kill(seen: dict[str, str]) -> None:
            past_cleaning = _count(seen, states.AVAILABLE) + _count(seen, states.ACTIVE)
            if not killed and past_cleaning >= 5 and _frozen_holding(conductor, victim):
                victim.send_signal(signal.SIGKILL)
                victim.wait()
                killed.append(victim.pid)

        seen = drive(conductor, nodes, timeout=60, during=kill)
    assert killed
    assert {v for v in seen.values()} == {states.ACTIVE}, seen
    assert StepRuns(log).problems(nodes, killed=frozenset(killed)) == []
    conductor.store.close()


@pytest.mark.parametrize("how", ["second SIGTERM", "graceful_shutdown_timeout"])
def test_a_forced_stop_exits_at_once_and_loses_nothing(tmp_path: Path, how: str) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.sqlite'}"
    conductor, [node], log = fleet_nodes(url, tmp_path, 1, step_seconds=1.5)
    with serve_fleet(url, tmp_path) as fleet:
        timeout = ["--graceful-shutdown-timeout", "0.5"] if how != "second SIGTERM" else []
        first = fleet.start(*timeout)
        fleet.wait_alive(conductor, 1)
        conductor.do_provisioning_action(node, "manage")
        wait_for(
            lambda: conductor.get_node(node).provision_state == states.MANAGEABLE, 20, "manage"
        )
        conductor.do_provisioning_action(node, "provide")
        wait_for(lambda: "record_clean start" in log.read_text() if log.exists() else False, 20,
                 "the first clean step")  # fmt: skip
        started = time.monotonic()
        first.send_signal(signal.SIGTERM)  # drains: the 1.5 s step would finish first
        if how == "second SIGTERM":
            time.sleep(0.3)
            first.send_signal(signal.SIGTERM)
        code = first.wait(timeout=10)
        assert (code, time.monotonic() - started < 2) == (3, True), fleet.stderr(first)
        assert _held_by(conductor, first.pid) == [node]  # left for a survivor
        fleet.start()
        seen = drive(conductor, [node], timeout=30)
    assert seen == {node: states.ACTIVE}
    runs = StepRuns(log)
    assert runs.problems([node], killed=frozenset({first.pid})) == []
    assert runs.runs[(node, "record_clean")][0][0] == first.pid  # killed inside it
    conductor.store.close()


def test_json_logs_parse(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'fleet.sqlite'}"
    conductor = operator(url)
    with serve_fleet(url, tmp_path) as fleet:
        proc = fleet.start("--log-format", "json")
        fleet.wait_alive(conductor, 1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        lines = fleet.stderr(proc).splitlines()
    records = [json.loads(line) for line in lines]
    messages = [r["message"] for r in records]
    assert any(m.endswith("drained and offline") for m in messages), messages
    assert all({"asctime", "levelname", "name", "message"} <= set(r) for r in records)
    conductor.store.close()


def test_cli_verbs_hand_work_to_a_live_service(tmp_path: Path) -> None:
    db = tmp_path / "fleet.sqlite"
    cli = [sys.executable, "-m", "ironic_fsm.cli", "--db", str(db)]
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"config": CONFIG}))
    conductor = ironic_fsm.Conductor(store=SQLStore(f"sqlite:///{db}"))
    uuid = conductor.create_node(driver="fake-hardware").uuid
    serve = subprocess.Popen(
        [*cli, "serve", "--config", str(config), "--poll-interval", "0.1"],
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: any(i.alive for i in conductor.list_conductors()), 20, "the service")
        done = subprocess.run([*cli, "node", "manage", uuid], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "is in 'verifying': a conductor service is working on it" in done.stdout
        wait_for(
            lambda: conductor.get_node(uuid).provision_state == states.MANAGEABLE, 20, "manage"
        )
        done = subprocess.run(
            [*cli, "node", "provide", uuid, "--wait", "30"], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert "is now in provision state 'available'" in done.stdout
    finally:
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=30) == 0
    node = conductor.get_node(uuid)
    assert (node.provision_state, node.reservation) == (states.AVAILABLE, None)
    conductor.store.close()


def _serve_with_api(db: Path, *api: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ironic_fsm.cli", "--db", str(db), "serve", "--api", *api],
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serve_api_starts_after_the_conductor_and_stops_with_it(tmp_path: Path) -> None:
    serve = _serve_with_api(tmp_path / "nodes.sqlite", "127.0.0.1:0")
    try:
        assert serve.stderr is not None
        port = None
        for line in serve.stderr:
            found = re.search(r"REST API on 127\.0\.0\.1 port (\d+) \(noauth\)", line)
            if found:
                port = int(found.group(1))
                break
        assert port is not None
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/conductors",
            headers={"X-OpenStack-Ironic-API-Version": "latest"},  # conductors: 1.49
        )
        with urllib.request.urlopen(request) as response:
            body = json.load(response)
        [conductor] = body["conductors"]
        assert conductor["alive"] is True
    finally:
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=30) == 0
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1", timeout=2)


def test_serve_api_on_a_taken_port_fails_and_leaves_no_live_conductor(tmp_path: Path) -> None:
    db = tmp_path / "nodes.sqlite"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        serve = _serve_with_api(db, f"127.0.0.1:{taken.getsockname()[1]}")
        _, err = serve.communicate(timeout=30)
    assert serve.returncode == 1, err
    assert "error: " in err
    conductor = ironic_fsm.Conductor(store=SQLStore(f"sqlite:///{db}"))
    assert [info.alive for info in conductor.list_conductors()] == [False]
    conductor.store.close()
