"""One IPMI operation against one BMC: pyghmi's session, under a deadline, errors translated.

pyghmi speaks IPMI 2.0 (RMCP+) in pure Python, but its API has no timeouts:
a dead BMC takes about 5 s to fail, a BMC that goes silent in the middle of
a session about 30 s, and a BMC that stops half-way through the login
handshake blocks the caller forever. So every pyghmi call here runs in a
worker thread (:mod:`.workers`) and the caller waits for it with a deadline,
``driver_info['ipmi_timeout']``. When the deadline passes, the session that
call was using is taken out of pyghmi's caches and marked broken (which
also lets the stuck worker return), so the next call logs in afresh
instead of inheriting a dead session.

pyghmi's own session loop sometimes sleeps 0.5-1 s on a reply that has
already arrived; the driver's sessions use a wait that does not (see
``PromptSession`` below and ``docs/drivers/ipmi.rst``).

pyghmi is imported on first use; without it the hardware type raises
:class:`~ironic_fsm.exceptions.MissingDependency` naming the ``ipmi`` extra.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

from ironic_fsm.drivers.common import DriverInfoValidation, Library, scrubbed
from ironic_fsm.drivers.ipmi.driver_info import COMMON_PROPERTIES, IPMIInfo, parse_driver_info
from ironic_fsm.drivers.ipmi.workers import bmc_lock, pool
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

if TYPE_CHECKING:
    from ironic_fsm.node import Node

LOG = logging.getLogger(__name__)

T = TypeVar("T")

_LOGOUT_TIMEOUT: Final = 2.0


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


# pyghmi's messages do not echo the password, but a message is no place to
# find out that one did: every text from pyghmi goes through ``scrubbed``.
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
        self._lock = bmc_lock(info)
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

    def __exit__(self, *exc_info: object) -> None:
        # Log out whatever happened inside the block; its exception (if any) goes on.
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
        future = pool().submit(fn)
        try:
            return future.result(timeout=deadline)
        except FutureTimeout:
            future.add_done_callback(self._late)
            answered = self.drop(f"abandoned after {deadline:g} s without an answer")
            elapsed = time.monotonic() - started
            cls: type[HardwareError] = BMCTimeout
            message = (
                f"Node {self.node}: the BMC at {self.info.endpoint} stopped answering; "
                f"IPMI {what} timed out after {deadline:g} s (ipmi_timeout)"
            )
            if login and not answered:
                cls = BMCUnreachable
                message = (
                    f"Node {self.node}: no answer from the BMC at {self.info.endpoint} "
                    f"within {deadline:g} s (ipmi_timeout) while logging in"
                )
            raise cls(
                message, node=self.node, address=self.info.endpoint, elapsed=elapsed
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
            "ok" if exc is None else scrubbed(repr(exc), self.info.password),
        )

    def _translate(self, exc: Exception, what: str, login: bool) -> IronicFSMError:
        pyghmi_exc = _pyghmi().exceptions
        where = f"BMC {self.info.endpoint}"
        details = {"node": self.node, "address": self.info.endpoint}
        text = scrubbed(
            str(exc.args[0]) if exc.args and exc.args[0] is not None else "", self.info.password
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
                f"Node {self.node}: cannot reach {where}: {scrubbed(str(exc), self.info.password)}",
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
        text = scrubbed(str(reply["error"]), info.password)
        raise _refused(node, info, f"IPMI {what}", text, reply.get("code"))
    return reply


def _refused(node: Node, info: IPMIInfo, what: str, text: str, code: Any) -> BMCRequestFailed:
    """The error for a request the BMC answered with a refusal (``code``: its completion code)."""
    return BMCRequestFailed(
        f"Node {node.uuid}: the BMC at {info.endpoint} refused {what}: {text}",
        node=node.uuid,
        address=info.endpoint,
        code=code,
    )


class _IPMIInterface(DriverInfoValidation):
    """What the IPMI interfaces share: their driver_info keys and its validation."""

    driver_info_keys = COMMON_PROPERTIES
    library = Library("pyghmi", _missing_pyghmi)

    def check_driver_info(self, node: Node) -> None:
        """Check ``driver_info`` (no BMC contact), and that pyghmi is installed."""
        parse_driver_info(node)
        _pyghmi()
