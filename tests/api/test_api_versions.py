"""Version discovery and microversion negotiation, over plain HTTP (docs/api-server.rst)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from api_helpers import api_in_process, error_text

MAX = "1.115"


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    db = tmp_path_factory.mktemp("api") / "nodes.sqlite"
    with api_in_process(db) as (_, _, url), httpx.Client(base_url=url, timeout=60) as client:
        yield client


def _range_headers(response: httpx.Response) -> None:
    assert response.headers["X-OpenStack-Ironic-API-Minimum-Version"] == "1.1"
    assert response.headers["X-OpenStack-Ironic-API-Maximum-Version"] == MAX
    assert response.headers["X-OpenStack-Request-Id"].startswith("req-")


def test_root_advertises_the_range(http: httpx.Client) -> None:
    response = http.get("/")
    assert response.status_code == 200
    body = response.json()
    assert body["default_version"]["min_version"] == "1.1"
    assert body["default_version"]["version"] == MAX
    assert body["default_version"]["links"][0]["href"] == f"{http.base_url}/v1/"
    _range_headers(response)


@pytest.mark.parametrize("path", ["/v1", "/v1/"])
def test_v1_lists_resources_by_version(http: httpx.Client, path: str) -> None:
    old = http.get(path)
    assert old.status_code == 200
    assert "nodes" in old.json()
    assert "conductors" not in old.json()
    new = http.get(path, headers={"X-OpenStack-Ironic-API-Version": "1.49"})
    assert "conductors" in new.json()
    assert new.json()["media_types"]["type"] == "application/vnd.openstack.ironic.v1+json"
    _range_headers(new)


def test_v1_refuses_other_methods(http: httpx.Client) -> None:
    response = http.post("/v1", json={})
    assert response.status_code == 405
    _range_headers(response)


def test_no_header_means_the_minimum(http: httpx.Client) -> None:
    response = http.get("/v1/nodes")
    assert response.headers["X-OpenStack-Ironic-API-Version"] == "1.1"


def test_latest_means_the_maximum(http: httpx.Client) -> None:
    response = http.get("/v1/nodes", headers={"X-OpenStack-Ironic-API-Version": "latest"})
    assert response.headers["X-OpenStack-Ironic-API-Version"] == MAX
    assert response.headers["OpenStack-API-Version"] == f"baremetal {MAX}"


def test_openstack_api_version_wins_over_the_old_header(http: httpx.Client) -> None:
    response = http.get(
        "/v1/nodes",
        headers={
            "X-OpenStack-Ironic-API-Version": "1.20",
            "OpenStack-API-Version": "compute 2.1, baremetal 1.37",
        },
    )
    assert response.headers["X-OpenStack-Ironic-API-Version"] == "1.37"


@pytest.mark.parametrize(
    ("header", "value", "reason"),
    [
        ("X-OpenStack-Ironic-API-Version", "1.200", "minor version is not supported"),
        ("X-OpenStack-Ironic-API-Version", "1.0", "minor version is not supported"),
        ("X-OpenStack-Ironic-API-Version", "2.1", "not supported by this service"),
        ("X-OpenStack-Ironic-API-Version", "one.two", "Invalid value"),
        ("OpenStack-API-Version", "baremetal 1.999", "minor version is not supported"),
    ],
)
def test_out_of_range_is_406_with_the_range(
    http: httpx.Client, header: str, value: str, reason: str
) -> None:
    response = http.get("/v1/nodes", headers={header: value})
    assert response.status_code == 406
    _range_headers(response)
    assert "X-OpenStack-Ironic-API-Version" not in response.headers
    assert reason in error_text(response)
    assert f"[1.1, {MAX}]" in error_text(response) or "Invalid" in error_text(response)


def test_error_body_is_ironics(http: httpx.Client) -> None:
    response = http.get("/v1/nodes/no-such-node")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    fault = json.loads(response.json()["error_message"])
    assert fault == {
        "faultcode": "Client",
        "faultstring": fault["faultstring"],
        "debuginfo": None,
    }
    assert "no-such-node" in fault["faultstring"]
    _range_headers(response)


def test_unknown_path_is_404_in_ironics_shape(http: httpx.Client) -> None:
    response = http.get("/v1/no-such-resource")
    assert response.status_code == 404
    assert "faultstring" in json.loads(response.json()["error_message"])
    _range_headers(response)


def test_field_newer_than_the_version_is_406(http: httpx.Client) -> None:
    response = http.get(
        "/v1/nodes", params={"fields": "uuid,traits"},
        headers={"X-OpenStack-Ironic-API-Version": "1.36"},
    )  # fmt: skip
    assert response.status_code == 406
    assert "traits" in error_text(response)


def test_endpoint_newer_than_the_version_is_404(http: httpx.Client) -> None:
    assert http.get("/v1/conductors").status_code == 404
    ok = http.get("/v1/conductors", headers={"X-OpenStack-Ironic-API-Version": "1.49"})
    assert ok.status_code == 200


def test_empty_202_carries_no_json_type(http: httpx.Client, tmp_path: Path) -> None:
    created = http.post("/v1/nodes", json={"driver": "fake-hardware"}, headers={
        "X-OpenStack-Ironic-API-Version": "latest"})  # fmt: skip
    uuid = created.json()["uuid"]
    response = http.put(f"/v1/nodes/{uuid}/maintenance", json={"reason": "x"})
    assert response.status_code == 202
    assert response.content == b""
    assert "content-type" not in response.headers


@pytest.mark.parametrize("path", ["/", "/v1"])
def test_discovery_answers_head(http: httpx.Client, path: str) -> None:
    response = http.head(path)
    assert response.status_code == 200
    assert response.content == b""
    _range_headers(response)


def test_import_ironic_fsm_leaves_the_api_out() -> None:
    code = (
        "import sys, ironic_fsm; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('falcon', 'cheroot', 'jsonpatch', 'bcrypt') or m.startswith('ironic_fsm.api')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
