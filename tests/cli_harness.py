"""What the in-process CLI tests share: a result triple, and an environment of the test's own.

The tests call ``ironic_fsm.cli.main([...])`` directly; these helpers keep
them off the developer's ``$IRONIC_FSM_DB``, settings file and home.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from ironic_fsm import cli


class Result(NamedTuple):
    code: int
    out: str
    err: str


Run = Callable[..., Result]


def isolate_cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read the developer's database or settings, nor write to their home."""
    monkeypatch.delenv(cli.DB_ENV, raising=False)
    monkeypatch.delenv(cli.CONFIG_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))


def runner(db: str, capsys: pytest.CaptureFixture[str]) -> Run:
    """``run("node", "list")`` runs ``ironic-fsm --db DB node list`` in-process."""

    def _run(*argv: str) -> Result:
        capsys.readouterr()
        code = cli.main(["--db", db, *argv])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return _run


def ok(result: Result) -> Result:
    assert result.code == 0, result.err
    return result


def listed(run: Run, *options: str) -> list[dict[str, Any]]:
    """The rows of ``node list -f json`` with ``options``."""
    rows: list[dict[str, Any]] = json.loads(ok(run("node", "list", "-f", "json", *options)).out)
    return rows
