"""Instructions per node lifecycle, counted by ``valgrind --tool=callgrind``.

A steadier figure than CPU time on a shared machine: the same code executes the same
instructions (they repeat to well under 1%). Each store runs in two child processes
under callgrind, alike but for the number of lifecycles (10 and 40, on 40 nodes created
in both); the difference of their totals, over 30, is the cost of one lifecycle after 10
of warm-up, with start-up, imports and node creation cancelled out (both under one
hash seed, so that they execute alike, and after a run that wrote the bytecode caches).

A lifecycle is ``manage``, ``provide``, ``deploy`` and ``undeploy`` of one
``fake-hardware`` node (9 provision-state transitions, 3 steps), as in
:mod:`bench_lifecycle`.

Run: ``python benchmarks/callgrind_lifecycle.py [--stores memory sqlite]``
(needs ``valgrind``; a minute or two a store).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

VERBS = ("manage", "provide", "deploy", "undeploy")
NODES = 40
SHORT, LONG = 10, 40


def child(store_kind: str, lifecycles: int, path: str) -> None:
    """Create ``NODES`` nodes, then run ``lifecycles`` lifecycles, one node each."""
    import ironic_fsm
    from ironic_fsm.stores import MemoryStore, SQLStore

    if store_kind == "memory":
        store = MemoryStore()
    else:
        store = SQLStore(f"sqlite:///{path}", sqlite_synchronous="NORMAL")
    conductor = ironic_fsm.Conductor(store=store)
    uuids = [conductor.create_node(name=f"cg-{i:04d}").uuid for i in range(NODES)]
    for ident in uuids[:lifecycles]:
        for verb in VERBS:
            conductor.do_provisioning_action(ident, verb)
    assert conductor.get_node(uuids[0]).provision_state == "available"


def _instructions(store_kind: str, lifecycles: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
        command += [__file__, "--child", store_kind, str(lifecycles), str(Path(tmp) / "nodes.db")]
        subprocess.run(
            command,
            check=True,
            capture_output=True,
            # One hash seed: dicts and sets then execute alike in both runs.
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        text = out.read_text(errors="replace")
    found = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.MULTILINE)
    if found is None:
        raise SystemExit("callgrind wrote no totals")
    return int(found.group(1))


def measure(store_kind: str) -> float:
    """Instructions of one lifecycle on ``store_kind`` (``memory`` or ``sqlite``)."""
    with tempfile.TemporaryDirectory() as tmp:  # compiles the bytecode: not counted below
        subprocess.run(
            [sys.executable, __file__, "--child", store_kind, "1", str(Path(tmp) / "nodes.db")],
            check=True,
            capture_output=True,
        )
    short = _instructions(store_kind, SHORT)
    long = _instructions(store_kind, LONG)
    return (long - short) / (LONG - SHORT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", nargs="+", default=["memory", "sqlite"])
    parser.add_argument("--child", nargs=3, metavar=("STORE", "N", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, count, path = args.child
        child(kind, int(count), path)
        return
    for kind in args.stores:
        print(f"{kind}: {measure(kind) / 1e6:.3f} M instructions per lifecycle", flush=True)


if __name__ == "__main__":
    main()
