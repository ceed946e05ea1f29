"""What an operator sees of the API's traffic: a line per request, and 404s that explain.

Driven the way an operator meets it: ``ironic-fsm serve --api`` as a real
process, its standard error read, and requests over HTTP.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from api_helpers import serve_api

LATEST = {"X-OpenStack-Ironic-API-Version": "latest"}


@contextmanager
def _serve(db: Path, *extra: str) -> Iterator[tuple[str, list[str]]]:
    with serve_api("--db", str(db), "serve", *extra) as served:
        yield served


def _access_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if "ironic_fsm.api.access" in line]


def test_each_request_is_logged_without_its_query_or_credentials(tmp_path: Path) -> None:
    with _serve(tmp_path / "nodes.sqlite") as (url, lines):
        created = httpx.post(
            f"{url}/v1/nodes",
            json={"driver": "fake-hardware", "name": "n1", "driver_info": {"ipmi_password": "pw"}},
            headers=LATEST,
            timeout=60,
        )
        assert created.status_code == 201, created.text
        request_id = created.headers["X-OpenStack-Request-Id"]
        missing = httpx.get(
            f"{url}/v1/nodes/nope?fields=name&secret=hunter2", headers=LATEST, timeout=60
        )
        assert missing.status_code == 404
    logged = _access_lines(lines)
    post = next(line for line in logged if " POST /v1/nodes " in line)
    assert re.search(rf"POST /v1/nodes 201 [\d.]+ms {request_id}$", post), post
    get = next(line for line in logged if " GET /v1/nodes/nope " in line)
    assert re.search(r"GET /v1/nodes/nope 404 [\d.]+ms req-[0-9a-f-]+$", get), get
    assert "hunter2" not in "\n".join(lines)
    assert "fields=" not in "\n".join(logged)
    assert '"pw"' not in "\n".join(lines)


def test_no_access_log_switches_it_off(tmp_path: Path) -> None:
    with _serve(tmp_path / "nodes.sqlite", "--no-access-log") as (url, lines):
        assert httpx.get(f"{url}/v1/nodes", headers=LATEST, timeout=60).status_code == 200
    assert _access_lines(lines) == []
    assert any("REST API on 127.0.0.1" in line for line in lines)  # the other logs stay


def test_an_endpoint_not_served_says_so_and_where_the_docs_list_them(tmp_path: Path) -> None:
    with _serve(tmp_path / "nodes.sqlite", "--no-access-log") as (url, _):
        answer = httpx.get(f"{url}/v1/events", headers=LATEST, timeout=60)
        unknown_node = httpx.get(f"{url}/v1/nodes/nope", headers=LATEST, timeout=60)
    assert answer.status_code == 404
    message = answer.json()["error_message"]
    assert "/v1/events is not served" in message
    assert "docs/api-server.rst" in message
    # A node that does not exist is still the plain not-found of a served endpoint.
    assert unknown_node.status_code == 404
    assert "not served" not in unknown_node.json()["error_message"]
