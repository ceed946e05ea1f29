"""``ironic-fsm node passthru|bios|console|vmedia|indicator``: the same answers as
``openstack baremetal`` (same columns and fields) and the API give, on one database.

A ``serve --api`` process and our CLI share a SQLite file; what one CLI
changes, the other and the API read back.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import LATEST, cli_env, serve_api
from api_helpers import openstack as osc

APPLY = [{"interface": "bios", "step": "apply_configuration",
          "args": {"settings": [{"name": "ProcTurbo", "value": "Disabled"},
                                {"name": "NumLock", "value": "On"}]}}]  # fmt: skip
ENV_VERSION = {"OS_BAREMETAL_API_VERSION": "1.74"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One serve process, a node ``x1`` with two BIOS settings applied."""
    db = tmp_path_factory.mktemp("extras") / "nodes.sqlite"
    with serve_api("--db", str(db), "serve") as (url, _):
        osc(url, "node", "create", "--driver", "fake-hardware", "--name", "x1", "-f", "json")
        osc(url, "node", "manage", "x1", "--wait", "120")
        osc(url, "node", "clean", "x1", "--clean-steps", json.dumps(APPLY), "--wait", "120")
        yield url, db


def ours(db: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "ironic_fsm.cli", "--db", str(db), *args],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    if check:
        assert result.returncode == 0, result.stderr
    return result


def both(url: str, db: Path, *args: str) -> tuple[Any, Any]:
    """The JSON both CLIs print for ``args``."""
    env = cli_env(url, **ENV_VERSION)
    theirs = osc(url, *args, "-f", "json", env=env)
    mine = json.loads(ours(db, *args, "-f", "json").stdout)
    return mine, theirs


@pytest.mark.parametrize("command", [
    ("node", "passthru", "list", "x1"),
    ("node", "bios", "setting", "list", "x1"),
    ("node", "bios", "setting", "list", "x1", "--long"),
    ("node", "console", "show", "x1"),
], ids=" ".join)  # fmt: skip
def test_both_clis_print_the_same(served: tuple[str, Path], command: tuple[str, ...]) -> None:
    mine, theirs = both(*served, *command)
    if isinstance(theirs, list):
        assert [list(row) for row in mine] == [list(row) for row in theirs]
    else:
        assert list(mine) == list(theirs)
    assert mine == theirs


def test_bios_setting_show_has_the_clients_fields(served: tuple[str, Path]) -> None:
    mine, theirs = both(*served, "node", "bios", "setting", "show", "x1", "ProcTurbo")
    assert sorted(mine) == sorted(theirs)
    assert mine == theirs
    missing = ours(served[1], "node", "bios", "setting", "show", "x1", "Nope", check=False)
    assert missing.returncode != 0
    assert "Nope" in missing.stderr


def test_passthru_call_changes_what_the_api_shows(served: tuple[str, Path]) -> None:
    url, db = served
    said = ours(db, "node", "passthru", "call", "x1", "third_method_sync", "--arg", "bar=meow")
    assert said.stdout.strip() == "true"
    ours(db, "node", "passthru", "call", "x1", "second_method", "--arg", "bar=kazoo")
    shown = osc(url, "node", "show", "x1", "-f", "json")
    assert shown["driver_internal_info"]["fake_vendor_bar"] == "kazoo"
    assert shown["reservation"] is None

    before = osc(url, "node", "show", "x1", "-f", "json")
    refused = ours(db, "node", "passthru", "call", "x1", "second_method", "--arg", "baz=1",
                   check=False)  # fmt: skip
    assert refused.returncode != 0
    assert "missing required argument(s): bar" in refused.stderr
    theirs = osc(url, "node", "passthru", "call", "x1", "second_method", "--arg", "baz=1",
                 check=False)  # fmt: skip
    assert "missing required argument(s): bar" in theirs.stderr  # the same words
    assert osc(url, "node", "show", "x1", "-f", "json") == before


def test_console_vmedia_and_indicators_reach_the_api(served: tuple[str, Path]) -> None:
    url, db = served
    ours(db, "node", "console", "enable", "x1")
    assert osc(url, "node", "console", "show", "x1", "-f", "json")["console_enabled"] is True
    ours(db, "node", "console", "disable", "x1")
    assert json.loads(ours(db, "node", "console", "show", "x1", "-f", "json").stdout) == {
        "console_enabled": False, "console_info": None,
    }  # fmt: skip

    ours(db, "node", "vmedia", "attach", "x1", "cdrom", "http://images.example/boot.iso")
    info = osc(url, "node", "show", "x1", "-f", "json")["driver_internal_info"]
    assert "http://images.example/boot.iso" in json.dumps(info["fake_vmedia"])
    ours(db, "node", "vmedia", "detach", "x1", "--device-type", "cdrom")
    info = osc(url, "node", "show", "x1", "-f", "json")["driver_internal_info"]
    assert "http://images.example/boot.iso" not in json.dumps(info.get("fake_vmedia"))
    bad = ours(db, "node", "vmedia", "attach", "x1", "cdrom", "", check=False)
    assert bad.returncode != 0

    rows = json.loads(ours(db, "node", "indicator", "list", "x1", "-f", "json").stdout)
    led = next(r for r in rows if r["Indicator"] == "led@system")
    assert (led["Read only"], led["States"]) == (False, "BLINKING, OFF, ON")
    ours(db, "node", "indicator", "set", "x1", "led@system", "BLINKING")
    with httpx.Client(base_url=url, headers=LATEST, timeout=60) as client:
        path = "/v1/nodes/x1/management/indicators/led@system"
        assert client.get(path).json() == {"state": "BLINKING"}
    shown = json.loads(ours(db, "node", "indicator", "show", "x1", "led@system", "-f",
                            "json").stdout)  # fmt: skip
    assert shown == {"state": "BLINKING"}
    refused = ours(db, "node", "indicator", "set", "x1", "led@system", "PURPLE", check=False)
    assert refused.returncode != 0
    assert "PURPLE" in refused.stderr
    assert json.loads(ours(db, "node", "indicator", "show", "x1", "led@system", "-f",
                           "json").stdout) == {"state": "BLINKING"}  # fmt: skip


def test_target_raid_config_is_set_and_refused_alike(served: tuple[str, Path]) -> None:
    url, db = served
    wanted = {"logical_disks": [{"size_gb": 100, "raid_level": "1", "is_root_volume": True}]}
    ours(db, "node", "set", "x1", "--target-raid-config", json.dumps(wanted))
    mine, theirs = both(url, db, "node", "show", "x1", "-c", "target_raid_config")
    assert mine == theirs == {"target_raid_config": wanted}

    bad = json.dumps({"logical_disks": [{"size_gb": 100, "raid_level": "7"}]})
    refused = ours(db, "node", "set", "x1", "--target-raid-config", bad, check=False)
    told = osc(url, "node", "set", "x1", "--target-raid-config", bad, check=False)
    for result in (refused, told):
        assert result.returncode != 0
        assert "raid_level must be one of" in result.stderr, result.stderr
    assert both(url, db, "node", "show", "x1", "-c", "target_raid_config")[0] == {
        "target_raid_config": wanted,
    }  # fmt: skip
