"""A node PATCH against the number of its operations: linear, not quadratic.

A PATCH of 4,000 ``add`` operations once took 11-19 s of server time: each
operation was applied to a fresh deep copy of the record. Now the record is
copied once and the operations change that copy. Measured side by side for
10, 100, 1,000 and 4,000 operations (``add /extra/k<i>``), in this process
through the WSGI application (no sockets: the server's own time):

(a)  the floor: jsonpatch applying the whole patch in one call to the
     same document (one copy, no checks);
(b)  ``PATCH /v1/nodes/{uuid}``: the API's whole path (parse, check,
     apply, compare, save through the conductor, the answer);
(c)  the former way, for comparison: one jsonpatch call per operation, a
     copy of the document each.

Goal (issue 19): linear in the patch size: at 4,000 operations (b) costs
at most 3x the floor per operation (the former way cost 35x at 1,000 and
grows with the size); (b)'s cost per operation at 4,000 against 100 is
shown beside it (the floor's own grows too: jsonpatch's per-operation cost
rises with the document).

Run alone: ``python benchmarks/bench_patch.py [--quick]``.
"""

from __future__ import annotations

import time
from typing import Any

import falcon.testing
import jsonpatch
import orjson
from _harness import Case, Section, SummaryRow, Table, fmt_ns, fmt_ratio, measure, run_alone

from ironic_fsm import Conductor
from ironic_fsm.api.app import make_app

SIZES = (10, 100, 1_000, 4_000)
GOAL_RATIO = 3.0
HEADERS = {"X-OpenStack-Ironic-API-Version": "latest", "Content-Type": "application/json"}


def _operations(n: int) -> list[dict[str, Any]]:
    return [{"op": "add", "path": f"/extra/k{i}", "value": i} for i in range(n)]


def _document(conductor: Conductor, uuid: str) -> dict[str, Any]:
    """The record as a patch sees it: what the API's GET shows, secrets unmasked aside."""
    node = conductor.get_node(uuid)
    return orjson.loads(node.to_json())  # type: ignore[no-any-return]


def _cases(n: int, repeats: int) -> tuple[list[Case], list[Case]]:
    conductor = Conductor()
    client = falcon.testing.TestClient(make_app(conductor))
    uuid = conductor.create_node(driver="fake-hardware").uuid
    ops = _operations(n)
    body = orjson.dumps(ops)
    document = _document(conductor, uuid)

    def floor() -> None:
        jsonpatch.apply_patch(document, ops)

    def api() -> None:
        answer = client.simulate_patch(f"/v1/nodes/{uuid}", body=body, headers=HEADERS)
        assert answer.status_code == 200, answer.text[:200]

    def reset() -> None:
        conductor.update_node(uuid, extra={})

    def per_op_copy() -> None:
        doc = document
        for op in ops:
            doc = jsonpatch.apply_patch(doc, [op])

    api()
    assert conductor.get_node(uuid).extra == {f"k{i}": i for i in range(n)}
    reset()
    main = [
        Case(f"(a) jsonpatch, one call, {n:,} ops (floor)", floor, n),
        Case(f"(b) PATCH /v1/nodes/{{uuid}}, {n:,} ops", api, n, reset),
    ]
    # The former way is quadratic: at 4,000 operations one pass takes seconds.
    former = [Case(f"(c) a copy per operation, {n:,} ops (before)", per_op_copy, n)]
    return main, former


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    repeats = 3 if quick else 7
    section = Section("PATCH: cost against the number of operations")
    table = Table(
        "per operation, best of the passes",
        ["case", "best / op", "median / op", "ops/pass", "vs floor"],
    )
    per_op: dict[int, float] = {}
    floors: dict[int, float] = {}
    for n in SIZES:
        main, former = _cases(n, repeats)
        timings = measure(main, repeats)
        floor = timings[main[0].name].best_ns
        table.add_timings(main, timings, floor)
        per_op[n] = timings[main[1].name].best_ns
        floors[n] = floor
        if n <= (1_000 if quick else 4_000):
            before = measure(former, 1 if n >= 1_000 else repeats)
            table.add_timings(former, before, floor)
    table.notes += [
        "in this process through the WSGI app (falcon.testing): the server's own time, "
        "on a MemoryStore; each pass saves the node, an untimed reset empties extra again",
        f"best of {repeats} passes (the former way: one pass at 1,000 ops and more)",
    ]
    section.tables.append(table)
    vs_floor = per_op[4_000] / floors[4_000]
    section.summary += [
        SummaryRow(
            "PATCH of 4,000 adds (server time)",
            fmt_ns(per_op[4_000] * 4_000),
            "-",
            None,
        ),
        SummaryRow(
            "PATCH of 4,000 adds / jsonpatch floor, per op",
            fmt_ratio(vs_floor),
            f"<= {GOAL_RATIO:.0f}x (linear)",
            vs_floor <= GOAL_RATIO,
        ),
        SummaryRow(
            "PATCH cost per op, 4,000 ops / 100 ops",
            fmt_ratio(per_op[4_000] / per_op[100]),
            "-",
            None,
        ),
    ]
    section.seconds = time.perf_counter() - started
    return section


if __name__ == "__main__":
    run_alone(run, __doc__)
