"""Serving the application: cheroot's thread-pool WSGI server, in a thread of the caller.

Chosen by measurement (``docs/api-server.rst``): Falcon on cheroot answered
a 2 KB node GET in 0.57 ms at p50 on one connection and about 1,900
requests/s on eight, on two shared cores, and cheroot brings TLS and a
graceful stop. The server runs beside the conductor in the same process,
so the API sees the conductor's executor and reservations directly.
"""

from __future__ import annotations

import ipaddress
import threading
from typing import Final

from cheroot import wsgi
from cheroot.ssl.builtin import BuiltinSSLAdapter

from ironic_fsm.api.app import make_app
from ironic_fsm.api.auth import read_htpasswd
from ironic_fsm.api.common import MAX_BODY_BYTES
from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import InvalidParameterValue

__all__ = ["ApiServer", "start_api"]

#: Request threads. Each holds a store connection only while it answers.
_THREADS: Final = 16
_AUTH_MODES: Final = ("noauth", "http_basic")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ApiServer:
    """A running API server; :attr:`port` is the bound port (useful with port 0)."""

    def __init__(self, server: wsgi.Server, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread

    @property
    def host(self) -> str:
        return str(self._server.bind_addr[0])

    @property
    def port(self) -> int:
        return int(self._server.bind_addr[1])

    def stop(self, timeout: float = 10.0) -> None:
        """Stop accepting, let requests in flight finish (up to ``timeout``), and return."""
        self._server.stop()
        self._thread.join(timeout)


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


def start_api(
    conductor: Conductor,
    *,
    host: str,
    port: int,
    auth: str = "noauth",
    htpasswd: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
) -> ApiServer:
    """Serve the Ironic-compatible API for ``conductor`` on ``host:port`` in a new thread.

    Returns once the socket is listening. Raises InvalidParameterValue for
    options that would be unsafe or cannot work (``noauth`` off loopback,
    half a TLS pair, a non-bcrypt htpasswd entry) and OSError when the
    address cannot be bound.
    """
    users = _check_options(host, auth, htpasswd, tls_cert, tls_key)
    app = make_app(conductor, users=users)
    server = wsgi.Server(
        (host, port),
        app,
        numthreads=_THREADS,
        max=-1,
        request_queue_size=128,
        timeout=30,
        server_name="ironic_fsm",
    )
    # The application refuses bodies over MAX_BODY_BYTES with Ironic's error body;
    # cheroot's own, plainer refusal is the backstop for far larger ones.
    server.max_request_body_size = 8 * MAX_BODY_BYTES
    if tls_cert is not None and tls_key is not None:
        server.ssl_adapter = BuiltinSSLAdapter(tls_cert, tls_key)
    server.prepare()  # binds: errors reach the caller, not the thread
    thread = threading.Thread(target=server.serve, name="ironic-fsm-api", daemon=True)
    thread.start()
    return ApiServer(server, thread)
