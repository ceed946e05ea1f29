"""Serving the application: an asyncio front end and a thread pool, in a thread of the caller.

Chosen by measurement (``docs/api-server.rst``): cheroot's thread per
connection froze with 16 idle sockets; the event-loop front end
(:mod:`ironic_fsm.api.front`) keeps a node GET under 2 ms at p50 and
answers normal requests while a thousand idle and slow sockets are open.
The server runs beside the conductor in the same process, so the API sees
the conductor's executor and reservations directly.
"""

from __future__ import annotations

import asyncio
import ipaddress
import resource
import socket
import threading
from typing import TYPE_CHECKING, Final

from ironic_fsm.api.app import make_app
from ironic_fsm.api.auth import read_htpasswd
from ironic_fsm.api.common import MAX_BODY_BYTES
from ironic_fsm.api.front import Front, Limits, tls_context
from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import InvalidParameterValue

if TYPE_CHECKING:
    from ironic_fsm.metrics import Metrics

__all__ = ["ApiServer", "start_api"]

_AUTH_MODES: Final = ("noauth", "http_basic")
#: Pending connections the kernel queues before the loop accepts them.
_BACKLOG: Final = 1024
#: Open files the server asks for (within the hard limit): each connection is one.
_OPEN_FILES: Final = 65536
_DEFAULTS: Final = Limits()


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ApiServer:
    """A running API server; :attr:`port` is the bound port (useful with port 0)."""

    def __init__(
        self, front: Front, server: asyncio.Server, loop: asyncio.AbstractEventLoop
    ) -> None:
        self._front = front
        self._server = server
        self._loop = loop
        self._address = server.sockets[0].getsockname()
        self._thread = threading.Thread(target=self._run, name="ironic-fsm-api", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._loop.run_forever()
        finally:
            self._loop.close()

    @property
    def host(self) -> str:
        return str(self._address[0])

    @property
    def port(self) -> int:
        return int(self._address[1])

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, let requests in flight finish (up to ``timeout``), and return."""
        if not self._thread.is_alive():
            return
        done = asyncio.run_coroutine_threadsafe(self._shutdown(timeout), self._loop)
        done.result(timeout + 5)
        self._thread.join(timeout)

    async def _shutdown(self, timeout: float) -> None:
        try:
            await self._front.shutdown(self._server, timeout)
        finally:
            self._loop.call_soon(self._loop.stop)


def _check_options(
    host: str, auth: str, htpasswd: str | None, tls_cert: str | None, tls_key: str | None
) -> dict[str, bytes] | None:
    if auth not in _AUTH_MODES:
        raise InvalidParameterValue(f"Unknown auth mode {auth!r}; use noauth or http_basic")
    if auth == "noauth" and not _loopback(host):
        raise InvalidParameterValue(
            f"Refusing to serve the API without authentication on {host}: use a loopback "
            "address, or --auth http_basic --htpasswd FILE"
        )
    if (tls_cert is None) != (tls_key is None):
        raise InvalidParameterValue("TLS needs both a certificate and a key")
    if auth == "http_basic":
        if htpasswd is None:
            raise InvalidParameterValue("http_basic authentication needs an htpasswd file")
        return read_htpasswd(htpasswd)
    return None


def _check_limits(header_timeout: float, body_timeout: float, per_address: int) -> None:
    if not header_timeout > 0 or not body_timeout > 0:
        raise InvalidParameterValue("The header and body timeouts must be more than 0 seconds")
    if per_address < 1:
        raise InvalidParameterValue("connections_per_address must be at least 1")


def _raise_open_files() -> None:
    """Each connection is an open file: lift the soft limit (often 1,024) toward the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = _OPEN_FILES if hard == resource.RLIM_INFINITY else min(_OPEN_FILES, hard)
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def start_api(
    conductor: Conductor,
    *,
    host: str,
    port: int,
    auth: str = "noauth",
    htpasswd: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    header_timeout: float = _DEFAULTS.header_timeout,
    body_timeout: float = _DEFAULTS.body_timeout,
    connections_per_address: int = _DEFAULTS.connections_per_address,
    metrics: Metrics | None = None,
) -> ApiServer:
    """Serve the Ironic-compatible API for ``conductor`` on ``host:port`` in a new thread.

    Returns once the socket is listening. ``header_timeout`` bounds the wait
    for a request's head (from the connection's start or the previous
    response), ``body_timeout`` the read of its body, and a client address
    holds at most ``connections_per_address`` connections (more get 503).
    Raises InvalidParameterValue for options that would be unsafe or cannot
    work (``noauth`` off loopback, half a TLS pair, a non-bcrypt htpasswd
    entry, a timeout that is not positive) and OSError when the address
    cannot be bound or the TLS files cannot be read. With ``metrics``
    (:class:`ironic_fsm.metrics.Metrics`), requests are timed and ``/metrics``
    answers, behind the same authentication as the rest.
    """
    users = _check_options(host, auth, htpasswd, tls_cert, tls_key)
    _check_limits(header_timeout, body_timeout, connections_per_address)
    context = None
    if tls_cert is not None and tls_key is not None:
        context = tls_context(tls_cert, tls_key)
    limits = Limits(
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        connections_per_address=connections_per_address,
        keep_body=MAX_BODY_BYTES + 1,
        # The application refuses bodies over MAX_BODY_BYTES with Ironic's error body;
        # the server's own, plainer refusal is the backstop for far larger ones.
        max_body=8 * MAX_BODY_BYTES,
    )
    _raise_open_files()
    app = make_app(conductor, users=users, metrics=metrics)
    front = Front(app, limits, tls=context is not None)
    loop = asyncio.new_event_loop()
    try:
        # Bound here, before the loop's thread starts: errors reach the caller.
        server = loop.run_until_complete(
            loop.create_server(
                front.protocol, host, port, backlog=_BACKLOG, ssl=context,
                ssl_handshake_timeout=header_timeout if context else None,
                family=socket.AF_UNSPEC, reuse_address=True,
            )
        )  # fmt: skip
    except BaseException:
        front.pool.shutdown()
        loop.close()
        raise
    return ApiServer(front, server, loop)
