"""Allocation throughput: ``POST /v1/allocations`` against a pool of 10,000 available nodes.

Server: ``python -m ironic_fsm.api`` on a SQLite file holding 10,000
``available`` fake-hardware nodes (powered off, one resource class);
``--quick``: 300. With ``IRONIC_PYTHON`` set to the Python of an Ironic 39
virtualenv, Ironic's own API and conductor in one process
(``_ironic_api.py``, as its single-process service runs them: noauth,
SQLite, cheroot) serve the same nodes, written through its own models.

An allocation is one client's ``POST /v1/allocations`` with the resource
class, then ``GET /v1/allocations/{uuid}`` at once and again while it is
``allocating`` (after 5 ms, then twice as long each time, at most 0.1 s),
until ``active`` (Ironic's conductor allocates in a worker thread after
answering; ours has allocated by the time it answers). One that ends
``error``, or is still ``allocating`` after 120 s, counts as failed (Ironic
on SQLite loses some to "database is locked" when several allocate at once,
and some of those stay ``allocating``). N clients (1, then 8), each on its
own keep-alive connection, allocate for a fixed time or up to a cap; then
the allocations made are deleted (not timed), which frees their nodes, so
that every case starts from the whole pool. Servers are measured in turn,
round after round (ours, theirs, ours, theirs); reported are allocations per
second and the latency of one allocation (POST to ``active``), the median
over rounds with the least and most round beside it.

No goal: the figure is compared with Ironic's. Run alone:
``python benchmarks/bench_allocations.py [--quick]``.
"""

from __future__ import annotations

import http.client
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _harness import Section, SummaryRow, Table, run_alone
from _ironic_api import AVAILABLE_CLASS, node_uuid
from _servers import OURS, THEIRS, Server, ironic_python, rounds, spread, start_ironic, start_ours

from ironic_fsm import states
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore

HEADERS = {"X-OpenStack-Ironic-API-Version": "latest", "Content-Type": "application/json"}
BODY = json.dumps({"resource_class": AVAILABLE_CLASS})
#: Seconds between two reads of an allocation still ``allocating``: none before the first,
#: then from the first to the last, doubling (frequent reads would take the server's CPU
#: from the allocating itself).
POLL = (0.005, 0.1)


def _seed(db: Path, pool: int) -> None:
    """``pool`` available nodes of one resource class, as ``_ironic_api`` seeds Ironic's."""
    store = SQLStore(f"sqlite:///{db}")
    try:
        store.create_many([
            Node(uuid=node_uuid(i), name=f"n{i}", driver="fake-hardware",
                 provision_state=states.AVAILABLE, power_state=states.POWER_OFF,
                 resource_class=AVAILABLE_CLASS)
            for i in range(pool)
        ])  # fmt: skip
    finally:
        store.close()


def _call(conn: http.client.HTTPConnection, method: str, path: str, body: str | None = None
          ) -> tuple[int, dict[str, Any]]:  # fmt: skip
    conn.request(method, path, body=body, headers=HEADERS)
    response = conn.getresponse()
    data = response.read()
    return response.status, (json.loads(data) if data else {})


def _allocate(conn: http.client.HTTPConnection, patience: float) -> tuple[str, bool]:
    """One allocation, from its POST until it settles; its UUID and whether it is ``active``.

    One that ends in ``error``, or is still ``allocating`` after ``patience``
    seconds, failed (Ironic on SQLite loses some to "database is locked").
    """
    status, allocation = _call(conn, "POST", "/v1/allocations", BODY)
    if status != 201:
        raise SystemExit(f"POST /v1/allocations answered {status}: {allocation}")
    uuid = str(allocation["uuid"])
    give_up = time.perf_counter() + patience
    pause = 0.0
    while allocation["state"] == "allocating" and time.perf_counter() < give_up:
        time.sleep(pause)
        pause = min(max(pause * 2, POLL[0]), POLL[1])
        status, allocation = _call(conn, "GET", f"/v1/allocations/{uuid}")
    return uuid, allocation["state"] == "active"


def _load(port: int, clients: int, seconds: float, cap: int, patience: float) -> dict[str, Any]:
    """``clients`` threads allocate for ``seconds`` (``cap`` in all at most)."""
    made: list[str] = []
    failed = [0]
    latencies: list[float] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        try:
            while time.perf_counter() < end:
                with lock:
                    if len(made) + failed[0] + clients > cap:
                        break
                begun = time.perf_counter()
                uuid, active = _allocate(conn, patience)
                with lock:
                    if active:
                        made.append(uuid)
                        latencies.append(time.perf_counter() - begun)
                    else:
                        failed[0] += 1
        except BaseException as error:  # reported by the caller
            errors.append(error)
        finally:
            conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    end = started + seconds
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise errors[0]
    latencies.sort()
    nan = float("nan")
    return {
        "made": made,
        "failed": failed[0],
        "rate": len(made) / elapsed,
        "p50_ms": latencies[len(latencies) // 2] * 1000 if latencies else nan,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000 if latencies else nan,
    }


def _free(port: int, made: list[str]) -> None:
    """Delete the allocations made (not timed): their nodes return to the pool."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    for uuid in made:
        status, body = _call(conn, "DELETE", f"/v1/allocations/{uuid}")
        if status != 204:
            raise SystemExit(f"DELETE /v1/allocations/{uuid} answered {status}: {body}")
    conn.close()


def _measure(servers: list[Server], quick: bool) -> dict[str, dict[str, list[dict[str, Any]]]]:
    seconds, cap, count, patience = (1.0, 40, 1, 10.0) if quick else (8.0, 400, 3, 120.0)
    got: dict[str, dict[str, list[dict[str, Any]]]] = {s.name: {} for s in servers}
    for server in servers:  # warm-up: code loaded, caches filled
        _free(server.port, _load(server.port, 1, 0.5, 5, patience)["made"])
    for _, server in rounds(servers, count):
        for clients in (1, 8):
            figures = _load(server.port, clients, seconds, cap, patience)
            _free(server.port, figures.pop("made"))
            got[server.name].setdefault(f"{clients} client{'s' * (clients > 1)}", []).append(
                figures
            )
    return got


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    pool = 300 if quick else 10_000
    python = ironic_python()
    with tempfile.TemporaryDirectory(prefix="bench-alloc-") as tmp:
        db = Path(tmp) / "alloc.sqlite"
        _seed(db, pool)
        servers = [start_ours(db)]
        try:
            if python:
                servers.append(start_ironic(python, Path(tmp) / "ironic", pool, 0, pool))
            got = _measure(servers, quick)
        finally:
            for server in servers:
                server.stop()
    table = Table(
        f"POST /v1/allocations until active, pool of {pool:,} available nodes on SQLite "
        f"(median of {len(next(iter(got[OURS].values())))} rounds, least-most)",
        ["server", "clients", "allocations/s", "p50 ms", "p99 ms", "failed"],
    )
    for server, cases in got.items():
        for clients, runs in cases.items():
            table.add(server, clients, spread([r["rate"] for r in runs]),
                      spread([r["p50_ms"] for r in runs]),
                      spread([r["p99_ms"] for r in runs]),
                      sum(r["failed"] for r in runs))  # fmt: skip
    if THEIRS in got:
        for clients, runs in got[OURS].items():
            ours = statistics.median(r["rate"] for r in runs)
            theirs = statistics.median(r["rate"] for r in got[THEIRS][clients])
            table.notes.append(
                f"{clients}: {ours / theirs:.1f}x Ironic 39's rate"
                if theirs
                else f"{clients}: Ironic 39 completed no allocation"
            )
    else:
        table.notes.append(
            "Ironic 39 not measured: set IRONIC_PYTHON to a venv with ironic==39.0.0 and cheroot"
        )
    section = Section("Allocations", [table])
    best = max(statistics.median(r["rate"] for r in runs) for runs in got[OURS].values())
    section.summary.append(
        SummaryRow(f"API allocations/s, pool of {pool:,}", f"{best:.0f}/s", "-", None)
    )
    section.seconds = time.perf_counter() - started
    return section


if __name__ == "__main__":
    run_alone(run, __doc__)
