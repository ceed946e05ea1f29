"""``ironic-fsm serve``: one conductor process, until SIGTERM (see ``docs/fleet.rst``).

The only place ironic_fsm configures logging: a service's logs go to
standard error, readable by default, one JSON object a line with
``--log-format json`` (python-json-logger, imported only then). The
database password, if the URL has one, is masked in every line.
"""

from __future__ import annotations

import argparse
import importlib
import ipaddress
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

from ironic_fsm.cli.argtypes import _timeout
from ironic_fsm.cli.database import _build_conductor, _open_store, resolve_db_url
from ironic_fsm.cli.errors import CLIError, _error, _usage_error
from ironic_fsm.cli.settings import _read_settings
from ironic_fsm.masking import MASK

if TYPE_CHECKING:
    from ironic_fsm.hardware import HardwareType
    from ironic_fsm.service import Service

__all__ = ["add_serve_parser", "register_hardware_type"]

#: The line layout of the readable log format (and the fields of the JSON one).
LOG_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s %(message)s"
#: Ironic's API port, when ``--api`` names only a host.
API_PORT: Final = 6385
#: The metrics' port, when ``--metrics`` names only a host (ironic-prometheus-exporter's).
METRICS_PORT: Final = 9608
#: Connections the store may open beyond the flow threads: one per periodic duty.
_DUTY_CONNECTIONS: Final = 6

#: Hardware types given by a process that embeds the command (see :func:`register_hardware_type`).
_EXTRA_HARDWARE: dict[str, HardwareType] = {}


def register_hardware_type(name: str, hardware_type: HardwareType) -> None:
    """Serve ``hardware_type`` too, in a process that then calls ``ironic_fsm.cli.main``.

    For hardware types that are not installed as entry points (a site's
    own, a test's): the process registers them and runs the very same
    ``serve`` command as the console script.
    """
    _EXTRA_HARDWARE[name] = hardware_type


# -- the parser --------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    value = _timeout(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def _api_address(text: str) -> tuple[str, int]:
    """``HOST[:PORT]`` (``[v6]:PORT`` for IPv6), port 6385 by default."""
    host, port = text, API_PORT
    if text.startswith("["):
        inside, _, rest = text[1:].partition("]")
        host = inside
        if rest:
            if not rest.startswith(":"):
                raise argparse.ArgumentTypeError(f"expected HOST[:PORT], got {text!r}")
            port = _port(rest[1:], text)
    elif text.count(":") == 1:
        host, _, number = text.partition(":")
        port = _port(number, text)
    if not host:
        raise argparse.ArgumentTypeError(f"expected HOST[:PORT], got {text!r}")
    return host, port


def _metrics_address(text: str) -> tuple[str, int]:
    """``HOST[:PORT]`` as for ``--api``, port 9608 (ironic-prometheus-exporter's) by default."""
    host, port = _api_address(text)
    if text.startswith("["):
        has_port = text.partition("]")[2].startswith(":")
    else:
        has_port = text.count(":") == 1  # more: an IPv6 address without brackets, no port
    return host, port if has_port else METRICS_PORT


def _webhook_url(text: str) -> str:
    """An ``http://`` or ``https://`` URL with a host."""
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"expected an http:// or https:// URL, got {text!r}")
    return text


def _port(number: str, text: str) -> int:
    if not number.isdigit() or not 0 <= int(number) <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535 in {text!r}")
    return int(number)


def add_serve_parser(
    top: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """The ``serve`` command and its options."""
    p = top.add_parser(
        "serve",
        parents=[common],
        help="run a conductor service until stopped",
        description="Run one conductor process on the database: flow threads for queued work, "
        "and periodic tasks (heartbeat, takeover of dead conductors' nodes, callback timeouts, "
        "power-state sync, history trim) on their own timers, with Ironic's option names from "
        "--config. On PostgreSQL it wakes on new work at once (LISTEN/NOTIFY); on SQLite it "
        "polls. SIGTERM or SIGINT drains: no new work, running flows finish or are handed "
        "back at a step boundary, then the conductor goes offline (exit 0); a second signal, "
        "or --graceful-shutdown-timeout, stops at once (exit 3) and the other conductors "
        "resume the unfinished steps. Logs go to standard error.",
    )
    p.add_argument(
        "--workers",
        metavar="N",
        type=_positive_int,
        default=None,
        help="flow threads, and most nodes worked on at once (default: 8)",
    )
    p.add_argument(
        "--poll-interval",
        metavar="SECONDS",
        type=_positive_seconds,
        help="seconds between two looks for queued work (default: 1 on SQLite; 10 on "
        "PostgreSQL, where notifications wake the service at once)",
    )
    p.add_argument(
        "--graceful-shutdown-timeout",
        metavar="SECONDS",
        type=_timeout,
        default=60.0,
        help="Ironic's option: seconds a drain waits for running flows before stopping at "
        "once (default: 60)",
    )
    p.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="text: 'time level logger message' lines (default); json: one object a line",
    )
    p.add_argument(
        "--log-level",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        type=str.upper,
        default="INFO",
        help="the least severe messages logged (default: INFO)",
    )
    p.add_argument(
        "--metrics",
        metavar="HOST[:PORT]",
        type=_metrics_address,
        help="serve Prometheus metrics at http://HOST:PORT/metrics (default port "
        f"{METRICS_PORT}; no authentication: bind it where only Prometheus reaches), and with "
        "--api also under /metrics on the API's port, behind its authentication "
        "(needs ironic_fsm[metrics])",
    )
    p.add_argument(
        "--notify-url",
        metavar="URL",
        type=_webhook_url,
        help="POST Ironic's versioned notifications (provision_set, power_set, "
        "power_state_corrected, maintenance_set, node create/update/delete) to this webhook "
        "as CloudEvents, in order, retried while it is down; never delays a flow (needs "
        "ironic_fsm[notify])",
    )
    api = p.add_argument_group("REST API (needs ironic_fsm[api])")
    api.add_argument(
        "--api",
        metavar="HOST[:PORT]",
        type=_api_address,
        help=f"also serve Ironic's REST API there (default port {API_PORT})",
    )
    api.add_argument(
        "--auth",
        choices=("noauth", "http_basic"),
        default="noauth",
        help="noauth (loopback hosts only, the default) or http_basic (needs --htpasswd)",
    )
    api.add_argument("--htpasswd", metavar="FILE", help="the users of http_basic (bcrypt)")
    api.add_argument(
        "--no-access-log",
        dest="access_log",
        action="store_false",
        help="do not log each API request (method, path, status, duration, request id) at INFO",
    )
    api.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this certificate")
    api.add_argument("--tls-key", metavar="FILE", help="the certificate's private key")
    api.add_argument(
        "--header-timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        help="seconds a connection may take to send a request's head, from its start or the "
        "previous response (default: 20); slower or idle connections are closed",
    )
    api.add_argument(
        "--body-timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        help="seconds a request may take to send its body after its head (default: 30)",
    )
    api.add_argument(
        "--connections-per-address",
        metavar="N",
        type=_positive_int,
        help="connections one client address may hold open; more get 503 (default: 128)",
    )
    p.set_defaults(func=_cmd_serve, parser=p)


# -- logging -----------------------------------------------------------------------------------


class _Redact(logging.Filter):
    """Masks the given secrets in every message and traceback on their way out."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self._secrets = [secret for secret in secrets if secret]

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        for secret in self._secrets:
            message = message.replace(secret, MASK)
            if record.exc_text:
                record.exc_text = record.exc_text.replace(secret, MASK)
        record.msg, record.args = message, None
        # Formatters (python-json-logger's too) print exc_text when exc_info is gone:
        # the masked text is then the only traceback they can show.
        record.exc_info = None
        return True


def _url_secrets(url: str) -> list[str]:
    """The password in a database URL (user part or query), as written and decoded."""
    parts = urlsplit(url)
    found = [parts.password] if parts.password else []
    for item in parts.query.split("&"):
        key, _, value = item.partition("=")
        if "password" in key.lower() and value:
            found.append(value)
    return [*found, *(unquote(value) for value in found)]


def _configure_logging(log_format: str, level: str, secrets: list[str]) -> logging.Handler:
    """Send the process's logs to standard error; the handler (removed by the caller)."""
    formatter: logging.Formatter
    if log_format == "json":
        try:
            from pythonjsonlogger.json import JsonFormatter
        except ImportError as exc:
            raise CLIError(
                "--log-format json needs python-json-logger: pip install 'python-json-logger>=3.1'"
            ) from exc
        formatter = JsonFormatter(LOG_FORMAT)
    else:
        formatter = logging.Formatter(LOG_FORMAT)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    handler.addFilter(_Redact(secrets))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    return handler


# -- the command -------------------------------------------------------------------------------


#: Options that mean something only with ``--api``.
_API_ONLY: Final = (
    "htpasswd", "tls_cert", "tls_key", "header_timeout", "body_timeout", "connections_per_address"
)  # fmt: skip
#: API limits passed on only when given: ``start_api`` holds the defaults.
_API_LIMITS: Final = ("header_timeout", "body_timeout", "connections_per_address")


def _check_api(args: argparse.Namespace) -> Callable[..., Any] | None:
    """``start_api`` when ``--api`` is given; bad API options are usage errors (exit 2)."""
    if args.api is None:
        for option in _API_ONLY:
            if getattr(args, option) is not None:
                flag = "--" + option.replace("_", "-")
                _usage_error(args, f"{flag} is only used with --api")
        return None
    host, _ = args.api
    if args.auth == "noauth" and not _loopback(host):
        _usage_error(
            args,
            f"--auth noauth would let anyone who reaches {host} drive every node: use "
            "--auth http_basic --htpasswd FILE, or a loopback host (127.0.0.1, ::1, localhost)",
        )
    if args.auth == "http_basic" and args.htpasswd is None:
        _usage_error(args, "--auth http_basic needs --htpasswd FILE")
    if (args.tls_cert is None) != (args.tls_key is None):
        _usage_error(args, "--tls-cert and --tls-key go together")
    try:
        # By name: the API is an optional extra, and may be absent from this install.
        start_api: Callable[..., Any] = importlib.import_module("ironic_fsm.api").start_api
    except (ImportError, AttributeError):
        # One line, no usage: the command line is right, the install lacks the extra.
        _error("--api needs the REST API: pip install 'ironic_fsm[api]'")
        raise SystemExit(2) from None
    return start_api


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _cmd_serve(args: argparse.Namespace) -> int:
    start_api = _check_api(args)
    settings = _read_settings(getattr(args, "config", None))  # checked before any store opens
    url = resolve_db_url(args.db)
    handler = _configure_logging(args.log_format, args.log_level, _url_secrets(url))
    if not getattr(args, "access_log", True):
        # The API's access log is one logger; switched off, it costs a level check.
        logging.getLogger("ironic_fsm.api.access").setLevel(logging.WARNING)
    try:
        code = _serve(args, url, settings, start_api)
    finally:
        logging.getLogger().removeHandler(handler)
    if code != 0:
        # Flow threads still inside a step cannot be stopped: leave them to the OS.
        # Their steps are not recorded complete, so the other conductors resume them.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _serve(
    args: argparse.Namespace, url: str, settings: Any, start_api: Callable[..., Any] | None
) -> int:
    from ironic_fsm.service import DEFAULT_WORKERS, FlowExecutor, Service, ServiceOptions, conninfo

    workers = args.workers or DEFAULT_WORKERS
    options = ServiceOptions(
        workers=workers,
        poll_interval=args.poll_interval,
        graceful_shutdown_timeout=args.graceful_shutdown_timeout,
        listen_dsn=conninfo(url),
    )
    factory = getattr(args, "store", None)
    store_args = {} if factory else {"pool_size": workers + _DUTY_CONNECTIONS}
    with _open_store(url, factory=factory, **store_args) as store:
        executor = FlowExecutor(workers)
        conductor = _build_conductor(store, settings, executor=executor)
        for name, hardware_type in _EXTRA_HARDWARE.items():
            conductor.register_hardware_type(name, hardware_type)
        service = Service(conductor, executor=executor, options=options)
        # The front ends start once the conductor is up, and stop only after the drain:
        # meanwhile /readyz answers 503 (draining) and the metrics show the drain.
        stops: list[Callable[[], None]] = []
        metrics = _attach_metrics(service, args, stops)
        _attach_notifier(service, args, stops)
        if start_api is not None:
            _attach_api(service, start_api, args, metrics, stops)
        logging.getLogger("ironic_fsm.service").info(
            "Serving the %s %s (log level %s)",
            "store" if factory else "database",
            factory or getattr(store, "url", url),
            args.log_level,
        )
        try:
            return service.run(handle_signals=True)
        finally:
            for stop in stops:
                stop()


def _attach_metrics(
    service: Service, args: argparse.Namespace, stops: list[Callable[[], None]]
) -> Any:
    """The service's :class:`~ironic_fsm.metrics.Metrics` with ``--metrics`` (else ``None``),
    their listener started with the service; its stop is appended to ``stops``."""
    if args.metrics is None:
        return None
    try:
        # By name, and only now: prometheus_client is an extra, loaded only with metrics on.
        metrics_module = importlib.import_module("ironic_fsm.metrics")
    except ImportError:
        _error("--metrics needs prometheus_client: pip install 'ironic_fsm[metrics]'")
        raise SystemExit(2) from None
    metrics = metrics_module.Metrics(service.conductor)
    host, port = args.metrics
    servers: list[Any] = []

    def start() -> None:
        servers.append(metrics.serve(host, port))
        logging.getLogger("ironic_fsm.service").info(
            "Metrics on http://%s:%d/metrics", host, servers[0].port
        )

    def stop() -> None:
        for server in servers:
            server.stop()

    service.on_started.insert(0, start)
    stops.append(stop)
    return metrics


def _attach_notifier(
    service: Service, args: argparse.Namespace, stops: list[Callable[[], None]]
) -> None:
    """With ``--notify-url``, a :class:`~ironic_fsm.notifications.Notifier` posting there;
    what it still holds is sent (for a while) after the drain."""
    url = getattr(args, "notify_url", None)
    if url is None:
        return
    try:
        notify = importlib.import_module("ironic_fsm.notifications")
        importlib.import_module("ironic_fsm.notifications._webhook")
    except ImportError:
        _error("--notify-url needs the webhook client: pip install 'ironic_fsm[notify]'")
        raise SystemExit(2) from None
    notifier = notify.Notifier(service.conductor, webhook_url=url)
    stops.append(notifier.stop)


def _attach_api(
    service: Service,
    start_api: Callable[..., Any],
    args: argparse.Namespace,
    metrics: Any,
    stops: list[Callable[[], None]],
) -> None:
    """Start the API once the conductor is up; its stop is put first in ``stops``."""
    host, port = args.api
    servers: list[Any] = []
    limits = {name: getattr(args, name) for name in _API_LIMITS if getattr(args, name) is not None}

    def start() -> None:
        servers.append(
            start_api(
                service.conductor,
                host=host,
                port=port,
                auth=args.auth,
                htpasswd=args.htpasswd,
                tls_cert=args.tls_cert,
                tls_key=args.tls_key,
                metrics=metrics,
                **limits,
            )
        )
        logging.getLogger("ironic_fsm.service").info(
            "REST API on %s port %d (%s)", host, servers[0].port, args.auth
        )

    def stop() -> None:
        for server in servers:
            server.stop()

    service.on_started.append(start)
    stops.insert(0, stop)
