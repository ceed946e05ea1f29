"""``KEY=VALUE`` options type their values as ``openstack baremetal`` does.

A new user set ``--property cpus=32`` with ``ironic-fsm`` and with the real
``openstack baremetal`` on one database and found ``"32"`` beside ``32``.
Both now go through the same rule (python-ironicclient's: the value as JSON
when it parses, else the text); this drives both CLIs against one database
and compares what each stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from api_helpers import api_process
from api_helpers import openstack as osc
from cli_harness import isolate_cli_env

from ironic_fsm import Conductor, cli
from ironic_fsm.stores import SQLStore

VALUES = [
    "cpus=32",
    "memory_mb=65536.5",
    "fast=true",
    "label=rack 7",
    'quoted="32"',
    "empty=",
    "nothing=null",
    'disks=["sda", "sdb"]',
    'nested={"a": 1}',
    "bad_json={a: 1}",
    "with=equals=sign",
]
EXPECTED = {
    "cpus": 32,
    "memory_mb": 65536.5,
    "fast": True,
    "label": "rack 7",
    "quoted": "32",
    "empty": "",
    "nothing": None,
    "disks": ["sda", "sdb"],
    "nested": {"a": 1},
    "bad_json": "{a: 1}",
    "with": "equals=sign",
}


def _properties(db: Path, name: str) -> dict[str, object]:
    store = SQLStore(f"sqlite:///{db}")
    try:
        return Conductor(store).get_node(name).properties
    finally:
        store.close()


def test_both_clis_store_the_same_typed_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_cli_env(tmp_path, monkeypatch)
    db = tmp_path / "nodes.sqlite"
    options = [arg for value in VALUES for arg in ("--property", value)]
    assert cli.main(["--db", str(db), "node", "create", "--driver", "fake-hardware",
                     "--name", "ours", *options]) == 0  # fmt: skip
    assert cli.main(["--db", str(db), "node", "create", "--driver", "fake-hardware",
                     "--name", "ours-set"]) == 0  # fmt: skip
    assert cli.main(["--db", str(db), "node", "set", "ours-set", *options]) == 0
    with api_process(db) as url:
        osc(url, "node", "create", "--driver", "fake-hardware", "--name", "theirs", *options)
        osc(url, "node", "create", "--driver", "fake-hardware", "--name", "theirs-set")
        osc(url, "node", "set", "theirs-set", *options)
    theirs = _properties(db, "theirs")
    assert theirs == EXPECTED  # what the real client stores, so the rule is checked too
    assert _properties(db, "theirs-set") == EXPECTED
    assert _properties(db, "ours") == theirs
    assert _properties(db, "ours-set") == theirs


def test_a_value_typed_on_the_command_line_shows_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    isolate_cli_env(tmp_path, monkeypatch)
    db = str(tmp_path / "nodes.sqlite")
    assert cli.main(["--db", db, "node", "create", "--driver", "fake-hardware", "--name", "n",
                     "--driver-info", "ipmi_port=6230", "--extra", "tier=1"]) == 0  # fmt: skip
    capsys.readouterr()
    assert cli.main(["--db", db, "node", "show", "n", "-f", "json"]) == 0
    shown = capsys.readouterr().out
    assert '"ipmi_port": 6230' in shown
    assert '"tier": 1' in shown


def _with_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    """A database of the test's own holding one fake-hardware node ``name``, made by our CLI."""
    isolate_cli_env(tmp_path, monkeypatch)
    db = tmp_path / "nodes.sqlite"
    created = ["--db", str(db), "node", "create", "--driver", "fake-hardware", "--name", name]
    assert cli.main(created) == 0
    return db


def _ours(db: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    capsys.readouterr()
    assert cli.main(["--db", str(db), *argv, "-f", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_list_and_show_columns_are_the_real_clients(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-c provision_state`` and ``--long -f json`` keys as ``openstack baremetal`` prints them."""
    db = _with_node(tmp_path, monkeypatch, "n1")
    with api_process(db) as url:
        theirs_list = osc(url, "node", "list", "-f", "json")
        theirs_long = osc(url, "node", "list", "--long", "-f", "json")
        theirs_show = osc(url, "node", "show", "n1", "-f", "json")
        theirs_picked = osc(url, "node", "list", "-c", "provision_state", "-f", "json")
    ours_list = _ours(db, capsys, "node", "list")
    ours_long = _ours(db, capsys, "node", "list", "--long")
    ours_picked = _ours(db, capsys, "node", "list", "-c", "provision_state")
    assert isinstance(ours_list, list)
    assert isinstance(ours_long, list)
    assert list(ours_list[0]) == list(theirs_list[0])
    assert ours_list == theirs_list
    assert list(ours_long[0]) == list(theirs_long[0])
    assert ours_picked == theirs_picked == [{"provision_state": "enroll"}]
    # ``node show`` names its fields the same way: -c takes the same names in both.
    ours_show = _ours(db, capsys, "node", "show", "n1", "-c", "provision_state", "-c", "name")
    assert ours_show == {k: theirs_show[k] for k in ("name", "provision_state")}


def test_the_cli_shows_the_interfaces_the_api_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A node that names no interface uses its hardware type's defaults: both show their names."""
    db = _with_node(tmp_path, monkeypatch, "n1")
    ours = _ours(db, capsys, "node", "show", "n1")
    ours_long = _ours(db, capsys, "node", "list", "--long")
    with api_process(db) as url:
        theirs = osc(url, "node", "show", "n1", "-f", "json")
    assert isinstance(ours, dict)
    assert isinstance(ours_long, list)
    for kind in ("boot", "deploy", "power", "management", "raid", "bios", "vendor"):
        field = f"{kind}_interface"
        assert ours[field] == theirs[field] == ours_long[0][field], field
    assert ours["boot_interface"] == "fake"


def test_conductor_and_history_columns_are_the_real_clients(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Everything else the CLI lists keys its rows as ``openstack baremetal`` does."""
    db = _with_node(tmp_path, monkeypatch, "h1")
    assert cli.main(["--db", str(db), "node", "set", "h1", "--maintenance",
                     "--maintenance-reason", "fan"]) == 0  # fmt: skip
    with api_process(db) as url:  # the API process registers its conductor
        theirs = {
            "conductors": osc(url, "conductor", "list", "-f", "json"),
            "conductors --long": osc(url, "conductor", "list", "--long", "-f", "json"),
            "history": osc(url, "node", "history", "list", "h1", "-f", "json"),
            "history --long": osc(url, "node", "history", "list", "h1", "--long", "-f", "json"),
        }
        ours = {
            "conductors": _ours(db, capsys, "conductor", "list"),
            "conductors --long": _ours(db, capsys, "conductor", "list", "--long"),
            "history": _ours(db, capsys, "node", "history", "list", "h1"),
            "history --long": _ours(db, capsys, "node", "history", "list", "h1", "--long"),
        }
    for listing, rows in theirs.items():
        mine = ours[listing]
        assert isinstance(mine, list)
        assert rows, listing
        assert mine, listing
        assert list(mine[0]) == list(rows[0]), listing
    assert ours["history"][0]["event"] == theirs["history"][0]["event"]
