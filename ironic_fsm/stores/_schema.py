"""The SQL layout of :class:`~ironic_fsm.stores.sql.SQLStore`: tables, columns, migrations.

Layout (schema version 13; a database of an earlier version is upgraded in
place when opened, see "Migrations" below):

* ``nodes``: one row per node. ``data`` holds
  :meth:`Node.to_json() <ironic_fsm.node.Node.to_json>` (written only if
  it reads back equal to the node) and is the source of truth
  for every field but two. The fields listings filter and sort on
  (:data:`~ironic_fsm.stores.base.FILTER_FIELDS`, the timestamps) are
  copied into columns on every write, and so is ``wait_until``, the
  earliest ``*_wait_until`` of ``driver_internal_info``
  (:func:`~ironic_fsm.stores.base.wake_time`), so that listings and the
  periodic scans run in SQL on indexes and decode only the rows they
  return. ``reservation`` and ``version`` are columns that win over
  ``data`` when a node is read back (reserving and releasing change the
  ``reservation`` column alone). ``seq`` records insertion order, the
  tie-break of every sort (then ``uuid``, which is unique).
  ``conductor_group`` (version 6) is a column too, for the group filter and
  the power-sync scan, which hands each row's group to the hash ring.
  ``owner``, ``lessee`` and ``instance_uuid`` (version 8) are columns for
  their filters (``associated`` is ``instance_uuid IS [NOT] NULL``).
  ``history_entries`` and ``history_last_seq`` (version 9): how many history
  entries the node has and the last ``seq`` given, kept by the transaction
  that writes or deletes entries (a save with history sets them in its own
  ``UPDATE``; counting alone leaves ``version`` as it is). Indexed on the
  count (``node_history_counts_entries_idx``, the name it had on v4's counts
  table), so that the periodic trim finds the nodes over the limit without
  reading the others; since version 11 only the nodes with more than
  :data:`HISTORY_INDEXED_OVER` entries, so that the saves of every other
  node leave the index alone.
  ``shard`` and ``parent_node`` (version 10) are columns for their filters
  (``sharded`` is ``shard IS [NOT] NULL``; listings leave out child nodes
  with ``parent_node IS NULL``) and for counting the nodes of each shard.
* ``deploy_templates`` and ``runbooks`` (version 8): one row per template or
  runbook, ``uuid``, unique ``name``, ``seq`` (creation order, the listing's
  tie-break), timestamps, and ``data``: the rest (steps, extra, ...) as JSON.
* ``ports``, ``portgroups``, ``chassis``, ``allocations``,
  ``volume_connectors`` and ``volume_targets`` (the records step, the last
  one: version 13 here, 14 after the maintenance-by-fault index): the records
  beside nodes (:mod:`._records`), one row each: ``uuid``, ``seq``
  (creation order, the default sort), timestamps, the columns each kind is
  found, filtered or kept unique by (a port's unique ``address``, its
  ``node_uuid`` on an index...), and ``data``, the rest as JSON. A trigger
  on ``nodes`` deletes a node's rows with it.
* ``holders``: the last heartbeat of each reservation holder (crash recovery).
* ``conductors`` (version 3): the conductor registry, one row per conductor,
  keyed by its holder token: ``hostname``, ``conductor_group``,
  ``hardware_types`` (a JSON list), ``online`` (False once it stopped
  cleanly), ``started_at`` and ``updated_at`` (its last heartbeat).
* ``node_history`` (version 4): one row per history entry (Ironic's
  fields; ``user`` is the column ``username``, a reserved word in
  PostgreSQL), indexed on ``(node_uuid, created_at, seq)``; ``seq`` orders
  entries of one instant as they were written. Keyed on ``uuid`` on
  PostgreSQL; on SQLite not since version 9 (no read needs it, and each
  index costs an entry's commit a page).
* ``node_history_counts`` (versions 4 to 8): the per-node count and last
  ``seq``, moved into ``nodes`` by version 9.
* ``node_power_sync`` (version 5): per node, when the periodic power sync
  last read its power state (``synced_at``; NULL: never), indexed on it, so
  that a pass reads only the nodes due (:mod:`._power`). A narrow table of
  its own: marking a node synced rewrites a small row, not the node's.
  Triggers on ``nodes`` add the row of every inserted node and delete the
  row of every deleted one, so node writes stay as they were.
* ``ironic_fsm_schema``: one row with the schema version.

Indexes: one per sort key, on ``(key, seq, uuid)``, so that a page after a
marker is a range scan of ``limit`` entries (keyset pagination: ``WHERE
(key, seq, uuid) > (marker's)``), never an offset; ``(provision_state,
provision_updated_at)`` of the nodes in wait states, for callback timeouts,
and ``reservation`` of the reserved nodes, for crash recovery (both partial
since version 7: a save leaves an index alone unless its row is one the
scan looks for); ``wait_until`` for ``wait`` steps; ``resource_class``;
``conductor_group`` (version 6); ``owner``, ``lessee``, ``instance_uuid``
(version 8); ``shard``, ``parent_node`` (version 10). Since version 12 the
indexes on columns most nodes leave unset (``resource_class``,
``wait_until``, ``owner``, ``lessee``, ``instance_uuid``, ``shard``,
``parent_node``) hold only the rows that set them: every save changes an
indexed column (state, timestamps), so PostgreSQL enters each saved row
version in every index the row is in, and vacuum removes the old one
from each. On PostgreSQL its pages are filled to 70% (``fillfactor``), so
that a saved row version mostly stays on its page. Since the step after the
records step (:func:`_free_sorted_ddl`) the sort indexes of ``created_at``,
``updated_at`` and ``provision_updated_at`` hold only the nodes nobody holds
(``WHERE reservation IS NULL``): the saves a flow makes while it holds its
node leave them alone, and a page sorted on them reads the held nodes
through the reservation index and merges (:mod:`._paging`). Name order reads
the unique constraint's index, the unnamed nodes ``nodes_unnamed_idx``
(``seq, uuid WHERE name IS NULL``); ``nodes_name_idx`` is gone.

Migrations: :data:`MIGRATIONS` maps each version N to the step that makes
N + 1: DDL statements, and functions for what SQL alone cannot do (filling
new columns from ``data``). Opening a database runs the missing steps in
order, each in one transaction that also stamps its version: on SQLite
under ``BEGIN IMMEDIATE``, on PostgreSQL holding an advisory lock, so two
processes opening an old database at once migrate it once (the second finds
the work done). A new database is created as version 1 and migrated like
any other, so there is one path to the current layout. A database of a
newer version than this code knows is refused, never touched.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError
from ironic_fsm.node import Node

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "StepContext"]

# The store's logger: what a migration reports is the store's business.
_LOG: Final = logging.getLogger("ironic_fsm.stores.sql")

#: Column widths of the v1 layout; checked for both databases (SQLite does not).
_WIDTHS: Final = {"uuid": 36, "name": 255, "driver": 255, "provision_state": 64, "reservation": 255}
_NULLABLE: Final = frozenset(
    {"name", "reservation", "owner", "lessee", "instance_uuid", "shard", "parent_node"}
)
#: Text columns of v2: any length, may be unset.
_FREE_TEXT: Final = ("target_provision_state", "power_state", "resource_class", "fault")
_CHECKED: Final[tuple[tuple[str, int | None], ...]] = (
    *_WIDTHS.items(),
    *((field, None) for field in _FREE_TEXT),
    ("conductor_group", 255),  # v6
    ("owner", 255),  # v8
    ("lessee", 255),
    ("instance_uuid", 36),
    ("shard", 255),  # v10
    ("parent_node", 36),
)
#: The columns a write sets from the node, in statement order (``data`` and ``version`` apart).
_COLUMNS: Final = (
    "name",
    "driver",
    "provision_state",
    "maintenance",
    "retired",
    "reservation",
    "target_provision_state",
    "power_state",
    "protected",
    "resource_class",
    "fault",
    "provision_updated_at",
    "updated_at",
    "wait_until",
    "conductor_group",
    "owner",
    "lessee",
    "instance_uuid",
    "shard",
    "parent_node",
)
#: The columns schema 2 added (filled by :func:`_v2_fill`, before any later one exists).
_V2_COLUMNS: Final = _COLUMNS[6:14]
_RESERVATION: Final = _COLUMNS.index("reservation")
#: Index of ``created_at`` in a row's values (after :data:`_COLUMNS`).
_CREATED: Final = len(_COLUMNS)


class StepContext(NamedTuple):
    """What a migration function gets besides the connection: the store's dialect and codec.

    Handed in by the store, so that a step needs nothing of the store itself.
    """

    dialect: str
    #: The dialect's placeholder.
    q: str
    #: The dialect's timestamp type, for DDL.
    timestamp: str
    #: A node's column values, as a save writes them (:data:`_COLUMNS` order).
    columns: Callable[[Node], tuple[Any, ...]]
    #: One statement for many rows (``execute_many(conn, sql, rows)``).
    execute_many: Callable[[Any, str, Sequence[Sequence[Any]]], None]


def _check_columns(node: Node) -> None:
    """Refuse, naming the field, a column value the database would reject or truncate."""
    for field, width in _CHECKED:
        value = getattr(node, field)
        if value is None and (width is None or field in _NULLABLE):
            continue
        problem = None
        if not isinstance(value, str):
            problem = f"must be a string, not {type(value).__name__}"
        elif width is not None and len(value) > width:
            problem = f"is {len(value)} characters long; at most {width} fit"
        elif "\x00" in value:
            problem = "contains a NUL character"
        if problem is not None:
            raise InvalidParameterValue(
                f"Node {node.uuid} cannot be stored: {field} {problem}",
                node=node.uuid,
                field=field,
            )


def _schema_ddl(timestamp: str) -> list[str]:
    """The v1 schema, as the first release created it (names, types, constraints)."""
    return [
        "CREATE TABLE IF NOT EXISTS ironic_fsm_schema (\n"
        "\tid INTEGER NOT NULL, \n"
        "\tversion INTEGER NOT NULL, \n"
        "\tPRIMARY KEY (id)\n"
        ")",
        "CREATE TABLE IF NOT EXISTS nodes (\n"
        "\tuuid VARCHAR(36) NOT NULL, \n"
        "\tname VARCHAR(255), \n"
        "\tdriver VARCHAR(255) NOT NULL, \n"
        "\tprovision_state VARCHAR(64) NOT NULL, \n"
        "\tmaintenance BOOLEAN NOT NULL, \n"
        "\tretired BOOLEAN NOT NULL, \n"
        "\treservation VARCHAR(255), \n"
        "\tversion INTEGER NOT NULL, \n"
        "\tseq BIGINT NOT NULL, \n"
        f"\tcreated_at {timestamp} NOT NULL, \n"
        "\tdata TEXT NOT NULL, \n"
        "\tPRIMARY KEY (uuid), \n"
        "\tCONSTRAINT uniq_nodes0name UNIQUE (name)\n"
        ")",
        "CREATE INDEX IF NOT EXISTS nodes_provision_state_idx ON nodes (provision_state)",
        "CREATE INDEX IF NOT EXISTS nodes_reservation_idx ON nodes (reservation)",
        "CREATE INDEX IF NOT EXISTS nodes_driver_idx ON nodes (driver)",
        "CREATE INDEX IF NOT EXISTS nodes_seq_idx ON nodes (seq)",
        "CREATE TABLE IF NOT EXISTS holders (\n"
        "\tholder VARCHAR(255) NOT NULL, \n"
        f"\theartbeat {timestamp} NOT NULL, \n"
        "\tPRIMARY KEY (holder)\n"
        ")",
    ]


def _v2_ddl(timestamp: str) -> list[str]:
    """Schema 2: the columns and indexes listings and periodic scans need."""
    return [
        "ALTER TABLE nodes ADD COLUMN target_provision_state TEXT",
        "ALTER TABLE nodes ADD COLUMN power_state TEXT",
        "ALTER TABLE nodes ADD COLUMN protected BOOLEAN NOT NULL DEFAULT FALSE",
        "ALTER TABLE nodes ADD COLUMN resource_class TEXT",
        "ALTER TABLE nodes ADD COLUMN fault TEXT",
        f"ALTER TABLE nodes ADD COLUMN provision_updated_at {timestamp}",
        f"ALTER TABLE nodes ADD COLUMN updated_at {timestamp}",
        f"ALTER TABLE nodes ADD COLUMN wait_until {timestamp}",
        # v1's single-column indexes become (key, seq, uuid): sort and page on them.
        "DROP INDEX nodes_provision_state_idx",
        "DROP INDEX nodes_driver_idx",
        "CREATE INDEX nodes_created_at_idx ON nodes (created_at, seq, uuid)",
        "CREATE INDEX nodes_updated_at_idx ON nodes (updated_at, seq, uuid)",
        "CREATE INDEX nodes_name_idx ON nodes (name, seq, uuid)",
        "CREATE INDEX nodes_provision_state_idx ON nodes (provision_state, seq, uuid)",
        "CREATE INDEX nodes_provision_updated_at_idx ON nodes (provision_updated_at, seq, uuid)",
        "CREATE INDEX nodes_driver_idx ON nodes (driver, seq, uuid)",
        "CREATE INDEX nodes_state_age_idx ON nodes (provision_state, provision_updated_at)",
        "CREATE INDEX nodes_wait_until_idx ON nodes (wait_until)",
        "CREATE INDEX nodes_resource_class_idx ON nodes (resource_class)",
    ]


def _v2_fill(store: StepContext, conn: Any) -> None:
    """Fill schema 2's new columns from each node's ``data`` (and nothing else)."""
    q = store.q
    rows = conn.execute("SELECT uuid, data FROM nodes").fetchall()
    updates = []
    for uuid, data in rows:
        try:
            node = Node.from_json(data)
        except IronicFSMError as exc:  # kept as it is: readable by nobody, lost by nobody
            _LOG.warning("Node %s: its record cannot be read (%s); columns left empty", uuid, exc)
            continue
        values = store.columns(node)
        updates.append((*values[6 : 6 + len(_V2_COLUMNS)], uuid))
    if updates:
        names = ", ".join(f"{column} = {q}" for column in _V2_COLUMNS)
        store.execute_many(conn, f"UPDATE nodes SET {names} WHERE uuid = {q}", updates)


def _v3_ddl(timestamp: str) -> list[str]:
    """Schema 3: the conductor registry, one row per conductor (a holder token)."""
    return [
        "CREATE TABLE conductors (\n"
        "\tholder VARCHAR(255) NOT NULL, \n"
        "\thostname VARCHAR(255) NOT NULL, \n"
        "\tconductor_group VARCHAR(255) NOT NULL, \n"
        "\thardware_types TEXT NOT NULL, \n"
        "\tonline BOOLEAN NOT NULL, \n"
        f"\tstarted_at {timestamp} NOT NULL, \n"
        f"\tupdated_at {timestamp} NOT NULL, \n"
        "\tPRIMARY KEY (holder)\n"
        ")",
        "CREATE INDEX conductors_hostname_idx ON conductors (hostname)",
    ]


def _history_table(table: str, timestamp: str, key: str = "uuid") -> str:
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


def _v4_ddl(timestamp: str) -> list[str]:
    """Schema 4: node history, and a per-node count that lets the trim skip the others."""
    return [
        _history_table("node_history", timestamp),
        "CREATE INDEX node_history_node_idx ON node_history (node_uuid, created_at, seq)",
        "CREATE TABLE node_history_counts (\n"
        "\tnode_uuid VARCHAR(36) NOT NULL, \n"
        "\tentries INTEGER NOT NULL, \n"
        "\tlast_seq BIGINT NOT NULL, \n"
        "\tPRIMARY KEY (node_uuid)\n"
        ")",
        "CREATE INDEX node_history_counts_entries_idx ON node_history_counts (entries)",
    ]


def _v5_ddl(timestamp: str) -> list[str]:
    """Schema 5: when each node's power state was last synced, on an index."""
    return [
        "CREATE TABLE node_power_sync (\n"
        "\tnode_uuid VARCHAR(36) NOT NULL, \n"
        f"\tsynced_at {timestamp}, \n"
        "\tPRIMARY KEY (node_uuid)\n"
        ")",
        "CREATE INDEX node_power_sync_due_idx ON node_power_sync (synced_at)",
        "INSERT INTO node_power_sync (node_uuid, synced_at) SELECT uuid, NULL FROM nodes",
    ]


#: SQLite: the triggers that keep one ``node_power_sync`` row per node.
_V5_SQLITE_TRIGGERS: Final = (
    "CREATE TRIGGER nodes_power_sync_add AFTER INSERT ON nodes BEGIN "
    "INSERT INTO node_power_sync (node_uuid, synced_at) VALUES (NEW.uuid, NULL); END",
    "CREATE TRIGGER nodes_power_sync_drop AFTER DELETE ON nodes BEGIN "
    "DELETE FROM node_power_sync WHERE node_uuid = OLD.uuid; END",
)
#: PostgreSQL: the same, as trigger functions (in the schema the store works in).
_V5_POSTGRES_TRIGGERS: Final = (
    "CREATE FUNCTION nodes_power_sync_add() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "INSERT INTO node_power_sync (node_uuid, synced_at) VALUES (NEW.uuid, NULL); "
    "RETURN NULL; END $$",
    "CREATE FUNCTION nodes_power_sync_drop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "DELETE FROM node_power_sync WHERE node_uuid = OLD.uuid; RETURN NULL; END $$",
    "CREATE TRIGGER nodes_power_sync_add AFTER INSERT ON nodes "
    "FOR EACH ROW EXECUTE FUNCTION nodes_power_sync_add()",
    "CREATE TRIGGER nodes_power_sync_drop AFTER DELETE ON nodes "
    "FOR EACH ROW EXECUTE FUNCTION nodes_power_sync_drop()",
)


def _v5_triggers(store: StepContext, conn: Any) -> None:
    """Schema 5's triggers, in the dialect of the database (they differ in syntax only)."""
    triggers = _V5_POSTGRES_TRIGGERS if store.dialect == "postgresql" else _V5_SQLITE_TRIGGERS
    for statement in triggers:
        conn.execute(statement)


def _v6_ddl(timestamp: str) -> list[str]:
    """Schema 6: the node's conductor group, a column on an index; ``''`` for existing rows.

    The default fills them, and their ``data`` has no group, which reads
    back as ``''`` too: the two agree without rewriting a row.
    """
    return [
        "ALTER TABLE nodes ADD COLUMN conductor_group VARCHAR(255) NOT NULL DEFAULT ''",
        "CREATE INDEX nodes_conductor_group_idx ON nodes (conductor_group)",
    ]


#: The wait states as schema 7 froze them in its partial state-age index (``in_states``
#: repeats its condition word for word: SQLite uses a partial index only for a query
#: that carries the condition). A wait state added later is scanned on the state index.
V7_WAIT_STATES: Final = (
    "clean wait",
    "inspect wait",
    "rescue wait",
    "service wait",
    "wait call-back",
)
#: ``=`` terms joined by ``OR``, not ``IN (...)``: SQLite evaluates the condition on every
#: save that sets ``provision_state``, and builds an ``IN`` list's lookup table each time
#: (three times the instructions of an update that keeps a full index).
V7_WAITING: Final = "(" + " OR ".join(f"provision_state = '{w}'" for w in V7_WAIT_STATES) + ")"


def _v7_ddl(timestamp: str) -> list[str]:
    """Schema 7: two indexes hold only the rows their scans look for.

    Every entry a save moves costs its commit a page or two (the rest of a
    lifecycle's commits is one page each): the state-age index now holds
    the nodes in wait states only, the reservation index the reserved nodes
    only, so that most saves and every reservation of a free node leave
    them alone.
    """
    return [
        "DROP INDEX nodes_state_age_idx",
        "CREATE INDEX nodes_state_age_idx ON nodes (provision_state, provision_updated_at) "
        f"WHERE {V7_WAITING}",
        "DROP INDEX nodes_reservation_idx",
        "CREATE INDEX nodes_reservation_idx ON nodes (reservation) WHERE reservation IS NOT NULL",
    ]


#: The columns of the deploy template and runbook tables (schema 8), in statement order.
CATALOG_COLUMNS: Final = ("uuid", "name", "seq", "created_at", "updated_at", "data")


def _catalog_table(table: str, timestamp: str) -> list[str]:
    return [
        f"CREATE TABLE {table} (\n"
        "\tuuid VARCHAR(36) NOT NULL, \n"
        "\tname VARCHAR(255) NOT NULL, \n"
        "\tseq BIGINT NOT NULL, \n"
        f"\tcreated_at {timestamp} NOT NULL, \n"
        f"\tupdated_at {timestamp}, \n"
        "\tdata TEXT NOT NULL, \n"
        "\tPRIMARY KEY (uuid), \n"
        f"\tCONSTRAINT uniq_{table}0name UNIQUE (name)\n"
        ")",
        f"CREATE INDEX {table}_seq_idx ON {table} (seq, uuid)",
    ]


def _v8_ddl(timestamp: str) -> list[str]:
    """Schema 8: the node's tenancy and instance, and the deploy template and runbook tables.

    ``owner``, ``lessee`` and ``instance_uuid`` are filtered, so columns on
    indexes; existing rows have none of them, in ``data`` as in the
    columns (NULL), so no row is rewritten. Templates and runbooks keep
    their steps and settings in ``data`` (JSON) beside the columns they are
    found and ordered by.
    """
    return [
        "ALTER TABLE nodes ADD COLUMN owner VARCHAR(255)",
        "ALTER TABLE nodes ADD COLUMN lessee VARCHAR(255)",
        "ALTER TABLE nodes ADD COLUMN instance_uuid VARCHAR(36)",
        "CREATE INDEX nodes_owner_idx ON nodes (owner)",
        "CREATE INDEX nodes_lessee_idx ON nodes (lessee)",
        "CREATE INDEX nodes_instance_uuid_idx ON nodes (instance_uuid)",
        *_catalog_table("deploy_templates", timestamp),
        *_catalog_table("runbooks", timestamp),
    ]


def _v9_ddl(timestamp: str) -> list[str]:
    """Schema 9: a node's history count and last ``seq`` live in its own row.

    A save with history writes the node row anyway; counting there spares
    the commit the counts table and its two indexes (three pages on SQLite,
    half the cost of an entry). The index on the count keeps the name it
    had on the counts table: it serves the trim as before.
    """
    return [
        "ALTER TABLE nodes ADD COLUMN history_entries INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE nodes ADD COLUMN history_last_seq BIGINT NOT NULL DEFAULT 0",
        "UPDATE nodes SET "
        "history_entries = (SELECT c.entries FROM node_history_counts c "
        "WHERE c.node_uuid = nodes.uuid), "
        "history_last_seq = (SELECT c.last_seq FROM node_history_counts c "
        "WHERE c.node_uuid = nodes.uuid) "
        "WHERE uuid IN (SELECT node_uuid FROM node_history_counts)",
        "DROP TABLE node_history_counts",
        "CREATE INDEX node_history_counts_entries_idx ON nodes (history_entries)",
    ]


def _v9_sqlite_history(store: StepContext, conn: Any) -> None:
    """SQLite: ``node_history`` without its key on ``uuid``: an entry costs one index, not two.

    Nothing reads an entry by its UUID alone (a node's entries are read
    whole, on ``(node_uuid, created_at, seq)``), and every entry written
    costs each index a page of the commit. Entries are copied as they are,
    ``seq`` too, so their order is kept.
    """
    if store.dialect != "sqlite":
        return  # PostgreSQL keeps its key: a B-tree page there is not a commit's page
    for statement in (
        _history_table("node_history_v9", store.timestamp, key=""),
        "INSERT INTO node_history_v9 SELECT uuid, node_uuid, created_at, seq, severity, "
        "event_type, event, conductor, username FROM node_history",
        "DROP TABLE node_history",
        "ALTER TABLE node_history_v9 RENAME TO node_history",
        "CREATE INDEX node_history_node_idx ON node_history (node_uuid, created_at, seq)",
    ):
        conn.execute(statement)


def _v10_ddl(timestamp: str) -> list[str]:
    """Schema 10: the node's shard and parent node, columns on indexes.

    Both are filtered (and listings leave out child nodes), so columns;
    existing rows have neither, in ``data`` as in the columns (NULL), so no
    row is rewritten.
    """
    return [
        "ALTER TABLE nodes ADD COLUMN shard VARCHAR(255)",
        "ALTER TABLE nodes ADD COLUMN parent_node VARCHAR(36)",
        "CREATE INDEX nodes_shard_idx ON nodes (shard)",
        "CREATE INDEX nodes_parent_node_idx ON nodes (parent_node)",
    ]


#: The history count's index holds only the nodes with more entries than this (schema 11):
#: the trim finds nodes over a limit at least this high through it, and reads every node's
#: count for a lower limit. Written out in :func:`_v11_ddl`, as a migration must stay as it
#: ran: another value takes a new schema version (a test reads it back from the index).
HISTORY_INDEXED_OVER: Final = 100


def _v11_ddl(timestamp: str) -> list[str]:
    """Schema 11: the history count's index holds only the nodes near a limit.

    Every save with history moves its node's count, and an index on the
    count with it: on SQLite a page more in the commit, on PostgreSQL an
    index entry more with every save of the node (an update that cannot
    stay on its page enters the row in every index). Most nodes stay far
    below Ironic's limit of 300 entries, and the trim looks only for nodes
    over it, so the index leaves the others out.
    """
    return [
        "DROP INDEX node_history_counts_entries_idx",
        "CREATE INDEX node_history_counts_entries_idx ON nodes (history_entries) "
        "WHERE history_entries > 100",
    ]


#: The nodes' indexes on columns most nodes leave unset (schema 12 makes them partial).
V12_SPARSE: Final = (
    ("nodes_resource_class_idx", "resource_class"),
    ("nodes_wait_until_idx", "wait_until"),
    ("nodes_owner_idx", "owner"),
    ("nodes_lessee_idx", "lessee"),
    ("nodes_instance_uuid_idx", "instance_uuid"),
    ("nodes_shard_idx", "shard"),
    ("nodes_parent_node_idx", "parent_node"),
)


def _v12_ddl(timestamp: str) -> list[str]:
    """Schema 12: the indexes on columns most nodes leave unset hold only the nodes that set them.

    An ``UPDATE`` that cannot be HOT (every save changes an indexed column:
    the state, the timestamps) enters the new row version in every index
    of the table, and PostgreSQL's vacuum then removes the old one from
    each. A partial index leaves out the rows outside its condition, so a
    save of a node without an owner, a lessee, an instance, a shard, a
    parent, a resource class or a wait step costs seven index entries
    less. Every filter on these columns is an ``=`` (or ``IS NOT NULL``),
    which implies the condition, so both databases still search them.
    """
    statements = []
    for index, column in V12_SPARSE:
        statements += [
            f"DROP INDEX {index}",
            f"CREATE INDEX {index} ON nodes ({column}) WHERE {column} IS NOT NULL",
        ]
    return statements


def _v12_fillfactor(store: StepContext, conn: Any) -> None:
    """PostgreSQL: pages of ``nodes`` filled to 70%, so that a save's new row version
    finds room on its own page.

    A node row is about 1.4 kB, five to a page: full, every save's new
    version went to another page, found through the free space map or by
    extending the table. With room on the page it mostly stays (fewer
    buffers per lifecycle: 700 -> 460 in ``bench_pgcost``). Pages written
    from now on keep the room; SQLite has no such setting.
    """
    if store.dialect == "postgresql":
        conn.execute("ALTER TABLE nodes SET (fillfactor = 70)")


def _v13_ddl(timestamp: str) -> list[str]:
    """Schema 13: the nodes in maintenance, by fault, on an index of their own.

    A metrics scrape counts them every few seconds; without an index that
    is a walk of every row. Partial, so that a save of a node out of
    maintenance (nearly every save) writes nothing more.
    """
    return ["CREATE INDEX nodes_maintenance_idx ON nodes (fault) WHERE maintenance"]


def _record_table(table: str, timestamp: str, columns: str, constraints: str = "") -> str:
    """A table of records beside nodes (the records step): identity, order, times, columns, JSON."""
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


#: The tables whose rows go with their node (the records step's trigger deletes them with it).
RECORDS_BY_NODE: Final = (
    "ports", "portgroups", "allocations", "volume_connectors", "volume_targets",
)  # fmt: skip


def _records_ddl(timestamp: str) -> list[str]:
    """The records step: the records beside nodes, a table each (see :mod:`._records`).

    Each keeps the fields it is found, filtered, sorted or kept unique by
    as columns, and the rest in ``data`` (JSON). A port's address is unique
    (the agent's lookup finds a node by it), and so is an allocation's node:
    the database itself refuses to give one node to two allocations.
    """
    return [
        _record_table(
            "ports", timestamp,
            "\taddress VARCHAR(255) NOT NULL, \n\tname VARCHAR(255), \n"
            "\tnode_uuid VARCHAR(36) NOT NULL, \n\tportgroup_uuid VARCHAR(36), \n",
            ", \n\tCONSTRAINT uniq_ports0address UNIQUE (address), \n"
            "\tCONSTRAINT uniq_ports0name UNIQUE (name)",
        ),
        "CREATE INDEX ports_node_uuid_idx ON ports (node_uuid)",
        "CREATE INDEX ports_portgroup_uuid_idx ON ports (portgroup_uuid) "
        "WHERE portgroup_uuid IS NOT NULL",
        "CREATE INDEX ports_seq_idx ON ports (seq, uuid)",
        _record_table(
            "portgroups", timestamp,
            "\taddress VARCHAR(255), \n\tname VARCHAR(255), \n"
            "\tnode_uuid VARCHAR(36) NOT NULL, \n",
            ", \n\tCONSTRAINT uniq_portgroups0address UNIQUE (address), \n"
            "\tCONSTRAINT uniq_portgroups0name UNIQUE (name)",
        ),
        "CREATE INDEX portgroups_node_uuid_idx ON portgroups (node_uuid)",
        "CREATE INDEX portgroups_seq_idx ON portgroups (seq, uuid)",
        _record_table("chassis", timestamp, ""),
        "CREATE INDEX chassis_seq_idx ON chassis (seq, uuid)",
        _record_table(
            "allocations", timestamp,
            "\tname VARCHAR(255), \n\tnode_uuid VARCHAR(36), \n"
            "\tstate VARCHAR(15) NOT NULL, \n\tresource_class VARCHAR(80), \n"
            "\towner VARCHAR(255), \n",
            ", \n\tCONSTRAINT uniq_allocations0name UNIQUE (name), \n"
            "\tCONSTRAINT uniq_allocations0node_uuid UNIQUE (node_uuid)",
        ),
        "CREATE INDEX allocations_state_idx ON allocations (state)",
        "CREATE INDEX allocations_seq_idx ON allocations (seq, uuid)",
        _record_table(
            "volume_connectors", timestamp,
            "\tnode_uuid VARCHAR(36) NOT NULL, \n\ttype VARCHAR(32) NOT NULL, \n"
            "\tconnector_id VARCHAR(255) NOT NULL, \n",
            ", \n\tCONSTRAINT uniq_volumeconnectors0type0connectorid "
            "UNIQUE (type, connector_id)",
        ),
        "CREATE INDEX volume_connectors_node_uuid_idx ON volume_connectors (node_uuid)",
        "CREATE INDEX volume_connectors_seq_idx ON volume_connectors (seq, uuid)",
        _record_table(
            "volume_targets", timestamp,
            "\tnode_uuid VARCHAR(36) NOT NULL, \n\tvolume_id VARCHAR(36) NOT NULL, \n"
            "\tboot_index INTEGER NOT NULL, \n",
            ", \n\tCONSTRAINT uniq_volumetargets0node_uuid0boot_index "
            "UNIQUE (node_uuid, boot_index)",
        ),
        "CREATE INDEX volume_targets_seq_idx ON volume_targets (seq, uuid)",
    ]  # fmt: skip


def _records_triggers(store: StepContext, conn: Any) -> None:
    """The records step: deleting a node deletes its ports, groups, allocation and volume
    records, in the same statement (a trigger, as the power-sync rows are kept)."""
    deletes = " ".join(f"DELETE FROM {t} WHERE node_uuid = OLD.uuid;" for t in RECORDS_BY_NODE)
    if store.dialect == "postgresql":
        conn.execute(
            "CREATE FUNCTION nodes_records_drop() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN {deletes} RETURN NULL; END $$"
        )
        conn.execute(
            "CREATE TRIGGER nodes_records_drop AFTER DELETE ON nodes "
            "FOR EACH ROW EXECUTE FUNCTION nodes_records_drop()"
        )
    else:
        conn.execute(f"CREATE TRIGGER nodes_records_drop AFTER DELETE ON nodes BEGIN {deletes} END")


#: One schema step: DDL (given the dialect's timestamp type) or a function of the store's
#: :class:`StepContext` and the connection, run in order.
_Step = str | Callable[[StepContext, Any], None]

#: Version N -> the steps that make version N + 1 of it. Add a version by adding an entry.
MIGRATIONS: Final[dict[int, Callable[[str], builtins.list[_Step]]]] = {
    1: lambda timestamp: [*_v2_ddl(timestamp), _v2_fill],
    2: lambda timestamp: [*_v3_ddl(timestamp)],
    3: lambda timestamp: [*_v4_ddl(timestamp)],
    4: lambda timestamp: [*_v5_ddl(timestamp), _v5_triggers],
    5: lambda timestamp: [*_v6_ddl(timestamp)],
    6: lambda timestamp: [*_v7_ddl(timestamp)],
    7: lambda timestamp: [*_v8_ddl(timestamp)],
    8: lambda timestamp: [*_v9_ddl(timestamp), _v9_sqlite_history],
    9: lambda timestamp: [*_v10_ddl(timestamp)],
    10: lambda timestamp: [*_v11_ddl(timestamp)],
    11: lambda timestamp: [*_v12_ddl(timestamp), _v12_fillfactor],
    12: lambda timestamp: [*_v13_ddl(timestamp)],
}
#: The records step comes after every step above, whatever their number: it was written
#: beside another step 13, and whichever lands first, this one follows it.
MIGRATIONS[max(MIGRATIONS) + 1] = lambda timestamp: [
    *_records_ddl(timestamp), _records_triggers,
]  # fmt: skip


#: The sort indexes on the columns that hold only the nodes nobody holds (the step after the
#: records step): ``(key, seq, uuid) WHERE reservation IS NULL``. A page sorted on one of
#: them reads the held nodes apart, through the reservation index (:mod:`._paging`).
FREE_SORTED: Final = (
    ("nodes_created_at_idx", "created_at"),
    ("nodes_updated_at_idx", "updated_at"),
    ("nodes_provision_updated_at_idx", "provision_updated_at"),
)


def _free_sorted_ddl(timestamp: str) -> list[str]:
    """The step after the records step: the saves a flow makes while it holds its node
    leave the timestamps' sort indexes alone, and name order reads the unique index.

    Every save changes ``provision_state`` or the timestamps, so PostgreSQL never
    updates a node in place (HOT) and enters each new row version in every index
    whose condition it meets: a lifecycle's ten saves made about 120 index
    entries, a fifth of the server's CPU per save, besides WAL and vacuum. A
    flow holds its node for every save but the last of each verb (the one that
    releases it), and a held node's timestamps are the ones that move: the
    indexes listings sort creation, update and provision-update times on now
    leave held nodes out, and a page sorted on them reads the few held nodes
    through the reservation index and merges the two. ``nodes_name_idx``
    (``name, seq, uuid``) repeated the unique constraint's index on ``name``,
    which sorts names as well (unique names have no ties); the unnamed nodes,
    which a page on names reads in ``seq`` order, are on an index of their
    own (``nodes_unnamed_idx``), which the saves of named nodes leave alone.
    """
    statements = [
        "DROP INDEX nodes_name_idx",
        "CREATE INDEX nodes_unnamed_idx ON nodes (seq, uuid) WHERE name IS NULL",
    ]
    for index, column in FREE_SORTED:
        statements += [
            f"DROP INDEX {index}",
            f"CREATE INDEX {index} ON nodes ({column}, seq, uuid) WHERE reservation IS NULL",
        ]
    return statements


#: The step after the records step, whatever their numbers (see the records step's note).
MIGRATIONS[max(MIGRATIONS) + 1] = lambda timestamp: [*_free_sorted_ddl(timestamp)]

#: The schema version this code writes and understands.
SCHEMA_VERSION: Final = 1 + len(MIGRATIONS)
