"""Small pure helpers the conductor's modules share: texts, identifiers, times, processes.

Nothing here reads or writes the store or calls a driver; every function is
safe to call from any layer of the conductor package.
"""

from __future__ import annotations

import itertools
import os
import re
import reprlib
import traceback
import uuid as _uuid
from collections.abc import Callable
from datetime import datetime, timezone
from functools import partial, wraps
from typing import Any, Concatenate, Final, ParamSpec, TypeVar

from ironic_fsm import states as s
from ironic_fsm.exceptions import (
    DriverError,
    InvalidParameterValue,
    InvalidStateRequested,
    IronicFSMError,
)
from ironic_fsm.masking import scrub, secret_values
from ironic_fsm.node import Node, is_uuid_like

__all__ = [
    "INSPECTING_STATES",
    "check_ident",
    "describe_exc",
    "driver_error",
    "forward",
    "inspection_times",
    "process_alive",
    "process_start",
    "scrub_node",
    "shown",
    "utcnow",
    "wait_is_over",
    "wrong_state",
]


#: The time now, aware UTC: the conductor's default clock, read on every transition and
#: save, so a C-level call rather than a Python function around one.
utcnow: Final[Callable[[], datetime]] = partial(datetime.now, timezone.utc)


#: The states an inspection runs in: leaving them ends it.
INSPECTING_STATES: Final = frozenset({s.INSPECTING, s.INSPECTWAIT})


_P = ParamSpec("_P")
_R = TypeVar("_R")


def forward(
    part: str, method: Callable[Concatenate[Any, _P], _R]
) -> Callable[Concatenate[Any, _P], _R]:
    """A facade method that only calls ``method`` on the facade's attribute ``part``: the
    signature and docstring are written once, in the part, and serve the facade too."""

    @wraps(method)
    def call(facade: Any, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return method(getattr(facade, part), *args, **kwargs)

    return call


def inspection_times(node: Node, previous: str, state: str, now: datetime) -> None:
    """Keep the inspection times as Ironic's database layer does.

    Entering ``inspecting`` starts an inspection (``inspection_finished_at``
    cleared); reaching ``manageable`` from it finishes one
    (``inspection_started_at`` cleared); failing clears the start and keeps
    the last success.
    """
    if state == s.INSPECTING and previous != s.INSPECTING:
        node.inspection_started_at = now
        node.inspection_finished_at = None
    elif previous in INSPECTING_STATES and state == s.MANAGEABLE:
        node.inspection_finished_at = now
        node.inspection_started_at = None
    elif previous in INSPECTING_STATES and state == s.INSPECTFAIL:
        node.inspection_started_at = None


def scrub_node(node: Node, text: str) -> str:
    """``text`` without any secret value of the node's driver_info, instance_info or
    driver_internal_info (the agent token).

    NUL characters go too: no database stores them, and free text from a
    driver must never make a record unsaveable.
    """
    secrets = secret_values(node.driver_info, node.instance_info, node.driver_internal_info)
    if secrets:
        text = scrub(text, secrets)
    if text.count(node.uuid) > 1:
        text = _mention_node_once(node.uuid, text)
    return text.replace("\x00", "\\x00") if "\x00" in text else text


def _mention_node_once(uuid: str, text: str) -> str:
    """``text`` naming the node ``uuid`` at most once.

    Messages are built in layers (a flow's prefix around a driver's or a
    step's error), and each layer likes to say which node it is about.
    The first mention stays; later ones are folded away.
    """
    first = text.find(uuid)
    if first < 0 or text.find(uuid, first + len(uuid)) < 0:
        return text
    head, tail = text[: first + len(uuid)], text[first + len(uuid) :]
    quoted = re.escape(uuid)
    for pattern, replacement in (
        (rf"[Nn]ode \"?{quoted}\"?: ", ""),
        (rf"\s+(?:on|of|for|from|to) [Nn]ode \"?{quoted}\"?", ""),
        (rf"[Nn]ode \"?{quoted}\"?", "the node"),
        (quoted, "the node"),
    ):
        tail = re.sub(pattern, replacement, tail)
    return head + tail


def wait_is_over(wait_until: object, now: datetime) -> bool:
    """Whether a ``wait`` step's recorded end has passed; an unreadable one has.

    A driver may have overwritten the record; one bad value must neither
    stall the node forever nor stop the periodic check for every other node.
    """
    try:
        return datetime.fromisoformat(wait_until) <= now  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True


def shown(value: object) -> str:
    """A short, safe rendering of a bad argument (it may be huge, deep or secret)."""
    if isinstance(value, (list, dict, tuple, set)):
        return f"a {type(value).__name__} of {len(value)} item(s)" if value else repr(value)
    return reprlib.repr(value)


def check_ident(ident: object) -> str:
    """Refuse an identifier that cannot name a node, before any store sees it.

    A UUID in another spelling (upper case, braces) is put in canonical
    form: names cannot look like UUIDs, so nothing else could be meant.
    """
    if type(ident) is not str or not ident or len(ident) > 255 or "\x00" in ident:
        name = ident if type(ident) is str and len(ident) <= 64 else type(ident).__name__
        raise InvalidParameterValue(
            f"A node is named by its UUID or name (a string of 1 to 255 characters without "
            f"NUL), not {name!r}",
            node=None,
        )
    if (len(ident) != 36 or not ident.islower()) and is_uuid_like(ident):
        return str(_uuid.UUID(ident))
    return ident


def describe_exc(exc: BaseException) -> str:
    """Our own errors speak for themselves; a foreign one is named by its type too."""
    if isinstance(exc, IronicFSMError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def process_start(pid: int) -> str | None:
    """The start time of a process of this host (clock ticks since boot), if known."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def process_alive(pid: int, started: str | None = None) -> bool:
    """Whether a process of this host still runs.

    A zombie counts as gone, and so does a process whose start time differs
    from the recorded one: its PID was reused (after a reboot, say).
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return True
    if fields and fields[0] == "Z":
        return False
    return started is None or len(fields) < 20 or fields[19] == started


def local_holder_alive(holder: str, host: str) -> bool | None:
    """Whether the holder token ``host:pid:start-id`` names a live process of this host.

    ``None`` when the token is of another host (or not of that form): only
    heartbeats can tell then. On this host the process table answers at once.
    """
    holder_host, _, rest = holder.partition(":")
    pid_text, _, token = rest.partition(":")
    if holder_host != host or not pid_text.isdigit():
        return None
    started = token.partition("-")[0] if "-" in token else None
    return process_alive(int(pid_text), started if started != "0" else None)


class DriverFault(Exception):
    """What a driver's own code raised, as scrubbed text, standing in for the original.

    The original may hold the node's secrets in its message, its arguments,
    what it chained and its frames' local variables: it is not kept. Its
    message and traceback are, as text with the secrets masked
    (:attr:`trace`), and what it chained follows as ``__cause__``.
    """

    def __init__(self, message: str, trace: str) -> None:
        super().__init__(message)
        self.trace = trace


#: How many chained exceptions a driver error keeps (a loop of causes ends there too).
_CHAIN_LIMIT: Final = 8


def _scrubbed_chain(exc: BaseException, secrets: set[str]) -> DriverFault:
    """``exc`` and what it chained (cause, else context), each as a :class:`DriverFault`."""
    faults: list[DriverFault] = []
    current: BaseException | None = exc
    seen: set[int] = set()
    while current is not None and id(current) not in seen and len(faults) < _CHAIN_LIMIT:
        seen.add(id(current))
        text = scrub(f"{type(current).__name__}: {current}", secrets)
        trace = scrub("".join(traceback.format_tb(current.__traceback__)), secrets)
        faults.append(DriverFault(text, trace))
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    for fault, chained in itertools.pairwise(faults):
        fault.__cause__ = chained
    return faults[0]


def driver_error(exc: Exception, node: Any, interface: str, method: str) -> DriverError:
    """``exc``, raised by a driver's own code, as a :class:`DriverError`.

    The message names the node and where the error came from, with the
    node's secrets scrubbed (drivers echo what they were given). Its cause
    is the original as scrubbed :class:`DriverFault` text, never the
    original itself; raise it outside the ``except`` block that caught
    ``exc``, so that Python does not chain the original as its context.
    """
    secrets = (
        secret_values(node.driver_info, node.instance_info, node.driver_internal_info)
        if node is not None
        else set()
    )
    text = scrub(f"{type(exc).__name__}: {exc}", secrets)
    where = f"Node {node.uuid}: " if node is not None else ""
    error = DriverError(
        f"{where}the {interface} interface failed in {method}: {text}",
        node=getattr(node, "uuid", None),
        interface=interface,
        method=method,
    )
    error.__cause__ = _scrubbed_chain(exc, secrets)
    error.__suppress_context__ = True
    return error


def wrong_state(node: Node, message: str, **details: Any) -> InvalidStateRequested:
    """The refusal of a request the node's provision state does not allow."""
    return InvalidStateRequested(message, node=node.uuid, **details, state=node.provision_state)
