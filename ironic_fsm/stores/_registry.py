"""Liveness in SQL: reservation holders' heartbeats and the conductor registry.

Two small tables (``holders``, ``conductors``), read whole: crash recovery
and the conductors sharing a store see each other through them.
"""

from __future__ import annotations

import builtins
import json
from datetime import datetime, timezone
from typing import Final

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.stores._statements import Statements
from ironic_fsm.stores.base import (
    ConductorRecord,
    check_registration,
    check_time,
    conductor_order,
)

#: Earlier than any time a conductor records.
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)


def check_holder(holder: str) -> None:
    if not isinstance(holder, str) or len(holder) > 255 or "\x00" in holder:
        raise InvalidParameterValue(
            f"A reservation holder must be a string of at most 255 characters without NUL, "
            f"not {holder!r}",
            field="reservation",
        )


class Registry:
    """Holders' heartbeats and :class:`~ironic_fsm.stores.base.ConductorRegistry` in SQL."""

    def __init__(self, sql: Statements) -> None:
        self._sql = sql
        self._db = sql.db

    def heartbeat(self, holder: str, now: datetime) -> None:
        """Record that ``holder`` is alive at ``now`` (naive datetimes are taken as UTC)."""
        check_holder(holder)
        with self._db.connection() as conn:
            conn.execute(self._sql.heartbeat, (holder, self._db.bind_time(now)))

    def holders(self) -> dict[str, datetime]:
        """Every holder's last heartbeat, as aware UTC datetimes."""
        with self._db.connection() as conn:
            rows = conn.execute(self._sql.holders).fetchall()
        return {row[0]: self._db.read_time(row[1]) for row in rows}

    # -- the conductor registry (see ConductorRegistry) ---------------------------------------

    def register_conductor(
        self, record: ConductorRecord, *, replace_before: datetime | None = None
    ) -> None:
        """Add or replace ``record``'s row, drop its host's stopped or dead ones, at once."""
        check_registration(record, replace_before)
        bind = self._db.bind_time
        # Before every real time: "no row is older than this", so only offline rows go.
        oldest = bind(replace_before or _EPOCH)
        types = json.dumps(list(record.hardware_types))
        with self._db.transaction() as conn:
            conn.execute(self._sql.conductor_prune, (record.hostname, record.holder, False, oldest))
            conn.execute(
                self._sql.conductor_upsert,
                (
                    record.holder,
                    record.hostname,
                    record.conductor_group,
                    types,
                    record.online,
                    bind(record.started_at),
                    bind(record.updated_at),
                ),
            )

    def conductor_heartbeat(self, holder: str, now: datetime) -> bool:
        """Mark ``holder`` online at ``now``; False when it has no row (register it again)."""
        check_time(now, "now")
        with self._db.connection() as conn:
            touched = conn.execute(
                self._sql.conductor_touch, (True, self._db.bind_time(now), holder)
            ).rowcount
        return bool(touched)

    def unregister_conductor(self, holder: str, now: datetime) -> None:
        """Mark ``holder`` offline at ``now`` (a stopped conductor is not alive, at once)."""
        check_time(now, "now")
        with self._db.connection() as conn:
            conn.execute(self._sql.conductor_touch, (False, self._db.bind_time(now), holder))

    def list_conductors(self) -> builtins.list[ConductorRecord]:
        """Every registered conductor (one small table, read whole)."""
        with self._db.connection() as conn:
            rows = conn.execute(self._sql.conductors).fetchall()
        read = self._db.read_time
        records = [
            ConductorRecord(
                holder,
                hostname,
                group,
                tuple(json.loads(types)),
                bool(online),
                read(started),
                read(updated),
            )
            for holder, hostname, group, types, online, started, updated in rows
        ]
        return sorted(records, key=conductor_order)
