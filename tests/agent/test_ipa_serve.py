"""``openstack baremetal`` against ``ironic-fsm serve --api``, the real IPA as the machine.

The service runs as it would in production: its own process, a SQLite file,
the ``manual-management`` hardware type (``fake`` power: the operator's
hands), ``direct`` deploy, HTTP basic auth. What a BMC would do to a real
machine is played by the test's "hands" (:class:`Hands`), as the reference
harness for Ironic did: when the node waits for an agent and none is up,
it boots one (starts IPA in the sandbox); when the node is powered off, it
stops it; an agent whose token was wiped (the machine was rebooted) is
started again.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import BIN
from ipa_harness import MAC, users
from ipa_sandbox import Sandbox
from test_ipa_deploy import _images

WAITING = ("clean wait", "wait call-back", "rescue wait")


class Hands:
    """Boots and stops the sandboxed agent as the node's state asks (a thread)."""

    def __init__(self, api: httpx.Client, node: str, sandbox: Sandbox, api_url: str,
                 python: Path) -> None:  # fmt: skip
        self._api, self._node, self._sandbox = api, node, sandbox
        self._api_url, self._python = api_url, python
        self.boots = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._lookups = 0

    def __enter__(self) -> Hands:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            answer = self._api.get(f"/v1/nodes/{self._node}")
            if answer.status_code != 200:
                continue
            self._act(answer.json())

    def _act(self, node: dict[str, Any]) -> None:
        info = node.get("driver_internal_info") or {}
        running = self._sandbox.running()
        if node["power_state"] == "power off" and running:
            self._sandbox.stop()
        elif node["provision_state"] in WAITING and not info.get("agent_url"):
            looked_up = self._sandbox.ipa_log().count("Lookup succeeded") > self._lookups
            if running and looked_up and "agent_secret_token" not in info:
                self._sandbox.stop()  # rebooted under it: its token is void
                running = False
            if not running:
                self._lookups = self._sandbox.ipa_log().count("Lookup succeeded")
                self.boots += 1
                self._sandbox.start(self._api_url, self._python)


@pytest.fixture
def served(tmp_path: Path, make_sandbox: Callable[..., Sandbox]) -> Iterator[tuple[str, Sandbox]]:
    """``ironic-fsm serve --api`` on the host's end of the sandbox's link, and the sandbox."""
    sandbox = make_sandbox(MAC, seed=True)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"config": {
        "ramdisk_heartbeat_timeout": 6,
        # fake power cannot see the agent power the machine off: force it at once
        "post_deploy_get_power_state_retries": 0,
    }}))  # fmt: skip
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ironic_fsm.cli", "--db", str(tmp_path / "nodes.sqlite"),
         "serve", "--config", str(config), "--poll-interval", "0.2",
         "--api", f"{sandbox.host_ip}:0", "--auth", "http_basic",
         "--htpasswd", str(users(tmp_path))],
        stderr=log, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        port = None
        while port is None:
            alive = proc.poll() is None and time.monotonic() < deadline
            assert alive, (tmp_path / "serve.log").read_text()
            found = re.search(r"REST API on \S+ port (\d+)", (tmp_path / "serve.log").read_text())
            port = int(found.group(1)) if found else None
            time.sleep(0.1)
        yield f"http://{sandbox.host_ip}:{port}", sandbox
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()


def _cli(url: str, *args: str) -> Any:
    env = {
        "PATH": "/usr/bin:/bin", "OS_AUTH_TYPE": "http_basic", "OS_USERNAME": "admin",
        "OS_PASSWORD": "pw", "OS_ENDPOINT": url, "OS_BAREMETAL_API_VERSION": "1.68",
    }  # fmt: skip
    done = subprocess.run([str(BIN / "openstack"), "baremetal", *args], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, f"openstack baremetal {' '.join(args)}: {done.stderr}"
    return json.loads(done.stdout) if "json" in args else done.stdout


def test_serve_cleans_deploys_and_undeploys_through_the_real_ipa(
    served: tuple[str, Sandbox], ipa: Path, tmp_path: Path
) -> None:
    url, sandbox = served
    folder = tmp_path / "images"
    folder.mkdir()
    raw = _images(folder)["raw"]
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    images = http.server.ThreadingHTTPServer((sandbox.host_ip, 0), handler)
    threading.Thread(target=images.serve_forever, daemon=True).start()
    checksum = hashlib.sha256(raw.read_bytes()).hexdigest()
    node = _cli(url, "node", "create", "--driver", "manual-management", "--name", "m1",
                "--deploy-interface", "direct", "-f", "json")  # fmt: skip
    assert node["power_interface"] == "fake"
    assert node["deploy_interface"] == "direct"
    _cli(url, "port", "create", MAC, "--node", node["uuid"])
    for item in (f"image_source=http://{sandbox.host_ip}:{images.server_port}/{raw.name}",
                 "image_os_hash_algo=sha256", f"image_os_hash_value={checksum}",
                 "image_disk_format=raw"):  # fmt: skip
        _cli(url, "node", "set", "m1", "--instance-info", item)
    with (
        httpx.Client(base_url=url, auth=("admin", "pw"), timeout=60,
                     headers={"X-OpenStack-Ironic-API-Version": "1.68"}) as api,
        Hands(api, node["uuid"], sandbox, url, ipa) as hands,
    ):  # fmt: skip
        try:
            _cli(url, "node", "manage", "m1", "--wait", "120")
            _cli(url, "node", "provide", "m1", "--wait", "240")  # cleaned by the agent
            with open(sandbox.disk, "rb") as disk:
                data = disk.read()
            assert data.count(0) == len(data)
            _cli(url, "node", "deploy", "m1", "--wait", "240")
            shown = _cli(url, "node", "show", "m1", "-f", "json")
            assert shown["provision_state"] == "active", shown["last_error"]
            assert shown["power_state"] == "power on"
            assert shown["driver_internal_info"]["root_uuid_or_disk_id"].startswith("0x")
            with open(sandbox.disk, "rb") as disk:
                assert disk.read(raw.stat().st_size) == raw.read_bytes()
            _cli(url, "node", "undeploy", "m1", "--wait", "240")
            shown = _cli(url, "node", "show", "m1", "-f", "json")
            assert shown["provision_state"] == "available", shown["last_error"]
            with open(sandbox.disk, "rb") as disk:
                data = disk.read()
            assert data.count(0) == len(data)
            assert hands.boots == 3  # a ramdisk for the clean, the deploy, the undeploy's clean
        finally:
            images.shutdown()
