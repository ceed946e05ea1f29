"""Power-sync bookkeeping in SQL: :class:`~._power.PowerSyncStore` for ``SQLStore``.

The table is ``node_power_sync`` (schema version 5, :mod:`._schema`): one
row per node, kept by triggers on ``nodes``, so that node writes stay as
they were and deleting a node deletes its row.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime

from ironic_fsm.stores._power import PowerSyncRow, check_sync_args
from ironic_fsm.stores._statements import Statements


class PowerSync:
    """When each node's power state was last synced: the ``node_power_sync`` table, its index."""

    def __init__(self, sql: Statements) -> None:
        self._sql = sql
        self._db = sql.db

    def due(self, before: datetime) -> builtins.list[PowerSyncRow]:
        """Nodes never synced or synced at or before ``before``: two ranges of one index.

        Joined to ``nodes`` by primary key for the columns the pass decides
        on; ``data`` is never read.
        """
        check_sync_args((), before)
        db, sql = self._db, self._sql
        columns = (
            "SELECT n.uuid, n.driver, n.provision_state, n.maintenance, n.fault, "
            "n.reservation, p.synced_at, n.conductor_group FROM node_power_sync p"
            f"{sql.index_hint('node_power_sync_due_idx')} JOIN nodes n ON n.uuid = p.node_uuid"
        )
        never = f"{columns} WHERE p.synced_at IS NULL"
        due = f"{columns} WHERE p.synced_at <= {sql.q}"
        if sql.echo:
            sql.log(never)
            sql.log(due)
        with db.connection() as conn:
            rows = conn.execute(never).fetchall()
            rows += conn.execute(due, (db.bind_time(before),)).fetchall()
        read = db.read_time
        return [
            PowerSyncRow(r[0], r[1], r[2], bool(r[3]), r[4], r[5], r[6] and read(r[6]), r[7])
            for r in rows
        ]

    def mark(self, uuids: Sequence[str], when: datetime) -> None:
        """One batched ``UPDATE`` in one transaction, in UUID order (no lock-order deadlock)."""
        wanted = sorted(set(check_sync_args(uuids, when)))
        if not wanted:
            return
        q = self._sql.q
        bound = self._db.bind_time(when)
        sql = f"UPDATE node_power_sync SET synced_at = {q} WHERE node_uuid = {q}"
        if self._sql.echo:
            self._sql.log(sql)
        with self._db.transaction() as conn:
            self._sql.execute_many(conn, sql, [(bound, uuid) for uuid in wanted])
