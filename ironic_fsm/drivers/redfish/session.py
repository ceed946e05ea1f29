"""The Redfish connection: sushy, imported lazily; one cached connection per BMC; errors.

Every interface talks to the BMC through one cached :class:`sushy.Sushy`
connection per BMC and credentials, inside :func:`_bmc`, which turns
sushy's errors into :class:`~ironic_fsm.exceptions.HardwareError`
subclasses whose messages name the node and the BMC address, never the
password. The waits (for a state, for a task monitor) have deadlines.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Final, TypeVar
from urllib.parse import urlparse

from ironic_fsm.drivers.common import poll, secrets_of
from ironic_fsm.drivers.redfish.driver_info import _MIN_RETRIES, RedfishInfo, missing_sushy
from ironic_fsm.exceptions import (
    BMCAuthError,
    BMCRequestFailed,
    BMCTimeout,
    BMCUnreachable,
    InvalidParameterValue,
    IronicFSMError,
)
from ironic_fsm.masking import scrub
from ironic_fsm.task import Task

T = TypeVar("T")


@functools.lru_cache(maxsize=1)
def _sushy() -> Any:
    try:
        import sushy
    except ImportError as exc:
        raise missing_sushy() from exc
    return sushy


# -- connections -----------------------------------------------------------------------------------

_CONNECTIONS: dict[tuple[Any, ...], Any] = {}
_CONNECTIONS_LOCK = threading.Lock()


def clear_connection_cache() -> None:
    """Forget every cached sushy connection (they are rebuilt on next use)."""
    with _CONNECTIONS_LOCK:
        _CONNECTIONS.clear()


def _connection(info: RedfishInfo) -> Any:
    """The process-wide sushy connection for this BMC and these credentials.

    Building one costs a root GET (and a SessionService probe), so they are
    shared by every node and call; a connection is dropped on connection
    and authentication errors so that the next call starts afresh.
    """
    key = info.cache_key()
    with _CONNECTIONS_LOCK:
        conn = _CONNECTIONS.get(key)
    if conn is not None:
        return conn
    sushy = _sushy()
    # Built outside the lock: one slow BMC must not hold up the others.
    conn = sushy.Sushy(info.address, **info.sushy_kwargs())
    with _CONNECTIONS_LOCK:
        return _CONNECTIONS.setdefault(key, conn)


def _forget(info: RedfishInfo) -> None:
    with _CONNECTIONS_LOCK:
        _CONNECTIONS.pop(info.cache_key(), None)


def _get_system(info: RedfishInfo) -> Any:
    return _connection(info).get_system(info.system_id)


# -- errors ----------------------------------------------------------------------------------------


def _raised_in_sushy(exc: BaseException) -> bool:
    """Whether sushy's own code is on the traceback (not only ours)."""
    tb = exc.__traceback__
    marker = f"{os.sep}sushy{os.sep}"
    while tb is not None:
        if marker in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False


def _timeout_kind(exc: BaseException) -> str | None:
    """``'connect'``, ``'read'`` or None: why a sushy ConnectionError happened."""
    import requests

    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, requests.exceptions.ConnectTimeout):
        return "connect"
    if isinstance(cause, requests.exceptions.Timeout):
        return "read"
    text = str(exc).lower()
    if "connecttimeout" in text or "connect timeout" in text:
        return "connect"
    if "timed out" in text or "timeout" in text:
        return "read"
    return None


_REQUEST_PATTERNS: Final = (
    re.compile(r"HTTP (?P<method>[A-Z]+) (?P<url>\S+) returned code"),
    re.compile(r"Resource (?P<url>\S+) not found"),
    re.compile(r"Unable to connect to (?P<url>\S+?)\. Error"),
)


def _request_of(exc: BaseException) -> str:
    """``'GET /redfish/v1/Systems/1'`` (or just the path) from a sushy error's text."""
    text = str(exc)
    for pattern in _REQUEST_PATTERNS:
        match = pattern.search(text)
        if match:
            path = urlparse(match.group("url")).path or match.group("url")
            method = match.groupdict().get("method")
            return f"{method} {path}" if method else path
    return "the request"


def _connection_reason(exc: BaseException) -> str:
    """A short reason for a failed connection (the full text stays on ``__cause__``)."""
    text = str(exc)
    for needle, reason in (
        ("Connection refused", "connection refused"),
        ("Name or service not known", "unknown host name"),
        ("nodename nor servname", "unknown host name"),
        ("No route to host", "no route to host"),
        ("Network is unreachable", "network unreachable"),
        ("CERTIFICATE_VERIFY_FAILED", "TLS certificate verification failed"),
        ("SSLError", "TLS error"),
        ("Connection reset", "connection reset"),
        ("RemoteDisconnected", "connection closed by the BMC"),
    ):
        if needle in text:
            return reason
    return text[-200:]


@contextlib.contextmanager
def _bmc(task: Task, info: RedfishInfo, what: str) -> Iterator[None]:
    """Turn sushy's exceptions raised inside the block into ironic_fsm's.

    Messages name the node, the operation and the BMC address; any echo of
    the password is scrubbed. Connection and authentication failures drop
    the cached connection.
    """
    node = task.node.uuid
    secrets = secrets_of(info.password)

    def message(detail: str) -> str:
        return scrub(f"Node {node}: Redfish {what} failed on BMC {info.address}: {detail}", secrets)

    try:
        yield
    except IronicFSMError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        # sushy raises a plain AttributeError where the BMC lacks an action
        # it did not check for (e.g. Manager.Reset on some BMCs), and lets
        # JSON and parsing errors out on malformed answers. Our own bugs
        # (no sushy frame on the traceback) stay what they are.
        if not _raised_in_sushy(exc):
            raise
        detail = (
            f"not supported by this BMC ({exc})"
            if isinstance(exc, AttributeError)
            else f"unexpected answer from the BMC ({type(exc).__name__}: {exc})"
        )
        raise BMCRequestFailed(
            message(detail), node=node, address=info.address, status=None
        ) from exc
    except Exception as exc:
        sushy = _sushy()
        errors = sushy.exceptions
        if not isinstance(exc, errors.SushyError):
            raise
        if isinstance(exc, errors.AccessError):
            _forget(info)
            raise BMCAuthError(
                message(f"the BMC refused the credentials (HTTP {exc.status_code})"),
                node=node,
                address=info.address,
                status=exc.status_code,
            ) from exc
        if isinstance(exc, errors.ConnectionError):
            _forget(info)
            kind = _timeout_kind(exc)
            where = _request_of(exc)
            if kind == "read":
                attempts = max(info.server_side_retries, _MIN_RETRIES)
                raise BMCTimeout(
                    message(
                        f"no answer to {where} within the read timeout of "
                        f"{info.read_timeout:g} s ({attempts} attempt(s))"
                    ),
                    node=node,
                    address=info.address,
                ) from exc
            reason = (
                f"no connection within {info.connect_timeout:g} s"
                if kind == "connect"
                else f"cannot connect ({_connection_reason(exc)})"
            )
            raise BMCUnreachable(
                message(f"{reason} for {where}"), node=node, address=info.address
            ) from exc
        if isinstance(exc, errors.HTTPError):
            detail = f"HTTP {exc.status_code} on {_request_of(exc)}"
            if exc.detail:
                detail += f": {exc.detail}"
            if isinstance(exc, errors.ResourceNotFoundError):
                detail += " (check redfish_system_id and that the BMC offers this resource)"
            raise BMCRequestFailed(
                message(detail), node=node, address=info.address, status=exc.status_code
            ) from exc
        if isinstance(exc, errors.UnknownDefaultError):
            raise InvalidParameterValue(
                message(f"{exc}; set redfish_system_id in driver_info"),
                node=node,
                keys=["redfish_system_id"],
            ) from exc
        if isinstance(
            exc,
            (
                errors.MissingAttributeError,
                errors.MissingActionError,
                errors.InvalidParameterValueError,
            ),
        ):
            raise BMCRequestFailed(
                message(f"not supported by this BMC: {exc}"),
                node=node,
                address=info.address,
                status=None,
            ) from exc
        raise BMCRequestFailed(
            message(str(exc)), node=node, address=info.address, status=None
        ) from exc


def _refusal(task: Task, info: RedfishInfo, text: str) -> BMCRequestFailed:
    """The error for a BMC that answered, but not as the driver needs (no HTTP status)."""
    return BMCRequestFailed(
        f"Node {task.node.uuid}: {text}", node=task.node.uuid, address=info.address, status=None
    )


def _call(task: Task, info: RedfishInfo, what: str, fn: Callable[[], T]) -> T:
    with _bmc(task, info, what):
        return fn()


def _enum(kind: str, value: str) -> Any:
    return getattr(_sushy(), kind)(value)


def _value(member: Any) -> str | None:
    """The Redfish string of a sushy enum member (or of a plain string)."""
    if member is None:
        return None
    return str(getattr(member, "value", member))


def _wait_for(
    task: Task,
    info: RedfishInfo,
    what: str,
    timeout: float,
    check: Callable[[], bool],
    describe: Callable[[], str],
) -> None:
    """Poll ``check`` (with a growing pause) until it holds or ``timeout`` passes."""
    if not poll(check, timeout, first=0.05, most=1.0):
        raise BMCTimeout(
            f"Node {task.node.uuid}: BMC {info.address} did not {what} within "
            f"{timeout:g} s ({describe()})",
            node=task.node.uuid,
            address=info.address,
        )


def _wait_task_monitor(
    task: Task, info: RedfishInfo, what: str, monitor: Any, timeout: float
) -> None:
    """Follow a Redfish task monitor to its end, within ``timeout`` seconds.

    sushy's own ``TaskMonitor.wait`` sleeps for whole ``Retry-After``
    periods and reports a timeout as a connection error; this polls
    quickly at first, backs off to the BMC's hint, and fails with
    BMCTimeout or BMCRequestFailed naming the task's state.
    """
    if monitor is None or not hasattr(monitor, "check_is_processing"):
        return
    deadline = time.monotonic() + timeout
    pause = 0.1
    while _call(task, info, what, lambda: bool(monitor.check_is_processing)):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BMCTimeout(
                f"Node {task.node.uuid}: Redfish {what} on BMC {info.address} did not finish "
                f"within {timeout:g} s (task monitor {monitor.task_monitor_uri})",
                node=task.node.uuid,
                address=info.address,
            )
        try:
            hint = float(monitor.sleep_for)
        except (TypeError, ValueError):
            hint = 1.0
        time.sleep(max(0.01, min(pause, max(hint, 0.1), remaining)))
        pause = min(pause * 2, 2.0)
    response = monitor.response
    status = getattr(response, "status_code", 200)
    body: Any = None
    if getattr(response, "content", b""):
        with contextlib.suppress(ValueError):
            body = response.json()
    task_state = body.get("TaskState") if isinstance(body, dict) else None
    task_status = body.get("TaskStatus") if isinstance(body, dict) else None
    if (
        status >= 400
        or task_state in ("Exception", "Killed", "Cancelled")
        or (task_status == "Critical")
    ):
        messages = []
        if isinstance(body, dict):
            messages = [m.get("Message", "") for m in body.get("Messages") or [] if m]
        raise BMCRequestFailed(
            f"Node {task.node.uuid}: Redfish {what} on BMC {info.address} failed: task "
            f"state {task_state or 'unknown'} (HTTP {status})"
            + (f": {'; '.join(messages)}" if messages else ""),
            node=task.node.uuid,
            address=info.address,
            status=status,
        )
