"""Running the API for tests: as a subprocess (what clients meet) or in this process.

The subprocess is ``python -m ironic_fsm.api`` on a kernel-chosen port with a
throwaway SQLite database; it prints its port once listening.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from procs import stop_processes

from ironic_fsm import Conductor, Config
from ironic_fsm.api import ApiServer, start_api
from ironic_fsm.stores import SQLStore

BIN = Path(sys.executable).parent
LATEST = {"X-OpenStack-Ironic-API-Version": "latest"}


#: The database behind each served API's base URL (``served_url`` records it): what a test
#: reads to see what the API keeps but does not show.
DATABASES: dict[str, str] = {}


def database_of(url: str) -> str:
    return DATABASES[url]


@contextmanager
def api_process(
    db: Path, *extra: str, startup: float = 30.0, url: str | None = None
) -> Iterator[str]:
    """The API in a subprocess; yields its base URL and stops it with SIGTERM afterwards.

    Its database is the SQLite file ``db``, or ``url`` when given (``db`` then
    names only where its stderr goes, beside it).
    """
    # stderr goes to a file: a pipe nobody reads would stall the server once full.
    log = db.with_suffix(".stderr")
    with log.open("w") as errors:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ironic_fsm.api", "--db", url or f"sqlite:///{db}",
             "--api", "127.0.0.1:0", *extra],
            stdout=subprocess.PIPE, stderr=errors, text=True,
        )  # fmt: skip
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], startup)
        line = proc.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            proc.kill()
            proc.wait(timeout=10)
            raise AssertionError(f"the API did not start: {line!r} {log.read_text()}")
        yield f"http://127.0.0.1:{int(line)}"
    finally:
        stop_processes([proc], timeout=15)


@contextmanager
def serve_api(
    *cli_args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Iterator[tuple[str, list[str]]]:
    """``ironic-fsm [CLI_ARGS] --api 127.0.0.1:0`` (``CLI_ARGS`` end with ``serve``, options
    after it) on a free port; yields its URL and its stderr lines as they come, and stops
    it with SIGTERM afterwards."""
    serve = cli_args.index("serve")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ironic_fsm.cli", *cli_args[: serve + 1],
         "--api", "127.0.0.1:0", *cli_args[serve + 1 :]],
        stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
    )  # fmt: skip
    lines: list[str] = []
    port: list[int] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            found = re.search(r"REST API on 127\.0\.0\.1 port (\d+)", line)
            if found:
                port.append(int(found.group(1)))
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(60), lines
        assert port, lines
        yield f"http://127.0.0.1:{port[0]}", lines
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        reader.join(10)


@contextmanager
def api_in_process(db: Path, **options: Any) -> Iterator[tuple[Conductor, ApiServer, str]]:
    """A conductor with an executor and its API in this process (for fine-grained checks)."""
    store = SQLStore(f"sqlite:///{db}")
    with ThreadPoolExecutor(4) as executor:
        conductor = Conductor(store, Config(), executor=executor)
        server = start_api(conductor, host="127.0.0.1", port=0, **options)
        try:
            yield conductor, server, f"http://127.0.0.1:{server.port}"
        finally:
            server.stop()
    store.close()


@contextmanager
def sdk(url: str) -> Iterator[Any]:
    """An openstacksdk connection to the API at ``url``, without auth, closed afterwards."""
    import openstack

    connection = openstack.connection.Connection(auth_type="none", baremetal_endpoint_override=url)
    try:
        yield connection
    finally:
        connection.close()


def cli_env(url: str, **extra: str) -> dict[str, str]:
    """The environment of an ``openstack`` run on ``url`` without auth (docs/api-server.rst)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(OS_AUTH_TYPE="none", OS_ENDPOINT=url, **extra)
    return env


def openstack(url: str, *args: str, env: dict[str, str] | None = None, check: bool = True) -> Any:
    """Run ``openstack baremetal ...``; parsed JSON when ``-f json`` was asked, else stdout."""
    result = subprocess.run(
        [str(BIN / "openstack"), "baremetal", *args],
        env=env or cli_env(url), capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    if check and result.returncode != 0:
        raise AssertionError(f"openstack baremetal {' '.join(args)} failed: {result.stderr}")
    if not check:
        return result
    return json.loads(result.stdout) if "json" in args else result.stdout


def error_text(response: Any) -> str:
    """The ``faultstring`` inside Ironic's error body (itself a JSON string)."""
    return str(json.loads(response.json()["error_message"])["faultstring"])


@contextmanager
def api_client(db: Path) -> Iterator[tuple[Conductor, httpx.Client]]:
    """:func:`api_in_process` with an HTTP client that asks for the latest version."""
    with (
        api_in_process(db) as (conductor, _, url),
        httpx.Client(base_url=url, headers=LATEST, timeout=60) as client,
    ):
        yield conductor, client


# -- a client's own functional suite, run against the API -----------------------------------


def suite_outcomes(report: Path) -> dict[str, str]:
    """``file::Class::test`` -> passed / failed / skipped, from a JUnit XML report."""
    found: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        module, _, cls = case.attrib["classname"].rpartition(".")
        key = f"{module.rpartition('.')[2]}.py::{cls}::{case.attrib['name']}"
        if case.find("skipped") is not None:
            found[key] = "skipped"
        elif case.find("failure") is not None or case.find("error") is not None:
            found[key] = "failed"
        else:
            found[key] = "passed"
    return found


def check_suite(
    suite: str,
    run: subprocess.CompletedProcess[str],
    report: Path,
    known_gaps: Mapping[str, str],
    *,
    least: int,
) -> None:
    """The verdict on a client's suite: at least ``least`` tests ran, every one passed but
    the ``known_gaps``, and each gap still fails, so that the list shrinks as the API grows
    (a gap that starts passing, or leaves the suite, fails this until it is taken off)."""
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    found = suite_outcomes(report)
    assert len(found) >= least, (len(found), run.stdout[-3000:])
    missing = sorted(set(known_gaps) - set(found))
    assert not missing, f"gaps no longer in the suite (take them off the list): {missing}"
    failing = sorted(k for k, v in found.items() if v != "passed" and k not in known_gaps)
    closed = sorted(k for k in known_gaps if found[k] == "passed")
    passed = sum(v == "passed" for v in found.values())
    print(f"{suite} suite: {passed} passed of {len(found)}; {len(known_gaps)} known gaps")
    assert not failing, f"{failing}\n{run.stdout[-6000:]}"
    assert not closed, f"gaps that now pass (take them off KNOWN_GAPS): {closed}"
