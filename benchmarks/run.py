"""Run every benchmark and print one report: tables with ratios, then a summary.

Usage, from the repository root::

    python benchmarks/run.py            # full run
    python benchmarks/run.py --quick    # smoke run for CI (< 20 s)
    python benchmarks/run.py --only machine,planner --json results.json

Absolute times move from run to run on a shared machine; the figures that
matter are the ratios between implementations measured side by side in the
same run. Exit status: 0, or 1 with ``--strict`` when a goal is missed, or 2
when a benchmark fails to run.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_allocations
import bench_api
import bench_apply
import bench_bmc
import bench_db_restart
import bench_fleet
import bench_import
import bench_interfaces
import bench_lifecycle
import bench_machine
import bench_memory
import bench_metrics
import bench_patch
import bench_pgcost
import bench_planner
import bench_ports
import bench_power_sync
import bench_reconcile
import bench_scaleout
import bench_sensors
from _harness import Section, SummaryRow

BENCHMARKS: dict[str, ModuleType] = {
    "machine": bench_machine,
    "memory": bench_memory,
    "planner": bench_planner,
    "interfaces": bench_interfaces,
    "import": bench_import,
    "lifecycle": bench_lifecycle,
    "bmc": bench_bmc,
    "fleet": bench_fleet,
    "reconcile": bench_reconcile,
    "apply": bench_apply,
    "power_sync": bench_power_sync,
    "api": bench_api,
    "patch": bench_patch,
    "scaleout": bench_scaleout,
    "pgcost": bench_pgcost,
    "db_restart": bench_db_restart,
    "metrics": bench_metrics,
    "sensors": bench_sensors,
    "ports": bench_ports,
    "allocations": bench_allocations,
}


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _header(quick: bool) -> str:
    versions = ", ".join(
        f"{dist} {_version(dist)}" for dist in ("ironic_fsm", "automaton", "transitions", "attrs")
    )
    return "\n".join(
        [
            f"# ironic_fsm benchmarks ({'quick' if quick else 'full'} run)",
            "",
            f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')} · Python {platform.python_version()} "
            f"({platform.python_implementation()}) on {platform.machine()}, "
            f"{platform.system()} · {versions}",
        ]
    )


def _summary(rows: list[SummaryRow]) -> str:
    widths = [
        max(len("figure"), *(len(r.figure) for r in rows)),
        max(len("measured"), *(len(r.measured) for r in rows)),
        max(len("goal"), *(len(r.goal) for r in rows)),
    ]
    head = (
        f"| {'figure'.ljust(widths[0])} | {'measured'.rjust(widths[1])} | "
        f"{'goal'.ljust(widths[2])} | verdict |"
    )
    out = ["## Summary", "", head, "|" + "|".join("-" * (w + 2) for w in [*widths, 7]) + "|"]
    for r in rows:
        out.append(
            f"| {r.figure.ljust(widths[0])} | {r.measured.rjust(widths[1])} | "
            f"{r.goal.ljust(widths[2])} | {r.verdict.ljust(7)} |"
        )
    goals = [r for r in rows if r.passed is not None]
    missed = [r for r in goals if not r.passed]
    out += ["", f"{len(goals) - len(missed)} of {len(goals)} goals met"]
    if missed:
        out.append("missed: " + "; ".join(r.figure for r in missed))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="ironic_fsm benchmarks, side by side")
    parser.add_argument(
        "--quick", action="store_true", help="smaller sizes and fewer repeats (CI smoke run)"
    )
    parser.add_argument(
        "--only",
        default=",".join(BENCHMARKS),
        help=f"comma-separated subset of: {', '.join(BENCHMARKS)}",
    )
    parser.add_argument("--strict", action="store_true", help="exit 1 if any goal is missed")
    parser.add_argument("--json", type=Path, help="also write the summary rows to this file")
    args = parser.parse_args(argv)

    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")

    started = time.perf_counter()
    print(_header(args.quick), flush=True)
    rows: list[SummaryRow] = []
    failed: list[str] = []
    for name in chosen:
        try:
            section: Section = BENCHMARKS[name].run(quick=args.quick)
        except Exception:
            failed.append(name)
            print(f"\n## {name}: FAILED\n\n{traceback.format_exc()}", flush=True)
            continue
        print("\n" + section.render(), flush=True)
        rows.extend(section.summary)

    print()
    if rows:
        print(_summary(rows))
    if failed:
        print(f"benchmarks that failed to run: {', '.join(failed)}")
    print(f"\ntotal {time.perf_counter() - started:.1f} s")

    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "quick": args.quick,
                    "python": platform.python_version(),
                    "failed": failed,
                    "summary": [
                        {
                            "figure": r.figure,
                            "measured": r.measured,
                            "goal": r.goal,
                            "verdict": r.verdict,
                        }
                        for r in rows
                    ],
                },
                indent=2,
            )
            + "\n"
        )
    if failed:
        return 2
    if args.strict and any(r.passed is False for r in rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
