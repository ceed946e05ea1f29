"""The user guide names every core dependency ``pyproject.toml`` declares, and counts them.

A newcomer reads the guide to learn what ``pip install .`` brings; it once
said ten while there were eleven.
"""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
NUMBERS = (
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
)  # fmt: skip


def test_the_user_guide_lists_the_core_dependencies() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = [re.split(r"[<>=!~\[ ;]", spec, maxsplit=1)[0] for spec in declared]
    guide = (ROOT / "docs" / "userguide.rst").read_text()
    found = re.search(r"The core has (\w+) small dependencies(.*?)\n\n", guide, re.S)
    assert found, "the user guide no longer says what the core depends on"
    assert found.group(1) == NUMBERS[len(names) - 1]
    listed = set(re.findall(r"``([\w.-]+)``", found.group(2)))
    assert {name.lower() for name in names} <= {name.lower() for name in listed}, names
