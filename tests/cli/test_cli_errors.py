"""``ironic-fsm`` never prints a traceback: every error is one line and a non-zero exit.

Hostile settings files, step lists and filters are fed to the real
``main([...])``; the process-level checks (missing extras, ``--debug``)
run the command line in a subprocess, because that is what they are about.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_harness import Result, Run
from helpers import python_c

from ironic_fsm import cli
from ironic_fsm.conductor import Conductor
from ironic_fsm.stores import SQLStore

#: Also for the tests that do not ``run`` (see ``cli_env`` in conftest).
pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.fixture
def run(db: str, capsys: pytest.CaptureFixture[str]) -> Run:
    def _run(*argv: str, stdin: str | None = None) -> Result:
        capsys.readouterr()
        if stdin is not None:
            import io

            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(sys, "stdin", io.StringIO(stdin))
                code = cli.main(["--db", db, *argv])
        else:
            code = cli.main(["--db", db, *argv])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return _run


def one_line_error(result: Result, *needles: str) -> str:
    """The single ``error: ...`` line of a failed command, checked for each needle."""
    assert result.code == 1, result
    assert "Traceback" not in result.err
    lines = result.err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: "), lines
    for needle in needles:
        assert needle in lines[0]
    return lines[0]


def show(run: Run, node: str) -> dict[str, Any]:
    result = run("node", "show", node, "-f", "json")
    assert result.code == 0, result.err
    data: dict[str, Any] = json.loads(result.out)
    return data


# -- the settings file ---------------------------------------------------------------------------

STEP = {"interface": "bios", "step": "factory_reset"}


@pytest.mark.parametrize(
    ("settings", "where"),
    [
        ([], "expected a JSON object"),
        ("just text", "expected a JSON object"),
        ({"config": []}, "config: expected an object, got a list"),
        ({"config": {"automated_clean": "yes"}}, "config: Config.automated_clean"),
        ({"config": {"no_such_option": 1}}, "config: Unknown Config option(s): no_such_option"),
        ({"config": {"automated_cleaning_step_source": "x"}}, "config: "),
        ({"runbooks": []}, "runbooks: expected an object, got a list"),
        ({"runbooks": {"R": []}}, "runbooks.R: expected an object, got a list"),
        ({"runbooks": {"R": {}}}, "runbooks.R: needs a 'steps' list"),
        ({"runbooks": {"R": {"steps": {}}}}, "runbooks.R.steps: expected a list of steps"),
        ({"runbooks": {"R": {"steps": [1]}}}, "runbooks.R.steps[0]: expected a step object"),
        (
            {"runbooks": {"R": {"steps": [STEP, {"interface": "bios"}]}}},
            "runbooks.R.steps[1].step: expected a string, got nothing",
        ),
        (
            {"runbooks": {"R": {"steps": [{**STEP, "args": [1]}]}}},
            "runbooks.R.steps[0].args: expected an object, got a list",
        ),
        ({"runbooks": {"R": {"steps": [], "traits": 5}}}, "runbooks.R.traits: expected a list"),
        ({"runbooks": {"R": {"steps": [], "traits": [5]}}}, "runbooks.R.traits[0]: expected a"),
        ({"runbooks": {"R": {"steps": [], "trait": []}}}, "runbooks.R: unknown key(s) 'trait'"),
        ({"deploy_templates": "x"}, "deploy_templates: expected an object, got a string"),
        ({"deploy_templates": {"T": {}}}, "deploy_templates.T: expected a list of steps"),
        ({"deploy_templates": {"T": [None]}}, "deploy_templates.T[0]: expected a step object"),
        ({"runbook": {}}, "unknown key(s) 'runbook'"),
    ],
)
def test_bad_settings_file_is_one_line_naming_the_place(
    run: Run, db: str, tmp_path: Path, settings: Any, where: str
) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings), encoding="utf-8")
    line = one_line_error(run("--config", str(path), "node", "list"), where)
    assert str(path) in line
    assert not Path(db).exists()  # read before the database is opened: nothing touched


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"a": ' + "1" * 5000 + "}", "not usable JSON"),
        ("{nope", "not valid JSON"),
        ('{"config": {}}\n{"config": {}}', "(line 2, column 1)"),
    ],
)
def test_unparsable_settings_file(run: Run, tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text, encoding="utf-8")
    one_line_error(run("--config", str(path), "node", "list"), needle)


def test_unreadable_settings_files(run: Run, tmp_path: Path) -> None:
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe{}")
    one_line_error(run("--config", str(binary), "node", "list"), "not UTF-8")
    one_line_error(run("--config", str(tmp_path), "node", "list"), "cannot read")
    one_line_error(run("--config", str(tmp_path / "absent.json"), "node", "list"), "absent.json")


# -- JSON options -------------------------------------------------------------------------------


DEEP = "[" * 100_000


@pytest.mark.parametrize(
    ("verb", "option"),
    [("clean", "--clean-steps"), ("service", "--service-steps"), ("deploy", "--deploy-steps")],
)
@pytest.mark.parametrize("how", ["inline", "file", "stdin"])
def test_hostile_step_lists(run: Run, tmp_path: Path, verb: str, option: str, how: str) -> None:
    run("node", "create", "--name", "n1")
    before = show(run, "n1")
    for text, needle in (
        (DEEP, "nested too deeply"),
        ("[" + "1" * 5000 + "]", "not usable JSON"),
        ('{"interface": "bios"}', "expected a JSON list of steps, got an object"),
    ):
        if how == "inline":
            result = run("node", verb, "n1", option, text)
        elif how == "file":
            path = tmp_path / "steps.json"
            path.write_text(text, encoding="utf-8")
            result = run("node", verb, "n1", option, str(path))
        else:
            result = run("node", verb, "n1", option, "-", stdin=text)
        one_line_error(result, option, needle)
    assert show(run, "n1") == before  # nothing was asked of the node


def test_hostile_target_raid_config(run: Run, tmp_path: Path) -> None:
    run("node", "create", "--name", "n1")
    before = show(run, "n1")
    one_line_error(run("node", "set", "n1", "--target-raid-config", DEEP), "nested too deeply")
    one_line_error(run("node", "set", "n1", "--target-raid-config", "[]"), "got a list")
    binary = tmp_path / "raid.json"
    binary.write_bytes(b"\x80{}")
    one_line_error(run("node", "set", "n1", "--target-raid-config", f"@{binary}"), "not UTF-8")
    assert show(run, "n1") == before


# -- filters, retryable errors, database errors --------------------------------------------------


def test_a_filter_that_is_not_a_state_is_an_error(run: Run) -> None:
    run("node", "create", "--name", "n1")
    result = run("node", "list", "--provision-state", "bogus")
    assert result.code == 2
    assert result.out == ""
    assert "'bogus' is not a provision state" in result.err
    assert "'manageable'" in result.err  # the allowed states are named
    assert "'clean wait'" in result.err


def test_retryable_error_is_one_line(run: Run, db: str) -> None:
    run("node", "create", "--name", "n1")
    store = SQLStore(cli.resolve_db_url(db))
    try:
        store.reserve("n1", "elsewhere:1:abcd")
    finally:
        store.close()
    one_line_error(run("node", "manage", "n1"), "locked", "elsewhere:1:abcd", "retryable")


def test_a_file_that_is_not_a_database(run: Run, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database\n" * 512)
    one_line_error(run("node", "list", "--db", str(garbage)))
    one_line_error(run("node", "create", "--name", "x", "--db", str(garbage)))
    assert garbage.read_bytes() == b"this is not a database\n" * 512


def test_a_multi_line_message_is_printed_on_one_line(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ironic_fsm.exceptions import StoreError

    def failing(self: Conductor, **filters: Any) -> list[Any]:
        raise StoreError("server closed the connection unexpectedly\n\tThis probably means...")

    monkeypatch.setattr(Conductor, "list_nodes", failing)
    line = one_line_error(run("node", "list"), "unexpectedly This probably means...")
    assert "\t" not in line


def test_an_unexpected_error_is_one_line(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    # A bug anywhere below the CLI (here, injected): one line, exit 1, no traceback.
    def broken(self: Conductor, ident: str) -> Any:
        raise KeyError("surprise")

    monkeypatch.setattr(Conductor, "get_node", broken)
    run("node", "create", "--name", "n1")
    one_line_error(run("node", "show", "n1"), "unexpected KeyError", "surprise", "--debug")


# -- the process: tracebacks only with --debug, missing extras ------------------------------------


def _python(code: str, *argv: str, env: dict[str, str] | None = None) -> Result:
    done = python_c(code, *argv, env=env)
    return Result(done.returncode, done.stdout, done.stderr)


# Runs main() with a module made unimportable, as when its extra is not installed.
BLOCKED = (
    "import sys\n"
    "for name in sys.argv[1].split(','):\n"
    "    sys.modules[name] = None\n"
    "from ironic_fsm.cli import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (cli.DB_ENV, cli.CONFIG_ENV)}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    return env


def test_debug_prints_the_traceback(tmp_path: Path) -> None:
    # An unexpected error (a bug, injected here) while the command runs.
    code = (
        "import sys\n"
        "from ironic_fsm.conductor import Conductor\n"
        "def broken(self, **filters): return 1 / 0\n"
        "Conductor.list_nodes = broken\n"
        "from ironic_fsm.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = _env(tmp_path)
    quiet = _python(code, "node", "list", env=env)
    assert quiet.code == 1
    assert "Traceback" not in quiet.err
    assert len(quiet.err.splitlines()) == 1
    assert "ZeroDivisionError" in quiet.err
    loud = _python(code, "--debug", "node", "list", env=env)
    assert loud.code == 1
    assert "Traceback (most recent call last)" in loud.err
    assert loud.err.splitlines()[-1].startswith("error: unexpected ZeroDivisionError")
    after = _python(code, "node", "list", "--debug", env=env)  # after the command too
    assert "Traceback (most recent call last)" in after.err


@pytest.mark.parametrize(
    ("blocked", "argv", "extra"),
    [
        ("psycopg,psycopg_pool", ["--db", "postgresql://fsm:pw@127.0.0.1:1/fsm", "node", "list"],
         "ironic_fsm[postgres]"),
        ("sushy_tools", ["demo", "--plain", "--output", "{tmp}/demo"], "ironic_fsm[demo]"),
    ],
)  # fmt: skip
def test_missing_extra_is_one_line_naming_it(
    tmp_path: Path, blocked: str, argv: list[str], extra: str
) -> None:
    result = _python(
        BLOCKED, blocked, *(a.replace("{tmp}", str(tmp_path)) for a in argv), env=_env(tmp_path)
    )
    line = one_line_error(result, extra)
    assert "pw" not in line.replace("pip", "")  # the URL's password is not echoed


@pytest.mark.parametrize(
    ("blocked", "driver", "extra"),
    [("pyghmi", "ipmi", "ironic_fsm[ipmi]"), ("sushy", "redfish", "ironic_fsm[redfish]")],
)
def test_missing_driver_extra_is_one_line_naming_it(
    tmp_path: Path, blocked: str, driver: str, extra: str
) -> None:
    db = str(tmp_path / "nodes.sqlite")
    env = _env(tmp_path)
    info = {
        "ipmi": ["ipmi_address=127.0.0.1", "ipmi_port=9"],
        "redfish": ["redfish_address=http://127.0.0.1:9", "redfish_system_id=/redfish/v1/x"],
    }[driver]
    pairs = [arg for kv in info for arg in ("--driver-info", kv)]
    created = _python(BLOCKED, blocked, "--db", db, "node", "create", "--name", "n1",
                      "--driver", driver, *pairs, env=env)  # fmt: skip
    if created.code == 0:  # the type loads lazily: the first BMC call needs the extra
        one_line_error(_python(BLOCKED, blocked, "--db", db, "node", "manage", "n1", env=env),
                       extra)  # fmt: skip
    else:
        one_line_error(created, extra)


# -- the data directory --------------------------------------------------------------------------


def test_default_data_directory_is_private(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = os.umask(0o022)
    try:
        assert cli.main(["node", "create", "--name", "n1"]) == 0
    finally:
        os.umask(old)
    directory = tmp_path / "xdg" / "ironic_fsm"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert (directory / "ironic_fsm.sqlite").exists()


def test_an_existing_open_data_directory_is_tightened(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "xdg" / "ironic_fsm"
    directory.mkdir(parents=True)
    directory.chmod(0o755)
    (tmp_path / "xdg").chmod(0o755)
    assert cli.main(["node", "list"]) == 0
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    # The user's own directory above it is theirs: left as it was.
    assert stat.S_IMODE((tmp_path / "xdg").stat().st_mode) == 0o755


def test_steps_from_a_closed_standard_input(tmp_path: Path) -> None:
    db = str(tmp_path / "nodes.sqlite")
    env = _env(tmp_path)
    code = "import sys\nfrom ironic_fsm.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    assert _python(code, "--db", db, "node", "create", "--name", "n1", env=env).code == 0
    argv = ("--db", db, "node", "clean", "n1", "--clean-steps", "-")
    # What a shell's `<&-` does: no file descriptor 0 at all.
    done = python_c(code, *argv, stdin=subprocess.DEVNULL, env=env, preexec_fn=lambda: os.close(0))
    one_line_error(Result(done.returncode, done.stdout, done.stderr), "standard input is closed")


def test_a_password_in_a_connection_string_is_not_echoed(run: Run) -> None:
    # Nothing listens on port 1: the connection is refused at once.
    url = "postgresql://fsm@127.0.0.1:1/fsm?password=pa55word&connect_timeout=5"
    line = one_line_error(run("node", "list", "--db", url))
    assert "pa55word" not in line
    assert "password=******" in line
