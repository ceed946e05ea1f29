"""Writing nodes (and history) as a release before schema 6, 8 (or 9) did, for the migration tests.

Today's store writes every column of today's layout, which an older
database lacks; a fixture that stands for an older release writes its
nodes with that release's columns instead (the rest of the store, which
v6 and v8 did not change, is used as it is).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Final

import pytest

from ironic_fsm.history import HistoryEntry
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore
from ironic_fsm.stores.sql import MIGRATIONS

#: The node columns of schemas 2 to 5, as they wrote them (``data`` and bookkeeping apart).
COLUMNS_BEFORE_V6: Final = (
    "name", "driver", "provision_state", "maintenance", "retired", "reservation",
    "target_provision_state", "power_state", "protected", "resource_class", "fault",
    "provision_updated_at", "updated_at", "wait_until",
)  # fmt: skip


#: The node columns of schemas 6 and 7: those of 2 to 5, and the conductor group.
COLUMNS_BEFORE_V8: Final = (*COLUMNS_BEFORE_V6, "conductor_group")


#: The node columns of schema 8 (all of today's but the history count of schema 9).
COLUMNS_BEFORE_V9: Final = (*COLUMNS_BEFORE_V8, "owner", "lessee", "instance_uuid")


def create_before_v6(store: SQLStore, *nodes: Node) -> None:
    """Create ``nodes`` (version 1, next ``seq``) with the columns schemas 2 to 5 had."""
    create_with(store, COLUMNS_BEFORE_V6, *nodes)


def create_before_v8(store: SQLStore, *nodes: Node) -> None:
    """Create ``nodes`` with the columns schemas 6 and 7 had."""
    create_with(store, COLUMNS_BEFORE_V8, *nodes)


def create_with(store: SQLStore, columns: tuple[str, ...], *nodes: Node) -> None:
    """Create ``nodes`` with the first ``columns`` of today's (an older release's layout)."""
    q = store._q
    names = ", ".join(columns)
    marks = ", ".join([q] * (1 + len(columns)))
    insert = (
        f"INSERT INTO nodes (uuid, {names}, version, seq, created_at, data) VALUES "
        f"({marks}, 1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM nodes), {q}, {q})"
    )
    with store.connection() as conn:
        for node in nodes:
            values = store._columns(node)[: len(columns)]
            when = node.created_at or datetime.now(timezone.utc)
            created = store._db.bind_time(when)
            conn.execute(insert, (node.uuid, *values, created, node.to_json()))
            node.version = 1


#: Every column of a node row before schema 6: what an upgrade to 6 or later must keep.
NODES_BEFORE_V6: Final = (
    f"SELECT uuid, {', '.join(COLUMNS_BEFORE_V6)}, version, seq, created_at, data FROM nodes"
)

#: Every column of a node row before schema 8.
NODES_BEFORE_V8: Final = (
    f"SELECT uuid, {', '.join(COLUMNS_BEFORE_V8)}, version, seq, created_at, data FROM nodes"
)


#: Every column of a node row before schema 9.
NODES_BEFORE_V9: Final = (
    f"SELECT uuid, {', '.join(COLUMNS_BEFORE_V9)}, version, seq, created_at, data FROM nodes"
)


def fail_at_the_end_of(monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """Make the step from ``version`` fail (``RuntimeError``) after all its own work."""

    def broken(store: SQLStore, conn: Any) -> None:
        raise RuntimeError("disk on fire")

    step = MIGRATIONS[version]
    monkeypatch.setitem(MIGRATIONS, version, lambda timestamp: [*step(timestamp), broken])


#: Per node, how many history entries it has and its last ``seq``: in the table of their
#: own before schema 9, in the node rows since (a node never given any: none in either).
COUNTS_BEFORE_V9: Final = "SELECT node_uuid, entries, last_seq FROM node_history_counts"
COUNTS_SINCE_V9: Final = (
    "SELECT uuid, history_entries, history_last_seq FROM nodes WHERE history_last_seq > 0"
)


def history_counts_sql(version: int) -> str:
    """The query of the per-node history counts in a database of schema ``version``."""
    return COUNTS_BEFORE_V9 if version < 9 else COUNTS_SINCE_V9


def add_history_before_v9(store: SQLStore, entries: list[HistoryEntry]) -> None:
    """Write ``entries`` (of one node) as schemas 4 to 8 did: rows, and a count in a row apart."""
    q = store._q
    node_uuid = entries[0].node_uuid
    n = len(entries)
    with store.connection() as conn:
        conn.execute(
            "INSERT INTO node_history_counts (node_uuid, entries, last_seq) "
            f"VALUES ({q}, {q}, {q}) ON CONFLICT (node_uuid) DO UPDATE SET "
            "entries = node_history_counts.entries + excluded.entries, "
            "last_seq = node_history_counts.last_seq + excluded.last_seq",
            (node_uuid, n, n),
        )
        last = (
            conn.execute(
                f"SELECT last_seq FROM node_history_counts WHERE node_uuid = {q}", (node_uuid,)
            ).fetchall()[0][0]
            - n
        )
        for seq, e in enumerate(entries, last + 1):
            conn.execute(
                "INSERT INTO node_history (uuid, node_uuid, created_at, seq, severity, "
                f"event_type, event, conductor, username) VALUES ({q}, {q}, {q}, {q}, {q}, "
                f"{q}, {q}, {q}, {q})",
                (
                    e.uuid, e.node_uuid, store._db.bind_time(e.created_at), seq, e.severity,
                    e.event_type, e.event, e.conductor, e.user,
                ),
            )  # fmt: skip


#: Indexes schema 9 drops or moves (the history count's index now on ``nodes``; the keys of
#: the counts table and, on SQLite, of the rebuilt ``node_history``): an upgrade past 8
#: keeps every other index as it was.
CHANGED_BY_V9: Final = frozenset({
    "node_history_counts_entries_idx", "node_history_counts_pkey",
    "sqlite_autoindex_node_history_counts_1", "sqlite_autoindex_node_history_1",
})  # fmt: skip


def kept_by_v9(indexes: dict[str, str]) -> dict[str, str]:
    """``indexes`` (name: definition) but those schema 9 changes."""
    return {name: text for name, text in indexes.items() if name not in CHANGED_BY_V9}
