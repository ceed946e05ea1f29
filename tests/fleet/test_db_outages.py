"""``serve`` through database outages: PostgreSQL restarted, SQLite's disk filled then freed.

Real processes on a real database: two ``serve`` processes run 60 nodes
from enroll to active (an asynchronous clean step, a deploy step and a
``wait`` step each), driven by a hand-off conductor playing operator and
ramdisk agent, while the database goes away under them. Every flow must
reach its target once the database is back: no node failed for the outage,
no step lost or run twice (the step log of :mod:`serve_hardware`), nothing
left reserved, and both services still running.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import fresh_postgres_url
from pgserver import PostgresServer
from serve_fleet import ServeFleet, drive, fleet_nodes, serve_fleet
from serve_hardware import STEPS, StepRuns
from tmpfs import Tmpfs, tmpfs

import ironic_fsm
from ironic_fsm import states
from ironic_fsm.exceptions import StoreError
from ironic_fsm.stores.base import reserved

#: Longer than any outage here: flows wait the database out instead of stopping.
RETRY = {"store_retry_timeout": 25, "heartbeat_timeout": 30}


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    for url in fresh_postgres_url(postgres_server):
        # PostgreSQL's default, which the test server turns off for speed: without it
        # an immediate stop loses commits it acknowledged, as no production server does.
        yield url + quote(" -csynchronous_commit=on")


def _in_flight(conductor: ironic_fsm.Conductor) -> int:
    """Nodes the services hold now (from the reservation index)."""
    return sum(1 for _, holder, _ in reserved(conductor.store) if holder != conductor.holder)


def _settled_checks(
    conductor: ironic_fsm.Conductor,
    fleet: ServeFleet,
    nodes: list[str],
    log: Path,
    *,
    strict: bool = True,
) -> list[str]:
    """What is wrong once the drive is over (empty: nothing), given up to 10 s more: a last
    takeover pass may still be releasing nodes, so it gets a few heartbeats (operator rounds).

    ``strict``: no step may have run twice (else :func:`_rerun_problems` judges).
    """

    def problems() -> list[str]:
        wrong: list[str] = []
        for node in conductor.list_nodes():
            if node.provision_state != states.ACTIVE or node.last_error or node.maintenance:
                wrong.append(f"{node.uuid} {node.provision_state} {node.last_error!r}")
            if node.reservation is not None:
                wrong.append(f"{node.uuid} left reserved by {node.reservation}")
        if strict:
            wrong += StepRuns(log).problems(nodes)  # lost, or run twice
        procs = fleet.procs
        wrong += [f"serve {p.pid} exited {p.returncode}" for p in procs if p.poll() is not None]
        return wrong

    deadline = time.monotonic() + 10
    while (wrong := problems()) and time.monotonic() < deadline:
        _operator_round(conductor)
        time.sleep(0.2)
    return wrong


def _errors(fleet: ServeFleet) -> str:
    """Everything the services wrote to stderr so far."""
    return "\n".join(fleet.stderr(p) for p in fleet.procs)


def _operator_round(conductor: ironic_fsm.Conductor) -> None:
    """The operator's conductor takes back what its own refused requests left reserved."""
    with contextlib.suppress(StoreError):  # still away: next round
        conductor.recover()


def _empty_wal(conductor: ironic_fsm.Conductor) -> None:
    """Checkpoint the WAL down to nothing: then a full disk stops every write.

    (A WAL already grown is rewritten in place after a checkpoint, needing
    no new space, and a full disk would go unnoticed for a while.)
    """
    with conductor.store.connection() as conn:  # type: ignore[attr-defined]
        for _ in range(50):
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                return
            time.sleep(0.02)


class _DiskFilledMidFlow:
    """A drive's ``during``: fills the small disk once ``in_flight`` nodes are held (mid-step:
    the fill must cut flows), and frees it once ``felt()`` has said for 3 s that the services
    met it, or after 15 s."""

    def __init__(
        self, conductor: ironic_fsm.Conductor, disk: Tmpfs, in_flight: int, felt: Callable[[], bool]
    ) -> None:
        self._conductor, self._disk, self._in_flight, self._felt = conductor, disk, in_flight, felt
        self.filled_at: float | None = None
        self.freed = False

    def __call__(self, seen: dict[str, str]) -> None:
        _operator_round(self._conductor)
        if self.filled_at is None:
            if _in_flight(self._conductor) >= self._in_flight:
                _empty_wal(self._conductor)
                self._disk.fill()
                self.filled_at = time.monotonic()
        elif not self.freed:
            waited = time.monotonic() - self.filled_at
            if (self._felt() and waited > 3) or waited > 15:
                self._disk.free()
                self.freed = True


def test_postgres_restarted_three_times_under_two_services(
    postgres_server: PostgresServer, pg_url: str, tmp_path: Path
) -> None:
    conductor, nodes, log = fleet_nodes(pg_url, tmp_path, 60, step_seconds=0.1)
    plan = ["fast", "immediate", "fast"]
    done: list[tuple[str, int]] = []  # each restart: its mode, nodes held at that moment

    with serve_fleet(pg_url, tmp_path, config=RETRY) as fleet:
        fleet.start_many(conductor, 2)

        def restart_mid_flow(seen: dict[str, str]) -> None:
            _operator_round(conductor)
            if not plan:
                return
            active = sum(state == states.ACTIVE for state in seen.values())
            if active < 15 * len(done):  # spread over the run
                return
            held = _in_flight(conductor)
            if held < 2:
                return  # wait for flows in progress: the restart must cut them
            mode = plan.pop(0)
            postgres_server.pause(mode)
            postgres_server.resume()
            done.append((mode, held))

        seen = drive(conductor, nodes, timeout=150, during=restart_mid_flow)
        wrong = _settled_checks(conductor, fleet, nodes, log)
        errors = _errors(fleet)
    assert [mode for mode, _ in done] == ["fast", "immediate", "fast"], seen
    assert wrong == [], "\n".join(wrong)
    assert "retrying its save" in errors  # flows met the outages, and waited them out
    print(f"restarts {done}; {len(StepRuns(log).pids())} services ran steps")
    conductor.store.close()


def test_sqlite_disk_full_then_freed_under_two_services(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", size="24m") as disk:
        url = f"sqlite:///{disk.path / 'nodes.sqlite'}"
        conductor, nodes, log = fleet_nodes(url, tmp_path, 20, step_seconds=0.1)
        with serve_fleet(url, tmp_path, config=RETRY) as fleet:
            fleet.start_many(conductor, 2)

            def felt() -> bool:
                return "database or disk is full" in _errors(fleet)

            outage = _DiskFilledMidFlow(conductor, disk, 2, felt)
            drive(conductor, nodes, timeout=120, during=outage)
            wrong = _settled_checks(conductor, fleet, nodes, log)
            errors = _errors(fleet)
        assert outage.freed
        assert wrong == [], "\n".join(wrong)
        assert "database or disk is full" in errors
        with conductor.store.connection() as conn:  # type: ignore[attr-defined]
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conductor.store.close()


#: Shorter than the outage: flows stop at their last recorded step and are taken back.
GIVE_UP = {"store_retry_timeout": 1}
#: What a service logs when a flow (or its final save) gives up: the node it leaves reserved.
_STALLED = re.compile(r"Node (\S+): the store is unavailable .*the flow stops at its last")


def _rerun_problems(log: Path, nodes: list[str], stalled: set[str]) -> list[str]:
    """Steps lost, or run again where no flow stopped (a stopped one reruns one step at most).

    A flow that stopped may have finished its step without recording it:
    that step, and only that one, runs again when the flow is taken back.
    """
    runs = StepRuns(log).runs
    wrong = []
    for node in nodes:
        repeated = [step for step in STEPS if len(runs.get((node, step), [])) > 1]
        wrong += [f"{node} {s}: lost" for s in STEPS if not any(d for _, d in runs[(node, s)])]
        if repeated and (node not in stalled or len(repeated) > 1):
            how = "stopped" if node in stalled else "never stopped"
            wrong.append(f"{node}: {repeated} ran again ({how})")
    return wrong


def test_flows_that_outlast_their_retries_are_taken_back_by_their_own_service(
    tmp_path: Path,
) -> None:
    with tmpfs(tmp_path / "disk", size="24m") as disk:
        url = f"sqlite:///{disk.path / 'nodes.sqlite'}"
        conductor, nodes, log = fleet_nodes(url, tmp_path, 16, step_seconds=0.3)
        with serve_fleet(url, tmp_path, config=GIVE_UP) as fleet:
            fleet.start_many(conductor, 2)

            def stopped() -> bool:
                return _STALLED.search(_errors(fleet)) is not None

            outage = _DiskFilledMidFlow(conductor, disk, 4, stopped)
            drive(conductor, nodes, timeout=120, during=outage)
            wrong = _settled_checks(conductor, fleet, nodes, log, strict=False)
            text = _errors(fleet)
        stalled = set(_STALLED.findall(text))
        assert stalled, "no flow stopped: the outage did not outlast the retries"
        assert wrong == [], "\n".join(wrong)
        assert _rerun_problems(log, nodes, stalled) == []
        assert "no flow of its runs it" in text  # taken back by the service that held it
        conductor.store.close()
