"""Crash recovery with a real crash: SIGKILL inside a step, then recover() on the same file."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ironic_fsm import states
from ironic_fsm.stores import SQLStore

sys.path.insert(0, str(Path(__file__).parents[1]))  # tests/: crash_worker
import crash_worker


@pytest.fixture
def crashed(tmp_path: Path) -> tuple[str, str, Path]:
    """A node whose manual clean was killed inside step c; returns (url, uuid, log)."""
    url = f"sqlite:///{tmp_path / 'crash.sqlite'}"
    log = tmp_path / "steps.log"
    flag = tmp_path / "hang"
    flag.touch()
    node = crash_worker.conductor(url).create_node(
        name="victim",
        driver="crash-hardware",
        provision_state=states.MANAGEABLE,
        driver_info={"log_path": str(log), "hang_flag": str(flag)},
    )
    proc = subprocess.Popen(
        [sys.executable, crash_worker.__file__, url, node.uuid],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "READY"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    flag.unlink()
    return url, node.uuid, log


def test_killed_process_leaves_node_reserved_in_its_step(crashed: tuple[str, str, Path]) -> None:
    url, uuid, log = crashed
    node = SQLStore(url).get(uuid)
    assert node.provision_state == states.CLEANING
    assert node.target_provision_state == states.MANAGEABLE
    assert node.reservation is not None
    assert node.clean_step is not None
    assert node.clean_step["step"] == "c"
    assert log.read_text().split("\n")[:-1] == ["start a", "end a", "start b", "end b", "start c"]


def test_recover_resumes_at_the_interrupted_step(crashed: tuple[str, str, Path]) -> None:
    url, uuid, log = crashed
    conductor = crash_worker.conductor(url)
    assert conductor.recover() == [uuid]
    node = conductor.get_node(uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.target_provision_state is None
    assert node.reservation is None
    assert node.last_error is None
    lines = log.read_text().split("\n")[:-1]
    # a and b are not run again; c re-runs from the start (steps are idempotent).
    assert lines == ["start a", "end a", "start b", "end b", "start c", "start c", "end c",
                     "start d", "end d"]  # fmt: skip


def test_recover_leaves_live_holders_alone(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'live.sqlite'}"
    conductor = crash_worker.conductor(url)
    node = conductor.create_node(driver="crash-hardware", provision_state=states.MANAGEABLE)
    other = crash_worker.conductor(url)
    other.store.reserve(node.uuid, other.holder)  # this process: alive
    assert conductor.recover() == []
    assert conductor.get_node(node.uuid).reservation == other.holder


def test_recover_takes_over_expired_remote_holder(tmp_path: Path) -> None:
    from datetime import timedelta

    url = f"sqlite:///{tmp_path / 'remote.sqlite'}"
    conductor = crash_worker.conductor(url)
    node = conductor.create_node(driver="crash-hardware", provision_state=states.MANAGEABLE)
    remote = "elsewhere.example:4242:abcd"
    conductor.store.reserve(node.uuid, remote)
    beat = conductor.get_node(node.uuid).updated_at
    assert beat is not None
    conductor.store.heartbeat(remote, beat)
    assert conductor.recover() == []  # heartbeat fresh: alive
    conductor.store.heartbeat(remote, beat - timedelta(seconds=3600))
    assert conductor.recover() == [node.uuid]
    recovered = conductor.get_node(node.uuid)
    assert recovered.reservation is None
    assert recovered.provision_state == states.MANAGEABLE
