"""``import ironic_fsm``: wall time in a fresh interpreter, and what it loads.

* wall time: ``python -c 'import ironic_fsm'`` minus ``python -c 'pass'``,
  each the median of several fresh subprocesses (interleaved; bytecode
  caches warmed first);
* ``python -X importtime``: ironic_fsm's cumulative import time and the
  self time of everything it pulls in, grouped by top-level package;
* the optional heavy dependencies (SQLAlchemy, pyghmi, sushy) and
  stevedore's entry-point scan must not be imported by ``import ironic_fsm``.

Run alone: ``python benchmarks/bench_import.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

from _harness import Section, SummaryRow, Table, fmt_ns, run_alone

GOAL_IMPORT_MS = 100.0
MUST_NOT_LOAD: tuple[str, ...] = (
    "sqlalchemy",
    "psycopg",
    "sqlite3",
    "pyghmi",
    "sushy",
    "stevedore",
)
NOTABLE: tuple[str, ...] = ("transitions", "attrs", "automaton", "json", "uuid", "socket")
REPO = Path(__file__).resolve().parents[1]
# Settings that would change what or how fast the child interpreter imports.
_DISTORTING_ENV = frozenset(
    {
        "PYTHONPROFILEIMPORTTIME",
        "PYTHONDEVMODE",
        "PYTHONTRACEMALLOC",
        "PYTHONMALLOC",
        "PYTHONSTARTUP",
        "PYTHONINSPECT",
        "PYTHONVERBOSE",
        "PYTHONDONTWRITEBYTECODE",
    }
)


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    # cwd=REPO: '-c' puts the working directory first on sys.path, so the
    # checkout is what gets imported.
    env = {k: v for k, v in os.environ.items() if k not in _DISTORTING_ENV}
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )


def _wall_ns(code: str) -> int:
    start = time.perf_counter_ns()
    _python("-c", code)
    return time.perf_counter_ns() - start


class ImportLine(NamedTuple):
    self_us: int
    cumulative_us: int
    depth: int
    name: str


def _importtime() -> list[ImportLine]:
    """``-X importtime`` lines of ironic_fsm and everything imported beneath it."""
    stderr = _python("-X", "importtime", "-c", "import ironic_fsm").stderr
    lines: list[ImportLine] = []
    for raw in stderr.splitlines():
        if not raw.startswith("import time:") or "imported package" in raw:
            continue
        self_us, cumulative_us, label = raw[len("import time:") :].split("|", 2)
        name = label.rstrip()
        depth = (len(label) - len(label.lstrip()) - 1) // 2
        lines.append(ImportLine(int(self_us), int(cumulative_us), depth, name.strip()))
    # Children are printed before their parent: walk back from ironic_fsm.
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].name == "ironic_fsm" and lines[index].depth == 0:
            top = index
            break
    else:
        raise RuntimeError("ironic_fsm not found in -X importtime output")
    start = top
    while start > 0 and lines[start - 1].depth > 0:
        start -= 1
    return lines[start : top + 1]


def _loaded_modules() -> tuple[list[str], int]:
    code = "import sys, ironic_fsm\nprint(__import__('json').dumps(sorted(sys.modules)))"
    names: list[str] = json.loads(_python("-c", code).stdout)
    return names, len(names)


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    # A fresh interpreter's wall time swings by half on this box (CI's quick run once read
    # 85.6 to 131 ms over 5 runs, importtime's cumulative 68 ms): more runs, steadier median.
    runs = 15 if quick else 21
    _python("-c", "import ironic_fsm")  # compile bytecode caches first
    bare: list[int] = []
    imported: list[int] = []
    for _ in range(runs):
        bare.append(_wall_ns("pass"))
        imported.append(_wall_ns("import ironic_fsm"))
    bare_ms = statistics.median(bare) / 1e6
    imported_ms = statistics.median(imported) / 1e6
    import_ms = imported_ms - bare_ms

    lines = _importtime()
    cumulative_ms = lines[-1].cumulative_us / 1000
    by_package: dict[str, int] = defaultdict(int)
    for line in lines:
        by_package[line.name.split(".")[0]] += line.self_us
    modules, n_modules = _loaded_modules()
    loaded = set(modules)
    forbidden = sorted(name for name in loaded if name.split(".")[0] in MUST_NOT_LOAD)

    wall = Table(
        f"Fresh interpreter, median of {runs} interleaved runs",
        ["command", "median wall", "min", "max"],
    )
    wall.add(
        "python -c 'pass'", fmt_ns(statistics.median(bare)), fmt_ns(min(bare)), fmt_ns(max(bare))
    )
    wall.add(
        "python -c 'import ironic_fsm'",
        fmt_ns(statistics.median(imported)),
        fmt_ns(min(imported)),
        fmt_ns(max(imported)),
    )
    wall.add("difference: import ironic_fsm", f"{import_ms:.1f} ms", "-", "-")

    breakdown = Table(
        f"python -X importtime -c 'import ironic_fsm': {cumulative_ms:.1f} ms cumulative, "
        f"{len(lines)} modules beneath it",
        ["top-level package", "self time", "share"],
    )
    total_self = sum(by_package.values()) or 1
    for package, self_us in sorted(by_package.items(), key=lambda kv: -kv[1])[:10]:
        breakdown.add(package, f"{self_us / 1000:.1f} ms", f"{100 * self_us / total_self:.0f} %")

    deps = Table(
        f"Modules loaded by 'import ironic_fsm' ({n_modules} in sys.modules)",
        ["module", "loaded", "allowed"],
    )
    for name in MUST_NOT_LOAD:
        hit = any(m == name or m.startswith(name + ".") for m in loaded)
        deps.add(name, "yes" if hit else "no", "no")
    for name in NOTABLE:
        deps.add(name, "yes" if name in loaded else "no", "yes")

    section = Section("4. Import time", [wall, breakdown, deps])
    section.summary += [
        SummaryRow(
            "import ironic_fsm (fresh process, minus bare python)",
            f"{import_ms:.1f} ms",
            f"< {GOAL_IMPORT_MS:.0f} ms",
            import_ms < GOAL_IMPORT_MS,
        ),
        SummaryRow("-X importtime cumulative for ironic_fsm", f"{cumulative_ms:.1f} ms", "-", None),
        SummaryRow(
            "database drivers, pyghmi, sushy, stevedore not imported",
            "none loaded" if not forbidden else ", ".join(forbidden[:4]),
            "none loaded",
            not forbidden,
        ),
    ]
    section.seconds = time.perf_counter() - started
    return section


if __name__ == "__main__":
    run_alone(run, __doc__)
