"""``--store MODULE:FACTORY``: the command line and ``serve`` on the application's own store.

``start_api()`` already took any store; ``ironic-fsm`` and ``serve`` took only
database URLs. The factory here builds the twenty-line key-value store of
``examples/kv_store.py`` (one per process, kept across in-process commands).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx
import pytest
from api_helpers import serve_api
from cli_harness import isolate_cli_env

from ironic_fsm import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FACTORY_MODULE = f"""
import sys
sys.path.insert(0, {str(EXAMPLES)!r})
from kv_store import DictStore

_STORE = DictStore()


def make():
    return _STORE


def not_a_store():
    return object()
"""


@pytest.fixture
def factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_cli_env(tmp_path, monkeypatch)
    module_dir = tmp_path / "pkg"
    module_dir.mkdir()
    (module_dir / "fsm_test_stores.py").write_text(FACTORY_MODULE)
    monkeypatch.syspath_prepend(str(module_dir))
    sys.modules.pop("fsm_test_stores", None)
    return module_dir


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_drives_nodes_in_the_applications_store(
    factory: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = ("--store", "fsm_test_stores:make")
    assert (
        _run(capsys, *store, "node", "create", "--name", "n1", "--driver", "fake-hardware")[0] == 0
    )
    assert _run(capsys, *store, "node", "manage", "n1")[0] == 0
    code, out, _ = _run(capsys, *store, "node", "list", "-f", "json")
    assert code == 0
    assert [(n["name"], n["provision_state"]) for n in json.loads(out)] == [("n1", "manageable")]
    # The store was the factory's: nothing went to a database file.
    assert not list(Path(os.environ["XDG_DATA_HOME"]).glob("**/*.sqlite"))


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("fsm_test_stores", "expected MODULE:FACTORY"),
        ("no_such_module_here:make", "cannot import no_such_module_here"),
        ("fsm_test_stores:absent", "has no callable 'absent'"),
        ("fsm_test_stores:not_a_store", "lacks the methods of ironic_fsm.stores.Store"),
    ],
)
def test_a_bad_factory_is_a_clear_error(
    factory: Path, capsys: pytest.CaptureFixture[str], spec: str, words: str
) -> None:
    code, _, err = _run(capsys, "--store", spec, "node", "list")
    assert code == 1
    assert words in err
    assert "Traceback" not in err


def test_serve_runs_on_the_applications_store(factory: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": f"{factory}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    with serve_api("--store", "fsm_test_stores:make", "serve", env=env, cwd=tmp_path) as (
        url,
        lines,
    ):
        headers = {"X-OpenStack-Ironic-API-Version": "latest"}
        created = httpx.post(
            f"{url}/v1/nodes", json={"driver": "fake-hardware", "name": "kv"},
            headers=headers, timeout=60,
        )  # fmt: skip
        assert created.status_code == 201, created.text
        listed = httpx.get(f"{url}/v1/nodes", headers=headers, timeout=60).json()["nodes"]
        assert [n["name"] for n in listed] == ["kv"]
    assert any("Serving the store fsm_test_stores:make" in line for line in lines), "".join(lines)
