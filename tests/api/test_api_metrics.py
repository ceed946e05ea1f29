"""``ironic-fsm serve --metrics``: a real service process, scraped as Prometheus scrapes it.

The metrics listen on a port of their own and, with ``--api``, under
``/metrics`` behind the API's authentication. What the scrape says is
checked against what the test did through the REST API (nodes created,
verbs, requests). ``/readyz`` is checked on the same process while its
PostgreSQL is down and back, and during the SIGTERM drain, which keeps the
API and the metrics answering until the flows have finished (a verification
held up by a slow BMC, the Redfish emulator delaying its answers).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from pgserver import PostgresServer
from prometheus_client.parser import text_string_to_metric_families
from test_api_auth import PASSWORD, _htpasswd

from ironic_fsm.stores import SQLStore

HEADERS = {"X-OpenStack-Ironic-API-Version": "1.81"}
AUTH = ("admin", PASSWORD)


@contextmanager
def _serve(*cli_args: str) -> Iterator[tuple[subprocess.Popen[str], str, str, list[str]]]:
    """``ironic-fsm --db ... serve --api 127.0.0.1:0 --metrics 127.0.0.1:0 OPTIONS``: the
    process, the API's URL, the metrics' URL and its stderr lines; killed if still running."""
    serve = cli_args.index("serve")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ironic_fsm.cli", *cli_args[: serve + 1], "--api", "127.0.0.1:0",
         "--metrics", "127.0.0.1:0", *cli_args[serve + 1 :]],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    ports: dict[str, int] = {}
    ready = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            for key, pattern in (("metrics", r"Metrics on http://127\.0\.0\.1:(\d+)/metrics"),
                                 ("api", r"REST API on 127\.0\.0\.1 port (\d+)")):  # fmt: skip
                found = re.search(pattern, line)
                if found:
                    ports[key] = int(found.group(1))
            if len(ports) == 2:
                ready.set()
        ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(60), lines
        assert len(ports) == 2, lines
        yield (proc, f"http://127.0.0.1:{ports['api']}",
               f"http://127.0.0.1:{ports['metrics']}/metrics", lines)  # fmt: skip
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader.join(10)


def scrape(url: str, **options: Any) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    answer = httpx.get(url, timeout=60, **options)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str,
          **labels: str) -> float:  # fmt: skip
    return samples.get((name, frozenset(labels.items())), 0.0)


def wait_for(check: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _state(api: str, uuid: str, **options: Any) -> dict[str, Any]:
    answer = httpx.get(f"{api}/v1/nodes/{uuid}", headers=HEADERS, timeout=60, **options)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _provision(api: str, uuid: str, target: str, settled: str, **options: Any) -> None:
    answer = httpx.put(f"{api}/v1/nodes/{uuid}/states/provision", json={"target": target},
                       headers=HEADERS, timeout=60, **options)  # fmt: skip
    assert answer.status_code == 202, answer.text
    wait_for(lambda: _state(api, uuid, **options)["provision_state"] == settled, settled)


def test_the_scrape_counts_what_the_api_made_the_conductor_do(tmp_path: Path) -> None:
    users = _htpasswd(tmp_path / "htpasswd")
    with _serve("--db", str(tmp_path / "nodes.sqlite"), "serve", "--auth", "http_basic",
                "--htpasswd", str(users)) as (_, api, metrics, _lines):  # fmt: skip
        # Behind the API's authentication on its port; on its own port, none.
        assert httpx.get(f"{api}/metrics", timeout=60).status_code == 401
        uuids = []
        for index in range(3):
            created = httpx.post(f"{api}/v1/nodes", json={"driver": "fake-hardware",
                                 "name": f"metered-{index}"}, headers=HEADERS, auth=AUTH,
                                 timeout=60)  # fmt: skip
            assert created.status_code == 201, created.text
            uuids.append(created.json()["uuid"])
        for uuid in uuids:
            _provision(api, uuid, "manage", "manageable", auth=AUTH)
            _provision(api, uuid, "provide", "available", auth=AUTH)
        samples = scrape(metrics)
        assert scrape(f"{api}/metrics", auth=AUTH).keys() >= {
            key for key in samples if key[0].startswith("ironic_fsm_flows")
        }
    for phase in ("verifying", "cleaning"):
        assert value(samples, "ironic_fsm_flows_started_total", phase=phase) == 3
        assert value(samples, "ironic_fsm_flows_total", phase=phase, outcome="succeeded") == 3
        assert value(samples, "ironic_fsm_flows_total", phase=phase, outcome="failed") == 0
        assert (
            value(samples, "ironic_fsm_flow_duration_seconds_count", phase=phase,
                  outcome="succeeded") == 3
        )  # fmt: skip
    passthrough = {"phase": "cleaning", "interface": "vendor", "step": "log_passthrough"}
    assert value(samples, "ironic_fsm_steps_total", outcome="succeeded", **passthrough) == 3
    assert value(samples, "ironic_fsm_nodes", provision_state="available") == 3
    assert value(samples, "ironic_fsm_nodes_by_driver", driver="fake-hardware") == 3
    assert value(samples, "ironic_fsm_conductors_alive") == 1
    assert value(samples, "ironic_fsm_conductor_heartbeats_total", result="ok") >= 1
    route = {"method": "PUT", "route": "/v1/nodes/{ident}/states/provision", "status_class": "2xx"}
    assert value(samples, "ironic_fsm_api_request_duration_seconds_count", **route) == 6
    post = {"method": "POST", "route": "/v1/nodes", "status_class": "2xx"}
    assert value(samples, "ironic_fsm_api_request_duration_seconds_count", **post) == 3
    # Refused by authentication before any routing: no route template to name.
    refused = {"method": "GET", "route": "unmatched", "status_class": "4xx"}
    assert value(samples, "ironic_fsm_api_request_duration_seconds_count", **refused) == 1
    labels = {v for (_, found) in samples for _, v in found}
    assert not labels & set(uuids)  # no node UUID is a label
    assert not any(PASSWORD in v for v in labels)


def test_readyz_follows_the_database_and_the_drain(tmp_path: Path) -> None:
    from ironic_fsm.testing.redfish_emulator import start_emulator

    # A BMC slow to answer reads of its system: the verification outlasts the SIGTERM.
    emulator = start_emulator(tmp_path / "bmc")
    try:
        with PostgresServer() as server, _serve("--db", server.url, "serve") as (
            proc, api, metrics, lines,
        ):  # fmt: skip
            ready = lambda: httpx.get(f"{api}/readyz", timeout=60)  # noqa: E731
            wait_for(lambda: ready().status_code == 200, "ready")
            server.pause("immediate")
            down = ready()
            assert down.status_code == 503, down.text
            assert down.json()["reason"].startswith("the database does not answer")
            assert httpx.get(f"{api}/healthz", timeout=60).status_code == 200
            assert value(scrape(metrics), "ironic_fsm_store_up") == 0
            server.resume()
            wait_for(lambda: ready().status_code == 200, "ready once the database is back")
            assert value(scrape(metrics), "ironic_fsm_store_up") == 1

            created = httpx.post(f"{api}/v1/nodes", json={"driver": "redfish",
                                 "driver_info": emulator.driver_info()}, headers=HEADERS,
                                 timeout=60)  # fmt: skip
            assert created.status_code == 201, created.text
            uuid = created.json()["uuid"]
            emulator.set_faults({"path_prefix": emulator.system_id, "methods": ["GET"],
                                 "delay": 3})  # fmt: skip
            manage = httpx.put(f"{api}/v1/nodes/{uuid}/states/provision",
                               json={"target": "manage"}, headers=HEADERS, timeout=60)
            assert manage.status_code == 202, manage.text
            wait_for(lambda: value(scrape(metrics), "ironic_fsm_conductor_flows_running") == 1,
                     "the verification to run")  # fmt: skip
            proc.send_signal(signal.SIGTERM)
            wait_for(lambda: ready().status_code == 503, "not ready while draining", 30)
            draining = ready()
            assert draining.json()["reason"].startswith("draining"), draining.text
            assert value(scrape(metrics), "ironic_fsm_conductor_draining") == 1
            assert proc.wait(timeout=120) == 0, lines
            with SQLStore(server.url) as store:  # the flow finished before the exit
                node = store.get(uuid)
                assert (node.provision_state, node.reservation) == ("manageable", None), (
                    node.last_error
                )
    finally:
        emulator.stop()


def test_serve_refuses_a_bad_metrics_address_or_webhook_url(tmp_path: Path) -> None:
    for option, value, said in (
        ("--metrics", "nowhere:port", "expected a port"),
        ("--notify-url", "ftp://hooks.example", "expected an http:// or https:// URL"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "ironic_fsm.cli", "--db", str(tmp_path / "nodes.sqlite"),
             "serve", option, value],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert said in result.stderr
