"""A throwaway PostgreSQL server for the tests.

The PostgreSQL tests run against a real server, never a mock, and never
skip: if the server binaries are missing the tests fail, saying what to
install. The server lives in a temporary directory, listens on 127.0.0.1 on
a port the kernel picked, trusts local connections (``initdb -A trust``)
and runs with ``fsync=off`` (its data is thrown away anyway). When running
as root (initdb refuses root) it runs as the ``postgres`` OS user.

Usage::

    with PostgresServer() as server:
        store = SQLStore(server.url)
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

__all__ = ["PostgresServer", "find_bin_dir"]

#: The database the tests use.
DATABASE = "ironic_fsm"
#: How long to wait for the server to accept connections.
START_TIMEOUT = 30.0

_INSTALL_HINT = (
    "PostgreSQL server binaries (initdb, pg_ctl) are needed for the PostgreSQL tests: "
    "install them (e.g. `apt-get install postgresql`) or point PG_BIN at their directory"
)


def _has_server(bin_dir: str | os.PathLike[str]) -> bool:
    return all((Path(bin_dir) / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres"))


def find_bin_dir() -> Path:
    """The PostgreSQL bin directory: $PG_BIN, else ``pg_config --bindir``, else the newest."""
    env = os.environ.get("PG_BIN")
    if env:
        if not _has_server(env):
            raise RuntimeError(f"PG_BIN={env} has no initdb/pg_ctl/postgres. {_INSTALL_HINT}")
        return Path(env)
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.CalledProcessError):
            out = subprocess.run(
                [pg_config, "--bindir"], check=True, capture_output=True, text=True
            ).stdout.strip()
            if out and _has_server(out):
                return Path(out)

    def major(path: str) -> float:
        try:
            return float(Path(path).parent.name)
        except ValueError:
            return -1.0

    candidates = [d for d in glob.glob("/usr/lib/postgresql/*/bin") if _has_server(d)]
    if candidates:
        return Path(max(candidates, key=major))
    raise RuntimeError(f"No PostgreSQL server found. {_INSTALL_HINT}")


def _free_port() -> int:
    """A port nobody listens on right now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """Start a private PostgreSQL server; :meth:`stop` removes every trace of it."""

    def __init__(self, bin_dir: str | os.PathLike[str] | None = None) -> None:
        self.bin_dir = Path(bin_dir) if bin_dir is not None else find_bin_dir()
        self.port = 0
        self.base_dir: Path | None = None
        self.startup_seconds = 0.0
        self._running = False
        self._run_as: list[str] = []
        self._owner: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            try:
                self._owner = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError(
                    "Running as root, and initdb refuses root: create a `postgres` user "
                    "(installing postgresql does) or run the tests as another user"
                ) from None
            runuser = shutil.which("runuser")
            self._run_as = [runuser, "-u", "postgres", "--"] if runuser else ["su"]

    # -- paths -------------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        assert self.base_dir is not None
        return self.base_dir / "data"

    @property
    def socket_dir(self) -> Path:
        assert self.base_dir is not None
        return self.base_dir / "sock"

    @property
    def url(self) -> str:
        """The URL of the test database, as :class:`~ironic_fsm.stores.SQLStore` takes it."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def dsn(self) -> str:
        """The libpq connection string of the test database (for psycopg directly)."""
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={DATABASE}"

    # -- running the tools -----------------------------------------------------------

    def _run(self, tool: str, *args: str, timeout: float = START_TIMEOUT) -> str:
        command = [str(self.bin_dir / tool), *args]
        if self._run_as == ["su"]:  # no runuser: su takes one shell command line
            command = ["su", "postgres", "-s", "/bin/sh", "-c", shlex.join(command)]
        else:
            command = [*self._run_as, *command]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(
                f"{tool} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}"
                + self._log_tail()
            )
        return proc.stdout

    def _log_tail(self) -> str:
        if self.base_dir is None:
            return ""
        log = self.base_dir / "server.log"
        with contextlib.suppress(OSError):
            return "\nserver log:\n" + "\n".join(log.read_text().splitlines()[-20:])
        return ""

    # -- lifetime ----------------------------------------------------------------------

    def start(self) -> str:
        """initdb, start, wait until ready, create the database; return :attr:`url`."""
        started = time.monotonic()
        self.base_dir = Path(tempfile.mkdtemp(prefix="ironic_fsm-pg-"))
        try:
            self.socket_dir.mkdir()
            if self._owner is not None:
                for path in (self.base_dir, self.socket_dir):
                    os.chown(path, self._owner.pw_uid, self._owner.pw_gid)
            self._run(
                "initdb", "-D", str(self.data_dir), "-U", "postgres", "-A", "trust",
                "-E", "UTF8", "--no-locale", "--no-sync",
            )  # fmt: skip
            self._start_server(started)
            self._run(
                "createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", DATABASE
            )
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self.url

    def _start_server(self, started: float) -> None:
        last: Exception | None = None
        for _ in range(3):  # another process may grab the port between bind and listen
            self.port = _free_port()
            try:
                self._pg_ctl_start()
            except RuntimeError as exc:
                last = exc
                continue
            self._running = True
            self._wait_ready(started)
            return
        raise RuntimeError(f"PostgreSQL did not start: {last}")

    def _pg_ctl_start(self) -> None:
        assert self.base_dir is not None
        options = (
            f"-h 127.0.0.1 -p {self.port} -k {self.socket_dir} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        self._run(
            "pg_ctl", "start", "-D", str(self.data_dir), "-o", options,
            "-w", "-t", str(int(START_TIMEOUT)), "-l", str(self.base_dir / "server.log"),
            timeout=START_TIMEOUT + 10,
        )  # fmt: skip

    def pause(self, mode: str = "fast") -> None:
        """Stop the server but keep its data (``pg_ctl stop -m MODE``): the database goes away."""
        self._run("pg_ctl", "stop", "-D", str(self.data_dir), "-m", mode, "-w")
        self._running = False

    def resume(self) -> None:
        """Start the paused server again, on the same port: the database comes back."""
        self._pg_ctl_start()
        self._running = True
        self._wait_ready(time.monotonic())

    def _wait_ready(self, started: float) -> None:
        deadline = started + START_TIMEOUT
        while True:
            proc = subprocess.run(
                [str(self.bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port),
                 "-U", "postgres", "-t", "2"],
                capture_output=True, text=True,
            )  # fmt: skip
            if proc.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"PostgreSQL on port {self.port} not ready after {START_TIMEOUT:.0f} s: "
                    f"{proc.stdout.strip()}" + self._log_tail()
                )
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory; safe to call twice."""
        if self._running:
            self._running = False
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self._run("pg_ctl", "stop", "-D", str(self.data_dir), "-m", "fast", "-w")
        if self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
