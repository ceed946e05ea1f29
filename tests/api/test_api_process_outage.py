"""``python -m ironic_fsm.api`` waits out a PostgreSQL restart, and says so once each way.

A real process on the real PostgreSQL fixture, the server stopped and
started on its port under it: the API keeps answering (503 while the
database is away), serves again once it is back, and its log (standard
error) tells of the outage once when it starts and once when it ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from api_helpers import api_process
from conftest import fresh_postgres_url
from pgserver import PostgresServer

DOWN = "The database is unavailable"
BACK = "The database is back; heartbeats go on"
VERSION = {"X-OpenStack-Ironic-API-Version": "1.5"}


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    yield from fresh_postgres_url(postgres_server)


def _until(check: Callable[[], object], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {check}"
        time.sleep(0.1)


def test_the_standalone_api_waits_out_a_postgres_restart(
    postgres_server: PostgresServer, pg_url: str, tmp_path: Path
) -> None:
    db = tmp_path / "api"  # names only where its standard error goes: api.stderr
    log = db.with_suffix(".stderr")
    with (
        api_process(db, "--heartbeat-interval", "0.5", url=pg_url) as base,
        httpx.Client(base_url=base, timeout=60, headers=VERSION) as client,
    ):
        assert client.get("/v1/nodes").status_code == 200
        postgres_server.pause("fast")
        try:
            _until(lambda: DOWN in log.read_text())
            away = client.get("/v1/nodes")
            assert away.status_code == 503, away.text  # still answering
            # Heartbeats go on failing meanwhile: one line tells of it, not one each.
            _until(lambda: log.read_text().count("error connecting in 'ironic_fsm'") >= 2)
        finally:
            postgres_server.resume()
        _until(lambda: BACK in log.read_text())
        created = client.post("/v1/nodes", json={"driver": "fake-hardware", "name": "n1"})
        assert created.status_code == 201, created.text
        assert client.get("/v1/nodes/n1").json()["name"] == "n1"
    text = log.read_text()
    assert text.count(DOWN) == 1, text
    assert text.count(BACK) == 1, text
    assert "Traceback" not in text, text
