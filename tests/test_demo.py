"""``ironic-fsm demo``: a real fleet of emulated BMCs, start to finish, leaving nothing behind."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path


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


def test_demo_runs_the_fleet_and_cleans_up(tmp_path: Path) -> None:
    output = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "ironic_fsm.cli", "demo", "--ipmi", "2", "--redfish", "2",
         "--output", str(output), "--plain"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
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
