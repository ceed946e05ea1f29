"""python-ironicclient 5.8.1's own functional suite, run against ``serve --api``.

Those tests drive the real ``openstack baremetal`` CLI against a running
Ironic; they shipped in the client's sdist up to 5.8.1 (5.9.0 removed them).
Here they run unchanged, in a venv of their own (tempest, the client, the
OpenStack CLI: cached between runs), against a real ``ironic-fsm serve
--api`` on SQLite, configured as the suite's ``noauth`` mode expects.

One shim: the suite's ``setUp`` checks ``self.auth_ref.project_scoped``, an
attribute only a keystone run ever had; under ``noauth`` there is no token
to scope, so the check is answered true (``ifsm_suite_shim``, below).

Real Ironic 39.0.0 started the same way passes 105 of its 109 tests. Every
test passes here too except those in :data:`KNOWN_GAPS`, each with the
reason; each of those must still not pass, so that the list shrinks as the
API grows.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from api_helpers import serve_api
from test_sdk_functional_suite import outcomes

VERSION = "5.8.1"

_SHIM = '''"""Answers the keystone-only scope check of the suite's setUp (see the test module)."""
import types

from ironicclient.tests.functional import base

base.FunctionalTestBase.auth_ref = types.SimpleNamespace(project_scoped=True)
'''

#: The suite's tests that do not pass here yet, by ``file::Class::test``, with why.
KNOWN_GAPS: dict[str, str] = {}


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ironic_fsm-tests"


def suite_venv() -> Path:
    """A venv with python-ironicclient ``VERSION`` (from its sdist, tests included) and tempest.

    pytest-xdist too: each test starts the ``openstack`` CLI several times,
    about a second each, so the suite runs on two workers.

    Made on first use through pip's cache and kept between runs; several
    test processes at once wait for one to make it.
    """
    cache = _cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    venv = cache / f"ironicclient-{VERSION}-py{sys.version_info[0]}{sys.version_info[1]}"
    with (cache / "ironicclient.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / ".complete").exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            pip = [str(venv / "bin" / "pip"), "--disable-pip-version-check"]
            sdist = venv / "sdist"
            subprocess.run(
                [*pip, "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", str(sdist),
                 f"python-ironicclient=={VERSION}"],
                check=True, timeout=900,
            )  # fmt: skip
            [archive] = sdist.glob("*.tar.gz")
            subprocess.run(
                [*pip, "install", "-q", str(archive), "tempest", "python-openstackclient",
                 "ddt", "pytest", "pytest-xdist"],
                check=True, timeout=1800,
            )  # fmt: skip
            with tarfile.open(archive) as tar:  # the tests: pip installs them, check they are in
                assert any("tests/functional/osc/v1/" in name for name in tar.getnames())
            (venv / ".complete").write_text(VERSION)
    return venv


def test_python_ironicclient_functional_suite(tmp_path: Path) -> None:
    venv = suite_venv()
    site = next((venv / "lib").glob("python3*/site-packages"))
    suite = site / "ironicclient" / "tests" / "functional"
    assert (suite / "osc" / "v1").is_dir(), "the sdist's functional tests were not installed"
    # The suite runs ``./.tox/<OS_TESTENV_NAME>/bin/openstack`` from its working directory.
    (tmp_path / ".tox" / "functional").mkdir(parents=True)
    (tmp_path / ".tox" / "functional" / "bin").symlink_to(venv / "bin")
    (tmp_path / "ifsm_suite_shim.py").write_text(_SHIM)
    with serve_api("--db", str(tmp_path / "suite.sqlite"), "serve", "--no-access-log") as (
        url,
        _lines,
    ):
        config = tmp_path / "test.conf"
        config.write_text(f"[functional]\nauth_strategy = noauth\nironic_url = {url}\n")
        env = {
            **os.environ,
            "IRONICCLIENT_TEST_CONFIG": str(config),
            "OS_TESTENV_NAME": "functional",
            "PYTHONPATH": str(tmp_path),
        }
        for name in ("OS_CLOUD", "OS_CLIENT_CONFIG_FILE", "OS_AUTH_URL"):
            env.pop(name, None)
        report = tmp_path / "suite.xml"
        run = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "-p", "ifsm_suite_shim", "-o", "addopts=", "-n", "2", "--rootdir", str(tmp_path),
             f"--junitxml={report}", str(suite)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=3600,
        )  # fmt: skip
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    found = outcomes(report)
    assert len(found) >= 100, (len(found), run.stdout[-3000:])
    missing = sorted(set(KNOWN_GAPS) - set(found))
    assert not missing, f"gaps no longer in the suite (take them off the list): {missing}"
    failing = sorted(k for k, v in found.items() if v != "passed" and k not in KNOWN_GAPS)
    closed = sorted(k for k in KNOWN_GAPS if found[k] == "passed")
    passed = sum(v == "passed" for v in found.values())
    print(f"python-ironicclient suite: {passed} passed of {len(found)}; {len(KNOWN_GAPS)} gaps")
    assert not failing, f"{failing}\n{run.stdout[-6000:]}"
    assert not closed, f"gaps that now pass (take them off KNOWN_GAPS): {closed}"
