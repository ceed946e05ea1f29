"""``ironic-fsm apply --dry-run`` on a 10,000-node fleet file: what an operator waits for.

A generated YAML file of 10,000 ``ipmi`` nodes (driver_info with a
``${VAR}`` password, properties, traits, wanted state) against a SQLite
store holding the same 10,000 nodes, half of them differing from the file.
The three parts of a dry run are timed separately, best of a few passes:

(a)  load + validate: YAML parsing (yaml-rs), ``${VAR}``
     substitution, the JSON Schema (fastjsonschema), and the
     semantic checks (driver, interfaces, the ipmi driver's own
     ``driver_info`` checks, duplicate names);
(b)  plan: one ``list_nodes`` of the store, a diff per node, its path;
(c)  print: the plan's 10,000 lines, written to a buffer.

Goal (issue 12): (a) + (b) + (c) < 2 s. For the choice of validator, the
schema alone is also timed with jsonschema (``iter_errors``: every error,
as ``apply`` needs) and with fastjsonschema (compiled; stops at the first
error), and the YAML file is parsed with PyYAML too (its C loader and
``yaml.safe_load``).

Run alone: ``python benchmarks/bench_apply.py [--quick]``.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import yaml
import yaml_rs
from _harness import Section, SummaryRow, Table, run_alone

from ironic_fsm import Conductor, fleetfile
from ironic_fsm.fleetfile._schema import validator as compiled_schema
from ironic_fsm.stores import SQLStore

GOAL_S = 2.0
FLEET = 10_000
ENV = {"IPMI_PASSWORD": "bench-secret"}


def _spec(i: int) -> dict[str, Any]:
    return {
        "name": f"node-{i:05d}",
        "driver": "ipmi",
        "driver_info": {
            "ipmi_address": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}",
            "ipmi_port": 623,
            "ipmi_username": "admin",
            "ipmi_password": "${IPMI_PASSWORD}",
        },
        "properties": {"cpus": 32, "memory_mb": 262144, "cpu_arch": "x86_64"},
        "traits": ["CUSTOM_RACK_A", f"CUSTOM_ROW_{i % 20}"],
        "resource_class": "baremetal",
        "wanted": "active" if i % 3 else "available",
    }


def _store_nodes(conductor: Conductor, count: int) -> None:
    """The same nodes in the store; every other one differs (properties and traits)."""
    for i in range(count):
        spec = _spec(i)
        fields = {k: v for k, v in spec.items() if k != "wanted"}
        fields["driver_info"] = {**fields["driver_info"], "ipmi_password": ENV["IPMI_PASSWORD"]}
        if i % 2:
            fields["properties"] = {**fields["properties"], "cpus": 16}
            fields["traits"] = ["CUSTOM_RACK_B"]
        conductor.create_node(provision_state="manageable" if i % 2 else "active", **fields)


def _best(func: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = func()
        best = min(best, time.perf_counter() - started)
    return best, result


def _fmt(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def _dry_run(
    conductor: Conductor, text: str, source: str, repeats: int
) -> tuple[float, float, float, Any]:
    """Best seconds of (a) load + validate, (b) plan, (c) print; and the plan."""
    load_s, fleet = _best(
        lambda: fleetfile.load_fleet(text, source=source, env=ENV, conductor=conductor), repeats
    )
    plan_s, plan = _best(lambda: fleetfile.plan_fleet(conductor, fleet), repeats)

    def show() -> int:
        out = io.StringIO()
        out.write("".join(line + "\n" for line in fleetfile.plan_lines(plan, fleet)))
        return len(out.getvalue())

    print_s, _ = _best(show, repeats)
    return load_s, plan_s, print_s, plan


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    count = 2_000 if quick else FLEET
    repeats = 2 if quick else 3
    section = Section(f"apply --dry-run: a {count:,}-node fleet file")
    data = {"nodes": [_spec(i) for i in range(count)]}
    texts = {
        "JSON": json.dumps(data, indent=1),
        "YAML": yaml.safe_dump(data, sort_keys=False),
    }
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLStore(f"sqlite:///{Path(tmp) / 'apply.sqlite'}")
        try:
            conductor = Conductor(store=store)
            _store_nodes(conductor, count)
            for kind, text in texts.items():
                source = f"fleet.{kind.lower()}"
                results[kind] = _dry_run(conductor, text, source, repeats)
        finally:
            store.close()
    plan = results["JSON"][3]
    updates = sum(item.action == "update" for item in plan.nodes)
    table = Table(
        f"{count:,} ipmi nodes in the file and in a SQLite store, {updates:,} differing",
        ["part", "JSON file", "YAML file"],
    )
    for i, name in enumerate(
        (
            "(a) load + validate",
            "(b) plan (one list_nodes, diff, path)",
            "(c) print the plan",
        )
    ):
        table.add(name, _fmt(results["JSON"][i]), _fmt(results["YAML"][i]))
    totals = {kind: sum(results[kind][:3]) for kind in results}
    table.add("(a) + (b) + (c)", _fmt(totals["JSON"]), _fmt(totals["YAML"]))
    table.notes += [
        f"best of {repeats} passes; files of {len(texts['JSON']) / 1e6:.1f} MB (JSON) and "
        f"{len(texts['YAML']) / 1e6:.1f} MB (YAML)",
    ]
    section.tables.append(table)
    section.tables.append(_parts(texts, repeats))
    section.summary += [
        SummaryRow(
            f"apply --dry-run, {count:,} nodes, JSON file (load+validate, plan, print)",
            f"{totals['JSON']:.2f} s",
            f"< {GOAL_S:.0f} s",
            totals["JSON"] < GOAL_S if count == FLEET else None,
        ),
        SummaryRow(
            f"apply --dry-run, {count:,} nodes, YAML file (load+validate, plan, print)",
            f"{totals['YAML']:.2f} s",
            f"< {GOAL_S:.0f} s",
            totals["YAML"] < GOAL_S if count == FLEET else None,
        ),
    ]
    section.seconds = time.perf_counter() - started
    return section


def _parts(texts: dict[str, str], repeats: int) -> Table:
    """Parsers and validators side by side: why orjson, yaml-rs and fastjsonschema."""
    table = Table("the choices inside (a)", ["part", "best", "used"])
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    seconds, data = _best(lambda: orjson.loads(texts["JSON"]), repeats)
    table.add("parse JSON, orjson", _fmt(seconds), "yes")
    seconds, _ = _best(lambda: yaml_rs.loads(texts["YAML"], parse_datetime=False), repeats)
    table.add("parse YAML, yaml-rs (Rust)", _fmt(seconds), "yes")
    seconds, _ = _best(lambda: yaml.load(texts["YAML"], Loader=loader), 1)
    table.add("parse YAML, PyYAML C safe loader", _fmt(seconds), "no")
    seconds, _ = _best(lambda: yaml.safe_load(texts["YAML"]), 1)
    table.add("parse YAML, yaml.safe_load (pure Python)", _fmt(seconds), "no")
    for node in data["nodes"]:
        node["driver_info"]["ipmi_password"] = "x"
    seconds, _ = _best(lambda: compiled_schema()(data), repeats)
    table.add("JSON Schema, fastjsonschema (compiled)", _fmt(seconds), "yes")
    try:
        import jsonschema
    except ImportError:
        table.notes.append("jsonschema not installed: not measured")
    else:
        validator = jsonschema.validators.validator_for(fleetfile.schema())(fleetfile.schema())
        seconds, _ = _best(lambda: list(validator.iter_errors(data)), 1)
        table.add("JSON Schema, jsonschema iter_errors", _fmt(seconds), "no")
    table.notes += [
        "fastjsonschema stops at the first error; a file that fails is checked again "
        "field by field to report every error (only then)",
        "PyYAML builds Python objects in Python even with libyaml: seconds for a "
        "10,000-node file; yaml-rs builds them in Rust",
    ]
    return table


if __name__ == "__main__":
    os.environ.update(ENV)
    run_alone(run, __doc__)
