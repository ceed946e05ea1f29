"""The agent client's deadlines and errors on misbehaving sockets (real IPA: test_ipa_peer.py)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from ironic_fsm.agent.client import AgentClient, AgentEndpoint
from ironic_fsm.exceptions import AgentTimeout, AgentUnreachable

TOKEN = "s3cr3t-token-value-of-forty-three-characters"


def _endpoint(url: str) -> AgentEndpoint:
    return AgentEndpoint.of("node-1", {"agent_url": url, "agent_secret_token": TOKEN})


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A socket that accepts connections and never answers (a hung agent)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def test_no_agent_url_is_a_clear_error() -> None:
    with pytest.raises(AgentUnreachable, match="no agent has heartbeated"):
        AgentEndpoint.of("node-1", {"agent_secret_token": TOKEN})


def test_an_unreachable_agent_fails_fast_and_names_no_token() -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now
    started = time.monotonic()
    with pytest.raises(AgentUnreachable) as caught:
        AgentClient(timeout=30).execute(
            _endpoint(f"http://127.0.0.1:{port}"), "clean.get_clean_steps", {}, wait=True
        )
    assert time.monotonic() - started < 10
    text = str(caught.value)
    assert f"http://127.0.0.1:{port}" in text
    assert "clean.get_clean_steps" in text
    assert TOKEN not in text
    assert TOKEN not in repr(_endpoint("http://x"))


def test_a_hung_agent_times_out_at_the_deadline(silent_port: int) -> None:
    started = time.monotonic()
    with pytest.raises(AgentTimeout, match=r"did not answer clean\.get_clean_steps within 1 s"):
        AgentClient(timeout=1).execute(
            _endpoint(f"http://127.0.0.1:{silent_port}"), "clean.get_clean_steps", {}, wait=True
        )
    assert time.monotonic() - started < 10
