"""Node history: what happened to a node, as Ironic's node history records it.

An operator's loop asks "what happened to this node?": the answer must
outlive ``last_error``, which the next attempt clears. The conductor
writes a :class:`HistoryEntry` in the same store transaction as the node
change that caused it, so the history never tells of a change the store
does not hold (see ``Conductor.get_node_history``).
"""

from __future__ import annotations

import os
import random as _random
import struct
from datetime import datetime, timezone
from typing import Final

import attrs

from ironic_fsm.exceptions import InvalidParameterValue

__all__ = [
    "CLEANING",
    "CONDUCTOR",
    "DEPLOYING",
    "ERROR",
    "INFO",
    "INSPECTING",
    "MAINTENANCE",
    "POWER",
    "PROVISIONING",
    "RESCUING",
    "SERVICING",
    "SEVERITIES",
    "WARNING",
    "HistoryEntry",
    "check_entry",
    "new_entry",
]

INFO: Final = "INFO"
WARNING: Final = "WARNING"
ERROR: Final = "ERROR"
#: Ironic's severities, mildest first.
SEVERITIES: Final = (INFO, WARNING, ERROR)

# Ironic's event types (``ironic.common.states`` history types).
PROVISIONING: Final = "provisioning"
CLEANING: Final = "cleaning"
DEPLOYING: Final = "deploying"
SERVICING: Final = "servicing"
INSPECTING: Final = "inspecting"
RESCUING: Final = "rescuing"
POWER: Final = "power"
MAINTENANCE: Final = "maintenance"
CONDUCTOR: Final = "conductor"

_UTC: Final = timezone.utc
#: Longest text of the bounded fields (Ironic's column widths).
_WIDTHS: Final = {"event_type": 255, "conductor": 255, "user": 64}


@attrs.frozen(kw_only=True)
class HistoryEntry:
    """One event in a node's history (Ironic's ``node_history`` row)."""

    #: The entry's own identifier (``node history get NODE UUID``).
    uuid: str
    #: The node the entry belongs to; deleting the node deletes its entries.
    node_uuid: str
    #: When it happened: an aware datetime from the conductor's clock.
    created_at: datetime
    #: ``INFO``, ``WARNING`` or ``ERROR``.
    severity: str
    #: What kind of event: ``provisioning``, ``cleaning``, ``maintenance``, ...
    event_type: str
    #: What happened, in words, scrubbed of secrets.
    event: str
    #: The host of the conductor that recorded it, if any.
    conductor: str | None = None
    #: Who asked for it, when known.
    user: str | None = None


def new_entry(
    node_uuid: str,
    created_at: datetime,
    severity: str,
    event_type: str,
    event: str,
    *,
    conductor: str | None = None,
    user: str | None = None,
) -> HistoryEntry:
    """A new entry with a fresh random UUID.

    Not checked here: every store checks its entries (:func:`check_entry`)
    before it writes anything, and checking on the way in as well cost a
    lifecycle that records history a fifth of that history's price. Built
    through the slots' own setters: the same object as ``HistoryEntry(...)``
    (it has no validators or converters), for half of its keyword call.
    """
    entry = _new(HistoryEntry)
    try:  # _random_uuid's common case, without its call
        _set_uuid(entry, _uuids.pop())
    except IndexError:
        _set_uuid(entry, _random_uuid())
    _set_node_uuid(entry, node_uuid)
    _set_created_at(entry, created_at)
    _set_severity(entry, severity)
    _set_event_type(entry, event_type)
    _set_event(entry, event)
    _set_conductor(entry, conductor)
    _set_user(entry, user)
    return entry


_new: Final = object.__new__
# The slot descriptors of HistoryEntry's fields: a frozen class refuses setattr, not these.
_set_uuid, _set_node_uuid, _set_created_at, _set_severity = (
    getattr(HistoryEntry, name).__set__ for name in ("uuid", "node_uuid", "created_at", "severity")
)
_set_event_type, _set_event, _set_conductor, _set_user = (
    getattr(HistoryEntry, name).__set__ for name in ("event_type", "event", "conductor", "user")
)


#: How many UUIDs one draw makes (see :func:`_random_uuid`).
_UUID_BATCH: Final = 64
#: The version (4) and RFC 4122 variant bits of a random UUID, cleared and set, per batch.
_UUID4_CLEAR: Final = int.from_bytes(
    (~((0xF << 76) | (0x3 << 62)) & (1 << 128) - 1).to_bytes(16, "big") * _UUID_BATCH, "big"
)
_UUID4_SET: Final = int.from_bytes(
    ((0x4 << 76) | (0x2 << 62)).to_bytes(16, "big") * _UUID_BATCH, "big"
)
#: A batch's UUIDs in hex, cut into the groups of their text, and the text of them all.
_UUID_GROUPS: Final = struct.Struct("8s4s4s4s12s" * _UUID_BATCH)
_UUID_TEXT: Final = b"%s-%s-%s-%s-%s " * _UUID_BATCH
#: Drawn and not handed out yet; emptied in a forked child, which must not repeat them.
_uuids: list[str] = []
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_uuids.clear)


def _random_uuid() -> str:
    """A random (version 4) UUID's text, without a ``UUID`` object or a system call.

    Entry UUIDs need to be unique, not secret: Python's generator (seeded
    from the OS, and again in every forked child) gives 122 random bits per
    UUID in a fraction of ``uuid4()``'s time. Drawn and formatted 64 at a
    time, in C: the batch in hex, cut and joined by byte formatting (a
    third of the cost of formatting each group's number); threads may take
    from the list and refill it at once.
    """
    try:
        return _uuids.pop()
    except IndexError:
        bits = _random.getrandbits(128 * _UUID_BATCH) & _UUID4_CLEAR | _UUID4_SET
        groups = _UUID_GROUPS.unpack(bits.to_bytes(16 * _UUID_BATCH, "big").hex().encode())
        drawn = (_UUID_TEXT % groups).decode().split()
        uuid = drawn.pop()
        _uuids.extend(drawn)
        return uuid


def check_entry(entry: HistoryEntry) -> None:
    """Refuse, naming the field, an entry no store keeps: checked before anything is written.

    Stores check every entry they write: the usual one passes in one frame,
    and only a refusal walks the fields to say what is wrong.
    """
    if type(entry) is HistoryEntry:
        uuid, node_uuid, event_type = entry.uuid, entry.node_uuid, entry.event_type
        conductor, user, created = entry.conductor, entry.user, entry.created_at
        if conductor is None:
            conductor = ""
        if user is None:
            user = ""
        try:  # join refuses anything but text, in C
            text = "".join((uuid, node_uuid, entry.event, event_type, conductor, user))
        except TypeError:
            text = "\x00"
        if (
            "\x00" not in text
            and 0 < len(uuid) <= 36
            and 0 < len(node_uuid) <= 36
            and len(event_type) <= 255
            and len(conductor) <= 255
            and len(user) <= 64
            and entry.severity in SEVERITIES
            and type(created) is datetime
            and (created.tzinfo is _UTC or created.utcoffset() is not None)  # the usual zone first
        ):
            return
    refusal = _refusal(entry)
    if refusal is not None:
        raise refusal


def _refusal(entry: HistoryEntry) -> InvalidParameterValue | None:
    """What is wrong with an entry, naming the field; ``None``: nothing (a subclass of
    ``str`` or ``datetime``, say, which the usual path leaves to this one)."""

    def refuse(field: str, why: str) -> InvalidParameterValue:
        return InvalidParameterValue(
            f"History entry {entry.uuid!r} of node {entry.node_uuid!r}: {field} {why}",
            field=field,
        )

    if not isinstance(entry, HistoryEntry):
        return InvalidParameterValue(f"Not a HistoryEntry: {type(entry).__name__}")
    for field in ("uuid", "node_uuid"):
        value = getattr(entry, field)
        if not isinstance(value, str) or not value or len(value) > 36 or "\x00" in value:
            return refuse(field, "must be a UUID")
    if entry.severity not in SEVERITIES:
        return refuse("severity", f"must be one of {', '.join(SEVERITIES)}")
    if not isinstance(entry.event, str) or "\x00" in entry.event:
        return refuse("event", "must be text without NUL")
    for field, width in _WIDTHS.items():
        value = getattr(entry, field)
        if value is None and field != "event_type":
            continue
        if not isinstance(value, str) or len(value) > width or "\x00" in value:
            return refuse(field, f"must be text of at most {width} characters without NUL")
    created = entry.created_at
    if not isinstance(created, datetime) or created.utcoffset() is None:
        return refuse("created_at", "must be a timezone-aware datetime")
    return None
