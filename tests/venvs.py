"""Venvs of their own for test peers whose dependencies are not ours (IPA, a client's suite).

Each is made once per cache folder, through pip's cache, and kept between runs;
a venv is complete only once its ``.complete`` marker is written, so one left
half-made by a killed run is made again. Several test processes at once
wait on a lock for one of them to make it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

#: What pip installs: a list of requirements, or a function of (pip's command, the venv)
#: that fetches what it needs first (an sdist...) and returns them.
Requirements = Sequence[str] | Callable[[list[str], Path], Sequence[str]]


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ironic_fsm-tests"


def cached_venv(
    name: str,
    requirements: Requirements,
    *,
    version: str,
    cache: Path | None = None,
    timeout: float = 900,
    on_use: Callable[[Path], None] | None = None,
) -> Path:
    """The venv ``<cache>/<name>-<version>-py<X><Y>`` with ``requirements`` installed (one
    lock per ``name``); ``on_use`` is called with it under the lock on every use (to refresh
    what is ours in it)."""
    cache = default_cache() if cache is None else cache
    cache.mkdir(parents=True, exist_ok=True)
    venv = cache / f"{name}-{version}-py{sys.version_info[0]}{sys.version_info[1]}"
    with (cache / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / ".complete").exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            pip = [str(venv / "bin" / "pip"), "--disable-pip-version-check"]
            wanted = requirements(pip, venv) if callable(requirements) else requirements
            subprocess.run([*pip, "install", "-q", *wanted], check=True, timeout=timeout)
            (venv / ".complete").write_text(version)
        if on_use is not None:
            on_use(venv)
    return venv
