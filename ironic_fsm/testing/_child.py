"""What the peers' launchers share: stopping a child by its PID, never by its name."""

from __future__ import annotations

import os
import signal
import subprocess


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
