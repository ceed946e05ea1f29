"""The two API servers the fleet-scale benchmarks compare, started and stopped alike.

Ours is ``python -m ironic_fsm.api`` (its asyncio + h11 front end) on a
SQLite file; Ironic 39's is ``_ironic_api.py`` run by the Python named in
``IRONIC_PYTHON`` (its API and conductor in one process, on cheroot). Each
prints the port it listens on when it is ready. ``rounds`` gives the order
the benchmarks measure them in: ours, theirs, ours, theirs, so that a noisy
neighbour on the shared machine slows both alike.
"""

from __future__ import annotations

import os
import select
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from _ironic_api import SCRIPT

__all__ = ["OURS", "THEIRS", "Server", "ironic_python", "rounds", "spread", "start_ironic",
           "start_ours"]  # fmt: skip

OURS = "ironic_fsm"
THEIRS = "Ironic 39"


class Server:
    """A server process and the port it answers on."""

    def __init__(self, name: str, argv: Sequence[str], patience: float) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], patience)
        line = self.proc.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            self.stop()
            raise SystemExit(f"{name}'s API did not start: {line!r}")
        self.port = int(line)

    def stop(self) -> None:
        self.proc.kill()  # cheroot may hold threads on keep-alive connections
        self.proc.wait(60)


def ironic_python() -> str | None:
    """The Python of Ironic 39's virtualenv, if ``IRONIC_PYTHON`` names one."""
    return os.environ.get("IRONIC_PYTHON") or None


def start_ours(db: Path) -> Server:
    argv = [sys.executable, "-m", "ironic_fsm.api", "--db", f"sqlite:///{db}",
            "--api", "127.0.0.1:0"]  # fmt: skip
    return Server(OURS, argv, 120)


def start_ironic(
    python: str, work: Path, nodes: int, ports_per_node: int, available: int
) -> Server:
    """Ironic 39 on its own database in ``work``, seeded like ours (see ``_ironic_api``)."""
    work.mkdir(parents=True, exist_ok=True)
    argv = [python, str(SCRIPT), str(work), str(nodes), str(ports_per_node), str(available)]
    return Server(THEIRS, argv, 1800)


def rounds(servers: Sequence[Server], count: int) -> Iterator[tuple[int, Server]]:
    """``(round, server)`` in interleaved order: every server once per round."""
    for number in range(count):
        for server in servers:
            yield number, server


def spread(values: Sequence[float], digits: int = 1) -> str:
    """``median (least-most)`` of per-round figures."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return (
        f"{statistics.median(values):.{digits}f} "
        f"({min(values):.{digits}f}-{max(values):.{digits}f})"
    )
