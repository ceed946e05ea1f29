"""Health probes for Kubernetes: ``/healthz`` (alive) and ``/readyz`` (ready for work).

Both answer without credentials (Kubernetes sends none) and show nothing of
the nodes. ``/readyz`` is 503 with the reason while the database does not
answer, the conductor is not registered and alive in it, or it drains.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from api_helpers import api_in_process, serve_api
from pgserver import PostgresServer
from test_api_auth import _htpasswd

from ironic_fsm import Conductor
from ironic_fsm.api import start_api
from ironic_fsm.exceptions import StoreError
from ironic_fsm.stores import SQLStore


def _ready(url: str, timeout: float = 60) -> httpx.Response:
    """``/readyz`` once it answers 200, or its last answer after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        answer = httpx.get(f"{url}/readyz", timeout=60)
        if answer.status_code == 200 or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def test_serve_is_alive_then_ready_and_asks_no_credentials(tmp_path: Path) -> None:
    users = _htpasswd(tmp_path / "htpasswd")
    with serve_api(
        "--db", str(tmp_path / "nodes.sqlite"), "serve", "--auth", "http_basic",
        "--htpasswd", str(users),
    ) as (url, _):  # fmt: skip
        alive = httpx.get(f"{url}/healthz", timeout=60)
        assert (alive.status_code, alive.json()) == (200, {"status": "ok"})
        ready = _ready(url)
        assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
        # The probes are public; the nodes are not.
        assert httpx.get(f"{url}/v1/nodes", timeout=60).status_code == 401


def test_readyz_says_why_it_is_not_ready(tmp_path: Path) -> None:
    with api_in_process(tmp_path / "nodes.sqlite") as (conductor, _, url):
        refused = httpx.get(f"{url}/readyz", timeout=60)
        assert refused.status_code == 503
        assert "is not registered and alive" in refused.json()["reason"]
        conductor.register()
        assert _ready(url).status_code == 200
        conductor.drain()
        draining = httpx.get(f"{url}/readyz", timeout=60)
        assert draining.status_code == 503
        assert draining.json()["reason"].startswith("draining")
        assert httpx.get(f"{url}/healthz", timeout=60).status_code == 200  # still alive


def _heartbeat_once_it_answers(conductor: Conductor, timeout: float = 60) -> None:
    """The heartbeat a service would send next; a pooled connection from before the
    restart fails once (psycopg then drops it), so try until the database answers."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conductor.heartbeat()
            return
        except StoreError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_readyz_is_503_while_the_database_is_down_and_200_once_it_is_back() -> None:
    with PostgresServer() as server:
        store = SQLStore(server.url, pool_timeout=2)
        try:
            with ThreadPoolExecutor(2) as executor:
                conductor = Conductor(store, executor=executor)
                conductor.register()
                api = start_api(conductor, host="127.0.0.1", port=0)
                url = f"http://127.0.0.1:{api.port}"
                try:
                    assert _ready(url).status_code == 200
                    server.pause("immediate")
                    down = httpx.get(f"{url}/readyz", timeout=60)
                    assert down.status_code == 503
                    assert down.json()["reason"].startswith("the database does not answer")
                    assert httpx.get(f"{url}/healthz", timeout=60).status_code == 200
                    server.resume()
                    _heartbeat_once_it_answers(conductor)
                    assert _ready(url).status_code == 200
                finally:
                    api.stop()
        finally:
            store.close()
