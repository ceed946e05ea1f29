"""The API's front end: an event loop reads whole requests, a bounded thread pool answers them.

Why not a thread per connection: cheroot gave each accepted socket a worker
thread until its request was read, so 16 idle or slow sockets froze the API
(issue 19). Here a socket costs the loop nothing while it waits. A request
reaches a worker thread only once its head and body are in; the head and the
body are read under deadlines; a client address holds a bounded number of
connections. HTTP/1.1 is parsed by h11 (keep-alive, pipelining, chunked
bodies, ``Expect: 100-continue``); the application stays plain WSGI.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import queue
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from typing import Any, Final
from urllib.parse import unquote_to_bytes

import h11

__all__ = ["Front", "Limits"]

_LOG: Final = logging.getLogger(__name__)

#: A request head larger than this is refused (431); Ironic's clients send under 2 KB.
_MAX_HEAD: Final = 64 * 1024
_NO_BODY: Final = frozenset({204, 304})
_REFUSED: Final = (  # before the request is read: h11 cannot frame it
    b"HTTP/1.1 503 Service Unavailable\r\nServer: ironic_fsm\r\nRetry-After: 1\r\n"
    b"Content-Length: 0\r\nConnection: close\r\n\r\n"
)

Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Answer = tuple[int, str, list[tuple[str, str]], bytes]


@dataclass(frozen=True)
class Limits:
    """What one client may cost the server (see ``docs/api-server.rst``)."""

    #: Seconds from accepting a connection, or from the end of the previous response on a
    #: kept-alive one, to the end of the next request's head: idle and slow sockets go.
    header_timeout: float = 20.0
    #: Seconds from the end of a request's head to the end of its body.
    body_timeout: float = 30.0
    #: Connections one client address may hold open; more are answered 503 and closed.
    connections_per_address: int = 128
    #: Worker threads running the application (each holds a store connection while it answers).
    threads: int = 16
    #: Bodies the application may refuse by their size are read only up to this many bytes
    #: and counted beyond; past ``max_body`` the server refuses them itself (413, closed).
    keep_body: int = 1024 * 1024 + 1
    max_body: int = 8 * 1024 * 1024


def _call_app(app: Wsgi, environ: dict[str, Any]) -> Answer:
    """Runs in a worker thread: the whole WSGI response, or a bare 500 if the app failed."""
    head: list[Any] = []
    chunks: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        if exc_info is not None and head:
            raise exc_info[1].with_traceback(exc_info[2])
        head[:] = [status, headers]
        return chunks.append

    try:
        result = app(environ, start_response)
        try:
            chunks.extend(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        status, headers = head
    except Exception:
        _LOG.exception("The API application failed on %s", environ.get("PATH_INFO"))
        return 500, "Internal Server Error", [("Content-Type", "text/plain")], b""
    code, _, reason = status.partition(" ")
    return int(code), reason, headers, b"".join(chunks)


class _Pool:
    """Threads that run the application and hand each answer back to the loop.

    Plainer than ``run_in_executor`` (no futures chained across threads): a
    queue in, ``call_soon_threadsafe`` out, which saves a node GET about a
    tenth of its cost.
    """

    def __init__(self, size: int) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._size = size
        for number in range(size):
            name = f"ironic-fsm-api-{number}"
            threading.Thread(target=self._work, name=name, daemon=True).start()

    def submit(
        self, loop: asyncio.AbstractEventLoop, app: Wsgi, environ: dict[str, Any],
        done: Callable[[Answer], None],
    ) -> None:  # fmt: skip
        self._jobs.put((loop, app, environ, done))

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            loop, app, environ, done = job
            answer = _call_app(app, environ)
            # RuntimeError: the loop closed under the request (a stop that timed out).
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(done, answer)

    def shutdown(self) -> None:
        """Let each thread finish its request, then end."""
        for _ in range(self._size):
            self._jobs.put(None)


class _Dates:
    """The ``Date`` header, formatted once a second rather than once a response."""

    def __init__(self) -> None:
        self._second = 0
        self._text = ""

    def now(self) -> str:
        second = int(time.time())
        if second != self._second:
            self._second, self._text = second, formatdate(second, usegmt=True)
        return self._text


class Front:
    """The connections of one listening socket, their limits, and the pool that answers them."""

    def __init__(self, app: Wsgi, limits: Limits, *, tls: bool) -> None:
        self.app = app
        self.limits = limits
        self.scheme = "https" if tls else "http"
        self.pool = _Pool(limits.threads)
        self.dates = _Dates()
        self.stopping = False
        self._per_address: dict[str, int] = {}
        self._open: set[_Connection] = set()
        self._busy = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def protocol(self) -> _Connection:
        return _Connection(self)

    def admit(self, conn: _Connection, address: str) -> bool:
        """Count ``conn`` against its address; False (refuse it) when over the cap or stopping."""
        count = self._per_address.get(address, 0)
        if self.stopping or count >= self.limits.connections_per_address:
            return False
        self._per_address[address] = count + 1
        self._open.add(conn)
        return True

    def release(self, conn: _Connection, address: str) -> None:
        if conn not in self._open:
            return
        self._open.discard(conn)
        count = self._per_address.pop(address) - 1
        if count:
            self._per_address[address] = count

    def busy(self, delta: int) -> None:
        """Track requests with the application, so that a stop can wait for them."""
        self._busy += delta
        if self._busy:
            self._idle.clear()
        else:
            self._idle.set()

    async def shutdown(self, server: asyncio.Server, timeout: float) -> None:
        """Stop accepting, close waiting connections, let requests in flight finish."""
        self.stopping = True
        server.close()
        for conn in list(self._open):
            conn.close_if_waiting()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except asyncio.TimeoutError:
            _LOG.warning("API requests still running after %.0f s; closing them", timeout)
        for conn in list(self._open):
            conn.abort()
        self.pool.shutdown()


class _Connection(asyncio.Protocol):
    """One client connection: h11 parses, timers bound the reads, the pool answers."""

    def __init__(self, front: Front) -> None:
        self._front = front
        self._http = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
        self._transport: asyncio.Transport | None = None
        self._address = ""
        self._timer: asyncio.TimerHandle | None = None
        self._request: h11.Request | None = None
        self._body = bytearray()
        self._size = 0
        self._with_app = False
        self._started = False  # bytes of the next request have arrived

    # -- asyncio's calls ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername")
        self._address = str(peer[0]) if peer else ""
        if not self._front.admit(self, self._address):
            transport.write(_REFUSED)
            transport.close()
            return
        self._arm(self._front.limits.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._front.release(self, self._address)

    def data_received(self, data: bytes) -> None:
        self._started = True
        self._http.receive_data(data)
        self._advance()

    def eof_received(self) -> bool:
        self._http.receive_data(b"")
        self._advance()
        return True  # keep the transport: a request in flight may still be answered

    # -- reading a request ----------------------------------------------------------------------

    def _advance(self) -> None:
        """Take what h11 has parsed until it needs more bytes or the app has the request."""
        while not self._with_app and self._transport is not None:
            if self._transport.is_closing():
                return
            try:
                event = self._http.next_event()
            except h11.RemoteProtocolError as error:
                self._fail(error.error_status_hint)
                return
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            self._take(event)

    def _take(self, event: Any) -> None:
        if isinstance(event, h11.Request):
            self._head(event)
        elif isinstance(event, h11.Data):
            self._data(event.data)
        elif isinstance(event, h11.EndOfMessage):
            self._dispatch()
        elif isinstance(event, h11.ConnectionClosed):
            self.abort()

    def _head(self, request: h11.Request) -> None:
        self._request = request
        self._body.clear()
        self._size = 0
        # h11 bounds a head that arrives in pieces; one that arrives whole is checked here.
        if len(request.target) + sum(len(n) + len(v) for n, v in request.headers) > _MAX_HEAD:
            self._fail(431)
            return
        length = _content_length(request)
        if length is not None and length > self._front.limits.max_body:
            self._fail(413)
            return
        self._arm(self._front.limits.body_timeout)
        if self._http.they_are_waiting_for_100_continue:
            self._write(self._http.send(h11.InformationalResponse(status_code=100, headers=[])))

    def _data(self, data: bytes) -> None:
        limits = self._front.limits
        self._size += len(data)
        if self._size > limits.max_body:
            self._fail(413)
            return
        room = limits.keep_body - len(self._body)
        if room > 0:
            self._body += data[:room]

    def _dispatch(self) -> None:
        assert self._request is not None
        assert self._transport is not None
        self._disarm()
        self._with_app = True
        self._transport.pause_reading()  # pipelined requests wait in the kernel, not in memory
        self._front.busy(1)
        environ = _environ(self._request, bytes(self._body), self._size, self._transport)
        environ["wsgi.url_scheme"] = self._front.scheme
        self._body.clear()
        loop = asyncio.get_running_loop()
        self._front.pool.submit(loop, self._front.app, environ, self._answered)

    # -- answering ------------------------------------------------------------------------------

    def _answered(self, answer: Answer) -> None:
        self._with_app = False
        self._front.busy(-1)
        if self._transport is None or self._transport.is_closing():
            return
        code, reason, headers, body = answer
        assert self._request is not None
        keep = _keep_alive(self._request) and not self._front.stopping
        head = self._request.method == b"HEAD"
        try:
            out = _serialize(code, reason, headers, body, self._front.dates.now(), head, keep)
        except ValueError:
            _LOG.exception("The API application gave a response HTTP cannot carry")
            self._fail(500)
            return
        self._transport.write(out)
        self._next(keep)

    def _next(self, keep: bool) -> None:
        """After a response: close, or wait for the next request (perhaps already buffered).

        The response was written without h11 (its header checks cost more than the
        rest of a node GET), so a fresh h11 connection takes over the unread bytes.
        """
        assert self._transport is not None
        rest, closed = self._http.trailing_data
        if not keep or closed:
            self._transport.close()
            return
        self._http = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
        if rest:
            self._http.receive_data(bytes(rest))
        self._transport.resume_reading()
        self._request = None
        self._started = bool(rest)
        self._arm(self._front.limits.header_timeout)
        self._advance()

    def _fail(self, status: int) -> None:
        """Answer a request the server refuses itself (bad framing, too big, too slow); close."""
        self._disarm()
        if self._transport is not None:
            phrase = HTTPStatus(status).phrase
            self._transport.write(
                f"HTTP/1.1 {status} {phrase}\r\nServer: ironic_fsm\r\nConnection: close\r\n"
                "Content-Length: 0\r\n\r\n".encode("ascii")
            )
            self._transport.close()

    def _write(self, data: bytes | None) -> None:
        if data and self._transport is not None:
            self._transport.write(data)

    # -- deadlines and stopping -----------------------------------------------------------------

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = asyncio.get_running_loop().call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self._with_app:
            return
        if self._started:
            self._fail(408)  # part of a request came, too slowly
        else:
            self.abort()  # an idle connection: nothing to answer

    def close_if_waiting(self) -> None:
        """At a stop: close the connection unless the application is answering on it."""
        if not self._with_app:
            self.abort()

    def abort(self) -> None:
        self._disarm()
        if self._transport is not None:
            self._transport.close()


def _keep_alive(request: h11.Request) -> bool:
    """HTTP/1.1 without ``Connection: close`` (HTTP/1.0 connections close, as h11 has them)."""
    if request.http_version != b"1.1":
        return False
    for name, value in request.headers:
        if name == b"connection" and b"close" in value.lower():
            return False
    return True


def _serialize(
    code: int, reason: str, headers: list[tuple[str, str]], body: bytes, date: str,
    head: bool, keep: bool,
) -> bytes:  # fmt: skip
    """The response's bytes; ValueError for a header that would split it (CR, LF)."""
    lines = [f"HTTP/1.1 {code} {reason}\r\n"]
    names = set()
    for name, value in headers:
        if "\n" in value or "\r" in value or "\n" in name or "\r" in name:
            raise ValueError(f"line break in the {name!r} header")
        names.add(name.lower())
        lines.append(f"{name}: {value}\r\n")
    lines.append(f"Date: {date}\r\n")
    if "server" not in names:
        lines.append("Server: ironic_fsm\r\n")
    bodyless = head or code < 200 or code in _NO_BODY
    if "content-length" not in names and not bodyless:
        lines.append(f"Content-Length: {len(body)}\r\n")
    if not keep:
        lines.append("Connection: close\r\n")
    lines.append("\r\n")
    data = "".join(lines).encode("latin-1")
    return data if bodyless else data + body


def _content_length(request: h11.Request) -> int | None:
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)
    return None


def _environ(
    request: h11.Request, body: bytes, size: int, transport: asyncio.Transport
) -> dict[str, Any]:
    """PEP 3333's environ for a request whose body has been read whole (and de-chunked)."""
    target = request.target
    if not target.startswith(b"/") and b"://" in target:  # absolute form: keep the path
        target = b"/" + target.split(b"://", 1)[1].partition(b"/")[2]
    path, _, query = target.partition(b"?")
    server = transport.get_extra_info("sockname") or ("", 0)
    peer = transport.get_extra_info("peername") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request.method.decode("ascii"),
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": query.decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": "HTTP/" + request.http_version.decode("ascii"),
        "REMOTE_ADDR": str(peer[0]),
        "REMOTE_PORT": str(peer[1]),
        "CONTENT_LENGTH": str(size) if size else "",
        "wsgi.version": (1, 0),
        "wsgi.input": io.BytesIO(body),
        "wsgi.input_terminated": True,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in request.headers:
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        if name in ("CONTENT_LENGTH", "TRANSFER_ENCODING"):
            continue  # the body is read: its length is what came, whatever the framing
        value = raw_value.decode("latin-1")
        key = name if name == "CONTENT_TYPE" else "HTTP_" + name
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


def tls_context(cert: str, key: str) -> ssl.SSLContext:
    """A server context with the standard library's defaults (TLS 1.2 and up)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    return context
