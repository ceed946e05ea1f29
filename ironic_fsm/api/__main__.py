"""``python -m ironic_fsm.api --db URL --api HOST:PORT``: the API and a conductor, standalone.

Prints the bound port on stdout once listening (so a test can ask for
port 0), then serves until SIGTERM or SIGINT. Logs go to standard error
(``--log-level``, WARNING by default): the package's own logger has only a
``NullHandler``, so without a handler of this process's a database outage
and its end would be logged nowhere.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from types import FrameType

from ironic_fsm.api.front import Limits
from ironic_fsm.api.server import start_api
from ironic_fsm.conductor import Conductor
from ironic_fsm.config import Config
from ironic_fsm.exceptions import IronicFSMError, StoreUnavailable

_DEFAULTS = Limits()


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, not {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


LOG = logging.getLogger("ironic_fsm.api")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m ironic_fsm.api", description=__doc__)
    parser.add_argument(
        "--db", required=True, help="database URL (sqlite:///file, postgresql://...)"
    )
    parser.add_argument("--api", type=_address, default=("127.0.0.1", 6385), help="HOST:PORT")
    parser.add_argument("--auth", choices=("noauth", "http_basic"), default="noauth")
    parser.add_argument("--htpasswd", help="htpasswd file with bcrypt entries (http_basic)")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--workers", type=int, default=8, help="conductor worker threads")
    parser.add_argument(
        "--header-timeout", type=float, default=_DEFAULTS.header_timeout, metavar="SECONDS",
        help="most seconds to wait for a request's head (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--body-timeout", type=float, default=_DEFAULTS.body_timeout, metavar="SECONDS",
        help="most seconds to read a request's body (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--connections-per-address", type=int, metavar="N",
        default=_DEFAULTS.connections_per_address,
        help="connections one client address may hold open (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), type=str.upper,
        default="WARNING", help="the least severe messages logged (default: %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--heartbeat-interval", type=float, default=Config().heartbeat_interval,
        metavar="SECONDS", help="seconds between heartbeats (default: %(default)s)",
    )  # fmt: skip
    return parser


def _log_to_stderr(level: str) -> None:
    """This process's logs, one ``time level logger message`` line each, to standard error."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _log_to_stderr(args.log_level)
    from ironic_fsm.stores import SQLStore  # the database driver loads only here

    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    try:
        store = SQLStore(args.db)
    except IronicFSMError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with ThreadPoolExecutor(args.workers, thread_name_prefix="conductor") as executor:
        config = Config(heartbeat_interval=args.heartbeat_interval)
        conductor = Conductor(store, config, executor=executor)
        host, port = args.api
        try:
            server = start_api(
                conductor, host=host, port=port, auth=args.auth, htpasswd=args.htpasswd,
                tls_cert=args.tls_cert, tls_key=args.tls_key, header_timeout=args.header_timeout,
                body_timeout=args.body_timeout,
                connections_per_address=args.connections_per_address,
            )  # fmt: skip
        except (IronicFSMError, OSError) as error:
            print(f"error: {error}", file=sys.stderr)
            store.close()
            return 2
        conductor.register()
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        print(server.port, flush=True)
        _heartbeat_until(stop, conductor)
        server.stop()
        try:
            conductor.unregister()
        except StoreUnavailable as error:  # others see it gone after heartbeat_timeout
            LOG.warning("Could not go offline in the registry: %s", error)
    store.close()
    return 0


def _heartbeat_until(stop: threading.Event, conductor: Conductor) -> None:
    """Heartbeat every ``heartbeat_interval`` until ``stop``; a database outage is waited out.

    The API keeps answering meanwhile (503 for what needs the database), and
    the outage is logged once when it starts and once when it ends, as
    ``serve``'s periodic tasks do.
    """
    down = False
    while not stop.wait(conductor.config.heartbeat_interval):
        try:
            conductor.heartbeat()
        except StoreUnavailable as error:
            if not down:
                LOG.warning("The database is unavailable (%s); heartbeats go on when it is back",
                            error)  # fmt: skip
            down = True
            continue
        if down:
            LOG.warning("The database is back; heartbeats go on")
            down = False


if __name__ == "__main__":
    sys.exit(main())
