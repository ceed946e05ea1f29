"""Child processes of the tests: workers that report in JSON, servers stopped with SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence
from typing import Any


def worker_reports(code: str, argvs: Iterable[Sequence[str]], timeout: float = 300) -> list[Any]:
    """Run ``python -c code *argv`` for every argv, all at once; each must exit 0.

    What each printed last, as JSON, in the order of ``argvs``: the workers
    run together so that they contend, which is what these tests are about.
    """
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", code, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    reports = []
    for worker in workers:
        out, err = worker.communicate(timeout=timeout)
        assert worker.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


def stop_processes(procs: Sequence[subprocess.Popen[Any]], timeout: float) -> None:
    """SIGTERM every process still running, then wait for each; kill one that outlasts ``timeout``.

    All are signalled first so that their graceful shutdowns overlap.
    """
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
