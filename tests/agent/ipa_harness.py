"""The agent tests' harness: our conductor and API beside a sandboxed real IPA (a ``Peer``).

Shared by the tests of cleaning (``test_ipa_peer``) and deployment
(``test_ipa_deploy``); each machine's "BMC" is :class:`ipa_sandbox.SandboxPower`.
"""

from __future__ import annotations

import functools
import http.server
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import bcrypt
import httpx
from ipa_sandbox import Sandbox, SandboxPower

from ironic_fsm import Conductor, Config, HardwareType
from ironic_fsm.agent.client import AgentClient
from ironic_fsm.api import start_api
from ironic_fsm.drivers.agent import AgentDeploy
from ironic_fsm.events import Event
from ironic_fsm.interfaces import BaseInterface
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore

MAC = "52:54:00:1f:5a:01"
V168 = {"X-OpenStack-Ironic-API-Version": "1.68"}
#: Seconds the agent may stay silent: it heartbeats every 0.3-0.6 of it.
HEARTBEAT_TIMEOUT = 6


@attrs.define
class Peer:
    conductor: Conductor
    sandbox: Sandbox
    power: SandboxPower
    api_url: str
    client: httpx.Client
    events: list[Event]
    ipa: Path
    window: float

    def node(self, **fields: Any) -> Node:
        """A node of the sandbox's machine, its port carrying the sandbox NIC's MAC."""
        node = self.conductor.create_node(**{"driver": "agent-sandbox", **fields})
        self.conductor.create_port(MAC, node.uuid)
        self.power.attach(node.uuid, self.sandbox, self.api_url, self.ipa)
        return node

    def wait_for(
        self, uuid: str, check: Callable[[Node], bool], timeout: float = 120, heard: bool = False
    ) -> Node:
        """The node once ``check`` holds in the store; with ``heard``, once :attr:`events` also
        holds the event that announced its provision state: events are told after the save
        that records them, so a reader of the store can be a moment ahead of the listener."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            node = self.conductor.get_node(uuid)
            if check(node) and (not heard or self._heard(node)):
                return node
            time.sleep(0.05)
        raise AssertionError(
            f"node {uuid} never got there: {self.conductor.get_node(uuid)!r}\n"
            f"{self.sandbox.launcher_log()[-2000:]}\n{self.sandbox.ipa_log()[-4000:]}"
        )

    def _heard(self, node: Node) -> bool:
        """Whether the listener has heard of the move into the node's provision state."""
        moved = node.provision_updated_at
        return any(
            e.node == node.uuid and e.state == node.provision_state and e.step is None
            and (moved is None or (e.timestamp is not None and e.timestamp >= moved))
            for e in list(self.events)
        )  # fmt: skip


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


@contextmanager
def image_server(folder: Path, host: str) -> Iterator[str]:
    """``folder`` served over HTTP on ``host`` (a sandbox's end of its link); its URL."""
    handler = functools.partial(_Quiet, directory=str(folder))
    images = http.server.ThreadingHTTPServer((host, 0), handler)
    threading.Thread(target=images.serve_forever, daemon=True).start()
    try:
        yield f"http://{host}:{images.server_port}"
    finally:
        images.shutdown()
        images.server_close()


def users(tmp_path: Path) -> Path:
    """An htpasswd file with ``admin``/``pw``: the API asks for it, the agent's calls do not."""
    path = tmp_path / "htpasswd"
    path.write_text(f"admin:{bcrypt.hashpw(b'pw', bcrypt.gensalt(rounds=4)).decode()}\n")
    return path


def conductor(
    store: SQLStore, power: SandboxPower, executor: ThreadPoolExecutor, events: list[Event],
    window: float = 0.0, config: Config | None = None, **kinds: BaseInterface,
) -> Conductor:  # fmt: skip
    """A conductor whose ``agent-sandbox`` machines boot IPA in their sandboxes."""
    config = config or Config(ramdisk_heartbeat_timeout=HEARTBEAT_TIMEOUT)
    made = Conductor(store, config, listeners=[events.append], executor=executor)
    deploy = AgentDeploy(AgentClient(60), step_poll_window=window)
    made.register_hardware_type(
        "agent-sandbox",
        HardwareType(power=power, deploy=deploy, **kinds),  # type: ignore[arg-type]
    )
    return made


@contextmanager
def running_peer(
    tmp_path: Path, sandbox: Sandbox, ipa: Path, *, window: float = 0.0,
    config: Config | None = None, kinds: Callable[[SandboxPower], dict[str, Any]] | None = None,
) -> Iterator[Peer]:  # fmt: skip
    """Our conductor and API (http_basic) on the host's end of ``sandbox``'s link."""
    htpasswd = users(tmp_path)
    store = SQLStore(f"sqlite:///{tmp_path / 'nodes.sqlite'}")
    events: list[Event] = []
    power = SandboxPower()
    extra = kinds(power) if kinds is not None else {}
    # The API's address is known before the conductor is made: inspection tells the agent
    # where to post its inventory (Config.api_url).
    with socket.socket() as probe:
        probe.bind((sandbox.host_ip, 0))
        port = probe.getsockname()[1]
    api_url = f"http://{sandbox.host_ip}:{port}"
    config = attrs.evolve(config or Config(ramdisk_heartbeat_timeout=HEARTBEAT_TIMEOUT),
                          api_url=api_url)  # fmt: skip
    with ThreadPoolExecutor(4) as executor:
        made = conductor(store, power, executor, events, window, config, **extra)
        server = start_api(
            made, host=sandbox.host_ip, port=port, auth="http_basic", htpasswd=str(htpasswd)
        )
        try:
            with httpx.Client(base_url=api_url, timeout=60, auth=("admin", "pw")) as client:
                yield Peer(made, sandbox, power, api_url, client, events, ipa, window)
        finally:
            sandbox.stop()
            server.stop()
            store.close()
