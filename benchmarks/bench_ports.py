"""Ports and nodes at fleet scale: pages of 1,000 with ``detail=true`` among 100,000.

Server: ``python -m ironic_fsm.api`` in its own process on a SQLite file
holding 100,000 nodes with one port each (``--quick``: 2,000). The data is
seeded with one batched ``INSERT`` per table (the store's own row layout,
the records step's), the way a fleet import would load it; seeding is not
measured. With ``IRONIC_PYTHON`` set to the Python of an Ironic 39
virtualenv, Ironic's own API (``_ironic_api.py``: noauth, SQLite, on
cheroot) serves the same nodes and ports, with the same UUIDs and MACs,
written through its own models; the two are measured in turn, round after
round (ours, theirs, ours, theirs). With ``BENCH_PORTS_BEFORE`` naming another
checkout of ironic_fsm (its root, the folder holding ``ironic_fsm/``), that
tree's API serves a copy of the same database beside ours, measured in the
same turns: a change's before and after, side by side on one loaded machine.

Cases, each a keep-alive ``http.client`` connection sending the same request
one after the other (latency per request, in the client):

* ``GET /v1/ports?detail=true&limit=1000``: the first page;
* the same after a marker 90% of the way through: a keyset range on
  ``(seq, uuid)`` reads ``limit`` rows wherever the page starts;
* ``GET /v1/nodes/{id}/ports``: one node's ports, on the node index;
* ``GET /v1/ports?address=...``: one port by MAC, on the unique index (the
  agent's lookup);
* ``GET /v1/nodes?detail=true&limit=1000``, first page and after a marker
  at 90%.

Goals: a page of 1,000 ports, and one of 1,000 nodes, under 50 ms at 100,000
(issue 20). Reported: the p50 of all requests of a case, the least and most
of its per-round p50s, and the server's CPU time per request (from
``/proc``: on a shared machine, the figure its neighbours move least). Run
alone: ``python benchmarks/bench_ports.py [--quick]``.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from _harness import Section, SummaryRow, Table, run_alone
from _ironic_api import mac, node_uuid, port_fields, port_uuid
from _procstat import cpu_seconds
from _servers import OURS, THEIRS, Server, ironic_python, rounds, spread, start_ironic, start_ours

from ironic_fsm.node import Node
from ironic_fsm.records import Port
from ironic_fsm.stores import SQLStore

LATEST = {"X-OpenStack-Ironic-API-Version": "latest"}
PORTS_PER_NODE = 1
PORTS_PAGE = "ports: first page, detail, limit 1000"
PORTS_MARKER = "ports: page after a marker at 90%"
NODES_PAGE = "nodes: first page, detail, limit 1000"
NODES_MARKER = "nodes: page after a marker at 90%"


BEFORE = "before"
#: ``python -c`` code that runs ``ironic_fsm.api`` from the source tree given first: the
#: installed package's import hook is dropped so that the tree's ``ironic_fsm`` is the one
#: imported.
_FROM_TREE = (
    "import runpy, sys; tree = sys.argv.pop(1); "
    "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]; "
    "sys.path.insert(0, tree); runpy.run_module('ironic_fsm.api', run_name='__main__')"
)


def _start_before(tree: str, db: Path) -> Server:
    """The API of the checkout at ``tree`` on ``db`` (a copy of ours: its own registry)."""
    argv = [sys.executable, "-c", _FROM_TREE, tree, "--db", f"sqlite:///{db}",
            "--api", "127.0.0.1:0"]  # fmt: skip
    return Server(BEFORE, argv, 120)


def _seed(db: Path, nodes: int) -> None:
    """``nodes`` nodes and their ports, as ``_ironic_api`` seeds Ironic's database."""
    store = SQLStore(f"sqlite:///{db}")
    try:
        made = [Node(uuid=node_uuid(i), name=f"n{i}", driver="fake-hardware")
                for i in range(nodes)]  # fmt: skip
        store.create_many(made)
        # The store's own text for a time (its dialect's), as its writes bind it.
        now = store._db.bind_time(datetime.now(timezone.utc))
        rows = []
        for i in range(nodes * PORTS_PER_NODE):
            port = Port(uuid=port_uuid(i), address=mac(i + 1),
                        node_uuid=made[i // PORTS_PER_NODE].uuid, **port_fields(i))  # fmt: skip
            data = json.dumps(port.data())
            rows.append((port.uuid, i + 1, now, port.address, None, port.node_uuid, None, data))
        with store.connection() as conn:
            conn.execute("BEGIN")
            conn.executemany(
                "INSERT INTO ports (uuid, seq, created_at, updated_at, address, name, "
                "node_uuid, portgroup_uuid, data) VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?)",
                rows,
            )
            conn.execute("COMMIT")
    finally:
        store.close()


def _cases(nodes: int) -> dict[str, tuple[str, str, int]]:
    """Each case's path, the list its answer holds, and how many it must list."""
    ports = nodes * PORTS_PER_NODE
    port_marker = port_uuid(min(int(ports * 0.9), ports - 1001))  # a full page after it
    node_marker = node_uuid(min(int(nodes * 0.9), nodes - 1001))
    middle = nodes // 2
    return {
        PORTS_PAGE: ("/v1/ports?detail=true&limit=1000", "ports", 1000),
        PORTS_MARKER: (f"/v1/ports?detail=true&limit=1000&marker={port_marker}", "ports", 1000),
        "one node's ports": (f"/v1/nodes/{node_uuid(middle)}/ports?detail=true", "ports",
                             PORTS_PER_NODE),
        "one port by address": (f"/v1/ports?address={mac(middle + 1)}&detail=true", "ports", 1),
        NODES_PAGE: ("/v1/nodes?detail=true&limit=1000", "nodes", 1000),
        NODES_MARKER: (f"/v1/nodes?detail=true&limit=1000&marker={node_marker}", "nodes", 1000),
    }  # fmt: skip


def _case(
    server: Server, path: str, repeats: int, key: str, expect: int
) -> tuple[list[float], float, int]:
    """Latencies (ms) of ``repeats`` requests after one that warms the caches, the server's
    CPU seconds over them, and the body's bytes."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=300)
    times: list[float] = []
    cpu = 0.0
    for number in range(repeats + 1):
        if number == 1:
            cpu = -cpu_seconds(server.proc.pid)
        started = time.perf_counter()
        conn.request("GET", path, headers=LATEST)
        response = conn.getresponse()
        body = response.read()
        times.append((time.perf_counter() - started) * 1000)
        if response.status != 200:
            raise SystemExit(f"GET {path} answered {response.status}: {body[:200]!r}")
    cpu += cpu_seconds(server.proc.pid)
    conn.close()
    count = len(json.loads(body)[key])
    if count != expect:
        raise SystemExit(f"GET {path} gave {count} {key}, not {expect}")
    return times[1:], cpu, len(body)


def _measure(servers: list[Server], nodes: int, repeats: int, count: int) -> dict[str, Any]:
    """Per server and case: every latency, the per-round p50s, the body's size."""
    got: dict[str, Any] = {server.name: {} for server in servers}
    for _, server in rounds(servers, count):
        for name, (path, key, expect) in _cases(nodes).items():
            times, cpu, size = _case(server, path, repeats, key, expect)
            figures = got[server.name].setdefault(
                name, {"all": [], "rounds": [], "bytes": 0, "cpu": 0.0}
            )
            figures["all"] += times
            figures["cpu"] += cpu
            figures["rounds"].append(statistics.median(times))
            figures["bytes"] = size
    return got


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    nodes = 2000 if quick else 100_000
    repeats, count = (3, 1) if quick else (5, 4)
    python = ironic_python()
    with tempfile.TemporaryDirectory(prefix="bench-ports-") as tmp:
        db = Path(tmp) / "ports.sqlite"
        seed_started = time.perf_counter()
        _seed(db, nodes)
        seeded = time.perf_counter() - seed_started
        before = os.environ.get("BENCH_PORTS_BEFORE")
        if before:
            shutil.copy(db, db.with_name(f"{BEFORE}.sqlite"))
        servers = [start_ours(db)]
        try:
            if before:
                servers.append(_start_before(before, db.with_name(f"{BEFORE}.sqlite")))
            if python:
                servers.append(start_ironic(python, Path(tmp) / "ironic", nodes,
                                            PORTS_PER_NODE, 0))  # fmt: skip
            got = _measure(servers, nodes, repeats, count)
        finally:
            for server in servers:
                server.stop()
    total = nodes * PORTS_PER_NODE
    table = Table(
        f"GET /v1/ports and /v1/nodes on SQLite: {nodes:,} nodes, {total:,} ports "
        f"(ours seeded in {seeded:.1f} s); {count} rounds of {repeats} requests",
        ["server", "case", "p50 ms", "per-round p50 ms", "server CPU ms", "body bytes"],
    )
    for server, cases in got.items():
        for name, r in cases.items():
            table.add(server, name, f"{statistics.median(r['all']):.1f}", spread(r["rounds"]),
                      f"{r['cpu'] * 1000 / len(r['all']):.1f}", f"{r['bytes']:,.0f}")  # fmt: skip
    if THEIRS in got:
        for name, r in got[OURS].items():
            theirs = statistics.median(got[THEIRS][name]["all"])
            ours = statistics.median(r["all"])
            cpu = got[THEIRS][name]["cpu"] / r["cpu"] if r["cpu"] else float("inf")
            table.notes.append(
                f"{name}: Ironic 39 takes {theirs / ours:.1f}x as long, {cpu:.1f}x the CPU"
            )
    table.notes.append(
        "server CPU ms: the server process's CPU time (all its threads, from /proc) per "
        "request, which a loaded machine inflates far less than the latency"
    )
    if BEFORE in got:
        for name, r in got[OURS].items():
            then = got[BEFORE][name]
            table.notes.append(
                f"{name}: p50 {statistics.median(then['all']):.1f} -> "
                f"{statistics.median(r['all']):.1f} ms, server CPU "
                f"{then['cpu'] * 1000 / len(then['all']):.1f} -> "
                f"{r['cpu'] * 1000 / len(r['all']):.1f} ms (before -> ours)"
            )
    if THEIRS not in got:
        table.notes.append(
            "Ironic 39 not measured: set IRONIC_PYTHON to a venv with ironic==39.0.0 and cheroot"
        )
    section = Section("Ports and nodes at scale", [table])
    ours = got[OURS]
    pages = {"ports": (PORTS_PAGE, PORTS_MARKER), "nodes": (NODES_PAGE, NODES_MARKER)}
    for what, pair in pages.items():
        page = max(statistics.median(ours[name]["all"]) for name in pair)
        # The goal is the full run's (100,000); a quick run's page is reported for context.
        section.summary.append(
            SummaryRow(
                f"API GET /v1/{what}?detail=true, 1,000 of {nodes:,}: p50 (worst page)",
                f"{page:.1f} ms",
                "< 50 ms at 100,000" if not quick else "- (quick run)",
                None if quick else page < 50.0,
            )
        )
    section.seconds = time.perf_counter() - started
    return section


if __name__ == "__main__":
    run_alone(run, __doc__)
