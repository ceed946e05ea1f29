"""``ironic-fsm node list --limit N --marker UUID --sort KEY[:DIR]``: OSC's paging options.

Driven in-process through ``main([...])`` on a SQLite file of the test's
own; pages are read back as JSON and walked by marker.
"""

from __future__ import annotations

import pytest
from cli_harness import Run, listed, ok

#: Also for the tests that do not ``run`` (see ``cli_env`` in conftest).
pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture
def seven(run: Run) -> list[str]:
    """Seven nodes named so that name order is not creation order; their UUIDs, created order."""
    names = ["g", "c", "e", "a", "f", "b", "d"]
    for name in names:
        ok(run("node", "create", "--name", name))
    return [row["uuid"] for row in listed(run)]


def test_limit_and_marker_walk_every_node_once(run: Run, seven: list[str]) -> None:
    seen: list[str] = []
    marker: list[str] = []
    while True:
        page = [row["uuid"] for row in listed(run, "--limit", "3", *marker)]
        seen += page
        if len(page) < 3:
            break
        marker = ["--marker", page[-1]]
    assert seen == seven
    assert [row["uuid"] for row in listed(run, "--limit", "0")] == seven  # 0: no limit


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("name", "abcdefg"),
        ("name:asc", "abcdefg"),
        ("name:desc", "gfedcba"),
        ("created_at:desc", "dbfaecg"),
    ],
)
def test_sort_by_key_and_direction(run: Run, seven: list[str], spec: str, expected: str) -> None:
    assert "".join(row["name"] for row in listed(run, "--sort", spec)) == expected


def test_sort_limit_and_marker_together(run: Run, seven: list[str]) -> None:
    first = listed(run, "--sort", "name:desc", "--limit", "2")
    assert [row["name"] for row in first] == ["g", "f"]
    second = listed(run, "--sort", "name:desc", "--limit", "2", "--marker", first[-1]["uuid"])
    assert [row["name"] for row in second] == ["e", "d"]


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        (["--limit", "-1"], "argument --limit: expected a number of nodes"),
        (["--limit", "ten"], "argument --limit: expected a number of nodes"),
        (["--sort", "driver_info"], "argument --sort: cannot sort on 'driver_info'"),
        (["--sort", "name:up"], "argument --sort: the sort direction is 'asc' or 'desc'"),
    ],
)
def test_bad_paging_options_are_bad_usage(
    run: Run, seven: list[str], argv: list[str], text: str
) -> None:
    result = run("node", "list", *argv)
    assert result.code == 2
    assert result.out == ""
    assert text in result.err


def test_a_marker_that_is_no_node_is_one_line_of_error(run: Run, seven: list[str]) -> None:
    missing = "0b6d7c0a-5d5e-4b8e-9d47-4f4d6a0e0f11"
    result = run("node", "list", "--marker", missing)
    assert result.code == 1
    assert result.out == ""
    assert result.err == f"error: The marker {missing} is not the UUID of a node\n"
