"""Idle, slow and surplus sockets against a real API process (issue 19, point 3).

The API used to give each connection a worker thread until its request was
read: 16 silent sockets froze it. These tests hold a thousand silent sockets
and two hundred that trickle a header, and check that normal requests are
still answered, that the slow ones are cut off at the header timeout, and
that the per-address cap refuses the surplus with a 503.
"""

from __future__ import annotations

import re
import resource
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_helpers import LATEST, api_in_process, api_process

from ironic_fsm import Conductor
from ironic_fsm.api import start_api
from ironic_fsm.exceptions import InvalidParameterValue

IDLE, SLOW = 1000, 200
SLOW_HEAD = b"GET /v1/nodes HTTP/1.1\r\nHost: api\r\nX-Slow: "


@pytest.fixture(autouse=True)
def _open_files() -> None:
    """Room for the held sockets in this process (the server raises its own limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    if want < IDLE + SLOW + 200:
        # Never a skip: a test that cannot run here fails, saying what it needs.
        pytest.fail(
            f"RLIMIT_NOFILE's hard limit ({hard}) is too low to hold the sockets: "
            f"raise it to {IDLE + SLOW + 200} or more (ulimit -Hn)"
        )
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _connect(port: int, count: int, stack: ExitStack) -> list[socket.socket]:
    socks = []
    for _ in range(count):
        sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=30))
        socks.append(sock)
    return socks


@contextmanager
def _trickling(socks: list[socket.socket]) -> Iterator[None]:
    """Each socket sends a request line, then one header byte every half second, never done."""
    for sock in socks:
        sock.sendall(SLOW_HEAD)
    stop = threading.Event()

    def trickle() -> None:
        while not stop.wait(0.5):
            for sock in socks:
                with suppress(OSError):  # already cut off
                    sock.send(b"a")

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _ended(socks: list[socket.socket], deadline: float) -> dict[socket.socket, bytes]:
    """What each socket received before the server closed it, waiting until ``deadline``."""
    got: dict[socket.socket, bytes] = {sock: b"" for sock in socks}
    with selectors.DefaultSelector() as selector:
        for sock in socks:
            selector.register(sock, selectors.EVENT_READ)
        open_ = set(socks)
        while open_ and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(4096)
                except ConnectionResetError:
                    data = b""
                got[sock] += data
                if not data:
                    selector.unregister(sock)
                    open_.discard(sock)
    assert not open_, f"{len(open_)} sockets still open"
    return got


def _still_open(socks: list[socket.socket]) -> bool:
    with selectors.DefaultSelector() as selector:
        for sock in socks:
            selector.register(sock, selectors.EVENT_READ)
        return not selector.select(timeout=0)


def test_idle_and_slow_sockets_leave_the_api_answering(tmp_path: Path) -> None:
    header_timeout = 15.0
    limits = ("--header-timeout", str(header_timeout), "--connections-per-address", "5000")
    with (
        api_process(tmp_path / "nodes.sqlite", *limits) as url,
        httpx.Client(base_url=url, headers=LATEST, timeout=2.0) as client,
        ExitStack() as stack,
    ):
        uuid = client.post("/v1/nodes", json={"driver": "fake-hardware"}).json()["uuid"]
        started = time.monotonic()
        idle = _connect(_port(url), IDLE, stack)
        slow = _connect(_port(url), SLOW, stack)
        with _trickling(slow):
            for _ in range(50):
                # Each answer within the client's 2 s: a frozen server raises ReadTimeout.
                assert client.get(f"/v1/nodes/{uuid}").status_code == 200
            if time.monotonic() - started < header_timeout - 1:
                assert _still_open(idle + slow), "the held sockets were dropped early"
            ended = _ended(slow, started + header_timeout + 60)
        # Cut off at the header timeout with 408, not before it.
        assert time.monotonic() - started >= header_timeout - 1
        assert all(data.startswith(b"HTTP/1.1 408 ") for data in ended.values())
        # The silent ones are closed without an answer.
        assert set(_ended(idle, started + header_timeout + 60).values()) == {b""}
        assert client.get(f"/v1/nodes/{uuid}").status_code == 200


def test_the_per_address_cap_refuses_the_surplus_with_503(tmp_path: Path) -> None:
    with (
        api_process(tmp_path / "nodes.sqlite", "--connections-per-address", "5") as url,
        ExitStack() as stack,
    ):
        held = _connect(_port(url), 5, stack)
        surplus = _connect(_port(url), 3, stack)
        for data in _ended(surplus, time.monotonic() + 30).values():
            assert data.startswith(b"HTTP/1.1 503 ")
            assert b"Retry-After: 1" in data
        held[0].close()  # a place frees once the server sees the close
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx.get(f"{url}/v1", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the freed place was never given back"
        assert response.status_code == 200


def test_the_timeouts_are_configurable_and_take_effect(tmp_path: Path) -> None:
    limits = ("--header-timeout", "1", "--body-timeout", "2")
    with api_process(tmp_path / "nodes.sqlite", *limits) as url, ExitStack() as stack:
        idle, slow_head, slow_body = _connect(_port(url), 3, stack)
        slow_head.sendall(SLOW_HEAD)
        slow_body.sendall(
            b"POST /v1/nodes HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"driver": '
        )
        started = time.monotonic()
        ended = _ended([idle, slow_head, slow_body], started + 60)
        assert ended[idle] == b""
        assert ended[slow_head].startswith(b"HTTP/1.1 408 ")
        assert ended[slow_body].startswith(b"HTTP/1.1 408 ")
        # A kept-alive connection idle past the header timeout is closed too.
        [kept] = _connect(_port(url), 1, stack)
        kept.sendall(b"GET /v1 HTTP/1.1\r\nHost: api\r\n\r\n")
        answer = _ended([kept], time.monotonic() + 60)[kept]
        assert answer.startswith(b"HTTP/1.1 200 ")
        assert b"Server: ironic_fsm" in answer


def test_a_chunked_body_then_a_pipelined_request_on_one_connection(tmp_path: Path) -> None:
    body = b'{"driver": "fake-hardware", "name": "chunky"}'
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    with (
        api_process(tmp_path / "nodes.sqlite", "--header-timeout", "5") as url,
        socket.create_connection(("127.0.0.1", _port(url)), timeout=30) as sock,
    ):
        sock.sendall(
            b"POST /v1/nodes HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\n"
            b"X-OpenStack-Ironic-API-Version: latest\r\nTransfer-Encoding: chunked\r\n\r\n"
            + chunked
            + b"GET /v1/nodes/chunky HTTP/1.1\r\nHost: api\r\n"
            b"X-OpenStack-Ironic-API-Version: latest\r\n\r\n"
        )
        answers = _ended([sock], time.monotonic() + 60)[sock]
    first, _, second = answers.partition(b"HTTP/1.1 200 ")
    assert first.startswith(b"HTTP/1.1 201 "), answers[:200]
    assert b'"name":"chunky"' in second


@pytest.mark.parametrize(
    "limits",
    [{"header_timeout": 0}, {"body_timeout": -1.0}, {"connections_per_address": 0}],
)
def test_limits_that_cannot_work_are_refused(limits: dict[str, float]) -> None:
    with pytest.raises(InvalidParameterValue):
        start_api(Conductor(), host="127.0.0.1", port=0, **limits)  # type: ignore[arg-type]


def test_stop_lets_a_request_in_flight_finish(tmp_path: Path) -> None:
    entered, release = threading.Event(), threading.Event()
    with api_in_process(tmp_path / "nodes.sqlite") as (_, server, url):
        app = server._front.app

        def slow_app(environ: dict[str, Any], start_response: Any) -> Any:
            if environ["PATH_INFO"] == "/v1/nodes":
                entered.set()
                release.wait(30)
            return app(environ, start_response)

        server._front.app = slow_app
        answers: list[int] = []
        client = threading.Thread(
            target=lambda: answers.append(httpx.get(f"{url}/v1/nodes", timeout=30).status_code)
        )
        client.start()
        assert entered.wait(30)
        stopper = threading.Thread(target=server.stop)
        stopper.start()
        # Stopping: no new connections, while the request in flight is still running.
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
            except OSError:
                break
            assert time.monotonic() < deadline, "still accepting after stop()"
        release.set()
        stopper.join(30)
        client.join(30)
    assert answers == [200]


def test_serve_takes_the_limits(tmp_path: Path) -> None:
    serve = subprocess.Popen(
        [sys.executable, "-m", "ironic_fsm.cli", "--db", str(tmp_path / "nodes.sqlite"),
         "serve", "--api", "127.0.0.1:0", "--header-timeout", "1",
         "--connections-per-address", "2"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert serve.stderr is not None
        port = None
        for line in serve.stderr:
            found = re.search(r"REST API on 127\.0\.0\.1 port (\d+)", line)
            if found:
                port = int(found.group(1))
                break
        assert port is not None
        with ExitStack() as stack:
            held = _connect(port, 3, stack)
            ended = _ended(held, time.monotonic() + 60)
        assert sorted(ended.values())[0] == b""  # the two admitted: closed at the header timeout
        assert sorted(ended.values())[-1].startswith(b"HTTP/1.1 503 ")  # the third: refused
    finally:
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=30) == 0


def test_serve_refuses_limits_without_the_api(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ironic_fsm.cli", "--db", str(tmp_path / "nodes.sqlite"),
         "serve", "--header-timeout", "5"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "--header-timeout is only used with --api" in result.stderr


def test_the_server_refuses_a_huge_body_or_head_itself(tmp_path: Path) -> None:
    with api_process(tmp_path / "nodes.sqlite") as url, ExitStack() as stack:
        big_body, big_head = _connect(_port(url), 2, stack)
        big_body.sendall(b"POST /v1/nodes HTTP/1.1\r\nHost: api\r\nContent-Length: 9000000\r\n\r\n")
        big_head.sendall(b"GET /v1 HTTP/1.1\r\nHost: api\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n")
        ended = _ended([big_body, big_head], time.monotonic() + 60)
    assert ended[big_body].startswith(b"HTTP/1.1 413 ")
    assert ended[big_head].startswith(b"HTTP/1.1 431 ")
