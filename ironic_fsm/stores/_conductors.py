"""The conductor registry: its record, its protocol, and the checks both stores make.

Conductors sharing a store see each other through it (see
:class:`~ironic_fsm.Conductor`'s ``list_conductors``);
:mod:`ironic_fsm.stores.base` re-exports these names, which is where
callers find them.
"""

from __future__ import annotations

import builtins
from datetime import datetime, timezone
from typing import Final, NamedTuple, Protocol, runtime_checkable

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.stores._query import _valid_text

_UTC: Final = timezone.utc


class ConductorRecord(NamedTuple):
    """One conductor as the registry keeps it (one row of the ``conductors`` table)."""

    #: The conductor's unique name: its reservation holder token (host, process, instance).
    holder: str
    #: ``Config.host``; several conductors on one host share it.
    hostname: str
    conductor_group: str
    #: The hardware types it serves, sorted.
    hardware_types: tuple[str, ...]
    #: False once it stopped cleanly (``unregister``); a dead one stays True.
    online: bool
    #: When it registered.
    started_at: datetime
    #: Its last heartbeat (or registration, or going offline).
    updated_at: datetime


@runtime_checkable
class ConductorRegistry(Protocol):
    """The conductor registry: what a store adds so that conductors see each other.

    Both built-in stores have it. A store without it still works: each
    conductor then sees only itself (see :class:`~ironic_fsm.Conductor`'s
    ``list_conductors``). Times are aware UTC datetimes, chosen by the
    conductor's clock, never by the store's.
    """

    def register_conductor(
        self, record: ConductorRecord, *, replace_before: datetime | None = None
    ) -> None:
        """Add or replace the row of ``record.holder``, in one transaction.

        Also deletes the other rows of ``record.hostname`` that are offline
        or whose ``updated_at`` is before ``replace_before``: a restarted
        conductor replaces its dead or stopped predecessors on that host,
        as Ironic's row per host does, while live siblings stay.
        """

    def conductor_heartbeat(self, holder: str, now: datetime) -> bool:
        """Set ``updated_at = now`` and ``online``; False when no row has this holder."""

    def unregister_conductor(self, holder: str, now: datetime) -> None:
        """Mark the conductor offline at once (``updated_at = now``); no row: nothing."""

    def list_conductors(self) -> builtins.list[ConductorRecord]:
        """Every registered conductor, by hostname, then start time, then holder."""


def check_conductor(record: ConductorRecord) -> None:
    """Refuse, naming the field, a record no store keeps (checked before any write)."""
    for field in ("holder", "hostname", "conductor_group"):
        value = getattr(record, field)
        if not isinstance(value, str) or len(value) > 255 or "\x00" in value:
            raise InvalidParameterValue(
                f"A conductor's {field} must be a string of at most 255 characters without "
                f"NUL, not {value!r}",
                field=field,
            )
    if not record.holder or not record.hostname:
        raise InvalidParameterValue("A conductor needs a holder and a hostname", field="holder")
    types = record.hardware_types
    if not isinstance(types, tuple) or not all(_valid_text(t) for t in types):
        raise InvalidParameterValue(
            f"A conductor's hardware_types must be a tuple of names, not {types!r}",
            field="hardware_types",
        )
    if type(record.online) is not bool:
        raise InvalidParameterValue("A conductor's online flag must be a bool", field="online")
    for field in ("started_at", "updated_at"):
        check_time(getattr(record, field), field)


def check_time(value: object, field: str) -> None:
    """Refuse a time that is not a timezone-aware datetime."""
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise InvalidParameterValue(
            f"{field} must be a timezone-aware datetime, not {value!r}", field=field
        )


def conductor_order(record: ConductorRecord) -> tuple[str, datetime, str]:
    """The order :meth:`ConductorRegistry.list_conductors` returns records in."""
    return (record.hostname, record.started_at.astimezone(_UTC), record.holder)


def check_registration(record: ConductorRecord, replace_before: datetime | None) -> None:
    """Refuse, before any write, what :meth:`ConductorRegistry.register_conductor` may not keep."""
    check_conductor(record)
    if replace_before is not None:
        check_time(replace_before, "replace_before")
