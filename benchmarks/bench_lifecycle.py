"""The whole node lifecycle on fake hardware, per store, against the floor and Ironic.

Workload (the one ``shared/bench/ironic_baseline`` defines for Ironic 39):
create N ``fake-hardware`` nodes, then for each node, in order, ``manage``
(enroll -> verifying -> manageable), ``provide`` (automated clean with the
priority-1 ``vendor.log_passthrough``), ``deploy`` (the core deploy step)
and ``undeploy`` (tear down, automated clean again) -> ``available``: 9
provision-state transitions and 3 steps per node.

Each configuration runs in a fresh subprocess, so peak RSS is its own.
Stores: :class:`~ironic_fsm.stores.MemoryStore`, SQLStore on a SQLite file
(WAL; synchronous NORMAL survives a killed process, FULL survives power
loss) and SQLStore on PostgreSQL (a throwaway server started here). Also 4
conductor threads, each with its own Conductor, sharing one store.

The floor is the bare cost of the commits: with the stdlib ``sqlite3``, the
same number of single-row ``UPDATE ... ; COMMIT`` of a ~1.5 KB JSON record
per node as ironic_fsm writes (and as Ironic's 22 saves), in the same
durability mode, measured by each SQLite worker just before and after its lifecycle on
the same disk (fsync times drift too much for a floor measured apart), as one cost per
bare commit scaled to each count.
Ironic's own figures come from ``shared/bench/ironic_baseline/results.md``
(same machine kind; Ironic is not installed here).

Node history (issue 12), side by side: the same lifecycles with
``node_history`` on and off, on one store, in ABBA passes
(:func:`history_pair`). A successful lifecycle records nothing; the second
workload fails automated cleaning once (a fault, maintenance: two entries),
unsets maintenance (one entry), and then goes round successfully.

Run alone: ``python benchmarks/bench_lifecycle.py [--quick]``
(``--history`` runs only the history pair).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Final

from _harness import Case, Section, SummaryRow, Table, measure_abba, print_summary

HERE = Path(__file__).resolve().parent
VERBS = ("manage", "provide", "deploy", "undeploy")
TRANSITIONS_PER_NODE = 9
IRONIC_SAVES_PER_NODE = 22
#: Store writes of one lifecycle on a SQL store today (10 saves: each verb's first save
#: takes its reservation): the floor measured before a run has this many; the one after,
#: as many as the run counted.
WRITES_TODAY = 10
# Ironic 39.0.0 on this machine kind (shared/bench/ironic_baseline/results.md):
# nodes per second, slowest and fastest medians over N = 100..2000.
IRONIC_NODES_PER_S = {"sqlite": (4.2, 4.9), "memory": (7.2, 8.0)}
GOAL_RATIO_TO_IRONIC = 10.0
#: Issue 10's goals: the SQLite lifecycle within 2x its bare-commit floor (NORMAL and
#: FULL, with its own writes and with Ironic's 22), MemoryStore under 30 µs of CPU a transition.
GOAL_RATIO_TO_FLOOR = 2.0
GOAL_CPU_US_PER_TRANSITION = 30.0
#: Issue 12's goal: a lifecycle with history on costs at most this much more than without.
GOAL_HISTORY_RATIO = 1.1


def _sync(kind: str) -> str:
    """The ``synchronous`` mode a SQLite configuration runs in."""
    return "FULL" if kind == "sqlite-full" else "NORMAL"


# -- the worker: one configuration in one process -----------------------------------------


#: Indexes the store's statements name (SQLite ``INDEXED BY``: a statement naming a missing
#: one fails), kept by ``sqlite-noindex``; both are partial and hold only held or unnamed nodes.
_NAMED_BY_STATEMENTS: Final = frozenset({"nodes_reservation_idx", "nodes_unnamed_idx"})


def _store(kind: str, path: str, url: str | None) -> Any:
    from ironic_fsm.stores import MemoryStore, SQLStore

    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLStore(f"sqlite:///{path}", sqlite_synchronous="NORMAL")
    if kind == "sqlite-full":
        return SQLStore(f"sqlite:///{path}", sqlite_synchronous="FULL")
    if kind == "sqlite-noindex":  # what the indexes of paging and scans cost each save
        store = SQLStore(f"sqlite:///{path}", sqlite_synchronous="NORMAL")
        with store.connection() as conn:
            rows = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'nodes'"
                " AND sql IS NOT NULL"
            ).fetchall()
            for (name,) in rows:
                if name not in _NAMED_BY_STATEMENTS:
                    conn.execute(f'DROP INDEX "{name}"')
        return store
    if kind == "postgres":
        assert url is not None
        return SQLStore(url)
    raise SystemExit(f"unknown store {kind!r}")


def worker(
    kind: str, n: int, threads: int, path: str, url: str | None, floor_nodes: int = 200
) -> dict[str, Any]:
    """Create ``n`` nodes and run the lifecycle for each; return the figures.

    On SQLite, also the floor of the same durability mode, measured just before and after
    on the same disk (for at most ``floor_nodes`` nodes).
    """
    import ironic_fsm
    from ironic_fsm.stores.capabilities import StoreCapabilities

    store = _store(kind, path, url)
    conductors = [ironic_fsm.Conductor(store=store) for _ in range(threads)]
    started = time.perf_counter()
    uuids = [conductors[0].create_node(name=f"bench-{i:06d}").uuid for i in range(n)]
    created = time.perf_counter() - started
    versions_before = conductors[0].get_node(uuids[0]).version
    errors: list[BaseException] = []

    def run(conductor: ironic_fsm.Conductor, mine: list[str]) -> None:
        try:
            for ident in mine:
                for verb in VERBS:
                    conductor.do_provisioning_action(ident, verb)
        except BaseException as exc:  # reported by the parent
            errors.append(exc)

    floor_n = min(n, floor_nodes)
    floors_before = _floors(
        kind, floor_n, (WRITES_TODAY, IRONIC_SAVES_PER_NODE), os.path.dirname(path)
    )
    cpu = time.process_time()
    started = time.perf_counter()
    if threads == 1:
        run(conductors[0], uuids)
    else:
        pool = [
            threading.Thread(target=run, args=(c, uuids[i::threads]))
            for i, c in enumerate(conductors)
        ]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    if errors:
        raise errors[0]
    bad = [
        node.uuid
        for node in conductors[0].list_nodes()
        if node.provision_state != "available"
        or node.target_provision_state is not None
        or node.last_error is not None
        or node.reservation is not None
    ]
    # Saves bump the version; each verb's reservation is one more write that does not
    # (a reservation is a lock, not data), unless the store takes it in the verb's first
    # save; its release rides on the final save.
    apart = 0 if StoreCapabilities(store).reserving is not None else len(VERBS)
    writes = conductors[0].get_node(uuids[0]).version - versions_before + apart
    # Measured here, just before and just after the lifecycle, and averaged: a shared
    # disk's fsync time drifts by several times within minutes, so a floor taken apart
    # from its run misleads.
    floors_after = _floors(kind, floor_n, (writes, IRONIC_SAVES_PER_NODE), os.path.dirname(path))
    floors = {
        c: tuple((a + b) / 2 for a, b in zip(f, floors_before[c], strict=True))
        if c in floors_before
        else f
        for c, f in floors_after.items()
    }
    return {
        "store": kind,
        "n": n,
        "threads": threads,
        "wall_s": wall,
        "cpu_s": cpu,
        "create_s": created,
        "writes_per_node": writes,
        "bad_nodes": len(bad),
        "peak_rss_mib": _peak_rss_mib(),
        "floor_s": (
            {"same": floors[writes][0], "ironic": floors[IRONIC_SAVES_PER_NODE][0]}
            if floors
            else {}
        ),
        # The floor's own CPU time: steadier than wall time on a machine others share.
        "floor_cpu_s": (
            {"same": floors[writes][1], "ironic": floors[IRONIC_SAVES_PER_NODE][1]}
            if floors
            else {}
        ),
    }


def _floors(
    kind: str, n: int, commits: tuple[int, ...], where: str
) -> dict[int, tuple[float, ...]]:
    """The SQLite floor per number of commits, in ``kind``'s durability mode (none for others):
    seconds per node, wall and CPU.

    Bare commits cost the same whichever node they touch, so one pooled
    measurement (as many commits per node as all of ``commits`` together)
    gives a cost per commit, scaled to each count: measured apart, two
    floors of a noisy disk could disagree about which count is cheaper.
    """
    if not kind.startswith("sqlite"):
        return {}
    pooled = sum(set(commits))
    wall, cpu = _floor_times(n, pooled, _sync(kind), where)
    return {c: (c * wall / pooled, c * cpu / pooled) for c in commits}


def _peak_rss_mib() -> float:
    """This process's peak resident memory.

    ``VmHWM`` from /proc, not ``ru_maxrss``: Linux carries ``ru_maxrss`` over
    ``exec``, so a worker would report the peak of the parent that forked it.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- the floor: bare sqlite3 commits ---------------------------------------------------------


def sqlite_floor(n: int, commits: int, synchronous: str, where: str | None = None) -> float:
    """Seconds per node for ``commits`` bare UPDATE+COMMITs of a ~1.5 KB record (WAL).

    In a temporary directory under ``where`` (the lifecycle's own disk), if given.
    """
    return _floor_times(n, commits, synchronous, where)[0]


def _floor_times(n: int, commits: int, synchronous: str, where: str | None) -> tuple[float, float]:
    """:func:`sqlite_floor`, wall and CPU seconds per node."""
    record = json.dumps(
        {
            "driver_info": {f"k{i}": "v" * 20 for i in range(20)},
            "properties": {"cpus": 8, "memory_mb": 32768},
            "driver_internal_info": {"clean_steps": [{"interface": "vendor", "step": "x"}] * 5},
        }
    )
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        db = sqlite3.connect(os.path.join(tmp, "floor.db"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={synchronous}")
        db.execute("CREATE TABLE nodes (uuid TEXT PRIMARY KEY, version INT, data TEXT)")
        ids = [str(uuid.uuid4()) for _ in range(n)]
        db.executemany("INSERT INTO nodes VALUES (?, 0, ?)", [(u, record) for u in ids])
        started, cpu = time.perf_counter(), time.process_time()
        for u in ids:
            for i in range(commits):
                db.execute("BEGIN IMMEDIATE")
                db.execute(
                    "UPDATE nodes SET version=version+1, data=? WHERE uuid=? AND version=?",
                    (record, u, i),
                )
                db.execute("COMMIT")
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        db.close()
    return elapsed / n, cpu / n


# -- node history on vs off ------------------------------------------------------------------

FLAKY_HW = "bench-flaky"
#: The verbs of the failure workload: provide fails in cleaning (``bench_fail``), an
#: update unsets maintenance and the flag, and the node goes round again.
RECOVERY = ("manage", "provide", "unset", "manage", "provide", "deploy", "undeploy")


def _flaky_hardware() -> Any:
    """``fake-hardware`` whose priority-1 clean step fails on a node flagged ``bench_fail``."""
    from ironic_fsm import HardwareType, clean_step
    from ironic_fsm.drivers import fake

    class FlakyVendor(fake.FakeVendor):
        @clean_step(priority=1, requires_ramdisk=False)
        def log_passthrough(self, task: Any, **kwargs: Any) -> None:
            if task.node.driver_info.get("bench_fail"):
                raise RuntimeError("disk would not wipe")

    kinds = {
        kind: getattr(fake.fake_hardware(), kind)
        for kind in ("power", "management", "deploy", "boot", "bios", "raid", "inspect", "rescue")
    }
    return HardwareType(**kinds, vendor=FlakyVendor(), description="bench: fails on request")


def _history_cases(store: Any, history: bool, nodes: int, made: dict[str, list[str]]) -> list[Case]:
    """The two workloads on ``store`` with ``node_history`` on or off, ``nodes`` per pass.

    ``made`` collects the UUIDs each workload created.
    """
    import ironic_fsm

    tag = "on" if history else "off"
    conductor = ironic_fsm.Conductor(
        store=store, config=ironic_fsm.Config(node_history=history, host="bench")
    )
    conductor.register_hardware_type(FLAKY_HW, _flaky_hardware())
    batches: dict[str, list[str]] = {"ok": [], "fail": []}

    def fresh(which: str) -> None:
        fields: dict[str, Any] = {"driver": FLAKY_HW}
        if which == "fail":
            fields["driver_info"] = {"bench_fail": True}
        batches[which] = [conductor.create_node(**fields).uuid for _ in range(nodes)]
        made.setdefault(which, []).extend(batches[which])

    def success() -> None:
        for ident in batches["ok"]:
            for verb in VERBS:
                conductor.do_provisioning_action(ident, verb)

    def recovery() -> None:
        for ident in batches["fail"]:
            for verb in RECOVERY:
                if verb == "unset":
                    conductor.update_node(ident, maintenance=False, driver_info={})
                else:
                    conductor.do_provisioning_action(ident, verb)

    return [
        Case(f"success/{tag}", success, nodes, lambda: fresh("ok")),
        Case(f"failure/{tag}", recovery, nodes, lambda: fresh("fail")),
    ]


def _history_sizes(quick: bool) -> tuple[int, int]:
    """Nodes per pass and passes of the history pair.

    Eight passes, so that each side runs first in half of them (see :func:`history_pair`).
    """
    return (20, 8) if quick else (100, 8)


def history_pair(kinds: dict[str, Any], nodes: int, repeats: int) -> list[dict[str, Any]]:
    """Per store, µs per lifecycle with history off and on, and the entries one writes.

    ``kinds`` maps a store's label to a factory. Both configurations share one store, each
    through its own conductor: they write to the same tables, behind the same caches and
    the same autovacuum, and differ only in the entries one of them writes. The ratio is
    the median of the pass-by-pass ratios; the success lifecycle, which writes no entry, is
    the control and should read 1.00x.
    """
    results = []
    for label, make in kinds.items():
        store = make()
        made: dict[bool, dict[str, list[str]]] = {False: {}, True: {}}
        cases = {h: _history_cases(store, h, nodes, made[h]) for h in (False, True)}
        for index, workload in enumerate(("success", "failure")):
            passes = measure_abba((cases[False][index], cases[True][index]), repeats)
            results.append(
                {
                    "store": label,
                    "workload": workload,
                    "off_us": statistics.median(off for off, _ in passes) / 1e3,
                    "on_us": statistics.median(on for _, on in passes) / 1e3,
                    "ratios": sorted(on / off for off, on in passes),
                }
            )
        # Entries one lifecycle of each workload wrote (history on; none with it off).
        for r, which in zip(results[-2:], ("ok", "fail"), strict=True):
            counts = {len(store.node_history(u)) for u in made[True][which]}
            assert not any(store.node_history(u) for u in made[False][which])
            r["entries"] = "/".join(str(c) for c in sorted(counts))
        close = getattr(store, "close", None)
        if close is not None:
            close()
    return results


def _history_table(results: list[dict[str, Any]]) -> tuple[Table, list[SummaryRow]]:
    table = Table(
        "Node history: µs per lifecycle with node_history off and on (one store, ABBA passes)",
        ["store", "lifecycle", "off µs", "on µs", "on / off", "range", "entries written"],
    )
    summary = []
    for r in results:
        ratio = statistics.median(r["ratios"])
        table.add(
            r["store"], r["workload"], f"{r['off_us']:,.0f}", f"{r['on_us']:,.0f}",
            f"{ratio:.2f}x", f"{r['ratios'][0]:.2f}-{r['ratios'][-1]:.2f}x", r["entries"],
        )  # fmt: skip
        summary.append(
            SummaryRow(
                f"{r['store']}: {r['workload']} lifecycle, history on / off",
                f"{ratio:.2f}x",
                f"<= {GOAL_HISTORY_RATIO}x",
                ratio <= GOAL_HISTORY_RATIO,
            )
        )
    table.notes += [
        "success: manage, provide, deploy, undeploy (records nothing, as Ironic: the control, "
        "which should read 1.00x); failure: provide fails in cleaning (fault + failure: 2 "
        "entries), maintenance unset (1), then manage, provide, deploy, undeploy",
        "both configurations on one store, each through its own conductor; passes in ABBA "
        "order; µs are medians of the passes, on / off is the median of the pass-by-pass "
        "ratios, and their range is shown beside it",
    ]
    return table, summary


def _history_stores(tmp: str, pg_url: str | None) -> dict[str, Any]:
    from ironic_fsm.stores import MemoryStore, SQLStore

    kinds: dict[str, Any] = {
        "memory": MemoryStore,
        "sqlite": lambda: SQLStore(f"sqlite:///{tmp}/history.sqlite"),
    }
    if pg_url is not None:
        kinds["postgres"] = lambda: SQLStore(_fresh_pg_database(pg_url, "history"))
    return kinds


# -- the parent: run the matrix, report ------------------------------------------------------


def _spawn(kind: str, n: int, threads: int, url: str | None, floor_nodes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.sqlite")
        args = [sys.executable, __file__, "--worker", kind, str(n), str(threads), path]
        args += [str(floor_nodes), url or ""]
        done = subprocess.run(args, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"worker {kind} n={n} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _postgres() -> tuple[Any, str]:
    sys.path.insert(0, str(HERE.parent / "tests"))
    import pgserver

    server = pgserver.PostgresServer()
    return server, server.start()


def _fresh_pg_database(base_url: str, name: str) -> str:
    import psycopg

    conninfo = "postgresql://" + base_url.split("://", 1)[1]
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return base_url.rsplit("/", 1)[0] + f"/{name}"


def _lifecycle_row(r: dict[str, Any]) -> list[Any]:
    """One worker's figures as a row of the lifecycle table (SQLite: against its floor)."""
    if r["bad_nodes"]:
        raise AssertionError(f"{r['bad_nodes']} nodes did not end available: {r}")
    per_node = r["wall_s"] / r["n"]
    floor = floor_22 = floor_cpu = ""
    if r["store"].startswith("sqlite"):  # against the floor measured beside this run
        floor = f"{per_node / r['floor_s']['same']:.1f}x"
        floor_22 = f"{per_node / r['floor_s']['ironic']:.1f}x"
        floor_cpu = f"{r['cpu_s'] / r['n'] / r['floor_cpu_s']['same']:.1f}x"
    return [
        r["store"],
        r["threads"],
        f"{r['n']:,}",
        f"{r['n'] / r['wall_s']:,.0f}",
        f"{per_node * 1e3:.2f}",
        f"{r['cpu_s'] / r['n'] * 1e3:.2f}",
        f"{r['cpu_s'] / r['n'] / TRANSITIONS_PER_NODE * 1e6:,.0f}",
        r["writes_per_node"],
        f"{r['peak_rss_mib']:.0f} MiB",
        floor,
        floor_22,
        floor_cpu,
    ]


def _floor_summary(
    main_runs: dict[str, dict[str, Any]], writes: int, main_n: int
) -> list[SummaryRow]:
    """Issue 10's goals: each SQLite mode against the floor measured beside it."""
    rows = []
    for kind in ("sqlite", "sqlite-full"):
        run = main_runs[kind]
        sync = _sync(kind)
        per_node = run["wall_s"] / run["n"]
        for label, floor in ((f"{writes} writes", "same"), ("22 saves", "ironic")):
            ratio = per_node / run["floor_s"][floor]
            rows.append(
                SummaryRow(
                    f"SQLite {sync}: ms/node / bare-commit floor ({label}), N={main_n}",
                    f"{ratio:.1f}x",
                    f"<= {GOAL_RATIO_TO_FLOOR:.0f}x",
                    ratio <= GOAL_RATIO_TO_FLOOR,
                )
            )
        cpu_ratio = run["cpu_s"] / run["n"] / run["floor_cpu_s"]["same"]
        rows.append(
            SummaryRow(
                f"SQLite {sync}: CPU / the floor's CPU ({writes} writes), N={main_n}",
                f"{cpu_ratio:.1f}x",
                "-",
                None,
            )
        )
    return rows


def _plan(sizes: tuple[int, ...], main_n: int) -> list[tuple[str, int, int]]:
    """The worker runs: (store, nodes, threads)."""
    plan: list[tuple[str, int, int]] = []
    for kind in ("memory", "sqlite", "postgres"):
        for n in sizes:
            if kind == "postgres" and n > 2000:
                continue  # flatness on PostgreSQL is shown up to 1,000
            plan.append((kind, n, 1))
    plan.append(("sqlite-full", main_n, 1))  # the floor ratio in both durability modes
    plan.append(("sqlite-noindex", main_n, 1))  # the share of the indexes in the NORMAL ratio
    for kind in ("sqlite", "postgres"):
        plan.append((kind, main_n, 4))
    return plan


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    sizes = (20, 100) if quick else (100, 1000, 10000)
    main_n = sizes[-1] if quick else 1000
    server, pg_url = _postgres()
    results: list[dict[str, Any]] = []
    try:
        for index, (kind, n, threads) in enumerate(_plan(sizes, main_n)):
            url = _fresh_pg_database(pg_url, f"bench{index}") if kind == "postgres" else None
            floor_nodes = (50 if kind == "sqlite-full" else 200) if quick else 1000
            results.append(_spawn(kind, n, threads, url, floor_nodes))
        with tempfile.TemporaryDirectory() as tmp:
            history = history_pair(_history_stores(tmp, pg_url), *_history_sizes(quick))
    finally:
        server.stop()
    writes = max(r["writes_per_node"] for r in results)
    # The floors reported in the notes: those measured beside the main-size runs.
    main_runs = {r["store"]: r for r in results if r["n"] == main_n and r["threads"] == 1}
    floors = {_sync(k): main_runs[k]["floor_s"]["same"] for k in ("sqlite", "sqlite-full")}
    floor_ironic = {_sync(k): main_runs[k]["floor_s"]["ironic"] for k in ("sqlite", "sqlite-full")}

    table = Table(
        "Lifecycle per node (manage, provide, deploy, undeploy: 9 transitions, 3 steps)",
        ["store", "threads", "N", "nodes/s", "ms/node", "CPU ms/node", "CPU µs/transition",
         "writes/node", "peak RSS", "/ floor", "/ floor (22 saves)", "CPU / floor CPU"],
    )  # fmt: skip
    for r in results:
        table.add(*_lifecycle_row(r))
    table.notes += [
        f"floor (stdlib sqlite3, WAL, {writes} bare UPDATE+COMMIT per node, as many as the "
        f"lifecycle writes): NORMAL {floors['NORMAL'] * 1e3:.2f} ms/node, FULL "
        f"{floors['FULL'] * 1e3:.2f} ms/node; with Ironic's {IRONIC_SAVES_PER_NODE} saves: "
        f"NORMAL {floor_ironic['NORMAL'] * 1e3:.2f}, FULL {floor_ironic['FULL'] * 1e3:.2f} ms/node",
        "/ floor: ms/node over the floor of the same durability mode (sqlite: NORMAL, "
        "sqlite-full: FULL); the 22-save column asks whether the lifecycle would stay near "
        "the floor with as many writes as Ironic makes; CPU / floor CPU compares the "
        "process CPU time of both (own writes), which others' load on a shared machine moves "
        "less than wall time",
        "CPU µs/transition: this process's CPU time per provision-state transition (9 per node)",
        "sqlite-noindex: NORMAL with the nodes table's secondary indexes dropped (the ones "
        "paging by every sort key, filters and the periodic scans search): what moving their "
        "entries costs each save",
        "writes/node counts store writes per lifecycle (reservations included); Ironic "
        "issues 36 commits for the same lifecycle",
        "Ironic 39.0.0 on this machine kind: 4.2-4.9 nodes/s (SQLite file), 7.2-8.0 "
        "(in-memory SQLite), flat from 100 to 2,000 nodes",
    ]

    def rate(kind: str, n: int, threads: int = 1) -> float:
        for r in results:
            if (r["store"], r["n"], r["threads"]) == (kind, n, threads):
                return float(r["n"] / r["wall_s"])
        raise KeyError((kind, n, threads))

    def cpu_per_transition(kind: str, n: int) -> float:
        for r in results:
            if (r["store"], r["n"], r["threads"]) == (kind, n, 1):
                return float(r["cpu_s"] / r["n"] / TRANSITIONS_PER_NODE * 1e6)
        raise KeyError((kind, n))

    history_table, history_summary = _history_table(history)
    section = Section("5. Lifecycle", [table, history_table])
    sqlite_rate = rate("sqlite", main_n)
    memory_rate = rate("memory", main_n)
    pg_rate = rate("postgres", main_n)
    best_ironic_file = IRONIC_NODES_PER_S["sqlite"][1]
    best_ironic_memory = IRONIC_NODES_PER_S["memory"][1]
    section.summary += [
        SummaryRow(
            f"SQLite file nodes/s vs Ironic's best ({best_ironic_file}/s), N={main_n}",
            f"{sqlite_rate / best_ironic_file:,.0f}x",
            f">= {GOAL_RATIO_TO_IRONIC:.0f}x",
            sqlite_rate / best_ironic_file >= GOAL_RATIO_TO_IRONIC,
        ),
        SummaryRow(
            f"MemoryStore nodes/s vs Ironic in-memory SQLite ({best_ironic_memory}/s)",
            f"{memory_rate / best_ironic_memory:,.0f}x",
            f">= {GOAL_RATIO_TO_IRONIC:.0f}x",
            memory_rate / best_ironic_memory >= GOAL_RATIO_TO_IRONIC,
        ),
        SummaryRow(
            f"PostgreSQL nodes/s vs Ironic on SQLite ({best_ironic_file}/s)",
            f"{pg_rate / best_ironic_file:,.0f}x",
            f">= {GOAL_RATIO_TO_IRONIC:.0f}x",
            pg_rate / best_ironic_file >= GOAL_RATIO_TO_IRONIC,
        ),
    ]
    section.summary += _floor_summary(main_runs, writes, main_n)
    bare = main_runs["sqlite-noindex"]
    section.summary.append(
        SummaryRow(
            f"SQLite NORMAL without the nodes' secondary indexes / floor ({writes} writes)",
            f"{bare['wall_s'] / bare['n'] / bare['floor_s']['same']:.1f}x",
            "-",
            None,
        )
    )
    memory_cpu = cpu_per_transition("memory", main_n)
    section.summary.append(
        SummaryRow(
            f"MemoryStore CPU µs per transition, N={main_n}",
            f"{memory_cpu:.0f}",
            f"< {GOAL_CPU_US_PER_TRANSITION:.0f}",
            memory_cpu < GOAL_CPU_US_PER_TRANSITION,
        )
    )
    for kind in ("memory", "sqlite"):
        small, large = sizes[0], sizes[-1]
        growth = (1 / rate(kind, large)) / (1 / rate(kind, small))
        section.summary.append(
            SummaryRow(
                f"{kind}: ms/node at N={large:,} / at N={small:,}",
                f"{growth:.2f}",
                "<= 1.5 (flat)",
                growth <= 1.5,
            )
        )
    for kind in ("sqlite", "postgres"):
        section.summary.append(
            SummaryRow(
                f"{kind}: 4 threads / 1 thread throughput, N={main_n}",
                f"{rate(kind, main_n, 4) / rate(kind, main_n):.2f}x",
                "-",
                None,
            )
        )
    section.summary += history_summary
    section.seconds = time.perf_counter() - started
    return section


def run_history(quick: bool = False) -> tuple[Table, list[SummaryRow]]:
    """The history pair alone (memory, SQLite and PostgreSQL)."""
    server, pg_url = _postgres()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results = history_pair(_history_stores(tmp, pg_url), *_history_sizes(quick))
    finally:
        server.stop()
    return _history_table(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--history", action="store_true", help="only the node history pair")
    parser.add_argument("--worker", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        kind, n, threads, path, floor_nodes, url = args.worker
        result = worker(kind, int(n), int(threads), path, url or None, int(floor_nodes))
        print(json.dumps(result))
        return
    if args.history:
        table, summary = run_history(args.quick)
        print(table.render())
        print_summary(summary, "  ")
        return
    section = run(args.quick)
    print(section.render())
    print()
    print_summary(section.summary, "  ")


if __name__ == "__main__":
    main()
