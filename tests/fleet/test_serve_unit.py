"""The service in-process: periodic duties, errors, a slow duty, the drain, logging, options."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from pathlib import Path

import pytest

import ironic_fsm
from ironic_fsm.cli import main
from ironic_fsm.cli.serve import _configure_logging, _url_secrets
from ironic_fsm.service import EXIT_OK, FlowExecutor, Service, ServiceOptions
from ironic_fsm.service.periodic import Periodic
from ironic_fsm.stores import SQLStore


def test_a_failing_duty_is_logged_with_its_traceback_and_runs_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []

    def duty() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database went away")

    task = Periodic("flaky", duty, 0.02)
    with caplog.at_level(logging.ERROR, logger="ironic_fsm.service"):
        task.start()
        deadline = time.monotonic() + 5
        while task.passes < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        task.stop()
        assert task.join(5)
    assert task.failures == 1
    assert task.passes >= 2
    [record] = [r for r in caplog.records if "flaky" in r.getMessage()]
    assert record.getMessage() == "Periodic task flaky failed; it runs again in 0.02 s"
    assert record.exc_info is not None
    assert "database went away" in str(record.exc_info[1])


def _service(tmp_path: Path, **config: float) -> tuple[Service, SQLStore]:
    store = SQLStore(f"sqlite:///{tmp_path / 'nodes.sqlite'}")
    executor = FlowExecutor(2)
    conductor = ironic_fsm.Conductor(
        store=store, config=ironic_fsm.Config(**config), executor=executor
    )
    return Service(conductor, executor=executor, options=ServiceOptions(workers=2)), store


def test_a_slow_duty_does_not_delay_the_heartbeat(tmp_path: Path) -> None:
    service, store = _service(tmp_path, heartbeat_interval=0.05, node_history_cleanup_interval=0.05)
    release = threading.Event()
    # The history trim hangs (a backlog of millions of rows, say) until released.
    service.conductor.trim_node_history = lambda: release.wait(10)  # type: ignore[method-assign]
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(service.run()))
    thread.start()
    try:
        time.sleep(0.6)
        assert service.tasks["history_trim"].passes == 0  # still in its first pass
        assert service.tasks["heartbeat"].passes >= 5
    finally:
        release.set()
        service.stop()
        thread.join(10)
        store.close()
    assert result == [EXIT_OK]


def test_stop_drains_then_goes_offline(tmp_path: Path) -> None:
    service, store = _service(tmp_path, heartbeat_interval=0.05)
    thread = threading.Thread(target=service.run)
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while not service.conductor.list_conductors() and time.monotonic() < deadline:
            time.sleep(0.01)
        [info] = service.conductor.list_conductors()
        assert info.alive
    finally:
        service.stop()
        thread.join(10)
    [info] = service.conductor.list_conductors()
    assert not info.alive
    assert not thread.is_alive()
    store.close()


def test_service_options_never_show_the_database_password() -> None:
    options = ServiceOptions(listen_dsn="postgresql://ironic:s3cret@db/ironic")
    assert "s3cret" not in repr(options)
    assert options.listen_dsn == "postgresql://ironic:s3cret@db/ironic"


def test_service_options_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="workers must be > 0, not 0"):
        ServiceOptions(workers=0)
    with pytest.raises(ValueError, match="poll_interval must be > 0, not -1"):
        ServiceOptions(poll_interval=-1)


def test_json_log_lines_parse_and_secrets_are_masked(capsys: pytest.CaptureFixture[str]) -> None:
    url = "postgresql://ironic:s3cr%2Ft@db.example/ironic?sslpassword=k3y"
    handler = _configure_logging("json", "INFO", _url_secrets(url))
    try:
        log = logging.getLogger("ironic_fsm.service")
        log.info("connecting to %s", "postgresql://ironic:s3cr/t@db.example/ironic")
        try:
            raise RuntimeError("login with s3cr%2Ft and k3y failed")
        except RuntimeError:
            log.exception("failed")
    finally:
        logging.getLogger().removeHandler(handler)
    lines = capsys.readouterr().err.strip().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["message"] for r in records] == [
        "connecting to postgresql://ironic:******@db.example/ironic",
        "failed",
    ]
    assert {"asctime", "levelname", "name"} <= set(records[0])
    assert records[0]["name"] == "ironic_fsm.service"
    assert "s3cr" not in lines[1]
    assert "k3y" not in lines[1]
    assert "RuntimeError: login with ****** and ****** failed" in records[1]["exc_info"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--api", "0.0.0.0:6385"],
            "--auth noauth would let anyone who reaches 0.0.0.0 drive every node",
        ),
        (["--api", "127.0.0.1", "--auth", "http_basic"], "--auth http_basic needs --htpasswd"),
        (["--htpasswd", "users"], "--htpasswd is only used with --api"),
        (["--api", "localhost", "--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
        (["--api", "localhost:http"], "expected a port from 0 to 65535"),
        (["--workers", "0"], "expected a whole number >= 1"),
    ],
)
def test_bad_serve_options_are_usage_errors(
    tmp_path: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "nodes.sqlite"
    assert main(["serve", "--db", str(db), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not db.exists()  # refused before any store opened


def test_api_without_the_extra_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ironic_fsm.api", None)  # as if not installed
    db = tmp_path / "nodes.sqlite"
    assert main(["serve", "--db", str(db), "--api", "127.0.0.1"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --api needs the REST API: pip install 'ironic_fsm[api]'\n"
    assert not db.exists()


def test_serve_help_explains_the_signals(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "SIGTERM or SIGINT drains" in out
    assert "a second signal, or --graceful-shutdown-timeout, stops at once (exit 3)" in out


def test_a_burst_of_wakes_within_settle_makes_one_pass() -> None:
    wake = threading.Event()
    passes: list[float] = []
    task = Periodic("claim", lambda: passes.append(time.monotonic()), 30, wake=wake, settle=0.3)
    task.start()
    deadline = time.monotonic() + 5
    while not passes and time.monotonic() < deadline:  # the first pass runs at start
        time.sleep(0.01)
    for _ in range(5):  # notifications and finished flows of one burst
        wake.set()
        time.sleep(0.02)
    while len(passes) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.4)  # a wake left over from the burst would make a third pass by now
    task.stop()
    assert task.join(5)
    assert len(passes) == 2  # at start, then one for the whole burst (was one per wake)
