"""``python -m ironic_fsm.api``: starts, says its port, stops cleanly, refuses what cannot work."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from ironic_fsm import Conductor
from ironic_fsm.stores import SQLStore


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ironic_fsm.api", *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_sigterm_stops_cleanly_and_marks_the_conductor_offline(tmp_path: Path) -> None:
    db = tmp_path / "nodes.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ironic_fsm.api", "--db", f"sqlite:///{db}", "--api",
         "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip().isdigit(), (line, proc.poll())
        response = httpx.get(f"http://127.0.0.1:{int(line)}/v1/conductors",
                             headers={"X-OpenStack-Ironic-API-Version": "1.49"})  # fmt: skip
        assert [c["alive"] for c in response.json()["conductors"]] == [True], response.text
        proc.send_signal(signal.SIGTERM)
        _, errors = proc.communicate(timeout=60)
        assert proc.returncode == 0, errors
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    store = SQLStore(f"sqlite:///{db}")
    try:
        assert [c.alive for c in Conductor(store).list_conductors()] == [False]
    finally:
        store.close()


def test_a_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _run("--db", f"sqlite:///{tmp_path / 'db'}", "--api", f"127.0.0.1:{port}")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "error:" in result.stderr


def test_bad_address_and_noauth_off_loopback_are_refused(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'db'}"
    assert _run("--db", db, "--api", "nonsense").returncode == 2
    refused = _run("--db", db, "--api", "0.0.0.0:0")
    assert refused.returncode == 2
    assert "without authentication" in refused.stderr
