"""A flow whose node was taken over while its save waited out an outage stops quietly.

Conductor A's flow cannot save: the database is away (PostgreSQL stopped on
its port, or the SQLite file locked by another writer), and A retries for up
to ``store_retry_timeout``. A looked dead to conductor B for longer than
``heartbeat_timeout``, and B took the node over. When A's retried save
reaches the database, it must find the node B's and stop: no reservation set
back to A, no failure of the node, no step run by A, nothing logged as an
error; B finishes the flow, every step once.

Deterministic: A's flow stops in its preparation (after the save that
records its plan, before the save that records its first step) until the
test lets it go, which it does only once B holds the node and the database
is away; B's one flow thread is held by the test until A's flow has ended.
Real stores, real conductors, the crash test's logging steps.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from urllib.parse import quote

import crash_worker
import pytest
from conftest import fresh_postgres_url
from helpers import once_back
from pgserver import PostgresServer

import ironic_fsm
from ironic_fsm import states
from ironic_fsm.drivers.fake import FakeDeploy
from ironic_fsm.stores import SQLStore
from ironic_fsm.task import Task

STEPS = [{"interface": "vendor", "step": name, "args": {}} for name in crash_worker.STEPS]


def _until(check: Callable[[], object], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {check}"
        time.sleep(0.05)


def _prepare_cleaning(task: Task) -> None:
    """Log the preparation; wait while the flag file exists (only the first one waits)."""
    with open(task.node.driver_info["log_path"], "a", encoding="utf-8") as log:
        log.write("prepare\n")
    flag = Path(task.node.driver_info["hang_flag"])
    while flag.exists():  # test code: the test removes it
        time.sleep(0.05)


class _WaitingDeploy(FakeDeploy):
    """fake's deploy interface, its clean preparation held by the test (see above)."""

    def prepare_cleaning(self, task: Task) -> str | None:
        _prepare_cleaning(task)
        return None


def _hardware() -> ironic_fsm.HardwareType:
    kinds = {kind: iface for kind, iface in crash_worker.crash_hardware().interfaces()}
    kinds["deploy"] = _WaitingDeploy()
    return ironic_fsm.HardwareType(**kinds)  # type: ignore[arg-type]


def _conductor(url: str, host: str, executor: ThreadPoolExecutor) -> ironic_fsm.Conductor:
    conductor = ironic_fsm.Conductor(
        store=SQLStore(url, pool_timeout=1.0, sqlite_busy_timeout=0.2),
        config=ironic_fsm.Config(host=host, heartbeat_timeout=1, store_retry_timeout=120),
        executor=executor,
    )
    conductor.register_hardware_type("crash-hardware", _hardware())
    return conductor


@contextmanager
def _sqlite_locked(path: Path) -> Iterator[None]:
    """Another writer holds the file's write lock: every save of the store is busy."""
    lock = sqlite3.connect(path, isolation_level=None)
    try:
        lock.execute("BEGIN EXCLUSIVE")
        yield
        lock.execute("ROLLBACK")
    finally:
        lock.close()


@contextmanager
def _postgres_stopped(server: PostgresServer) -> Iterator[None]:
    server.pause("fast")
    try:
        yield
    finally:
        server.resume()


@pytest.fixture(params=["sqlite", "postgres"])
def outage(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[str, Callable[[], AbstractContextManager[None]]]]:
    """A database URL, and how to take that database away from every store for a while."""
    if request.param == "sqlite":
        path = tmp_path / "nodes.sqlite"
        yield f"sqlite:///{path}", lambda: _sqlite_locked(path)
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    for url in fresh_postgres_url(server):
        yield url + quote(" -csynchronous_commit=on"), lambda: _postgres_stopped(server)


def test_a_retried_save_finds_its_node_taken_over_and_stops_quietly(
    outage: tuple[str, Callable[[], AbstractContextManager[None]]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, away = outage
    log, flag = tmp_path / "steps.log", tmp_path / "hang"
    flag.touch()
    gate_b = threading.Event()
    with ThreadPoolExecutor(1) as exec_a, ThreadPoolExecutor(1) as exec_b:
        exec_b.submit(gate_b.wait)  # B's only flow thread, held
        a = _conductor(url, "cond-a", exec_a)
        b = _conductor(url, "cond-b", exec_b)
        try:
            node = a.create_node(
                driver="crash-hardware",
                provision_state=states.MANAGEABLE,
                driver_info={"log_path": str(log), "hang_flag": str(flag)},
            )
            a.do_provisioning_action(node.uuid, "clean", clean_steps=STEPS)
            _until(lambda: log.exists())  # A's plan is saved, its preparation waits
            # A shows no sign of life for heartbeat_timeout: B takes the node over.
            _until(lambda: b.recover() == [node.uuid])
            taken = b.get_node(node.uuid)
            assert taken.reservation == b.holder
            assert taken.provision_state == states.CLEANING
            with caplog.at_level(logging.INFO, logger="ironic_fsm"):
                with away():
                    flag.unlink()  # A's preparation ends; the save of its first step cannot
                    _until(lambda: "retrying its save" in caplog.text)
                _until(lambda: a.running() == 0)  # A's retried save found the node B's
                assert "taken over by another conductor" in caplog.text
                errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
                assert errors == [], [r.getMessage() for r in errors]
                after = once_back(lambda: b.get_node(node.uuid))
                assert isinstance(after, ironic_fsm.Node)
                assert after.reservation == b.holder  # never set back to A
                assert after.provision_state == states.CLEANING
                assert after.last_error is None
                assert log.read_text() == "prepare\n"  # A ran no step
                gate_b.set()  # B's flow goes on from what the record says
                _until(lambda: b.get_node(node.uuid).provision_state == states.MANAGEABLE)
                _until(lambda: b.running() == 0)
        finally:
            flag.unlink(missing_ok=True)
            gate_b.set()
    done = b.get_node(node.uuid)
    assert done.reservation is None
    assert done.last_error is None
    assert not done.maintenance
    # B prepares again (A's preparation was never recorded as done), then every step once.
    assert log.read_text().split("\n")[:-1] == [
        "prepare", "prepare",
        "start a", "end a", "start b", "end b", "start c", "end c", "start d", "end d",
    ]  # fmt: skip
    history = [entry.event for entry in b.get_node_history(node.uuid)]
    assert any("took node" in event and "cond-a" in event for event in history), history
    a.store.close()
    b.store.close()
