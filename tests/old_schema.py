"""Writing nodes as a release before schema 6 (or 8) did, for the migration tests.

Today's store writes every column of today's layout, which an older
database lacks; a fixture that stands for an older release writes its
nodes with that release's columns instead (the rest of the store, which
v6 and v8 did not change, is used as it is).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Final

import pytest

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


def fail_at_the_end_of(monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """Make the step from ``version`` fail (``RuntimeError``) after all its own work."""

    def broken(store: SQLStore, conn: Any) -> None:
        raise RuntimeError("disk on fire")

    step = MIGRATIONS[version]
    monkeypatch.setitem(MIGRATIONS, version, lambda timestamp: [*step(timestamp), broken])
