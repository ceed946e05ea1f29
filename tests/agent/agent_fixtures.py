"""Fixtures of the agent tests: IPA's venv (once per session), loop devices and sandboxes.

A plugin of tests/conftest.py (``pytest_plugins``), not a conftest.py: see there.

Everything here needs root (loop devices, namespaces, mounts), as CI has; a
missing tool fails the test with what is missing, it never skips.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from ipa_sandbox import Sandbox, ipa_python, loop_device

_TOOLS = ("ip", "unshare", "losetup", "mount")
#: Held while a test has loop devices and sandboxes, across test processes (pytest-xdist).
_ONE_AT_A_TIME = Path(tempfile.gettempdir()) / "ironic_fsm-ipa-sandboxes.lock"


@contextmanager
def _sandboxes_to_ourselves() -> Iterator[None]:
    """One test process at a time makes loop devices and runs IPA in sandboxes: a sandbox
    covers the block devices there are when it starts, so another process's loop device
    made later would show in it (IPA's hardware manager lists only its own disk, but udev,
    partition scans and the machine's two cores are shared)."""
    with _ONE_AT_A_TIME.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def ipa() -> Path:
    """The interpreter of IPA's own venv (``ironic-python-agent==13.0.0``, cached)."""
    missing = [tool for tool in _TOOLS if shutil.which(tool) is None]
    assert not missing, f"the IPA sandbox needs {', '.join(missing)} (util-linux, iproute2)"
    assert os.geteuid() == 0, "the IPA sandbox needs root: loop devices, namespaces, mounts"
    return ipa_python()


@pytest.fixture
def make_sandbox(tmp_path: Path, ipa: Path) -> Iterator[Callable[..., Sandbox]]:
    """``make_sandbox(mac, seed=False, leave_visible=0, size_mib=64)``: a loop device (a
    sparse file unless ``seed``) and a sandbox for it.

    ``leave_visible`` > 0 makes that many more loop devices and leaves them
    uncovered in the sandbox: what the isolation check must refuse.
    """
    with ExitStack() as stack:
        stack.enter_context(_sandboxes_to_ourselves())

        def make(
            mac: str, *, seed: bool = False, leave_visible: int = 0, size_mib: int = 64
        ) -> Sandbox:
            disk = stack.enter_context(loop_device(tmp_path, size_mib, seed=seed))
            extra = tuple(stack.enter_context(loop_device(tmp_path)) for _ in range(leave_visible))
            work = tmp_path / f"sandbox-{os.path.basename(disk)}"
            sandbox = Sandbox(work, disk, mac, leave_visible=extra)
            stack.callback(sandbox.close)
            return sandbox

        yield make
