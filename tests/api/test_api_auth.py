"""HTTP basic auth (bcrypt htpasswd), the noauth guard, and TLS."""

from __future__ import annotations

import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import httpx
import openstack
import pytest
from api_helpers import api_in_process, api_process, cli_env
from api_helpers import openstack as osc

from ironic_fsm import Conductor
from ironic_fsm.api import start_api
from ironic_fsm.exceptions import InvalidParameterValue

PASSWORD = "s3cret-Passw0rd"


def _htpasswd(path: Path, prefix: str = "$2b$") -> Path:
    digest = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    path.write_text(f"# users\nadmin:{prefix}{digest[4:]}\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("auth")
    # $2y$ is what `htpasswd -B` writes: it must be accepted like $2b$.
    users = _htpasswd(work / "htpasswd", prefix="$2y$")
    with api_process(work / "nodes.sqlite", "--auth", "http_basic", "--htpasswd", str(users)) as u:
        yield u


@pytest.mark.parametrize("path", ["/", "/v1", "/v1/"])
def test_discovery_is_public(url: str, path: str) -> None:
    assert httpx.get(url + path).status_code == 200


@pytest.mark.parametrize(
    ("auth", "status", "message"),
    [
        (None, 401, "Authorization required"),
        (("admin", "wrong"), 401, "Incorrect username or password"),
        (("nobody", PASSWORD), 401, "Incorrect username or password"),
    ],
)
def test_refusals_use_ironics_auth_body(
    url: str, auth: tuple[str, str] | None, status: int, message: str
) -> None:
    response = httpx.get(f"{url}/v1/nodes", auth=auth)
    assert response.status_code == status
    assert response.json() == {"error": {"message": message, "code": status}}
    assert response.headers["WWW-Authenticate"] == 'Basic realm="Baremetal API"'
    assert response.headers["X-OpenStack-Ironic-API-Maximum-Version"]


@pytest.mark.parametrize("header", ["Bearer abc", "Basic !!!notbase64", "Basic YWRtaW4="])
def test_malformed_header_is_400(url: str, header: str) -> None:
    response = httpx.get(f"{url}/v1/nodes", headers={"Authorization": header})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == 400


def test_right_credentials_pass(url: str) -> None:
    response = httpx.get(f"{url}/v1/nodes", auth=("admin", PASSWORD))
    assert response.status_code == 200


def _basic_env(url: str, password: str) -> dict[str, str]:
    env = cli_env(url, OS_USERNAME="admin", OS_PASSWORD=password)
    env["OS_AUTH_TYPE"] = "http_basic"
    return env


def test_cli_wrong_credentials_get_401(url: str) -> None:
    result = osc(url, "node", "list", env=_basic_env(url, "wrong"), check=False)
    assert result.returncode != 0
    assert "Unauthorized (HTTP 401)" in result.stderr
    assert osc(url, "node", "list", "-f", "json", env=_basic_env(url, PASSWORD)) == []


def test_sdk_wrong_credentials_get_401(url: str) -> None:
    conn = openstack.connection.Connection(
        auth_type="http_basic", auth={"username": "admin", "password": "wrong"},
        baremetal_endpoint_override=url,
    )  # fmt: skip
    with pytest.raises(openstack.exceptions.HttpException) as caught:
        list(conn.baremetal.nodes())
    assert caught.value.status_code == 401
    good = openstack.connection.Connection(
        auth_type="http_basic", auth={"username": "admin", "password": PASSWORD},
        baremetal_endpoint_override=url,
    )  # fmt: skip
    assert list(good.baremetal.nodes()) == []


def test_non_bcrypt_entries_refuse_to_start(tmp_path: Path) -> None:
    users = tmp_path / "htpasswd"
    users.write_text("admin:$apr1$abcdefgh$0123456789abcdefghijkl\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "ironic_fsm.api", "--db", f"sqlite:///{tmp_path / 'db'}",
         "--api", "127.0.0.1:0", "--auth", "http_basic", "--htpasswd", str(users)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "only bcrypt" in result.stderr
    assert "$apr1$" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "::"])
def test_noauth_is_refused_off_loopback(host: str) -> None:
    with pytest.raises(InvalidParameterValue, match="without authentication"):
        start_api(Conductor(), host=host, port=0)


def test_tls(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    with api_in_process(tmp_path / "db", tls_cert=str(cert), tls_key=str(key)) as (_, server, _):
        secure = f"https://127.0.0.1:{server.port}"
        response = httpx.get(f"{secure}/v1/nodes", verify=ssl.create_default_context(cafile=cert))
        assert response.status_code == 200
        assert response.json() == {"nodes": []}
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{server.port}/v1/nodes", timeout=5)
    with pytest.raises(InvalidParameterValue, match="both"):
        start_api(Conductor(), host="127.0.0.1", port=0, tls_cert=str(cert))
