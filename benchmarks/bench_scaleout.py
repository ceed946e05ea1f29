"""P6, scale-out: lifecycle throughput with 1, 2 and 4 ``serve`` processes on one PostgreSQL.

A throwaway PostgreSQL server is started here (``tests/pgserver.py``, as
``bench_lifecycle.py`` does) with ``pg_stat_statements`` loaded. For each
fleet size of conductors, in a fresh database:

* N real ``ironic-fsm serve`` processes (8 flow threads each, periodic
  power sync and history trim off, so that only the lifecycle is timed)
  register and wait for work;
* the benchmark process plays the operator through a hand-off conductor:
  ``manage``, then ``provide`` (automated cleaning), then ``deploy`` of
  every ``fake-hardware`` node, each verb validated here and queued for the
  services (``NOTIFY`` wakes them), one verb round after another;
* **throughput** is nodes taken from enroll to active per second;
* **per lifecycle**: the conductors' CPU (``/proc/<pid>/stat`` of the
  ``serve`` processes), the operator's CPU (this process), PostgreSQL's CPU
  (``/proc`` of the postmaster's children, live and reaped), statements
  and round trips (``pg_stat_statements``: every call, ``BEGIN`` and
  ``COMMIT`` included, is one round trip, as psycopg sends them).

fake-hardware's steps return at once, so the figures are the cost of the
machinery itself: the worst case for scale-out, where CPU and database
are all there is. From them, a projection of what one PostgreSQL core can
feed, on paper, up to 1,000,000 nodes, with its assumptions printed.

The former goal (issue 11), 2 processes >= 1.6x one on these 2 cores with
PostgreSQL on the same box, was withdrawn by issue 18: the box cannot show
it (below), and what decides how far one database carries a fleet is the
database's own cost per lifecycle, measured by ``bench_pgcost``. The ratio
is still reported, for context.

What the box can give is measured, not assumed: "CPUs busy (box)" is every
CPU's busy time over the run from ``/proc/stat``. Our processes' own CPU
("ours") left out the kernel's loopback work and the rest of the shared
box, and read as 1.3 of 2 CPUs at one service, which looked like a latency
limit; the box figure was 1.9 of 2 there: a second service has nothing left
to run on. It takes 2 / 1.6 = 1.25 CPUs busy at one service (and the same
CPU per lifecycle at two) for 1.6x to fit at all.

Since the first version: the operator has 32 callers, not 8 (each caller
only queues a verb, but with 8 the services waited on the operator's
validation); quick mode times 300 lifecycles, not 150, so that start-up
and the last nodes weigh less. The lifecycle, the statements counted and
the CPU reported per party are unchanged.

Run alone: ``python benchmarks/bench_scaleout.py [--quick]``.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _harness import Section, SummaryRow, Table, run_alone
from _procstat import box_cpu, cpu_seconds, postgres_cpu

HERE = Path(__file__).resolve().parent
GOAL_2X = 1.6
#: Threads of the benchmark's operator that queue verbs at once.
OPERATOR_THREADS = 32
#: Flow threads of each ``serve`` process (its ``--workers``).
SERVE_WORKERS = 8
#: The service settings of the benchmark (Ironic's names).
CONFIG = {
    "heartbeat_interval": 1,
    "heartbeat_timeout": 10,
    "sync_power_state_interval": 0,
    "node_history_cleanup_interval": 0,
}
# -- the server ------------------------------------------------------------------------


def _postgres() -> tuple[Any, str, int]:
    """A throwaway server with pg_stat_statements; (server, URL, postmaster PID)."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    import pgserver
    import psycopg

    server = pgserver.PostgresServer()
    url = server.start()
    try:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        # pg_ctl restart keeps the options of the first start (postmaster.opts).
        log = str(server.base_dir / "server.log")
        server._run("pg_ctl", "restart", "-D", str(server.data_dir), "-w", "-m", "fast", "-l", log)
        postmaster = int((server.data_dir / "postmaster.pid").read_text().split()[0])
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")  # its view covers every database
    except BaseException:
        server.stop()
        raise
    return server, url, postmaster


def _fresh_database(server: Any, name: str) -> str:
    import psycopg

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return str(server.url.rsplit("/", 1)[0] + f"/{name}")


def _statements(server: Any, reset: bool = False) -> int:
    """Calls recorded by pg_stat_statements in the benchmark databases (or reset them)."""
    import psycopg

    with psycopg.connect(server.dsn, autocommit=True) as conn:
        if reset:
            conn.execute("SELECT pg_stat_statements_reset()")
            return 0
        row = conn.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s "
            "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname LIKE 'scaleout_%%' "
            "AND s.query NOT LIKE %s",
            (f"%{OBSERVER}%",),
        ).fetchone()
    return int(row[0]) if row else 0


# -- one run ------------------------------------------------------------------------------


def _start_services(url: str, count: int, tmp: Path) -> list[subprocess.Popen[bytes]]:
    config = tmp / "config.json"
    config.write_text(json.dumps({"config": CONFIG}))
    procs = []
    for i in range(count):
        with open(tmp / f"serve-{i}.err", "wb") as err:
            command = [
                sys.executable, "-m", "ironic_fsm.cli", "serve", "--db", url,
                "--config", str(config), "--workers", str(SERVE_WORKERS), "--log-level", "WARNING",
            ]  # fmt: skip
            procs.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err))
    return procs


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait(check: Any, timeout: float, what: str, every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(every)


#: The verbs of one lifecycle, each with the state it leaves the node in.
VERBS = (("manage", "manageable"), ("provide", "available"), ("deploy", "active"))
#: The observer's query carries this comment, so its calls are left out of the statement count.
OBSERVER = "/* bench observer */"


class _Observer:
    """What the operator sees of the fleet, through indexed queries that decode nothing.

    The benchmark's scaffolding, not the product's path: an API client would
    ask about each of its nodes; here a query over the state index tells
    which nodes settled where, so that watching costs the operator, and
    PostgreSQL, little (its statements are left out of the count). The verbs
    themselves go through the product. A node in a failure state stops the
    run with its ``last_error``.
    """

    def __init__(self, store: Any) -> None:
        self._store = store

    def free_in(self, states: list[str]) -> list[tuple[str, str]]:
        """(state, UUID) of the unreserved nodes in ``states``."""
        with self._store.connection() as conn:
            rows = conn.execute(
                f"SELECT {OBSERVER} provision_state, uuid FROM nodes "
                "WHERE reservation IS NULL AND provision_state = ANY(%s)",
                (states,),
            ).fetchall()
        return [(state, uuid) for state, uuid in rows]

    def settled(self, state: str) -> int:
        """How many nodes are unreserved in ``state``."""
        with self._store.connection() as conn:
            done, failed = conn.execute(
                f"SELECT {OBSERVER} count(*) FILTER (WHERE provision_state = %s "
                "AND reservation IS NULL), min(uuid) FILTER (WHERE provision_state "
                "LIKE '%%failed') FROM nodes",
                (state,),
            ).fetchone()
        if failed is not None:
            node = self._store.get(failed)
            raise RuntimeError(f"node {failed} {node.provision_state}: {node.last_error}")
        return int(done)


def _barrier(conductor: Any, nodes: list[str], timeout: float) -> None:
    """manage, provide, deploy every node: each round queued (many callers at once), then awaited.

    Several callers, as an API serves several clients: one caller queueing
    verbs one by one would be the bottleneck, not the conductors. The
    rounds' barriers leave the services idle while the operator queues and
    the operator idle while the last nodes of a round finish.
    """
    watch = _Observer(conductor.store)
    with ThreadPoolExecutor(OPERATOR_THREADS) as callers:
        for verb, target in VERBS:
            list(callers.map(lambda uuid, v=verb: conductor.do_provisioning_action(uuid, v), nodes))
            _wait(
                lambda t=target: watch.settled(t) == len(nodes),
                timeout,
                f"every node {target}",
                every=0.01,
            )


def _pipelined(conductor: Any, nodes: list[str], timeout: float) -> None:
    """Each node's next verb as soon as it settled from the last: an API with many clients.

    Every node is managed at once; the observer looks every 10 ms for nodes
    that became manageable or available and queues their next verb
    (:data:`OPERATOR_THREADS` callers), so the services always have work
    while the operator queues: every node is in flight from the start, so
    the 10 ms look adds latency to a node, not a cap on throughput.
    """
    watch = _Observer(conductor.store)
    following = {target: verb for (_, target), (verb, _) in itertools.pairwise(VERBS)}
    issued: set[tuple[str, str]] = set()
    deadline = time.monotonic() + timeout
    with ThreadPoolExecutor(OPERATOR_THREADS) as callers:
        pending = [callers.submit(conductor.do_provisioning_action, u, "manage") for u in nodes]
        while watch.settled(VERBS[-1][1]) < len(nodes):
            for state, uuid in watch.free_in(list(following)):
                if (state, uuid) not in issued:
                    issued.add((state, uuid))
                    verb = following[state]
                    pending.append(callers.submit(conductor.do_provisioning_action, uuid, verb))
            if time.monotonic() > deadline:
                raise RuntimeError("timed out waiting for every node active")
            time.sleep(0.01)
        for future in pending:
            future.result()  # a refused verb is the benchmark's bug: say so


OPERATORS = {"barrier": _barrier, "pipelined": _pipelined}
#: The fleet sizes of conductor processes measured.
SERVICES = (1, 2, 4)


def one_run(
    server: Any, postmaster: int, services: int, nodes: int, operator: str = "pipelined"
) -> dict[str, float]:
    import ironic_fsm
    from ironic_fsm.stores import SQLStore

    url = _fresh_database(server, f"scaleout_{services}")
    with tempfile.TemporaryDirectory() as tmp:
        procs = _start_services(url, services, Path(tmp))
        store = SQLStore(url)
        try:
            conductor = ironic_fsm.Conductor(
                store=store, config=ironic_fsm.Config(**CONFIG), hand_off=True
            )
            _wait(
                lambda: sum(i.alive for i in conductor.list_conductors()) == services,
                60,
                "the services",
            )
            uuids = [conductor.create_node(driver="fake-hardware").uuid for _ in range(nodes)]
            _statements(server, reset=True)
            pg_before = postgres_cpu(postmaster)
            serve_before = sum(cpu_seconds(p.pid) for p in procs)
            me_before = resource.getrusage(resource.RUSAGE_SELF)
            box_before = box_cpu()
            started = time.perf_counter()
            OPERATORS[operator](conductor, uuids, timeout=600)
            wall = time.perf_counter() - started
            box = box_cpu() - box_before
            me_after = resource.getrusage(resource.RUSAGE_SELF)
            serve_cpu = sum(cpu_seconds(p.pid) for p in procs) - serve_before
            pg_cpu = postgres_cpu(postmaster) - pg_before
            calls = _statements(server)
        finally:
            store.close()
            _stop(procs)
    operator_cpu = (me_after.ru_utime + me_after.ru_stime) - (
        me_before.ru_utime + me_before.ru_stime
    )
    return {
        "services": services,
        "nodes": nodes,
        "wall": wall,
        "rate": nodes / wall,
        "serve_ms": serve_cpu / nodes * 1000,
        "operator_ms": operator_cpu / nodes * 1000,
        "pg_ms": pg_cpu / nodes * 1000,
        "statements": calls / nodes,
        "box": box / wall,
    }


# -- the section -------------------------------------------------------------------------


def _projection(one: dict[str, float]) -> Table:
    """What one PostgreSQL core can feed, from the single-service run's costs."""
    pg_ms = one["pg_ms"]
    per_statement_us = pg_ms * 1000 / one["statements"]
    lifecycle_capacity = 1000 / pg_ms  # lifecycles per second of one PostgreSQL core
    conductor_rate = 1000 / (one["serve_ms"] + one["operator_ms"])  # per conductor core
    table = Table(
        "P6 projection: one PostgreSQL core, on paper",
        ["nodes", "power sync stmt/s", "lifecycles/s", "PG core used", "conductor cores"],
    )
    sync_statements = 3  # due scan share + read + record, per node and period (assumed)
    churn = 1 / (7 * 86400)  # each node runs one lifecycle a week (assumed)
    for fleet in (10_000, 100_000, 1_000_000):
        sync = fleet * sync_statements / 60
        lifecycles = fleet * churn
        used = sync * per_statement_us / 1e6 + lifecycles * pg_ms / 1000
        cores = lifecycles / conductor_rate + sync * 50e-6  # 50 us of conductor CPU a read
        table.add(f"{fleet:,}", f"{sync:,.0f}", f"{lifecycles:.2f}", f"{used:.0%}", f"{cores:.2f}")
    table.notes += [
        f"Measured (1 service): {pg_ms:.2f} ms of PostgreSQL CPU and "
        f"{one['statements']:.0f} statements per lifecycle, so {per_statement_us:.0f} us a "
        f"statement; one PostgreSQL core completes about {lifecycle_capacity:,.0f} "
        f"lifecycles/s, which keeps about {lifecycle_capacity / conductor_rate:.1f} conductor "
        "cores busy at this benchmark's rate.",
        "Assumed: power sync every 60 s of every node, 3 statements per node (its share of the "
        "due scan, the read, the record); each node runs one lifecycle (manage, clean, deploy) "
        "a week; 50 us of conductor CPU per BMC read, whose latency the sync pool hides; "
        "heartbeats and the periodic scans when nothing is due are constant per conductor "
        "(P7) and left out; statements cost what they cost here on a small fleet (indexes "
        "grow with log N).",
    ]
    return table


def _measure(nodes: int, repeats: int) -> dict[tuple[str, int], dict[str, float]]:
    """Every (operator, services) pair, interleaved ``repeats`` times; the fastest run of each.

    Interleaved so that a burst of load from elsewhere on the box hits every
    pair alike; the fastest run, because such load only ever slows one down.
    """
    best: dict[tuple[str, int], dict[str, float]] = {}
    server, _, postmaster = _postgres()
    try:
        for _ in range(repeats):
            for services in SERVICES:
                for operator in OPERATORS:
                    r = one_run(server, postmaster, services, nodes, operator)
                    key = (operator, services)
                    if key not in best or r["rate"] > best[key]["rate"]:
                        best[key] = r
    finally:
        server.stop()
    return best


def _cpu_ms(r: dict[str, float]) -> float:
    """CPU of one lifecycle, every process on the box counted (services, operator, PostgreSQL)."""
    return r["serve_ms"] + r["operator_ms"] + r["pg_ms"]


def _table(nodes: int, best: dict[tuple[str, int], dict[str, float]]) -> Table:
    table = Table(
        f"P6 scale-out: {nodes} lifecycles (enroll -> active) on one PostgreSQL, same box",
        [
            "operator", "serve processes", "lifecycles/s", "ratio to 1", "conductor CPU/lc",
            "operator CPU/lc", "PostgreSQL CPU/lc", "statements/lc", "CPUs busy (ours)",
            "CPUs busy (box)",
        ],
    )  # fmt: skip
    for (operator, services), r in best.items():
        base = best[(operator, 1)]["rate"]
        table.add(
            operator,
            services,
            f"{r['rate']:.1f}",
            f"{r['rate'] / base:.2f}x",
            f"{r['serve_ms']:.2f} ms",
            f"{r['operator_ms']:.2f} ms",
            f"{r['pg_ms']:.2f} ms",
            f"{r['statements']:.1f}",
            f"{r['rate'] * _cpu_ms(r) / 1000:.2f}",
            f"{r['box']:.2f}",
        )
    table.notes += [
        f"{os.cpu_count()} CPUs shared by the services, this process (the operator: it "
        "validates and queues every verb) and PostgreSQL. Round trips = statements: each "
        "call is one (the pooled connections are in autocommit: no BEGIN or COMMIT). CPUs "
        "busy (ours): lifecycles/s times the CPU of one (services + operator + PostgreSQL); "
        "CPUs busy (box): every CPU's busy time over the run (/proc/stat: the kernel's "
        "loopback work and anything else on the box too). Near the CPU count, the box is "
        "the limit.",
        "barrier: each verb queued for every node, then awaited (rounds); pipelined: each "
        "node's next verb queued as soon as it settled, as an API with many clients would. "
        f"Both with {OPERATOR_THREADS} caller threads; they watch the nodes with one "
        "indexed query every 10 ms, left out of the statement count.",
        "PostgreSQL as tests/pgserver.py runs it, tuned as an operator would a throwaway "
        "server: fsync, synchronous_commit and full_page_writes off (commits never wait on "
        "a disk); pg_stat_statements loaded.",
    ]
    return table


def _verdicts(section: Section, best: dict[tuple[str, int], dict[str, float]]) -> None:
    cpus = os.cpu_count() or 1
    for operator in OPERATORS:
        one, two = best[(operator, 1)], best[(operator, 2)]
        section.summary.append(
            SummaryRow(
                f"{operator}: CPUs busy on the box with 1 service (a second service can only "
                "use what is left)",
                f"{one['box']:.2f} of {cpus}",
                f"< {cpus / GOAL_2X:.2f} leaves room for {GOAL_2X}x",
                None,
            )
        )
        ceiling = cpus * 1000 / _cpu_ms(two)
        section.summary.append(
            SummaryRow(
                f"{operator}: this box's CPU ceiling for 2 services' lifecycles (all CPUs, "
                "nothing else running), and the most it allows over 1 service",
                f"{ceiling:.0f} lifecycles/s = {ceiling / one['rate']:.2f}x",
                f"{GOAL_2X}x one service = {GOAL_2X * one['rate']:.0f}/s must fit under it",
                None,
            )
        )
        ratio = two["rate"] / one["rate"]
        section.summary.append(
            SummaryRow(
                f"{operator}: 2 serve processes / 1, lifecycle throughput",
                f"{ratio:.2f}x",
                f"(was >= {GOAL_2X}x; withdrawn: see bench_pgcost)",
                None,
            )
        )


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    nodes = 300 if quick else 600
    best = _measure(nodes, repeats=1 if quick else 2)
    section = Section("P6. Scale-out", [_table(nodes, best), _projection(best[("pipelined", 1)])])
    section.seconds = time.perf_counter() - started
    _verdicts(section, best)
    return section


if __name__ == "__main__":
    run_alone(run, __doc__)
