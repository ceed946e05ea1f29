"""``ipmi``: power and boot device over IPMI (pyghmi), with a deadline on every BMC call.

pyghmi speaks IPMI 2.0 (RMCP+) in pure Python, but its API has no timeouts:
a dead BMC takes about 5 s to fail, a BMC that goes silent in the middle of
a session about 30 s, and a BMC that stops half-way through the login
handshake blocks the caller forever. So every pyghmi call here runs in a
worker thread and the caller waits for it with a deadline,
``driver_info['ipmi_timeout']``. When the deadline passes, the session that
call was using is taken out of pyghmi's caches and marked broken (which
also lets the stuck worker return), so the next call logs in afresh
instead of inheriting a dead session.

One driver operation (read the power state, change it and wait for the
change, set the boot device, ...) logs in once, makes its calls and logs
out: real BMCs have only a handful of session slots, and a session left
open is one fewer for the operator's own tools.

``driver_info`` keys: ``ipmi_address``, ``ipmi_username``,
``ipmi_password`` (required), ``ipmi_port`` (623), ``ipmi_timeout`` (10 s),
``ipmi_power_wait`` (30 s), ``ipmi_reset_wait`` (60 s),
``ipmi_boot_mode`` (``uefi`` or ``bios``) and ``ipmi_cipher_suite`` (3 or 17).

pyghmi's own session loop sometimes sleeps 0.5-1 s on a reply that has
already arrived; the driver's sessions use a wait that does not (see
``PromptSession`` below and ``docs/drivers/ipmi.rst``).

pyghmi is imported on first use; without it the hardware type raises
:class:`~ironic_fsm.exceptions.MissingDependency` naming the ``ipmi`` extra.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

from ironic_fsm import states
from ironic_fsm.exceptions import (
    BMCAuthError,
    BMCRequestFailed,
    BMCTimeout,
    BMCUnreachable,
    HardwareError,
    InvalidParameterValue,
    IronicFSMError,
    MissingDependency,
)
from ironic_fsm.hardware import HardwareType
from ironic_fsm.interfaces import (
    DeployInterface,
    ManagementInterface,
    PowerInterface,
    VendorInterface,
)
from ironic_fsm.masking import MASK, is_secret_key
from ironic_fsm.node import INTERFACE_KINDS
from ironic_fsm.steps import clean_step, deploy_step, service_step
from ironic_fsm.task import Task

if TYPE_CHECKING:
    from ironic_fsm.node import Node

__all__ = [
    "BOOT_DEVICE_TO_PYGHMI",
    "COMMON_PROPERTIES",
    "DiskBootDeploy",
    "IPMIInfo",
    "IPMIManagement",
    "IPMIPower",
    "IPMIVendor",
    "ipmi_hardware",
    "parse_driver_info",
]

LOG = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_PORT: Final = 623
DEFAULT_TIMEOUT: Final = 10.0
DEFAULT_POWER_WAIT: Final = 30.0
DEFAULT_RESET_WAIT: Final = 60.0

#: IPMI limits: user names are 16 bytes, RMCP+ passwords 20 bytes.
MAX_USERNAME_BYTES: Final = 16
MAX_PASSWORD_BYTES: Final = 20

#: Cipher suites the driver can be told to use (``ipmi_cipher_suite``):
#: 3 is HMAC-SHA1 / HMAC-SHA1-96 / AES-CBC-128, 17 the same with SHA-256.
CIPHER_SUITES: Final = (3, 17)

COMMON_PROPERTIES: Final[Mapping[str, str]] = {
    "ipmi_address": "IP address or host name of the BMC. Required.",
    "ipmi_username": f"User name on the BMC (at most {MAX_USERNAME_BYTES} bytes). Required.",
    "ipmi_password": f"Password of that user (at most {MAX_PASSWORD_BYTES} bytes). Required.",
    "ipmi_port": f"UDP port of the BMC. Optional, default {DEFAULT_PORT}.",
    "ipmi_timeout": (
        "Deadline in seconds of every call to the BMC, login included (pyghmi has "
        f"none of its own). Optional, default {DEFAULT_TIMEOUT:g}."
    ),
    "ipmi_power_wait": (
        "Seconds to wait for the BMC to report a requested power state. "
        f"Optional, default {DEFAULT_POWER_WAIT:g}."
    ),
    "ipmi_reset_wait": (
        "Seconds to wait for the BMC to answer again after vendor.bmc_reset. "
        f"Optional, default {DEFAULT_RESET_WAIT:g}."
    ),
    "ipmi_boot_mode": (
        "'uefi' or 'bios': the boot mode requested along with a boot device. Optional; "
        "when unset, boot_mode in node.properties['capabilities'] is used (default bios)."
    ),
    "ipmi_cipher_suite": (
        "IPMI 2.0 cipher suite to log in with: 3 (SHA-1) or 17 (SHA-256), and no other. "
        "Optional; when unset, 17 is proposed and 3 used if the BMC refuses it."
    ),
}

_REQUIRED: Final = ("ipmi_address", "ipmi_username", "ipmi_password")

#: Ironic's boot device names → pyghmi's.
BOOT_DEVICE_TO_PYGHMI: Final[Mapping[str, str]] = {
    "pxe": "network",
    "disk": "hd",
    "cdrom": "optical",
    "bios": "setup",
    "safe": "safe",
}

# What pyghmi may read back (its aliases included) → Ironic's names.
_PYGHMI_TO_BOOT_DEVICE: Final[Mapping[str, str]] = {
    "network": "pxe",
    "net": "pxe",
    "pxe": "pxe",
    "hd": "disk",
    "optical": "cdrom",
    "cd": "cdrom",
    "cdrom": "cdrom",
    "dvd": "cdrom",
    "setup": "bios",
    "bios": "bios",
    "f1": "bios",
    "safe": "safe",
}

_PYGHMI_POWER: Final[Mapping[str, str]] = {"on": states.POWER_ON, "off": states.POWER_OFF}

# After a BMC reset, give the BMC a moment to actually go down before polling
# it: a BMC that still answers right after accepting the reset is not "back".
_RESET_SETTLE: Final = 0.5

_LOGOUT_TIMEOUT: Final = 2.0


# -- driver_info ----------------------------------------------------------------------------


@dataclass(frozen=True)
class IPMIInfo:
    """A node's validated ``driver_info`` (the password never shows in ``repr``)."""

    address: str
    username: str
    password: str = field(repr=False)
    port: int = DEFAULT_PORT
    timeout: float = DEFAULT_TIMEOUT
    power_wait: float = DEFAULT_POWER_WAIT
    reset_wait: float = DEFAULT_RESET_WAIT
    uefi: bool = False
    cipher_suite: int | None = None

    @property
    def endpoint(self) -> str:
        """``address:port`` as messages show it (IPv6 in brackets)."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{host}:{self.port}"


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _capabilities(node: Node) -> dict[str, str]:
    caps = node.properties.get("capabilities") if node.properties else None
    if isinstance(caps, Mapping):
        return {str(k): str(v) for k, v in caps.items()}
    if isinstance(caps, str):
        pairs = (item.split(":", 1) for item in caps.split(",") if ":" in item)
        return {k.strip(): v.strip() for k, v in pairs}
    return {}


def parse_driver_info(node: Node) -> IPMIInfo:
    """The node's IPMI settings, checked.

    Raises:
        InvalidParameterValue: naming every missing or malformed key at once
            (``.missing`` and ``.invalid`` list them); a secret's value is
            never shown.
    """
    info = node.driver_info or {}
    missing = [key for key in _REQUIRED if info.get(key) is None]
    problems: dict[str, str] = {}

    def shown(key: str) -> str:
        return "" if is_secret_key(key) else f", got {info[key]!r}"

    address = info.get("ipmi_address")
    if address is not None and (not isinstance(address, str) or not address.strip()):
        problems["ipmi_address"] = f"ipmi_address must be a non-empty string{shown('ipmi_address')}"
    username = info.get("ipmi_username")
    if username is not None and (
        not isinstance(username, str) or not username or len(username.encode()) > MAX_USERNAME_BYTES
    ):
        problems["ipmi_username"] = (
            f"ipmi_username must be a string of 1 to {MAX_USERNAME_BYTES} bytes"
            f"{shown('ipmi_username')}"
        )
    password = info.get("ipmi_password")
    if password is not None and (
        not isinstance(password, str) or len(password.encode()) > MAX_PASSWORD_BYTES
    ):
        problems["ipmi_password"] = (
            f"ipmi_password must be a string of at most {MAX_PASSWORD_BYTES} bytes"
        )

    port = DEFAULT_PORT
    if info.get("ipmi_port") is not None:
        raw = info["ipmi_port"]
        number = _number(raw)
        if number is None or number != int(number) or not 0 < number < 65536:
            problems["ipmi_port"] = (
                f"ipmi_port must be an integer between 1 and 65535{shown('ipmi_port')}"
            )
        else:
            port = int(number)

    def seconds(key: str, default: float) -> float:
        if info.get(key) is None:
            return default
        number = _number(info[key])
        if number is None or number <= 0:
            problems[key] = f"{key} must be a positive number of seconds{shown(key)}"
            return default
        return number

    timeout = seconds("ipmi_timeout", DEFAULT_TIMEOUT)
    power_wait = seconds("ipmi_power_wait", DEFAULT_POWER_WAIT)
    reset_wait = seconds("ipmi_reset_wait", DEFAULT_RESET_WAIT)

    boot_mode = info.get("ipmi_boot_mode")
    if boot_mode is not None and boot_mode not in ("uefi", "bios"):
        problems["ipmi_boot_mode"] = (
            f"ipmi_boot_mode must be 'uefi' or 'bios'{shown('ipmi_boot_mode')}"
        )
    if boot_mode is None:
        boot_mode = _capabilities(node).get("boot_mode", "bios")

    cipher_suite = None
    if info.get("ipmi_cipher_suite") is not None:
        number = _number(info["ipmi_cipher_suite"])
        if number is None or number not in CIPHER_SUITES:
            problems["ipmi_cipher_suite"] = (
                f"ipmi_cipher_suite must be one of {', '.join(map(str, CIPHER_SUITES))}"
                f"{shown('ipmi_cipher_suite')}"
            )
        else:
            cipher_suite = int(number)

    if missing or problems:
        parts = []
        if missing:
            parts.append(f"missing required keys: {', '.join(missing)}")
        parts.extend(problems.values())
        raise InvalidParameterValue(
            f"Node {node.uuid}: invalid IPMI driver_info: {'; '.join(parts)}",
            node=node.uuid,
            missing=missing,
            invalid=sorted(problems),
        )
    assert isinstance(address, str)
    assert isinstance(username, str)
    assert isinstance(password, str)
    return IPMIInfo(
        address=address.strip(),
        username=username,
        password=password,
        port=port,
        timeout=timeout,
        power_wait=power_wait,
        reset_wait=reset_wait,
        uefi=boot_mode == "uefi",
        cipher_suite=cipher_suite,
    )


# -- pyghmi, imported on first use ----------------------------------------------------------


class _Pyghmi(NamedTuple):
    command: Any  # pyghmi.ipmi.command
    session: Any  # pyghmi.ipmi.private.session
    exceptions: Any  # pyghmi.exceptions


def _missing_pyghmi() -> MissingDependency:
    return MissingDependency(
        "The ipmi hardware type needs pyghmi, which is not installed: pip install ironic_fsm[ipmi]",
        extra="ipmi",
    )


def _pyghmi() -> _Pyghmi:
    """pyghmi's modules (imported here, not at module load: it is an optional extra)."""
    try:
        import pyghmi.exceptions as pyghmi_exceptions
        import pyghmi.ipmi.command as pyghmi_command
        import pyghmi.ipmi.private.session as pyghmi_session
    except ImportError as exc:
        raise _missing_pyghmi() from exc
    return _Pyghmi(pyghmi_command, pyghmi_session, pyghmi_exceptions)


# -- pyghmi's session loop, without its missed wake-ups ---------------------------------------
#
# pyghmi reads every socket in one IO thread. A caller that sent a request
# queues a waiter for the BMC's address and sleeps; the IO thread wakes it
# when it reads a packet from that address *after* the waiter was queued, or
# at the waiter's deadline, which is the request's retry timer (0.5-1.0 s).
# But pyghmi's ``Session.awaitresponse`` queues the waiter without first
# looking at the session's own packet queue: when the reply arrives between
# the send (or the previous wake-up) and the queueing of the waiter -- on
# loopback it often does -- the IO thread has already filed the reply under
# the session, nothing wakes the caller, and it sleeps until the retry
# timer, finds the reply there and returns. No packet is lost or resent;
# 0.5-1 s just vanishes (measured: every such wait had the reply queued
# before it began). The login handshake waits the same way.
#
# The session class below waits differently: it queues its waiter, then
# looks at its packet queue, and only sleeps if nothing is there. A reply
# filed after that look wakes the waiter (the IO thread files the packet
# before it wakes waiters), so no reply can slip between the look and the
# sleep. The retry, give-up and re-login logic is pyghmi's own, reached
# through its methods.

_SESSION_CLASSES: dict[int | None, type[Any]] = {}
_SESSION_CLASSES_LOCK = threading.Lock()

# How long to wait for the reply to a BMC reset (sent once, never resent: a
# BMC may well reset before it answers).
_RESET_REPLY_WAIT: Final = 1.0


def _forget_filed(mod: Any) -> None:
    """Drop our sessions from pyghmi's queue of sessions that got packets.

    The IO thread notes every session that received a packet in that queue,
    and only pyghmi's ``Session.wait_for_rsp`` empties it, which the
    driver's sessions never call: without this it would grow with every
    packet and keep old sessions alive. Other sessions' entries are put
    back for whoever runs pyghmi's loop.
    """
    queue_ = mod.sessionqueue
    for _ in range(len(queue_)):
        try:
            entry = queue_.popleft()
        except IndexError:
            return
        if not getattr(entry, "prompt", False):
            queue_.append(entry)


def _ignore_logon(response: Any) -> None:
    """pyghmi calls this when a login ends; the waiting loop reads the session instead."""


def _session_class(suite: int | None) -> type[Any]:
    """pyghmi's ``Session`` with a race-free wait (and, if given, a fixed cipher suite)."""
    with _SESSION_CLASSES_LOCK:
        cls = _SESSION_CLASSES.get(suite)
        if cls is None:
            cls = _SESSION_CLASSES[suite] = _build_session_class(_pyghmi(), suite)
        return cls


def _build_session_class(lib: _Pyghmi, suite: int | None) -> type[Any]:
    mod = lib.session
    base: Any = mod.Session

    class PromptSession(base):  # type: ignore[misc]
        """A pyghmi client session whose waits never sleep on a reply already received."""

        cipher_suite = suite
        prompt = True  # handles its own packets (see _forget_filed)

        def __init__(
            self, bmc: str, userid: bytes, password: bytes, port: int = 623, kg: Any = None,
            onlogon: Any = None, privlevel: Any = None, keepalive: bool = True,
        ) -> None:  # fmt: skip
            if hasattr(self, "initialized") or onlogon is not None:
                # Handed back from pyghmi's cache, or an asynchronous login:
                # pyghmi's own path.
                super().__init__(bmc, userid, password, port, kg, onlogon, privlevel, keepalive)
                return
            # Started with a callback, pyghmi sends the first login packet
            # and returns; the handshake is then driven by the loop below.
            super().__init__(bmc, userid, password, port, kg, _ignore_logon, privlevel, keepalive)
            self._pump(lambda: not self.logging or self.broken)
            if self.broken:
                raise lib.exceptions.IpmiException(self.errormsg)

        # -- waiting ----------------------------------------------------------------------

        def _wait_for_packet(
            self, deadline: float, ready: Callable[[], bool] = lambda: False
        ) -> None:
            """Sleep until a packet for this session arrives, or ``deadline`` (monotonic).

            ``ready()`` true after the waiter is queued also ends the wait:
            another thread running pyghmi's loop may have handled the packet.
            """
            woken = threading.Event()
            mod.ioqueue.append((deadline, woken, self.sockaddr))
            if deadline < mod.selectdeadline:
                # The IO thread sleeps past our deadline: make it look at its queue now.
                try:
                    waker = mod.iosockets[0]
                    waker.sendto(b"\x01", (mod.myself, waker.getsockname()[1]))
                except (OSError, IndexError):
                    pass
            if self.pktqueue or ready():  # filed before the IO thread knew we wait
                return
            woken.wait(max(deadline - time.monotonic(), 0.0) + 1.0)

        def _expired(self) -> bool:
            """Whether this session's retry timer has run out (and take it off the timers)."""
            with mod.WAITING_SESSIONS:
                if self in mod.Session.waiting_sessions and self.expiration < time.monotonic():
                    mod.Session.waiting_sessions.pop(self, None)
                    return True
            return False

        def _pump(self, done: Callable[[], bool]) -> None:
            """Handle this session's packets and retry timer until ``done()``."""
            while not done():
                if self.pktqueue:
                    self.process_pktqueue()
                    continue
                with mod.WAITING_SESSIONS:
                    waiting = self in mod.Session.waiting_sessions
                deadline = self.expiration if waiting else time.monotonic() + 0.5
                self._wait_for_packet(deadline, done)
                self.process_pktqueue()
                if not done() and self._expired():
                    self._timedout()  # resend, re-login or give up: pyghmi decides
            _forget_filed(mod)

        def awaitresponse(self, retry: bool, netfn: int, command: int) -> None:
            """Wait for the reply to the request just sent (pyghmi's contract)."""
            self.awaitingresponse = True

            def answered() -> bool:
                return not mod.unmatched(self.lastresponse, netfn, command)

            try:
                give_up = time.monotonic() + 2 * self._getmaxtimeout()
                while (
                    retry and not answered() and (self.logging or self.logged or self.onlogpayload)
                ):
                    if not self.pktqueue:
                        self._wait_for_packet(self.expiration, answered)
                    while self.iterwaiters:
                        self.iterwaiters.pop()({"success": True})
                    self.process_pktqueue()
                    if time.monotonic() > give_up:
                        self._mark_broken()
                        raise lib.exceptions.IpmiException("Session no longer connected")
                    if answered():
                        break
                    if self._expired():
                        if not self.lastpayload and not self.logging:
                            return
                        self._timedout()
            finally:
                self.awaitingresponse = False
                _forget_filed(mod)

        def request_once(
            self, netfn: int, command: int, wait: float, data: tuple[int, ...] = ()
        ) -> dict[str, Any] | None:
            """Send one request, never resent, and return its reply, or None after ``wait`` s.

            For requests that must not be repeated (a BMC reset): pyghmi's
            ``retry=False`` sends once but does not wait for the reply at all.
            """
            replies: list[dict[str, Any]] = []
            self.raw_command(
                netfn=netfn, command=command, data=data, retry=False, callback=replies.append
            )
            deadline = time.monotonic() + wait
            try:
                while not replies and not self.broken and time.monotonic() < deadline:
                    if not self.pktqueue:
                        self._wait_for_packet(deadline, lambda: bool(replies))
                    self.process_pktqueue()
            finally:
                # raw_command leaves these to a caller that passes a callback.
                self.incommand = False
                while self.evq:
                    self.evq.popleft().set()
            return replies[0] if replies else None

        # -- cipher suite -----------------------------------------------------------------

        def _open_rmcpplus_request(self) -> None:
            if self.cipher_suite == 3:
                self.attemptedhash = 1  # pyghmi's marker for the SHA-1 suite
            super()._open_rmcpplus_request()

        def _got_rmcp_response(self, data: bytearray) -> Any:
            if (
                self.cipher_suite == 17
                and self.attemptedhash == 256
                and len(data) > 1
                and data[0] == self.rmcptag
                and data[1] != 0
            ):
                # pyghmi falls back to suite 3 when 17 is refused; not when 17 was asked for.
                self.attemptedhash = 17
            return super()._got_rmcp_response(data)

    PromptSession.__name__ = PromptSession.__qualname__ = (
        "PromptSession" if suite is None else f"PromptSessionSuite{suite}"
    )
    return PromptSession


# -- worker threads ---------------------------------------------------------------------------


class _DaemonPool:
    """A small, lazily grown pool of daemon threads returning futures.

    Not :class:`concurrent.futures.ThreadPoolExecutor`: its workers are
    joined at interpreter exit, and a pyghmi call that never returns (a BMC
    that stops half-way through the login handshake) would then hang the
    application's exit. Daemon workers do not; idle ones exit after a while,
    and the pool grows when every worker is busy (or stuck), up to a bound.
    """

    def __init__(self, max_workers: int = 32, idle_seconds: float = 30.0) -> None:
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._max = max_workers
        self._idle_seconds = idle_seconds
        self._threads = 0
        self._idle = 0

    def submit(self, fn: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            self._queue.put((future, fn))
            if self._queue.qsize() > self._idle and self._threads < self._max:
                self._threads += 1
                self._idle += 1
                name = f"ironic_fsm-ipmi-{self._threads}"
                threading.Thread(target=self._work, name=name, daemon=True).start()
        return future

    def _work(self) -> None:
        while True:
            try:
                future, fn = self._queue.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._queue.qsize():
                        continue
                    self._idle -= 1
                    self._threads -= 1
                    return
            with self._lock:
                self._idle -= 1
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:  # handed to whoever waits on the future
                    future.set_exception(exc)
            del future, fn
            with self._lock:
                self._idle += 1


_POOL: _DaemonPool | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> _DaemonPool:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = _DaemonPool()
        return _POOL


# One operation at a time per BMC: operations log out when they finish, and
# pyghmi shares one session between all callers with the same credentials.
_BMC_LOCKS: dict[tuple[str, int], threading.Lock] = {}
_BMC_LOCKS_GUARD = threading.Lock()


def _bmc_lock(info: IPMIInfo) -> threading.Lock:
    with _BMC_LOCKS_GUARD:
        return _BMC_LOCKS.setdefault((info.address, info.port), threading.Lock())


# -- pyghmi's session caches ------------------------------------------------------------------


def _credentials(info: IPMIInfo) -> tuple[bytes, bytes]:
    # Bytes, not str: pyghmi stores what it is given and compares it with the
    # bytes it keeps, so str credentials never match its session cache (a
    # second login to the same BMC then blocks; a broken session is reused).
    return info.username.encode(), info.password.encode()


def _sessions_of(session_mod: Any, info: IPMIInfo) -> list[Any]:
    """pyghmi's client sessions to this BMC with these credentials."""
    cls = session_mod.Session
    user, password = _credentials(info)
    found: list[Any] = []
    pending = cls.initting_sessions.get((info.address, user, password, info.port, None))
    if pending is not None:
        found.append(pending)
    for _ in range(3):  # the IO thread may change the table while we copy it
        try:
            tables = [list(t.values()) for t in list(cls.bmc_handlers.values())]
            break
        except RuntimeError:
            continue
    else:
        tables = []
    for table in tables:
        for candidate in table:
            if (
                getattr(candidate, "servermode", True) is False
                and getattr(candidate, "bmc", None) == info.address
                and getattr(candidate, "port", None) == info.port
                and getattr(candidate, "userid", None) == user
                and getattr(candidate, "password", None) == password
                and all(candidate is not seen for seen in found)
            ):
                found.append(candidate)
    return found


def _abandon_sessions(info: IPMIInfo, reason: str) -> bool:
    """Take this BMC's sessions out of pyghmi's caches and mark them broken.

    The next login then starts from scratch, and a worker still blocked in
    one of them sees it broken and returns. Nothing is sent to the BMC (a
    logout would wait behind the stuck call). Returns whether the BMC had
    answered anything on those sessions, which tells a silent BMC from an
    absent one.
    """
    session_mod = _pyghmi().session
    cls = session_mod.Session
    answered = False
    for sess in _sessions_of(session_mod, info):
        answered = answered or bool(getattr(sess, "logged", 0) or getattr(sess, "sockaddr", None))
        was_broken = bool(getattr(sess, "broken", False))
        # Flags first: a worker looping on them stops at its next wake-up.
        sess.errormsg = reason
        sess.logging = False
        sess.logged = 0
        sess.onlogpayload = None
        sess.lastpayload = None
        sess.broken = True
        with session_mod.WAITING_SESSIONS:
            cls.waiting_sessions.pop(sess, None)
        with session_mod.KEEPALIVE_SESSIONS:
            cls.keepalive_sessions.pop(sess, None)
        for key, value in list(cls.initting_sessions.items()):
            if value is sess:
                cls.initting_sessions.pop(key, None)
        for table in list(cls.bmc_handlers.values()):
            for port, value in list(table.items()):
                if value is sess:
                    table.pop(port, None)
        sock = getattr(sess, "socket", None)
        if not was_broken and sock is not None and cls.socketpool.get(sock, 0) > 0:
            cls.socketpool[sock] -= 1
    return answered


# -- one operation against one BMC -------------------------------------------------------------


def _scrubbed(text: str, info: IPMIInfo) -> str:
    # pyghmi's messages do not echo the password, but a message is no place
    # to find out that one did.
    return text.replace(info.password, MASK) if len(info.password) >= 3 else text


_AUTH_MARKERS: Final = (
    "Incorrect password",
    "Unauthorized name",
    "Unauthorized role",
    "Invalid role",
    "privelege level",  # sic: pyghmi's spelling
    "privilege level",
    "Kg",
)


class _Connection:
    """A logged-in pyghmi session for one driver operation, every call under a deadline.

    ``with _Connection(node, info) as bmc: bmc.call('read power', lambda c: c.get_power())``
    """

    def __init__(self, node: Node, info: IPMIInfo, *, timeout: float | None = None) -> None:
        self.node = node.uuid
        self.info = info
        self.timeout = timeout if timeout is not None else info.timeout
        self._lock = _bmc_lock(info)
        self._locked = False
        self._cmd: Any = None
        self._dropped = False

    def __enter__(self) -> _Connection:
        _pyghmi()  # MissingDependency before anything else
        if not self._lock.acquire(timeout=self.timeout):
            raise BMCTimeout(
                f"Node {self.node}: another IPMI operation on BMC {self.info.endpoint} did "
                f"not finish within {self.timeout:g} s",
                node=self.node,
                address=self.info.endpoint,
            )
        self._locked = True
        try:
            self._cmd = self._run("log in", self._login, login=True)
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self._cmd is not None and not self._dropped:
                cmd = self._cmd
                try:
                    self._run(
                        "log out",
                        lambda: cmd.ipmi_session.logout(),
                        timeout=min(_LOGOUT_TIMEOUT, self.timeout),
                    )
                except HardwareError as error:
                    LOG.debug("Node %s: IPMI logout failed: %s", self.node, error)
        finally:
            self._release()

    def _release(self) -> None:
        if self._locked:
            self._locked = False
            self._lock.release()

    def _login(self) -> Any:
        lib = _pyghmi()
        user, password = _credentials(self.info)
        where = {"bmc": self.info.address, "userid": user, "password": password}
        cls = _session_class(self.info.cipher_suite)
        session = cls(port=self.info.port, **where)
        if not isinstance(session, cls):
            # pyghmi handed back a session someone else in this process
            # opened with the same credentials; give it the prompt wait too.
            session.__class__ = cls
        # Command() looks the session up in pyghmi's cache and adopts it.
        cmd = lib.command.Command(port=self.info.port, **where)
        if cmd.ipmi_session is not session:
            cmd.ipmi_session = session
        return cmd

    def call(self, what: str, fn: Callable[[Any], T], *, timeout: float | None = None) -> T:
        """``fn(command)`` in a worker, within the deadline; pyghmi errors translated."""
        cmd = self._cmd
        return self._run(what, lambda: fn(cmd), timeout=timeout)

    def drop(self, reason: str) -> bool:
        """Abandon the session (after a failure, or when the BMC forgot it)."""
        self._dropped = True
        return _abandon_sessions(self.info, reason)

    def _run(
        self, what: str, fn: Callable[[], T], *, login: bool = False, timeout: float | None = None
    ) -> T:
        deadline = timeout if timeout is not None else self.timeout
        started = time.monotonic()
        future = _pool().submit(fn)
        try:
            return future.result(timeout=deadline)
        except FutureTimeout:
            future.add_done_callback(self._late)
            answered = self.drop(f"abandoned after {deadline:g} s without an answer")
            elapsed = time.monotonic() - started
            if login and not answered:
                raise BMCUnreachable(
                    f"Node {self.node}: no answer from the BMC at {self.info.endpoint} "
                    f"within {deadline:g} s (ipmi_timeout) while logging in",
                    node=self.node,
                    address=self.info.endpoint,
                    elapsed=elapsed,
                ) from None
            raise BMCTimeout(
                f"Node {self.node}: the BMC at {self.info.endpoint} stopped answering; "
                f"IPMI {what} timed out after {deadline:g} s (ipmi_timeout)",
                node=self.node,
                address=self.info.endpoint,
                elapsed=elapsed,
            ) from None
        except IronicFSMError:
            raise
        except Exception as exc:
            error = self._translate(exc, what, login)
            if not (isinstance(error, BMCRequestFailed) and not login):
                self.drop(str(error))  # the session is of no further use
            raise error from exc

    def _late(self, future: Future[Any]) -> None:
        # A call we stopped waiting for has finished after all: say so, quietly.
        exc = future.exception()
        LOG.debug(
            "Node %s: abandoned IPMI call to %s finished late (%s)",
            self.node,
            self.info.endpoint,
            "ok" if exc is None else _scrubbed(repr(exc), self.info),
        )

    def _translate(self, exc: Exception, what: str, login: bool) -> IronicFSMError:
        pyghmi_exc = _pyghmi().exceptions
        where = f"BMC {self.info.endpoint}"
        details = {"node": self.node, "address": self.info.endpoint}
        text = _scrubbed(
            str(exc.args[0]) if exc.args and exc.args[0] is not None else "", self.info
        )
        if isinstance(exc, pyghmi_exc.InvalidParameterValue):
            return InvalidParameterValue(f"Node {self.node}: IPMI {what}: {text}", **details)
        if isinstance(exc, pyghmi_exc.IpmiException):
            code = getattr(exc, "ipmicode", 0) or None
            if not text:
                # pyghmi's own login timeout carries no message at all.
                cls: type[HardwareError] = BMCUnreachable if login else BMCTimeout
                return cls(
                    f"Node {self.node}: no answer from {where} during IPMI {what}", **details
                )
            if login and any(marker in text for marker in _AUTH_MARKERS):
                reason = (
                    "unknown user" if "Unauthorized name" in text else
                    "wrong password" if "Incorrect password" in text else text
                )  # fmt: skip
                return BMCAuthError(
                    f"Node {self.node}: IPMI authentication failed at {where} for user "
                    f"{self.info.username!r}: {reason} ({text})",
                    **details,
                    reason=reason,
                )
            if "no longer connected" in text or text == "timeout":
                return BMCTimeout(
                    f"Node {self.node}: the IPMI session with {where} was lost during "
                    f"{what}: {text}",
                    **details,
                )
            if login and "Unable to transmit" in text:
                return BMCUnreachable(f"Node {self.node}: cannot reach {where}: {text}", **details)
            if login and self.info.cipher_suite is not None:
                text += f" (cipher suite {self.info.cipher_suite} only, ipmi_cipher_suite)"
            return BMCRequestFailed(
                f"Node {self.node}: {where} refused IPMI {what}: {text}",
                **details,
                code=code,
            )
        if isinstance(exc, OSError):
            return BMCUnreachable(
                f"Node {self.node}: cannot reach {where}: {_scrubbed(str(exc), self.info)}",
                **details,
            )
        return BMCRequestFailed(
            f"Node {self.node}: unexpected reply from {where} during IPMI {what}: "
            f"{type(exc).__name__}: {text}",
            **details,
        )


def _check_reply(node: Node, info: IPMIInfo, what: str, reply: Any) -> Any:
    """pyghmi reports some failures as ``{'error': ...}`` instead of raising."""
    if isinstance(reply, Mapping) and "error" in reply:
        raise BMCRequestFailed(
            f"Node {node.uuid}: the BMC at {info.endpoint} refused IPMI {what}: "
            f"{_scrubbed(str(reply['error']), info)}",
            node=node.uuid,
            address=info.endpoint,
            code=reply.get("code"),
        )
    return reply


# -- interfaces -------------------------------------------------------------------------------


class _IPMIInterface:
    """What the IPMI interfaces share: their driver_info keys and its validation."""

    def get_properties(self) -> dict[str, str]:
        return dict(COMMON_PROPERTIES)

    def validate(self, task: Task) -> None:
        """Check ``driver_info`` (no BMC contact), and that pyghmi is installed."""
        parse_driver_info(task.node)
        _pyghmi()


class IPMIPower(_IPMIInterface, PowerInterface):
    """Power over IPMI chassis control; every change is confirmed by reading it back."""

    def get_power_state(self, task: Task) -> str:
        info = parse_driver_info(task.node)
        with _Connection(task.node, info) as bmc:
            return self._read(task.node, info, bmc)

    @staticmethod
    def _read(node: Node, info: IPMIInfo, bmc: _Connection) -> str:
        reply = _check_reply(
            node, info, "get power", bmc.call("get power", lambda c: c.get_power())
        )
        state = _PYGHMI_POWER.get(reply.get("powerstate"))
        if state is None:
            raise BMCRequestFailed(
                f"Node {node.uuid}: the BMC at {info.endpoint} reported an unknown power "
                f"state {reply.get('powerstate')!r}",
                node=node.uuid,
                address=info.endpoint,
            )
        return state

    def get_supported_power_states(self, task: Task) -> list[str]:
        return [
            states.POWER_ON,
            states.POWER_OFF,
            states.REBOOT,
            states.SOFT_POWER_OFF,
            states.SOFT_REBOOT,
        ]

    def set_power_state(self, task: Task, power_state: str, timeout: float | None = None) -> None:
        """Ask for ``power_state`` and wait until the BMC reports it.

        ``timeout`` (or ``ipmi_power_wait``) bounds the wait for the change
        to be seen; each call to the BMC has its own ``ipmi_timeout``.
        Rebooting resets a node that is on and powers on one that is off.
        """
        node = task.node
        if power_state not in self.get_supported_power_states(task):
            raise InvalidParameterValue(
                f"Node {node.uuid}: the ipmi power interface cannot set power state "
                f"{power_state!r}",
                node=node.uuid,
            )
        info = parse_driver_info(node)
        wait = info.power_wait if timeout is None else float(timeout)
        with _Connection(node, info) as bmc:
            current = self._read(node, info, bmc)
            if power_state == states.POWER_ON:
                self._change(node, info, bmc, "on", states.POWER_ON, wait)
            elif power_state == states.POWER_OFF:
                self._change(node, info, bmc, "off", states.POWER_OFF, wait)
            elif power_state == states.SOFT_POWER_OFF:
                if current != states.POWER_OFF:
                    self._change(node, info, bmc, "shutdown", states.POWER_OFF, wait)
            elif power_state == states.REBOOT:
                action = "reset" if current == states.POWER_ON else "on"
                self._change(node, info, bmc, action, states.POWER_ON, wait)
            else:  # soft reboot: an orderly shutdown, then on again
                if current != states.POWER_OFF:
                    self._change(node, info, bmc, "shutdown", states.POWER_OFF, wait)
                self._change(node, info, bmc, "on", states.POWER_ON, wait)
        off = power_state in (states.POWER_OFF, states.SOFT_POWER_OFF)
        node.power_state = states.POWER_OFF if off else states.POWER_ON
        LOG.info("Node %s: %s done through the BMC at %s", node.uuid, power_state, info.endpoint)

    def _change(
        self, node: Node, info: IPMIInfo, bmc: _Connection, action: str, target: str, wait: float
    ) -> None:
        what = f"power {action}"
        # wait=False: pyghmi's own wait polls once a second; ours polls faster.
        bmc.call(what, lambda c: _check_reply(node, info, what, c.set_power(action, wait=False)))
        deadline = time.monotonic() + wait
        pause = 0.02
        while True:
            seen = self._read(node, info, bmc)
            if seen == target:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise BMCTimeout(
                    f"Node {node.uuid}: the BMC at {info.endpoint} still reports {seen!r} "
                    f"{wait:g} s after {what} (waiting for {target!r}; ipmi_power_wait)",
                    node=node.uuid,
                    address=info.endpoint,
                )
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.5)

    def reboot(self, task: Task, timeout: float | None = None) -> None:
        self.set_power_state(task, states.REBOOT, timeout)


class IPMIManagement(_IPMIInterface, ManagementInterface):
    """Boot device over IPMI system boot options, with Ironic's device names."""

    def get_supported_boot_devices(self, task: Task) -> list[str]:
        return list(BOOT_DEVICE_TO_PYGHMI)

    def set_boot_device(self, task: Task, device: str, persistent: bool = False) -> None:
        """Boot from ``device`` next time (or always); UEFI per the node's boot mode."""
        node = task.node
        if device not in BOOT_DEVICE_TO_PYGHMI:
            raise InvalidParameterValue(
                f"Node {node.uuid}: unsupported boot device {device!r}; supported: "
                f"{', '.join(BOOT_DEVICE_TO_PYGHMI)}",
                node=node.uuid,
            )
        info = parse_driver_info(node)
        name = BOOT_DEVICE_TO_PYGHMI[device]
        what = f"set boot device {device}"
        with _Connection(node, info) as bmc:
            bmc.call(
                what,
                lambda c: _check_reply(
                    node, info, what,
                    c.set_bootdev(name, persist=bool(persistent), uefiboot=info.uefi),
                ),
            )  # fmt: skip
        LOG.info(
            "Node %s: boot device %s (persistent=%s, uefi=%s) set through %s",
            node.uuid, device, bool(persistent), info.uefi, info.endpoint,
        )  # fmt: skip

    def get_boot_device(self, task: Task) -> dict[str, Any]:
        """``{'boot_device': Ironic name or None, 'persistent': bool or None}``."""
        node = task.node
        info = parse_driver_info(node)
        with _Connection(node, info) as bmc:
            reply = bmc.call(
                "get boot device",
                lambda c: _check_reply(node, info, "get boot device", c.get_bootdev()),
            )
        raw = reply.get("bootdev")
        device = _PYGHMI_TO_BOOT_DEVICE.get(raw) if isinstance(raw, str) else None
        if device is None:
            if raw not in ("default", None):
                LOG.debug("Node %s: BMC reports boot device %r, unknown to Ironic", node.uuid, raw)
            return {"boot_device": None, "persistent": None}
        return {"boot_device": device, "persistent": bool(reply.get("persistent"))}


def _as_bool(value: object, name: str, node: Node) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "on"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no", "0", "off"):
        return False
    raise InvalidParameterValue(
        f"Node {node.uuid}: {name} must be a Boolean, got {value!r}", node=node.uuid
    )


def _parse_raw_bytes(raw_bytes: object, node: Node) -> list[int]:
    """``'0x06 0x01'`` → ``[6, 1]``: netfn, command, then the data bytes."""
    problem = None
    values: list[int] = []
    if not isinstance(raw_bytes, str):
        problem = "must be a string of hex bytes"
    else:
        for token in raw_bytes.replace(",", " ").split():
            try:
                value = int(token, 16)
            except ValueError:
                problem = f"has a token that is not a hex byte: {token!r}"
                break
            if not 0 <= value <= 0xFF:
                problem = f"has a value out of byte range: {token!r}"
                break
            values.append(value)
        if problem is None and len(values) < 2:
            problem = "needs at least a network function and a command byte"
    if problem is not None:
        raise InvalidParameterValue(
            f"Node {node.uuid}: raw_bytes {problem} (e.g. '0x06 0x01'), got {raw_bytes!r}",
            node=node.uuid,
        )
    return values


_WARM_ARG: Final = {
    "warm": {
        "description": "Warm reset (the BMC keeps its configuration and the host is not "
        "disturbed) instead of a cold reset. Default: false (cold).",
        "required": False,
    }
}
_RAW_ARG: Final = {
    "raw_bytes": {
        "description": "Bytes to send as hex, network function first, then the command "
        "and its data, e.g. '0x06 0x01'.",
        "required": True,
    }
}


class IPMIVendor(_IPMIInterface, VendorInterface):
    """BMC reset and raw IPMI commands, as manual clean and service steps."""

    @clean_step(priority=0, argsinfo=_WARM_ARG, requires_ramdisk=False)
    @service_step(argsinfo=_WARM_ARG, requires_ramdisk=False)
    def bmc_reset(self, task: Task, warm: bool = False) -> None:
        """Reset the BMC, then wait (``ipmi_reset_wait``) until it answers again.

        The reset is sent once (never resent: a second reset could hit the
        BMC while it restarts) and its reply awaited for up to a second.
        A non-zero completion code raises :class:`BMCRequestFailed` with
        ``code`` set (OpenIPMI, for one, refuses a warm reset with 0xC1).
        No reply at all counts as accepted, because a BMC may reset before
        it answers; the wait for the BMC to accept a login again then tells
        whether it came back.
        """
        node = task.node
        warm = _as_bool(warm, "warm", node)
        info = parse_driver_info(node)
        what = "warm reset" if warm else "cold reset"
        command = 3 if warm else 2  # Warm / Cold Reset (IPMI 2.0, 20.2 and 20.3)
        wait = min(_RESET_REPLY_WAIT, info.timeout)
        with _Connection(node, info) as bmc:
            reply = bmc.call(what, lambda c: c.ipmi_session.request_once(6, command, wait))
            code = int(reply.get("code") or 0) if reply is not None else 0
            if code:
                # A refusal: the BMC did not reset, so its sessions are still valid.
                text = _pyghmi().session.get_ipmi_error(reply) or f"completion code 0x{code:02X}"
                raise BMCRequestFailed(
                    f"Node {node.uuid}: the BMC at {info.endpoint} refused the {what}: {text} "
                    f"(completion code 0x{code:02X})",
                    node=node.uuid,
                    address=info.endpoint,
                    code=code,
                )
            bmc.drop("the BMC was reset")  # it forgets every session
        if reply is None:
            LOG.info(
                "Node %s: no reply from the BMC at %s within %g s of a %s; taken as accepted "
                "(a BMC may reset before it answers)",
                node.uuid, info.endpoint, wait, what,
            )  # fmt: skip
        else:
            LOG.info("Node %s: BMC at %s accepted a %s", node.uuid, info.endpoint, what)
        self._wait_for_bmc(node, info, what)
        LOG.info("Node %s: BMC at %s answers again after %s", node.uuid, info.endpoint, what)

    @staticmethod
    def _wait_for_bmc(node: Node, info: IPMIInfo, what: str) -> None:
        deadline = time.monotonic() + info.reset_wait
        time.sleep(min(_RESET_SETTLE, info.reset_wait))
        while True:
            left = deadline - time.monotonic()
            try:
                with _Connection(node, info, timeout=max(min(info.timeout, left), 0.1)) as bmc:
                    bmc.call("get device id", lambda c: c.raw_command(netfn=6, command=1))
                return
            except (BMCUnreachable, BMCTimeout) as error:
                if time.monotonic() >= deadline:
                    raise BMCTimeout(
                        f"Node {node.uuid}: the BMC at {info.endpoint} did not answer again "
                        f"within {info.reset_wait:g} s after a {what} (ipmi_reset_wait): {error}",
                        node=node.uuid,
                        address=info.endpoint,
                    ) from error
                time.sleep(min(0.2, max(deadline - time.monotonic(), 0)))

    @clean_step(priority=0, argsinfo=_RAW_ARG, requires_ramdisk=False)
    @service_step(argsinfo=_RAW_ARG, requires_ramdisk=False)
    def send_raw(self, task: Task, raw_bytes: str) -> None:
        """Send one raw IPMI command; the reply lands in ``driver_internal_info``.

        Disallowed by default (``Config.disallow_clean_steps``): raw commands
        can do anything the BMC can, including locking the operator out.
        """
        node = task.node
        values = _parse_raw_bytes(raw_bytes, node)
        info = parse_driver_info(node)
        netfn, command, data = values[0], values[1], values[2:]
        what = f"raw command netfn 0x{netfn:02x} command 0x{command:02x}"
        with _Connection(node, info) as bmc:
            reply = bmc.call(what, lambda c: c.raw_command(netfn=netfn, command=command, data=data))
        _check_reply(node, info, what, reply)
        node.driver_internal_info["ipmi_raw_reply"] = {
            "netfn": reply.get("netfn"),
            "command": reply.get("command"),
            "code": reply.get("code"),
            "data": " ".join(f"0x{byte:02x}" for byte in bytes(reply.get("data") or b"")),
        }
        LOG.info("Node %s: %s sent to %s", node.uuid, what, info.endpoint)


class DiskBootDeploy(DeployInterface):
    """Writes no image: boots the node from its own disk over IPMI.

    With it a whole lifecycle runs against a BMC: deploying makes the disk
    the persistent boot device and powers the node on (resetting it if it
    is already on, so that it boots from the disk); tearing down powers it
    off.
    """

    @deploy_step(priority=100)
    def deploy(self, task: Task) -> str | None:
        task.driver.management.set_boot_device(task, "disk", persistent=True)
        if task.driver.power.get_power_state(task) == states.POWER_ON:
            task.driver.power.reboot(task)
        else:
            task.driver.power.set_power_state(task, states.POWER_ON)
        task.node.power_state = states.POWER_ON
        return None

    def tear_down(self, task: Task) -> str | None:
        task.driver.power.set_power_state(task, states.POWER_OFF)
        task.node.power_state = states.POWER_OFF
        return None


def ipmi_hardware() -> HardwareType:
    """The ``ipmi`` hardware type (entry point factory).

    Raises:
        MissingDependency: pyghmi is not installed (``pip install ironic_fsm[ipmi]``).
    """
    try:
        spec = importlib.util.find_spec("pyghmi")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise _missing_pyghmi()
    return HardwareType(
        power=IPMIPower(),
        management=IPMIManagement(),
        deploy=DiskBootDeploy(),
        vendor=IPMIVendor(),
        # A node may swap in the fake implementations (say, to rehearse a
        # flow without touching a BMC): node.<kind>_interface = "fake".
        supported={kind: ["fake"] for kind in INTERFACE_KINDS},
        description="Power and boot device over IPMI (pyghmi); deploys by booting the disk.",
    )
