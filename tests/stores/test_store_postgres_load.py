"""Many threads, and several processes of many threads, on one PostgreSQL database.

Each thread loops reserve / get / save / release over its own node and a few
nodes every thread shares. The pool (``pool_size`` connections shared by
all threads) must carry them: no pool or driver error, no ``ConcurrentUpdate``
(a reserved node is saved by its holder only), no node left reserved, and
every node's version equal to 1 + the saves it took.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from procs import worker_reports

from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore

OPERATIONS = 20
SHARED = 4

#: One worker: ``run(store, own, shared, threads)`` -> counters; also run in subprocesses.
WORKER = textwrap.dedent(
    """
    import threading
    from ironic_fsm.exceptions import NodeLocked

    def run(store, own, shared, threads, operations):
        barrier = threading.Barrier(threads)
        counts = {"saves": 0, "locked": 0, "errors": []}
        guard = threading.Lock()

        def loop(i):
            saves = locked = 0
            barrier.wait()
            try:
                for op in range(operations):
                    ident = own[i] if op % 2 == 0 else shared[(i + op) % len(shared)]
                    try:
                        node = store.reserve(ident, f"worker-{i}")
                    except NodeLocked:
                        locked += 1
                        continue
                    assert store.get(ident).reservation == f"worker-{i}"
                    node.extra["count"] = node.extra.get("count", 0) + 1
                    if op % 4 == 1:  # released in the same write, as the conductor does
                        node.reservation = None
                        store.save(node)
                    else:
                        store.save(node)
                        store.release(ident, f"worker-{i}")
                    saves += 1
            except Exception as exc:
                with guard:
                    counts["errors"].append(f"{type(exc).__name__}: {exc}")
            with guard:
                counts["saves"] += saves
                counts["locked"] += locked

        workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=300)
        return counts
    """
)

SUBPROCESS = WORKER + textwrap.dedent(
    """
    import json, sys
    from ironic_fsm.stores import SQLStore

    url, own, shared = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    with SQLStore(url) as store:
        print(json.dumps(run(store, own, shared, len(own), int(sys.argv[4]))))
    """
)


@pytest.fixture
def pg_url(postgres_server: Any) -> Iterator[str]:
    from conftest import fresh_postgres_url

    yield from fresh_postgres_url(postgres_server)


def _run_here(store: SQLStore, own: list[str], shared: list[str]) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(WORKER, namespace)
    result: dict[str, Any] = namespace["run"](store, own, shared, len(own), OPERATIONS)
    return result


def _check(store: SQLStore, saves: int) -> None:
    nodes = store.list()
    assert [n.uuid for n in nodes if n.reservation is not None] == []
    for node in nodes:
        assert node.version == 1 + node.extra.get("count", 0), node.uuid
    assert sum(node.extra.get("count", 0) for node in nodes) == saves


def test_64_threads_share_one_store(pg_url: str) -> None:
    with SQLStore(pg_url) as store:
        own = []
        for i in range(64):
            node = Node(name=f"own-{i}")
            store.create(node)
            own.append(node.uuid)
        shared = []
        for i in range(SHARED):
            node = Node(name=f"shared-{i}")
            store.create(node)
            shared.append(node.uuid)
        counts = _run_here(store, own, shared)
        assert counts["errors"] == []
        # Every own node was saved on each of its turns; shared ones when free.
        assert counts["saves"] >= 64 * OPERATIONS // 2
        assert counts["saves"] + counts["locked"] == 64 * OPERATIONS
        _check(store, counts["saves"])


def test_3_processes_of_16_threads_share_one_database(pg_url: str) -> None:
    with SQLStore(pg_url) as store:
        shared = []
        for i in range(SHARED):
            node = Node(name=f"shared-{i}")
            store.create(node)
            shared.append(node.uuid)
        owns = []
        for p in range(3):
            mine = []
            for i in range(16):
                node = Node(name=f"own-{p}-{i}")
                store.create(node)
                mine.append(node.uuid)
            owns.append(mine)
        argvs = [[pg_url, json.dumps(mine), json.dumps(shared), str(OPERATIONS)] for mine in owns]
        results = worker_reports(SUBPROCESS, argvs)
        assert [r["errors"] for r in results] == [[], [], []]
        saves = sum(r["saves"] for r in results)
        assert saves + sum(r["locked"] for r in results) == 3 * 16 * OPERATIONS
        assert saves >= 3 * 16 * OPERATIONS // 2
        _check(store, saves)
