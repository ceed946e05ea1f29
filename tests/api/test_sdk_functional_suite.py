"""openstacksdk's own baremetal functional suite, run against ``serve --api``.

The suite ships in openstacksdk's wheel (``openstack/tests/functional/
baremetal``); it is what the SDK's maintainers run against a real Ironic.
Here it runs unchanged, as a separate pytest process, against a real
``ironic-fsm serve --api`` on SQLite and on PostgreSQL, configured the way a
standalone Ironic is reached (``auth_type: none`` and the API's endpoint;
no compute, image, network or volume service).

Real Ironic 39.0.0 started the same way (standalone, noauth, SQLite,
fake-hardware) passes 95 of its 96 tests. Every test passes here too except
those in :data:`KNOWN_GAPS`, each with the reason; and each of those must
still not pass, so that the list shrinks as the API grows (a gap that starts
passing fails this test until it is taken off the list).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openstack
import pytest
from api_helpers import check_suite, serve_api
from conftest import fresh_postgres_url

SUITE = Path(openstack.__file__).parent / "tests" / "functional" / "baremetal"

#: The suite's tests that do not pass here yet, by ``file::Class::test``, with why.
KNOWN_GAPS: dict[str, str] = {}


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "suite.sqlite")
        return
    yield from fresh_postgres_url(request.getfixturevalue("postgres_server"))


def clouds_yaml(path: Path, url: str) -> Path:
    """The four clouds the suite names, each a standalone noauth Ironic at ``url``."""
    lines = ["clouds:"]
    for cloud in ("devstack", "devstack-alt", "devstack-admin", "devstack-system-admin"):
        lines += [
            f"  {cloud}:",
            "    auth_type: none",
            "    auth:",
            f"      endpoint: {url}",
            *(f"    has_{service}: false" for service in ("compute", "image", "network", "volume")),
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_openstacksdk_functional_suite(db_url: str, tmp_path: Path) -> None:
    with serve_api("--db", db_url, "serve", "--no-access-log") as (url, _lines):
        env = {
            **os.environ,
            "OS_CLIENT_CONFIG_FILE": str(clouds_yaml(tmp_path / "clouds.yaml", url)),
            "OPENSTACKSDK_FUNC_TEST_TIMEOUT": "120",
            # Each test's own deadline (fixtures' timeout; the suite's tox sets it too):
            # the SDK retries a 409 for a while before it gives up, as its retired-node
            # test expects, which a few seconds' default cuts short.
            "OS_TEST_TIMEOUT": "600",
        }
        report = tmp_path / "suite.xml"
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "-o", "addopts=", "--rootdir", str(tmp_path), f"--junitxml={report}", str(SUITE)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
    check_suite("openstacksdk", run, report, KNOWN_GAPS, least=90)
