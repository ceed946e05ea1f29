"""The project's fake IPMI BMC: pyghmi's server, fixed and extended for tests.

pyghmi ships a BMC server (``pyghmi.ipmi.bmc.Bmc``), but as it stands the
pyghmi client cannot log in to it, and it cannot be told to misbehave
(``reference/bmc-peers.md``). :class:`PeerBmc` subclasses it and adds what
a driver test needs:

* the server session refuses the client's first proposal (cipher suite 17,
  SHA-256) with RMCP+ status 0x11, so the client falls back to suite 3,
  which is the only suite the server implements;
* every Open Session request gets a fresh session object (the stock server
  reuses the previous one for the same client address, which costs the
  client a retry);
* an unknown user gets RAKP2 status 0x0d ("Unauthorized name"), as real
  BMCs answer, instead of silence that makes pyghmi loop forever;
* the boot device keeps its persistent and UEFI flags, and a one-time
  override is used up by the next boot, as the IPMI spec says;
* power state, boot device, identify and the reset counters live in
  memory and are written to ``bmc<i>.state.json`` on every change;
* faults are read from ``bmc<i>.faults.json`` before each request:
  ``{"silent": true}`` drops every packet, ``{"completion_code": 0xC0}``
  answers power commands with that code, ``{"power_delay": seconds}``
  applies power changes late, ``{"reset_downtime": seconds}`` sets how long
  the BMC is deaf after a reset (default 0.5 s), ``{"reset_code": 0xC1}``
  refuses resets with that completion code, ``{"reset_no_reply": true}``
  resets without answering first (as some real BMCs do).

**One BMC per process.** ``--count N`` serves N BMCs from one process,
but pyghmi's server routes packets to sessions by the client's address
only, not by which BMC socket they reached: a client that talks to two
BMCs of one process at once has its sessions mixed up. :func:`start_bmcs`
therefore starts one process per BMC, like real hardware; keep it so.

Run it as a child process; it binds 127.0.0.1 on kernel-chosen ports and
prints ``READY <port>`` once per BMC, then serves until SIGTERM::

    python -m ironic_fsm.testing.ipmi_bmc --user admin --password PW --state-dir DIR [--count N]

Tests use :func:`start_bmc` (or :func:`start_bmcs`), which starts the
process, waits for READY with a bound, and stops it by PID. The server
itself is :mod:`ironic_fsm.testing._ipmi_server`.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from ironic_fsm.testing._child import LocalPeer, stop_child
from ironic_fsm.testing._ipmi_server import (
    CC_INVALID_COMMAND,
    CC_INVALID_DATA,
    CC_NOT_IN_PRESENT_STATE,
    CC_OK,
    CC_PARAM_NOT_SUPPORTED,
    DEFAULT_RESET_DOWNTIME,
    RMCP_NO_CIPHER_SUITE_MATCH,
    RMCP_UNAUTHORIZED_NAME,
    _write_json,
    faults_path,
    main,
    state_path,
)

__all__ = [
    "BMC",
    "CC_INVALID_COMMAND",
    "CC_INVALID_DATA",
    "CC_NOT_IN_PRESENT_STATE",
    "CC_OK",
    "CC_PARAM_NOT_SUPPORTED",
    "DEFAULT_RESET_DOWNTIME",
    "READY_TIMEOUT",
    "RMCP_NO_CIPHER_SUITE_MATCH",
    "RMCP_UNAUTHORIZED_NAME",
    "PeerProcess",
    "faults_path",
    "main",
    "start_bmc",
    "start_bmcs",
    "state_path",
]

READY_TIMEOUT = 10.0
#: The server, run as a script: it imports nothing of ironic_fsm.
_SERVER = Path(__file__).resolve().with_name("_ipmi_server.py")


class PeerProcess:
    """One child process serving one or more BMCs; stopped by PID."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.proc = proc
        self.log = log

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited within 5 s."""
        try:
            stop_child(self.proc)
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()


@attrs.define(eq=False, repr=False)
class BMC(LocalPeer):
    """A handle on one running peer BMC: where it listens, its state and faults."""

    process: PeerProcess
    index: int
    state_dir: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def state(self) -> dict[str, Any]:
        """What the BMC currently holds (power, boot device, counters, ...)."""
        data: dict[str, Any] = json.loads(state_path(self.state_dir, self.index).read_text())
        return data

    def set_faults(self, faults: dict[str, Any]) -> None:
        """Replace the injected faults; the BMC reads them before its next request."""
        _write_json(faults_path(self.state_dir, self.index), faults)

    def clear_faults(self) -> None:
        self.set_faults({})

    def wait_state(self, predicate: Any, timeout: float = 5.0) -> dict[str, Any]:
        """Poll the state file until ``predicate(state)`` holds."""
        deadline = time.monotonic() + timeout
        while True:
            current = self.state()
            if predicate(current) or time.monotonic() > deadline:
                return current
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop the process serving this BMC (and its siblings)."""
        self.process.stop()


def _read_ready(proc: subprocess.Popen[bytes], count: int, timeout: float) -> Iterator[int]:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    buffer = b""
    found = 0
    while found < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"IPMI peer did not print READY within {timeout} s")
        readable, _, _ = select.select([fd], [], [], remaining)
        if not readable:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            raise RuntimeError(f"IPMI peer exited with {proc.wait()} before READY")
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.startswith(b"READY "):
                found += 1
                yield int(line.split()[1])


def _spawn_peer(state_dir: Path, user: str, password: str, count: int) -> PeerProcess:
    log = state_dir / "peer.log"
    with log.open("wb") as errors:
        proc = subprocess.Popen(
            [sys.executable, str(_SERVER), "--user", user,
             "--password", password, "--state-dir", str(state_dir), "--count", str(count)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errors,
        )  # fmt: skip
    return PeerProcess(proc, log)


def start_bmcs(
    tmp_path: Path, count: int, *, user: str = "admin", password: str | None = None
) -> list[BMC]:
    """Start ``count`` BMCs, one child process each; stop each with its ``.stop()``.

    One process per BMC, like real hardware: pyghmi's server routes sessions
    by the client's address only, so one process serving several BMCs mixes
    up a client that talks to two of them at once.

    Each call gets a unique password unless one is given: pyghmi caches
    sessions per (host, user, password, port) for the whole process, and the
    kernel may hand a dead peer's port to a new one.
    """
    password = password if password is not None else f"pw-{secrets.token_hex(6)}"
    started: list[tuple[PeerProcess, Path]] = []
    try:
        for _ in range(count):
            state_dir = Path(tmp_path).resolve() / f"ipmi-peer-{secrets.token_hex(3)}"
            state_dir.mkdir(parents=True)
            started.append((_spawn_peer(state_dir, user, password, 1), state_dir))
        bmcs = []
        for process, state_dir in started:
            (port,) = _read_ready(process.proc, 1, READY_TIMEOUT)
            bmcs.append(BMC(port, user, password, process=process, index=0, state_dir=state_dir))
        return bmcs
    except BaseException:
        for process, _ in started:
            process.stop()
        raise


def start_bmc(tmp_path: Path, *, user: str = "admin", password: str | None = None) -> BMC:
    """Start one peer BMC in a child process (see :func:`start_bmcs`)."""
    return start_bmcs(tmp_path, 1, user=user, password=password)[0]


if __name__ == "__main__":
    sys.exit(main())
