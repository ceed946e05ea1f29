"""``ironic-fsm demo``: a real fleet of emulated BMCs, start to finish, leaving nothing behind."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if text in cmdline:
                found.append(int(entry.name))
    return found


def _demo(output: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "ironic_fsm.cli", "demo", "--output", str(output), *args]


def _journal(output: Path) -> dict[str, list[dict[str, Any]]]:
    """events.jsonl, per node, in order."""
    events: dict[str, list[dict[str, Any]]] = {}
    for line in (output / "events.jsonl").read_text().splitlines():
        entry = json.loads(line)
        events.setdefault(entry["node"], []).append(entry)
    return events


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


REDFISH_CLEAN = ["bios.apply_configuration", "raid.delete_configuration",
                 "raid.create_configuration"]  # fmt: skip


def test_demo_runs_the_fleet_and_cleans_up(tmp_path: Path) -> None:
    output = tmp_path / "demo"
    runs = []
    for _ in range(2):
        done = subprocess.run(
            _demo(output, "--ipmi", "2", "--redfish", "2", "--plain"),
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        runs.append(_files(output))
    # Every run leaves the same files: the BMCs' directories go with the BMCs.
    assert runs[0] == runs[1]
    assert {f for f in runs[1] if not f.startswith("lifecycle.")} == {"demo.sqlite",
                                                                     "events.jsonl"}  # fmt: skip
    lines = done.stdout.splitlines()
    # Starting the BMCs takes seconds: each one is reported as it comes up, before enrolling.
    enrolled = next(i for i, line in enumerate(lines) if line.startswith("Enrolled"))
    starting = lines[:enrolled]
    assert starting[0].startswith("Starting 2 IPMI and 2 Redfish BMCs")
    assert re.fullmatch(r"  2 IPMI BMCs \(pyghmi\) up at 127\.0\.0\.1:\d+, :\d+ after [\d.]+ s",
                        starting[1])  # fmt: skip
    redfish_up = sorted(line.split(" up at ")[0] for line in starting if "  Redfish BMC " in line)
    assert redfish_up == [f"  Redfish BMC {i} of 2 (sushy-tools)" for i in (1, 2)]
    summary = {
        line.split()[0]: line.split()
        for line in lines
        if line.startswith(("ipmi-", "redfish-")) and len(line.split()) > 5
    }
    assert set(summary) == {"ipmi-1", "ipmi-2", "redfish-1", "redfish-2"}
    # The first node of each kind is retired and ends manageable; the others available.
    assert summary["ipmi-1"][3:5] == ["manageable", "yes"]
    assert summary["redfish-1"][3:5] == ["manageable", "yes"]
    assert summary["ipmi-2"][3] == "available"
    assert summary["redfish-2"][3] == "available"
    # Live progress was reported, including the BIOS and RAID clean steps.
    assert "step.start raid.create_configuration" in " ".join(done.stdout.split())
    assert "bios.apply_configuration" in done.stdout
    # The store is a real SQLite file with every node, and the diagram was written.
    with sqlite3.connect(output / "demo.sqlite") as db:
        rows = db.execute("SELECT data FROM nodes").fetchall()
    states = sorted(json.loads(r[0])["provision_state"] for r in rows)
    assert states == ["available", "available", "manageable", "manageable"]
    diagrams = list(output.glob("lifecycle.*"))
    assert diagrams
    assert diagrams[0].stat().st_size > 1000
    # Every BMC process it started is gone.
    assert _processes_mentioning(str(output)) == []
    assert "password" not in done.stdout.lower()


def test_each_kind_of_node_runs_what_its_bmc_can_do(tmp_path: Path) -> None:
    """Redfish nodes are inspected and cleaned (BIOS, RAID); IPMI nodes power and boot only."""
    output = tmp_path / "demo"
    done = subprocess.run(
        _demo(output, "--ipmi", "2", "--redfish", "2", "--plain"),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    journal = _journal(output)
    assert set(journal) == {"ipmi-1", "ipmi-2", "redfish-1", "redfish-2"}
    for name, events in journal.items():
        steps = [e["step"] for e in events if e["event"] == "step.start"]
        moves = [(e["from"], e["via"], e["to"]) for e in events if e["step"] is None]
        verbs = [via for _, via, _ in moves if via in {"manage", "inspect", "provide", "deploy"}]
        retired = name.endswith("-1")
        end = ("cleaning", "manage", "manageable") if retired else ("cleaning", "done",
                                                                      "available")  # fmt: skip
        assert moves[-1] == end, (name, moves)
        assert not any(e["event"] == "step.fail" or e["error"] for e in events), (name, events)
        if name.startswith("redfish"):
            assert verbs[:4] == ["manage", "inspect", "provide", "deploy"], (name, verbs)
            assert ("inspecting", "done", "manageable") in moves
            # Cleaning by runbook after provide and again after undeploy.
            assert steps == [*REDFISH_CLEAN, "deploy.deploy", *REDFISH_CLEAN], (name, steps)
        else:
            # No out-of-band inspection, no out-of-band clean steps: cleaning
            # passes straight through; deploying sets the boot device and powers on.
            assert "inspect" not in verbs, (name, verbs)
            assert verbs[:3] == ["manage", "provide", "deploy"], (name, verbs)
            assert ("manageable", "provide", "cleaning") in moves
            assert ("cleaning", "done", "available") in moves
            assert steps == ["deploy.deploy"], (name, steps)


def test_ctrl_c_stops_the_bmcs_quickly_and_says_so(tmp_path: Path) -> None:
    """SIGINT to the whole process group, as a terminal sends it, in the middle of the run."""
    output = tmp_path / "demo"
    proc = subprocess.Popen(
        _demo(output, "--ipmi", "2", "--redfish", "3", "--plain", "--pace", "0.4"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        seen = ""
        # Wait for the condition, not for a time: nodes in the middle of their
        # lifecycle (a step has started; with a pace of 0.4 s the run lasts seconds more).
        while "Enrolled" not in seen or "step.start" not in seen.split("Enrolled", 1)[1]:
            line = proc.stdout.readline()
            assert line, f"the demo ended early: {seen}{proc.communicate()}"
            seen += line
        assert proc.poll() is None
        assert _processes_mentioning(str(output))  # the BMCs are running
        interrupted = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        rest, errors = proc.communicate(timeout=30)
        took = time.monotonic() - interrupted
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, rest + errors
    # At once: the run itself lasts far longer; the bound leaves a loaded machine room.
    assert took < 10, f"took {took:.1f} s to stop"
    assert "nodes in" not in rest  # it stopped, rather than finishing the fleet first
    assert "Interrupted: stopping 5 BMC emulators ..." in rest
    assert "Stopped 5 BMC emulators" in rest
    tail = rest[rest.index("Interrupted") :]
    assert " --" not in tail, tail  # nothing more about nodes after saying it stops
    assert "Traceback" not in rest + errors
    assert _processes_mentioning(str(output)) == []
    assert not (output / "bmcs").exists()
