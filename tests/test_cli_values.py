"""``KEY=VALUE`` options type their values as ``openstack baremetal`` does.

A new user set ``--property cpus=32`` with ``ironic-fsm`` and with the real
``openstack baremetal`` on one database and found ``"32"`` beside ``32``.
Both now go through the same rule (python-ironicclient's: the value as JSON
when it parses, else the text); this drives both CLIs against one database
and compares what each stored.
"""

from __future__ import annotations

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
