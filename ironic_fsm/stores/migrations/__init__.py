"""The SQL store's migrations: ordered revision files run by Alembic (``versions/``).

Revision ``NNNN`` makes schema version N (``ironic_fsm_schema``, which
every release reads): ``0001`` creates the first release's layout and each
later one changes it as that release did. A revision is frozen once
released: it keeps its own DDL text, so that a database migrated today ends
as one migrated then (the current layout is defined once, in
:mod:`ironic_fsm.stores._tables`; a test checks that the two agree).

The store runs them (:mod:`ironic_fsm.stores._upgrade`) on its own
connection, lent to SQLAlchemy, inside its own transaction and lock. What a
revision needs besides Alembic's ``op`` comes from the helpers below: the
dialect's timestamp type, the store's codec for filling columns from
``data``, and the raw connection for what SQL alone cannot do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ironic_fsm.node import Node

__all__ = [
    "StepContext", "drop_with_node", "history_table", "raw_connection", "record_table", "run",
    "step_context",
]  # fmt: skip

#: Where :func:`step_context` finds the store's context in Alembic's ``Config.attributes``.
CONTEXT_KEY = "ironic_fsm.step_context"
#: ... and the store's own DBAPI connection.
RAW_KEY = "ironic_fsm.raw_connection"


class StepContext(NamedTuple):
    """What a revision gets besides Alembic's ``op``: the store's dialect and codec.

    Handed in by the store, so that a revision needs nothing of the store itself.
    """

    dialect: str
    #: The dialect's placeholder.
    q: str
    #: The dialect's timestamp type, for DDL.
    timestamp: str
    #: A node's column values, as a save writes them (``_schema._COLUMNS`` order).
    columns: Callable[[Node], tuple[Any, ...]]
    #: One statement for many rows (``execute_many(conn, sql, rows)``).
    execute_many: Callable[[Any, str, Sequence[Sequence[Any]]], None]
    #: Logs a statement (the store's ``echo``), or None.
    log: Callable[[str], None] | None = None


def step_context() -> StepContext:
    """The store's :class:`StepContext`, during a revision's ``upgrade()``."""
    from alembic import context

    found = context.config.attributes[CONTEXT_KEY]
    assert isinstance(found, StepContext)
    return found


def raw_connection() -> Any:
    """The store's own DBAPI connection (``sqlite3`` or ``psycopg``), in the migration's
    transaction: for the steps that read rows and write them back through the store's codec."""
    from alembic import context

    return context.config.attributes[RAW_KEY]


def run(statements: Sequence[str]) -> None:
    """Execute DDL ``statements`` in order, each logged first if the store echoes.

    On the store's own connection (the one Alembic's is lent), as written: the
    text is frozen, and a statement costs a fifth of its time through SQLAlchemy.
    """
    log = step_context().log
    conn = raw_connection()
    for statement in statements:
        if log is not None:
            log(statement)
        conn.execute(statement)


def history_table(table: str, timestamp: str, key: str = "uuid") -> str:
    """``node_history`` as revision 0004 created it (0009 rebuilds it on SQLite without a key)."""
    return (
        f"CREATE TABLE {table} (\n"
        "\tuuid VARCHAR(36) NOT NULL, \n"
        "\tnode_uuid VARCHAR(36) NOT NULL, \n"
        f"\tcreated_at {timestamp} NOT NULL, \n"
        "\tseq BIGINT NOT NULL, \n"
        "\tseverity VARCHAR(16) NOT NULL, \n"
        "\tevent_type VARCHAR(255) NOT NULL, \n"
        "\tevent TEXT NOT NULL, \n"
        "\tconductor VARCHAR(255), \n"
        "\tusername VARCHAR(64)" + (f", \n\tPRIMARY KEY ({key})\n)" if key else "\n)")
    )


def record_table(table: str, timestamp: str, columns: str, constraints: str = "") -> str:
    """A table of records beside nodes as revisions 0014 and 0016 created them: identity,
    order, times, the kind's own ``columns``, JSON (``constraints`` after the key)."""
    return (
        f"CREATE TABLE {table} (\n"
        "\tuuid VARCHAR(36) NOT NULL, \n"
        "\tseq BIGINT NOT NULL, \n"
        f"\tcreated_at {timestamp} NOT NULL, \n"
        f"\tupdated_at {timestamp}, \n"
        f"{columns}"
        "\tdata TEXT NOT NULL, \n"
        f"\tPRIMARY KEY (uuid){constraints}\n"
        ")"
    )


def drop_with_node(name: str, tables: Sequence[str], dialect: str) -> list[str]:
    """A trigger ``name`` that deletes the rows of ``tables`` naming a node (``node_uuid``)
    with the node, in the dialect's words (revisions 0014, 0016 and 0017)."""
    deletes = " ".join(f"DELETE FROM {table} WHERE node_uuid = OLD.uuid;" for table in tables)
    if dialect != "postgresql":
        return [f"CREATE TRIGGER {name} AFTER DELETE ON nodes BEGIN {deletes} END"]
    return [
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN {deletes} RETURN NULL; END $$",
        f"CREATE TRIGGER {name} AFTER DELETE ON nodes FOR EACH ROW EXECUTE FUNCTION {name}()",
    ]
