"""Regressions of the API defects a fleet's bad day found (issue "Faults a fleet meets", point 5).

Each test drives the server the way the defect was met: over HTTP, against
a real server process or the in-process server, with real clients' bytes.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_helpers import LATEST, api_in_process, api_process

USER = "operator"
#: Longer than bcrypt's 72 bytes: what `htpasswd -B` hashes the first 72 of.
LONG_PASSWORD = "x" * 73


def _htpasswd_line(user: str, password: str) -> str:
    """An entry written by Apache's own `htpasswd -B`, the tool the docs tell operators to use."""
    result = subprocess.run(
        ["htpasswd", "-nbB", "-C", "4", user, password],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return result.stdout.strip()


@pytest.fixture(scope="module")
def basic_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("basic")
    users = work / "htpasswd"
    users.write_text(_htpasswd_line(USER, LONG_PASSWORD) + "\n")
    with api_process(work / "nodes.sqlite", "--auth", "http_basic", "--htpasswd", str(users)) as u:
        yield u


def test_a_password_over_72_bytes_logs_in_and_a_wrong_one_is_401(basic_url: str) -> None:
    right = httpx.get(f"{basic_url}/v1/nodes", auth=(USER, LONG_PASSWORD), timeout=60)
    assert right.status_code == 200, right.text
    wrong = httpx.get(f"{basic_url}/v1/nodes", auth=(USER, "y" * 73), timeout=60)
    assert wrong.status_code == 401, wrong.text
    assert wrong.json()["error"]["message"] == "Incorrect username or password"


@pytest.mark.parametrize(
    ("path", "public"),
    [
        ("/", True),
        ("/v1", True),
        ("/v1.json", True),
        ("/v1/lookup", True),
        ("/v1/continue_inspection", True),
        ("/v1/heartbeat/1be26c0b-03f2-4d2e-ae87-c02d7f33c123", True),
        # Ironic's list is of whole paths: nothing below them, nothing else ending in .json.
        ("/v1/heartbeat/1be26c0b-03f2-4d2e-ae87-c02d7f33c123/extra", False),
        ("/v1/heartbeat/a/b.json", False),
        ("/v1/nodes.json", False),
        ("/v1/nodes/detail.json", False),
        ("/v1/lookup/more", False),
        ("/openapi.json", False),
        ("/anything.json", False),
    ],
)
def test_only_ironics_public_routes_skip_authentication(
    basic_url: str, path: str, public: bool
) -> None:
    answer = httpx.get(f"{basic_url}{path}", timeout=60)
    if public:
        assert answer.status_code != 401, (path, answer.text)
    else:
        assert answer.status_code == 401, (path, answer.status_code, answer.text)


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("noauth")
    with api_process(work / "nodes.sqlite") as u:
        yield u


def _new_node(url: str, **fields: object) -> dict[str, object]:
    answer = httpx.post(
        f"{url}/v1/nodes", json={"driver": "fake-hardware", **fields}, headers=LATEST, timeout=60
    )
    assert answer.status_code == 201, answer.text
    return answer.json()  # type: ignore[no-any-return]


def test_post_to_the_detail_list_is_405_and_creates_nothing(url: str) -> None:
    before = httpx.get(f"{url}/v1/nodes", headers=LATEST, timeout=60).json()["nodes"]
    answer = httpx.post(
        f"{url}/v1/nodes/detail", json={"driver": "fake-hardware"}, headers=LATEST, timeout=60
    )
    assert answer.status_code == 405, answer.text
    assert answer.headers["Allow"] == "GET"
    after = httpx.get(f"{url}/v1/nodes", headers=LATEST, timeout=60).json()["nodes"]
    assert after == before


@pytest.mark.parametrize("depth", [40, 199, 201, 500, 1000, 1023])
def test_a_patch_value_nested_too_deep_is_400_and_changes_nothing(url: str, depth: int) -> None:
    node = _new_node(url, extra={"kept": 1})
    # Written out as text: Python's own json module cannot encode it this deep.
    value = '{"a":' * (depth - 1) + "1" + "}" * (depth - 1)
    body = '[{"op": "add", "path": "/extra/deep", "value": ' + value + "}]"
    answer = httpx.patch(
        f"{url}/v1/nodes/{node['uuid']}",
        content=body.encode(),
        headers={**LATEST, "Content-Type": "application/json"},
        timeout=60,
    )
    assert answer.status_code == 400, answer.text[:300]
    # The record refuses more than 32 levels; a body deeper than 200 is refused when read.
    expected = "nested deeper than 200 levels" if depth > 200 else "nests deeper than 32 levels"
    assert expected in answer.json()["error_message"]
    shown = httpx.get(f"{url}/v1/nodes/{node['uuid']}", headers=LATEST, timeout=60).json()
    assert shown["extra"] == {"kept": 1}


def test_a_patch_value_nested_as_deep_as_allowed_is_stored(url: str) -> None:
    node = _new_node(url)
    value: object = "bottom"
    for _ in range(30):
        value = {"a": value}
    body = [{"op": "add", "path": "/extra/deep", "value": value}]
    answer = httpx.patch(f"{url}/v1/nodes/{node['uuid']}", json=body, headers=LATEST, timeout=60)
    assert answer.status_code == 200, answer.text[:300]
    assert answer.json()["extra"]["deep"] == value


def test_a_patch_of_4000_adds_applies_every_one(url: str) -> None:
    """Each operation once changed a fresh deep copy of the record: quadratic, 11-19 s."""
    node = _new_node(url)
    body = [{"op": "add", "path": f"/extra/k{i}", "value": i} for i in range(4000)]
    started = time.monotonic()
    answer = httpx.patch(f"{url}/v1/nodes/{node['uuid']}", json=body, headers=LATEST, timeout=120)
    assert answer.status_code == 200, answer.text[:300]
    assert answer.json()["extra"] == {f"k{i}": i for i in range(4000)}
    # Not a timing test: the benchmark measures the cost; this only catches a return
    # to seconds of work, with a bound a loaded machine still meets many times over.
    assert time.monotonic() - started < 10


def test_a_failing_operation_leaves_the_record_as_it_was(url: str) -> None:
    node = _new_node(url, extra={"a": 1})
    body = [
        {"op": "add", "path": "/extra/b", "value": 2},
        {"op": "remove", "path": "/extra/missing"},
    ]
    answer = httpx.patch(f"{url}/v1/nodes/{node['uuid']}", json=body, headers=LATEST, timeout=60)
    assert answer.status_code == 400
    assert "operation 2" in answer.json()["error_message"]
    shown = httpx.get(f"{url}/v1/nodes/{node['uuid']}", headers=LATEST, timeout=60).json()
    assert shown["extra"] == {"a": 1}


def _raw(url: str, request: bytes) -> bytes:
    """Send ``request`` as it is on one connection; all the server answers until it closes."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=60) as conn:
        conn.sendall(request)
        conn.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _chunked(body: bytes, size: int = 7) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


def test_a_chunked_body_is_read_and_not_taken_for_the_next_request(url: str) -> None:
    body = json.dumps({"driver": "fake-hardware", "name": "chunked-node"}).encode()
    request = (
        b"POST /v1/nodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"X-OpenStack-Ironic-API-Version: latest\r\nTransfer-Encoding: chunked\r\n\r\n"
        + _chunked(body)
        + b"GET /v1/nodes/chunked-node HTTP/1.1\r\nHost: x\r\n"
        b"X-OpenStack-Ironic-API-Version: latest\r\nConnection: close\r\n\r\n"
    )
    answer = _raw(url, request)
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", answer)
    assert statuses == [b"201", b"200"], answer[:600]
    shown = httpx.get(f"{url}/v1/nodes/chunked-node", headers=LATEST, timeout=60).json()
    assert shown["name"] == "chunked-node"


@pytest.mark.parametrize(
    "key", ["ssh_passphrase", "sys_pswd", "admin_pass", "new_pass", "adminPass", "ipmi_password"]
)
def test_secret_key_names_ironic_masks_are_masked(tmp_path: Path, key: str) -> None:
    with api_in_process(tmp_path / "nodes.sqlite") as (conductor, _, base):
        node = conductor.create_node(
            driver="fake-hardware", driver_info={key: "hunter2-secret", "plain": "shown"}
        )
        shown = httpx.get(f"{base}/v1/nodes/{node.uuid}", headers=LATEST, timeout=60).json()
        assert shown["driver_info"] == {key: "******", "plain": "shown"}
        assert "hunter2-secret" not in repr(conductor.get_node(node.uuid))
