"""The ``ironic-fsm`` command line, driven in-process through ``main([...])``.

Every test uses its own SQLite file (``--db``), so the commands talk to the
real ``SQLStore`` exactly as successive shell invocations would. A few
tests run the installed console script in a subprocess, to check what a
shell sees: exit codes, and that no database driver is loaded when no
store is needed.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_harness import Result, Run, ok
from helpers import python_ok

from ironic_fsm import cli
from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import StepsNotAvailable

#: Also for the tests that do not ``run`` (see ``cli_env`` in conftest).
pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture
def run(db: str, capsys: pytest.CaptureFixture[str]) -> Run:
    """``run("node", "list")`` runs ``ironic-fsm --db DB node list`` in-process."""

    def _run(*argv: str, use_db: bool = True) -> Result:
        capsys.readouterr()  # drop anything printed before
        code = cli.main([*(["--db", db] if use_db else []), *argv])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return _run


def show(run: Run, node: str) -> dict[str, Any]:
    result = run("node", "show", node, "--format", "json")
    assert result.code == 0, result.err
    data: dict[str, Any] = json.loads(result.out)
    return data


def state_of(run: Run, node: str) -> str:
    return str(show(run, node)["provision_state"])


def write_json(path: Path, data: object) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


FACTORY_RESET = [{"interface": "bios", "step": "factory_reset"}]


def managed(run: Run, name: str = "n1", *extra: str) -> str:
    ok(run("node", "create", "--name", name, *extra))
    ok(run("node", "manage", name))
    return name


# -- node records ------------------------------------------------------------------------


def test_create_show_list_set_unset_delete(run: Run) -> None:
    created = ok(
        run(
            "node",
            "create",
            "--name",
            "n1",
            "--driver-info",
            "ipmi_address=10.0.0.1",
            "--property",
            "cpus=8",
            "--extra",
            "rack=r1",
            "--resource-class",
            "baremetal",
            "--trait",
            "CUSTOM_A",
            "--trait",
            "CUSTOM_B",
            "--format",
            "json",
        )
    )
    node = json.loads(created.out)
    assert node["name"] == "n1"
    assert node["driver"] == "fake-hardware"
    assert node["provision_state"] == "enroll"
    assert node["driver_info"] == {"ipmi_address": "10.0.0.1"}
    assert node["properties"] == {"cpus": 8}
    assert node["extra"] == {"rack": "r1"}
    assert node["resource_class"] == "baremetal"
    assert node["traits"] == ["CUSTOM_A", "CUSTOM_B"]

    # Shown by name and by UUID; the table has one row per field.
    table = ok(run("node", "show", "n1")).out
    assert "provision_state" in table
    assert "enroll" in table
    assert show(run, node["uuid"])["name"] == "n1"

    # The list's columns are Ironic's client's, named by their fields as it names them.
    listed = ok(run("node", "list")).out.splitlines()
    assert [cell.strip() for cell in listed[1].strip("|").split("|")] == [
        "uuid",
        "name",
        "instance_uuid",
        "power_state",
        "provision_state",
        "maintenance",
    ]
    assert len(listed) == 5  # rule, header, rule, one row, rule
    assert node["uuid"] in listed[3]
    assert "n1" in listed[3]

    ok(
        run(
            "node",
            "set",
            "n1",
            "--name",
            "n2",
            "--driver-info",
            "ipmi_username=admin",
            "--property",
            "memory_mb=4096",
            "--extra",
            "rack=r2",
            "--instance-info",
            "image_source=http://img",
            "--maintenance",
            "--maintenance-reason",
            "disk swap",
            "--automated-clean",
            "false",
            "--target-raid-config",
            '{"logical_disks": [{"size_gb": 10, "raid_level": "1"}]}',
        )
    )
    after = show(run, "n2")
    assert after["driver_info"] == {"ipmi_address": "10.0.0.1", "ipmi_username": "admin"}
    assert after["properties"] == {"cpus": 8, "memory_mb": 4096}
    assert after["extra"] == {"rack": "r2"}
    assert after["instance_info"] == {"image_source": "http://img"}
    assert after["maintenance"] is True
    assert after["maintenance_reason"] == "disk swap"
    assert after["automated_clean"] is False
    assert after["target_raid_config"]["logical_disks"][0]["size_gb"] == 10

    ok(
        run(
            "node",
            "unset",
            "n2",
            "--driver-info",
            "ipmi_username",
            "--property",
            "cpus",
            "--extra",
            "rack",
            "--extra",
            "absent",
            "--instance-info",
            "image_source",
            "--maintenance",
            "--automated-clean",
            "--target-raid-config",
        )
    )
    after = show(run, "n2")
    assert after["driver_info"] == {"ipmi_address": "10.0.0.1"}
    assert after["properties"] == {"memory_mb": 4096}
    assert after["extra"] == {}
    assert after["instance_info"] == {}
    assert after["maintenance"] is False
    assert after["maintenance_reason"] is None
    assert after["automated_clean"] is None
    assert after["target_raid_config"] == {}


def test_target_raid_config_from_file(run: Run, tmp_path: Path) -> None:
    ok(run("node", "create", "--name", "n1"))
    target = {"logical_disks": [{"size_gb": "MAX", "raid_level": "1"}]}
    raid = write_json(tmp_path / "raid.json", target)
    ok(run("node", "set", "n1", "--target-raid-config", f"@{raid}"))
    assert show(run, "n1")["target_raid_config"] == target
    bad = run("node", "set", "n1", "--target-raid-config", "[1, 2]")
    assert bad.code == 1
    assert "--target-raid-config" in bad.err
    assert "JSON object" in bad.err


def test_set_and_unset_need_an_option(run: Run) -> None:
    ok(run("node", "create", "--name", "n1"))
    for command in ("set", "unset"):
        result = run("node", command, "n1")
        assert result.code == 2
        assert "nothing to" in result.err


@pytest.mark.parametrize(
    "argv",
    [
        ["node", "create", "--driver-info", "novalue"],
        ["node", "create", "--property", "=x"],
        ["node", "set", "n1", "--automated-clean", "maybe"],
        ["node", "power", "sideways", "n1"],
        ["node", "list", "--retired", "--unretired"],
        ["node"],
        [],
    ],
)
def test_bad_usage_exits_2(run: Run, argv: list[str]) -> None:
    result = run(*argv)
    assert result.code == 2
    assert "usage:" in result.err


def test_duplicate_name_is_an_error(run: Run) -> None:
    ok(run("node", "create", "--name", "n1"))
    result = run("node", "create", "--name", "n1")
    assert result.code == 1
    assert result.err.startswith("error: ")
    assert "n1" in result.err


def test_unknown_driver_is_an_error(run: Run) -> None:
    result = run("node", "create", "--driver", "no-such-hardware")
    assert result.code == 1
    assert "no-such-hardware" in result.err


def test_delete_refused_in_active(run: Run) -> None:
    managed(run, "n1")
    ok(run("node", "provide", "n1"))
    ok(run("node", "deploy", "n1"))
    result = run("node", "delete", "n1")
    assert result.code == 1
    assert result.err.startswith("error: ")
    assert "active" in result.err
    assert state_of(run, "n1") == "active"


def test_delete(run: Run) -> None:
    managed(run, "n1")
    ok(run("node", "create", "--name", "n2"))
    ok(run("node", "create", "--name", "n3"))
    ok(run("node", "provide", "n1"))
    ok(run("node", "deploy", "n1"))
    # Each node on its own: the refusal for n1 does not stop n2 and n3.
    result = run("node", "delete", "n1", "n2", "n3")
    assert result.code == 1
    assert "active" in result.err
    assert "Deleted node n2" in result.out
    assert "Deleted node n3" in result.out
    gone = run("node", "show", "n2")
    assert gone.code == 1
    assert gone.err.startswith("error: ")
    assert "n2" in gone.err
    assert [n["name"] for n in json.loads(ok(run("node", "list", "-f", "json")).out)] == ["n1"]


# -- secrets ---------------------------------------------------------------------------------


def test_secrets_are_never_printed(run: Run) -> None:
    outputs = [
        run("node", "create", "--name", "n1", "--driver-info", "ipmi_password=hunter2"),
        run(
            "node",
            "create",
            "--name",
            "n2",
            "--driver-info",
            "ipmi_password=hunter2",
            "--format",
            "json",
        ),
        run("node", "show", "n1"),
        run("node", "show", "n1", "--format", "json"),
        run("node", "list"),
        run("node", "list", "--format", "json"),
    ]
    for result in outputs:
        assert result.code == 0, result.err
        assert "hunter2" not in result.out + result.err
    assert show(run, "n1")["driver_info"]["ipmi_password"] == "******"


def test_rescue_password_masked(run: Run) -> None:
    managed(run)
    ok(run("node", "provide", "n1"))
    ok(run("node", "deploy", "n1"))
    rescued = ok(run("node", "rescue", "n1", "--rescue-password", "s3cr3t-pw"))
    assert "'rescue'" in rescued.out
    assert state_of(run, "n1") == "rescue"
    assert "s3cr3t-pw" not in ok(run("node", "show", "n1")).out
    assert show(run, "n1")["instance_info"]["rescue_password"] == "******"
    ok(run("node", "unrescue", "n1"))
    assert state_of(run, "n1") == "active"


def test_rescue_requires_password(run: Run) -> None:
    result = run("node", "rescue", "n1")
    assert result.code == 2
    assert "--rescue-password" in result.err


# -- the lifecycle ------------------------------------------------------------------------------


def test_full_lifecycle(run: Run) -> None:
    ok(run("node", "create", "--name", "n1"))
    expected = [
        ("manage", "manageable"),
        ("provide", "available"),
        ("deploy", "active"),
        ("rebuild", "active"),
        ("undeploy", "available"),
    ]
    for verb, state in expected:
        result = ok(run("node", verb, "n1"))
        assert f"'{state}'" in result.out
        node = show(run, "n1")
        assert node["provision_state"] == state, verb
        assert node["target_provision_state"] is None
        assert node["last_error"] is None
        assert node["reservation"] is None


def test_lifecycle_on_every_sql_backend(sql_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    # --db takes any URL SQLStore accepts: the same commands work on PostgreSQL.
    def run_url(*argv: str) -> Result:
        code = cli.main(["--db", sql_url, *argv])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    ok(run_url("node", "create", "--name", "n1", "--driver-info", "ipmi_password=hunter2"))
    for verb in ("manage", "provide", "deploy"):
        ok(run_url("node", verb, "n1"))
    node = json.loads(ok(run_url("node", "show", "n1", "-f", "json")).out)
    assert node["provision_state"] == "active"
    assert node["driver_info"] == {"ipmi_password": "******"}
    listed = json.loads(
        ok(run_url("node", "list", "--provision-state", "active", "-f", "json")).out
    )
    assert [n["name"] for n in listed] == ["n1"]


def test_invalid_verb_for_state(run: Run) -> None:
    ok(run("node", "create", "--name", "n1"))
    result = run("node", "deploy", "n1")
    assert result.code == 1
    assert result.err.startswith("error: ")
    assert "deploy" in result.err
    assert "enroll" in result.err
    assert state_of(run, "n1") == "enroll"


def test_deploy_with_deploy_steps(run: Run, tmp_path: Path) -> None:
    managed(run)
    ok(run("node", "provide", "n1"))
    steps = write_json(
        tmp_path / "deploy.json",
        [{"interface": "bios", "step": "factory_reset", "args": {}, "priority": 90}],
    )
    ok(run("node", "deploy", "n1", "--deploy-steps", steps))
    assert state_of(run, "n1") == "active"


def test_service_with_steps_file(run: Run, tmp_path: Path) -> None:
    managed(run)
    ok(run("node", "provide", "n1"))
    ok(run("node", "deploy", "n1"))
    steps = write_json(tmp_path / "svc.json", [{"interface": "vendor", "step": "log_passthrough"}])
    ok(run("node", "service", "n1", "--service-steps", steps))
    assert state_of(run, "n1") == "active"
    missing = run("node", "service", "n1")
    assert missing.code == 2
    assert "--service-steps" in missing.err
    assert "--runbook" in missing.err


def test_unknown_runbook_is_an_error(run: Run) -> None:
    managed(run)
    result = run("node", "clean", "n1", "--runbook", "nightly")
    assert result.code == 1
    assert "nightly" in result.err


def test_power(run: Run) -> None:
    ok(run("node", "create", "--name", "n1"))
    assert "power on" in ok(run("node", "power", "on", "n1")).out
    assert show(run, "n1")["power_state"] == "power on"
    ok(run("node", "power", "off", "n1", "--soft"))
    assert show(run, "n1")["power_state"] == "power off"
    ok(run("node", "power", "reboot", "n1"))
    assert show(run, "n1")["power_state"] == "power on"


# -- cleaning ------------------------------------------------------------------------------------


def test_clean_with_steps_file(run: Run, tmp_path: Path) -> None:
    managed(run)
    steps = write_json(tmp_path / "steps.json", FACTORY_RESET)
    result = ok(run("node", "clean", "n1", "--clean-steps", steps))
    assert "'manageable'" in result.out
    node = show(run, "n1")
    assert node["provision_state"] == "manageable"
    assert node["last_error"] is None


def test_clean_with_steps_from_stdin(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    managed(run)
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(FACTORY_RESET)))
    ok(run("node", "clean", "n1", "--clean-steps", "-"))
    assert state_of(run, "n1") == "manageable"


def test_clean_with_disable_ramdisk(run: Run) -> None:
    managed(run)
    in_band = json.dumps([{"interface": "bios", "step": "factory_reset"}])
    out_of_band = json.dumps([{"interface": "vendor", "step": "log_passthrough"}])
    ok(run("node", "clean", "n1", "--clean-steps", out_of_band, "--disable-ramdisk"))
    assert state_of(run, "n1") == "manageable"
    # A step that needs the ramdisk cannot run without it: the request is refused.
    failed = run("node", "clean", "n1", "--clean-steps", in_band, "--disable-ramdisk")
    assert failed.code == 1
    assert "ramdisk" in failed.err
    assert state_of(run, "n1") == "manageable"


def test_clean_with_inline_steps(run: Run) -> None:
    managed(run)
    ok(run("node", "clean", "n1", "--clean-steps", json.dumps(FACTORY_RESET)))
    assert state_of(run, "n1") == "manageable"


@pytest.mark.parametrize("verb", ["deploy", "provide", "manage", "service"])
def test_clean_steps_with_another_verb_is_bad_usage(run: Run, tmp_path: Path, verb: str) -> None:
    managed(run)
    steps = write_json(tmp_path / "steps.json", FACTORY_RESET)
    result = run("node", verb, "n1", "--clean-steps", steps)
    assert result.code == 2
    assert f"--clean-steps can only be used with 'clean', not with '{verb}'" in result.err
    assert state_of(run, "n1") == "manageable"


def test_other_misplaced_options_are_bad_usage(run: Run) -> None:
    for argv in (
        ("node", "manage", "n1", "--rescue-password", "x"),
        ("node", "provide", "n1", "--disable-ramdisk"),
        ("node", "clean", "n1", "--clean-steps", "[]", "--deploy-steps", "[]"),
    ):
        result = run(*argv)
        assert result.code == 2
        assert "can only be used with" in result.err


def test_clean_without_steps_is_an_error(run: Run) -> None:
    managed(run)
    result = run("node", "clean", "n1")
    assert result.code == 2
    assert "--clean-steps" in result.err
    assert "--runbook" in result.err
    assert state_of(run, "n1") == "manageable"


def test_clean_with_both_steps_and_runbook_is_an_error(run: Run) -> None:
    result = run("node", "clean", "n1", "--clean-steps", "[]", "--runbook", "rb")
    assert result.code == 2
    assert "exactly one of" in result.err


def test_invalid_json_steps_file(run: Run, tmp_path: Path) -> None:
    managed(run)
    bad = tmp_path / "broken-steps.json"
    bad.write_text('[{"interface": "bios", ', encoding="utf-8")
    result = run("node", "clean", "n1", "--clean-steps", str(bad))
    assert result.code == 1
    assert "is not valid JSON" in result.err
    assert "broken-steps.json" in result.err
    assert "--clean-steps" in result.err
    assert state_of(run, "n1") == "manageable"


def test_steps_file_must_hold_a_list(run: Run, tmp_path: Path) -> None:
    managed(run)
    steps = write_json(tmp_path / "steps.json", {"interface": "bios"})
    result = run("node", "clean", "n1", "--clean-steps", steps)
    assert result.code == 1
    assert "expected a JSON list" in result.err


def test_missing_steps_file(run: Run, tmp_path: Path) -> None:
    managed(run)
    result = run("node", "clean", "n1", "--clean-steps", str(tmp_path / "nope.json"))
    assert result.code == 1
    assert "nope.json" in result.err


def test_failed_clean_exits_1_with_last_error(run: Run) -> None:
    # raid.create_configuration without a target RAID config fails: clean failed.
    managed(run)
    steps = json.dumps([{"interface": "raid", "step": "create_configuration"}])
    result = run("node", "clean", "n1", "--clean-steps", steps)
    assert result.code == 1
    assert "clean failed" in result.err
    node = show(run, "n1")
    assert node["provision_state"] == "clean failed"
    assert node["last_error"]
    assert node["last_error"] in result.err


def test_clean_steps_listing(run: Run) -> None:
    ok(run("node", "create", "--name", "n1"))
    table = ok(run("node", "clean-steps", "n1")).out.splitlines()
    assert table[1].split()[:6] == ["|", "interface", "|", "step", "|", "priority"]
    assert any("factory_reset" in line for line in table)
    steps = json.loads(ok(run("node", "clean-steps", "n1", "--format", "json")).out)
    reset = next(st for st in steps if st["step"] == "factory_reset")
    assert reset["interface"] == "bios"
    apply = next(st for st in steps if st["step"] == "apply_configuration")
    assert apply["argsinfo"]["settings"]["required"] is True  # argsinfo, whole, in JSON
    priorities = [st["priority"] for st in steps]
    assert priorities == sorted(priorities, reverse=True)
    high = json.loads(
        ok(run("node", "clean-steps", "n1", "--min-priority", "1", "--format", "json")).out
    )
    assert high
    assert all(st["priority"] >= 1 for st in high)
    assert len(high) < len(steps)


@pytest.mark.parametrize(("retry_after", "hint"), [(30, "retry in 30 seconds"), (-1, "later")])
def test_clean_steps_not_available(
    run: Run, monkeypatch: pytest.MonkeyPatch, retry_after: float, hint: str
) -> None:
    ok(run("node", "create", "--name", "n1"))

    def not_yet(self: Conductor, ident: str, min_priority: int = 0) -> list[dict[str, Any]]:
        raise StepsNotAvailable(
            f"Node {ident}: the agent has not reported its steps yet", retry_after=retry_after
        )

    monkeypatch.setattr(Conductor, "get_clean_steps", not_yet)
    result = run("node", "clean-steps", "n1")
    assert result.code == 1
    assert "error: Node n1: the agent has not reported its steps yet" in result.err
    assert hint in result.err


# -- retirement, maintenance, filters ---------------------------------------------------------


def test_retire_in_available_refused(run: Run) -> None:
    managed(run)
    ok(run("node", "provide", "n1"))
    result = run("node", "set", "n1", "--retired", "--retired-reason", "old")
    assert result.code == 1
    assert result.err.startswith("error: ")
    assert "retired" in result.err
    assert "available" in result.err
    assert show(run, "n1")["retired"] is False


def test_retire_in_manageable_then_list_retired(run: Run) -> None:
    managed(run, "old")
    managed(run, "young")
    ok(run("node", "set", "old", "--retired", "--retired-reason", "end of life"))
    node = show(run, "old")
    assert node["retired"] is True
    assert node["retired_reason"] == "end of life"

    retired = json.loads(ok(run("node", "list", "--retired", "--format", "json")).out)
    assert [n["name"] for n in retired] == ["old"]
    unretired = json.loads(ok(run("node", "list", "--no-retired", "--format", "json")).out)
    assert [n["name"] for n in unretired] == ["young"]
    # --unretired, this tool's older spelling, still works.
    unretired = json.loads(ok(run("node", "list", "--unretired", "--format", "json")).out)
    assert [n["name"] for n in unretired] == ["young"]
    assert "old" in ok(run("node", "list", "--retired")).out

    # Retired nodes cannot be provided; unretiring clears the reason.
    refused = run("node", "provide", "old")
    assert refused.code == 1
    assert "retired" in refused.err
    ok(run("node", "unset", "old", "--retired"))
    node = show(run, "old")
    assert node["retired"] is False
    assert node["retired_reason"] is None


def test_list_filters(run: Run) -> None:
    managed(run, "a")
    ok(run("node", "create", "--name", "b"))
    managed(run, "c")
    ok(run("node", "set", "c", "--maintenance", "--maintenance-reason", "fan"))

    def names(*filters: str) -> list[str]:
        out = ok(run("node", "list", *filters, "--format", "json")).out
        return [n["name"] for n in json.loads(out)]

    assert names() == ["a", "b", "c"]
    assert names("--provision-state", "manageable") == ["a", "c"]
    assert names("--provision-state", "enroll") == ["b"]
    assert names("--maintenance") == ["c"]
    assert names("--no-maintenance") == ["a", "b"]
    assert names("--driver", "fake-hardware") == ["a", "b", "c"]
    assert names("--driver", "ipmi") == []
    assert names("--provision-state", "manageable", "--no-maintenance") == ["a"]

    table = ok(run("node", "list", "--provision-state", "enroll")).out.splitlines()
    assert len(table) == 5
    assert "| b " in table[3]


def test_node_locked_is_reported_as_retryable(run: Run, db: str) -> None:
    ok(run("node", "create", "--name", "n1"))
    from ironic_fsm.stores import SQLStore

    store = SQLStore(cli.resolve_db_url(db))
    try:
        store.reserve("n1", "elsewhere:1:abcd")
    finally:
        store.close()
    result = run("node", "manage", "n1")
    assert result.code == 1
    assert "locked" in result.err
    assert "elsewhere:1:abcd" in result.err
    assert "retryable" in result.err
    assert state_of(run, "n1") == "enroll"


# -- lifecycle documentation --------------------------------------------------------------------


def test_states_table(run: Run) -> None:
    lines = ok(run("states", use_db=False)).out.splitlines()

    def cells(line: str) -> list[str]:
        return [cell.strip() for cell in line.strip("|").split("|")]

    assert cells(lines[1]) == ["state", "stable", "default_target", "accepted_events"]
    rows = [cells(line) for line in lines[3:-1]]
    assert len(rows) == 30
    by_state = {row[0]: row for row in rows}
    assert "clean wait" in by_state
    assert "wait call-back" in by_state
    assert by_state["manageable"][1] == "yes"
    assert "provide" in by_state["manageable"][3]
    assert "clean" in by_state["manageable"][3]
    assert by_state["cleaning"][1:3] == ["no", "available"]


def test_states_json(run: Run) -> None:
    states = json.loads(ok(run("states", "--format", "json", use_db=False)).out)
    assert len(states) == 30
    enroll = states[0]
    # Keyed by column, as Ironic's client does; booleans and lists stay typed.
    assert enroll == {
        "state": "enroll",
        "stable": True,
        "default_target": None,
        "accepted_events": ["manage"],
    }


@pytest.mark.parametrize(("fmt", "marker"), [("dot", "digraph"), ("mermaid", "stateDiagram")])
def test_diagram(run: Run, tmp_path: Path, fmt: str, marker: str) -> None:
    text = ok(run("diagram", "--format", fmt, use_db=False)).out
    assert marker in text
    assert "clean wait" in text
    target = tmp_path / f"lifecycle.{fmt}"
    result = ok(run("diagram", "--format", fmt, "--output", str(target), use_db=False))
    assert result.out == ""
    assert target.read_text(encoding="utf-8") == text


def test_diagram_svg_without_dot(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = run("diagram", "--format", "svg", use_db=False)
    assert result.code == 1
    assert "'dot'" in result.err
    assert "Graphviz" in result.err


def test_diagram_svg_runs_dot(run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake_dot = bindir / "dot"
    received = tmp_path / "received.dot"
    # A stand-in for Graphviz: records its input and answers with an SVG.
    fake_dot.write_text(
        f'#!/bin/sh\n[ "$1" = "-Tsvg" ] || exit 3\ncat > "{received}"\n'
        "echo '<svg>lifecycle</svg>'\n",
        encoding="utf-8",
    )
    fake_dot.chmod(fake_dot.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    output = tmp_path / "lifecycle.svg"
    ok(run("diagram", "--format", "svg", "-o", str(output), use_db=False))
    assert output.read_text(encoding="utf-8").strip() == "<svg>lifecycle</svg>"
    assert "clean wait" in received.read_text(encoding="utf-8")

    fake_dot.write_text("#!/bin/sh\necho 'syntax error' >&2\nexit 1\n", encoding="utf-8")
    failed = run("diagram", "--format", "svg", use_db=False)
    assert failed.code == 1
    assert "syntax error" in failed.err


# -- help, the database, the console script -------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["node", "--help"],
        ["node", "create", "--help"],
        ["node", "set", "--help"],
        ["node", "clean", "--help"],
        ["node", "power", "on", "--help"],
        ["node", "clean-steps", "--help"],
        ["states", "--help"],
        ["diagram", "--help"],
    ],
)
def test_help(run: Run, argv: list[str]) -> None:
    result = run(*argv, use_db=False)
    assert result.code == 0
    assert result.out.startswith("usage: ironic-fsm")


def test_clean_help_advertises_only_its_options(run: Run) -> None:
    clean = ok(run("node", "clean", "--help", use_db=False)).out
    assert "--clean-steps" in clean
    assert "--disable-ramdisk" in clean
    assert "--deploy-steps" not in clean
    assert "--rescue-password" not in clean
    deploy = ok(run("node", "deploy", "--help", use_db=False)).out
    assert "--deploy-steps" in deploy
    assert "--clean-steps" not in deploy


def test_db_after_the_command(run: Run, db: str) -> None:
    ok(run("node", "create", "--name", "n1", "--db", db, use_db=False))
    assert "n1" in ok(run("node", "list")).out


def test_env_var_names_the_database(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "from-env.sqlite"
    monkeypatch.setenv(cli.DB_ENV, str(elsewhere))
    ok(run("node", "create", "--name", "env-node", use_db=False))
    assert elsewhere.exists()
    assert "env-node" in ok(run("node", "list", "--db", str(elsewhere), use_db=False)).out
    # --db wins over the environment.
    assert "env-node" not in ok(run("node", "list")).out


def test_default_database_in_xdg_data_home(run: Run, tmp_path: Path) -> None:
    ok(run("node", "create", "--name", "default-node", use_db=False))
    assert (tmp_path / "xdg" / "ironic_fsm" / "ironic_fsm.sqlite").exists()
    assert "default-node" in ok(run("node", "list", use_db=False)).out


def test_resolve_db_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.resolve_db_url("nodes.db") == f"sqlite:///{tmp_path / 'nodes.db'}"
    assert cli.resolve_db_url("/abs/nodes.db") == "sqlite:////abs/nodes.db"
    url = "postgresql+psycopg://fsm@localhost/fsm"
    assert cli.resolve_db_url(url) == url
    monkeypatch.setenv(cli.DB_ENV, "sqlite:///from-env.db")
    assert cli.resolve_db_url(None) == "sqlite:///from-env.db"
    monkeypatch.delenv(cli.DB_ENV)
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cli.default_db_path() == (
        tmp_path / "home" / ".local" / "share" / "ironic_fsm" / "ironic_fsm.sqlite"
    )


def test_database_passwords_are_not_echoed(run: Run) -> None:
    result = run(
        "node", "list", "--db", "nosuchdialect://fsm:pa55word@db.example/fsm", use_db=False
    )
    assert result.code == 1
    assert result.err.startswith("error: ")
    assert "nosuchdialect" in result.err
    assert "pa55word" not in result.err


def test_unopenable_database(run: Run, tmp_path: Path) -> None:
    # A directory where the database file should be.
    (tmp_path / "a-directory").mkdir()
    result = run("node", "list", "--db", str(tmp_path / "a-directory"), use_db=False)
    assert result.code == 1
    assert result.err.startswith("error: ")
    assert "Traceback" not in result.err


def _console_script() -> list[str]:
    script = Path(sys.executable).parent / "ironic-fsm"
    found = str(script) if script.exists() else shutil.which("ironic-fsm")
    return [found] if found else [sys.executable, "-m", "ironic_fsm.cli"]


def _shell(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != cli.DB_ENV}
    return subprocess.run(
        [*_console_script(), *argv],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )


def test_console_script_exit_codes(db: str, tmp_path: Path) -> None:
    created = _shell("--db", db, "node", "create", "--name", "n1")
    assert created.returncode == 0, created.stderr
    managed = _shell("--db", db, "node", "manage", "n1")
    assert managed.returncode == 0, managed.stderr
    cleaned = _shell(
        "--db", db, "node", "clean", "n1", "--clean-steps", "-", stdin=json.dumps(FACTORY_RESET)
    )
    assert cleaned.returncode == 0, cleaned.stderr
    assert "'manageable'" in cleaned.stdout

    misplaced = _shell("--db", db, "node", "deploy", "n1", "--clean-steps", "-", stdin="[]")
    assert misplaced.returncode == 2
    assert "--clean-steps can only be used with 'clean'" in misplaced.stderr

    missing = _shell("--db", db, "node", "show", "nope")
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: ")
    assert "Traceback" not in missing.stderr

    helped = _shell("node", "clean", "--help")
    assert helped.returncode == 0
    assert "--clean-steps" in helped.stdout


def test_module_entry_point_and_light_imports() -> None:
    # `python -m ironic_fsm.cli` works, and commands without a store load no database driver.
    code = (
        "import sys; from ironic_fsm.cli import main; rc = main(['states']); "
        "drivers = {'sqlite3', 'psycopg', 'ironic_fsm.stores.sql'} & set(sys.modules); "
        "print(drivers or 'LIGHT'); sys.exit(rc)"
    )
    assert python_ok(code).strip().endswith("LIGHT")
    module = subprocess.run(
        [sys.executable, "-m", "ironic_fsm.cli", "diagram", "--format", "dot"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert module.returncode == 0
    assert "clean wait" in module.stdout


def test_settings_file_brings_config_runbooks_and_templates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "settings.sqlite")
    settings = tmp_path / "settings.json"
    settings.write_text(
        json.dumps(
            {
                "config": {"automated_clean": False},
                "runbooks": {
                    "CUSTOM_FIRMWARE": {
                        "steps": [{"interface": "vendor", "step": "log_passthrough"}],
                        "traits": ["CUSTOM_FIRMWARE"],
                    }
                },
                "deploy_templates": {},
            }
        )
    )
    assert cli.main(["--db", db, "--config", str(settings), "node", "create", "--name", "rb",
                 "--trait", "CUSTOM_FIRMWARE"]) == 0  # fmt: skip
    for verb in ("manage",):
        assert cli.main(["--db", db, "--config", str(settings), "node", verb, "rb"]) == 0
    assert cli.main(["--db", db, "--config", str(settings), "node", "clean", "rb",
                 "--runbook", "CUSTOM_FIRMWARE"]) == 0  # fmt: skip
    capsys.readouterr()
    assert cli.main(["--db", db, "node", "show", "rb", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["provision_state"] == "manageable"
    assert shown["driver_internal_info"]["fake_log_passthrough"] == 1
    # automated_clean False from the settings file: provide skips the steps.
    assert cli.main(["--db", db, "--config", str(settings), "node", "provide", "rb"]) == 0
    capsys.readouterr()
    assert cli.main(["--db", db, "node", "show", "rb", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["driver_internal_info"]["fake_log_passthrough"] == 1


def test_bad_settings_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "bad.sqlite")
    settings = tmp_path / "bad.json"
    settings.write_text('{"config": {"automated_clean": "yes"}}')
    assert cli.main(["--db", db, "--config", str(settings), "node", "list"]) == 1
    assert "automated_clean" in capsys.readouterr().err
    settings.write_text("{nope")
    assert cli.main(["--db", db, "--config", str(settings), "node", "list"]) == 1
    assert "not valid JSON" in capsys.readouterr().err
