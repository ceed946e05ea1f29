"""What the peers' launchers share: a handle's shape, stopping a child by its PID."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any, ClassVar

import attrs


@attrs.define(eq=False, repr=False)
class LocalPeer:
    """A peer BMC on 127.0.0.1: its port and login; its repr never shows the password."""

    address: ClassVar[str] = "127.0.0.1"
    port: int
    user: str
    password: str

    @property
    def pid(self) -> int:
        """The peer's process, which the test stops by this PID."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.address}:{self.port} pid={self.pid}>"

    def driver_info(self, **overrides: Any) -> dict[str, Any]:
        """``driver_info`` for an ``ipmi`` node on this peer; ``overrides`` added or replaced."""
        return {
            "ipmi_address": self.address,
            "ipmi_port": self.port,
            "ipmi_username": self.user,
            "ipmi_password": self.password,
            **overrides,
        }


def stop_child(proc: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``timeout`` seconds.

    By PID, so that a test stops its own peer and nothing else; a child
    that is already gone (even reaped elsewhere) is not an error.
    """
    if proc.poll() is not None:
        return
    try:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)
    except ProcessLookupError:
        pass
