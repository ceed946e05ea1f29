"""``ironic-fsm`` and ``openstack baremetal`` print the same records the same way.

An operator moves between the two on one database: a ``serve --api``
process, the real python-ironicclient talking to it over HTTP, and our CLI
reading the same SQLite file. Every list (plain and ``--long``) and every
show must give the same fields, in the same order, with the same values.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from api_helpers import openstack as osc
from api_helpers import serve_api


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """One serve process with the API, records of every kind made through the real client."""
    db = tmp_path_factory.mktemp("same") / "nodes.sqlite"
    with serve_api("--db", str(db), "serve") as (url, _):
        ids: dict[str, str] = {}
        ids["chassis"] = osc(url, "chassis", "create", "--description", "rack 1", "-f", "json")[
            "uuid"
        ]
        node = osc(url, "node", "create", "--driver", "fake-hardware", "--name", "n1",
                   "--property", "cpus=32", "--driver-info", "ipmi_password=s3cret",
                   "--chassis-uuid", ids["chassis"], "-f", "json")  # fmt: skip
        ids["node"] = node["uuid"]
        osc(url, "node", "manage", "n1", "--wait", "120")
        ids["port"] = osc(url, "port", "create", "52:54:00:00:00:01", "--node", "n1",
                          "-f", "json")["uuid"]  # fmt: skip
        ids["portgroup"] = osc(url, "port", "group", "create", "--node", "n1", "--name", "pg1",
                               "-f", "json")["uuid"]  # fmt: skip
        ids["allocation"] = osc(url, "allocation", "create", "--resource-class", "gold",
                                "-f", "json")["uuid"]  # fmt: skip
        ids["connector"] = osc(url, "volume", "connector", "create", "--node", "n1", "--type",
                               "iqn", "--connector-id", "iqn.2026-11.org.example:n1",
                               "-f", "json")["uuid"]  # fmt: skip
        ids["target"] = osc(url, "volume", "target", "create", "--node", "n1", "--type",
                            "iscsi", "--boot-index", "0", "--volume-id", "vol-1",
                            "-f", "json")["uuid"]  # fmt: skip
        yield url, db, ids


def ours(db: Path, *args: str) -> Any:
    """``ironic-fsm --db DB ARGS -f json``, parsed."""
    result = subprocess.run(
        [sys.executable, "-m", "ironic_fsm.cli", "--db", str(db), *args, "-f", "json"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# Each command as both CLIs spell it; "{x}" names a record made by the fixture.
COMMANDS = [
    ("node", "list"), ("node", "list", "--long"), ("node", "show", "n1"),
    ("node", "show", "n1", "--fields", "uuid", "conductor", "console_enabled"),
    ("chassis", "list"), ("chassis", "list", "--long"), ("chassis", "show", "{chassis}"),
    ("port", "list"), ("port", "list", "--long"), ("port", "show", "{port}"),
    ("port", "group", "list"), ("port", "group", "list", "--long"),
    ("port", "group", "show", "{portgroup}"),
    ("allocation", "list"), ("allocation", "list", "--long"),
    ("allocation", "show", "{allocation}"),
    ("volume", "connector", "list"), ("volume", "connector", "list", "--long"),
    ("volume", "connector", "show", "{connector}"),
    ("volume", "target", "list"), ("volume", "target", "list", "--long"),
    ("volume", "target", "show", "{target}"),
    ("conductor", "list"),
]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_both_clis_print_the_same(
    served: tuple[str, Path, dict[str, str]], command: tuple[str, ...]
) -> None:
    url, db, ids = served
    args = [part.format(**ids) for part in command]
    theirs = osc(url, *args, "-f", "json")
    mine = ours(db, *args)
    if isinstance(theirs, list):
        assert [list(row) for row in mine] == [list(row) for row in theirs]
    else:
        assert list(mine) == list(theirs)  # the same fields in the same order
    assert mine == theirs


def test_the_node_names_the_conductor_doing_its_work(
    served: tuple[str, Path, dict[str, str]],
) -> None:
    url, db, _ = served
    (conductor,) = ours(db, "conductor", "list")
    shown = ours(db, "node", "show", "n1")
    assert shown["conductor"] == conductor["hostname"]
    assert osc(url, "node", "show", "n1", "-f", "json")["conductor"] == conductor["hostname"]
    assert shown["driver_info"]["ipmi_password"] == "******"
    assert shown["properties"] == {"cpus": 32}
