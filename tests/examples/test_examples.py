"""Every script under examples/ runs, as a newcomer would run it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from ironic_fsm import Node, states

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.py"))


def test_there_are_examples() -> None:
    assert EXAMPLES, "examples/ has no scripts"


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), f"{script.name} printed nothing"


def test_quickstart_story() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES[0].parent / "quickstart.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert any("--manage--> verifying" in line for line in lines)
    assert any("--done--> active" in line for line in lines)
    assert "vendor.log_passthrough" in done.stdout
    assert lines[-1].endswith("is 'available', power 'power off'")


def test_quickstart_main_ends_in_available(capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(__file__).parents[2] / "examples" / "quickstart.py"
    spec = importlib.util.spec_from_file_location("quickstart_example", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    node = module.main()
    assert isinstance(node, Node)
    assert node.provision_state == states.AVAILABLE
    assert node.target_provision_state is None
    assert node.last_error is None
    out = capsys.readouterr().out
    assert "vendor.log_passthrough" in out
    assert "deploy.deploy" in out
