"""A small tmpfs for the disk-full tests: mounted for the test, filled on demand, unmounted after.

Needs root (``mount``); CI runs as root. The tests never skip without it:
they fail, saying so. :meth:`Tmpfs.fill` writes a filler file until the
kernel answers ENOSPC; :meth:`Tmpfs.free` removes it, and the space is back.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

__all__ = ["Tmpfs", "tmpfs"]

_CHUNK = b"\0" * 4096


class Tmpfs:
    """A mounted tmpfs of ``size`` at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.filler = path / "filler"

    def fill(self) -> int:
        """Fill the file system to the last byte; the bytes written."""
        written = 0
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            while True:
                try:
                    written += os.write(fd, _CHUNK)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break
            with contextlib.suppress(OSError):  # the last few bytes of a partial page
                while os.write(fd, b"\0"):
                    written += 1
        finally:
            os.close(fd)
        return written

    def free(self) -> None:
        """Give the space back."""
        self.filler.unlink(missing_ok=True)


@contextlib.contextmanager
def tmpfs(path: Path, size: str = "4m") -> Iterator[Tmpfs]:
    """Mount a tmpfs of ``size`` at ``path`` (created), and unmount it on the way out."""
    if os.geteuid() != 0:
        raise RuntimeError("the disk-full tests mount a tmpfs: run them as root (CI does)")
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], check=True
    )
    try:
        yield Tmpfs(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
