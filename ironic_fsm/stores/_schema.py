"""The SQL layout of :class:`~ironic_fsm.stores.sql.SQLStore`: tables, columns, migrations.

Layout (schema version 16; a database of an earlier version is upgraded in
place when opened, see :mod:`._migrate`):

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
  ``instance_name`` (version 16) is a column for its filter.
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
* ``inspection_rules``, ``firmware_components`` and ``bios_settings``
  (version 16): the same shape; rules by ``phase`` and ``priority``, a
  node's components and settings unique by ``(node_uuid, component)`` and
  ``(node_uuid, name)``, dropped with their node by a trigger of their own.
* ``node_inventory`` (version 17): the same shape, one row per node (unique
  ``node_uuid``): what the ramdisk agent reported at its last inspection,
  dropped with its node by a trigger of its own.
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
that a saved row version mostly stays on its page. Since version 15 the
sort indexes of ``created_at``, ``updated_at`` and ``provision_updated_at``
hold only the nodes nobody holds (``WHERE reservation IS NULL``): the saves
a flow makes while it holds its node leave them alone, and a page sorted on
them reads the held nodes through the reservation index and merges
(:mod:`._paging`). Name order reads the unique constraint's index, the
unnamed nodes ``nodes_unnamed_idx`` (``seq, uuid WHERE name IS NULL``);
``nodes_name_idx`` is gone. Since version 18, on PostgreSQL only, the
state's and the driver's sort indexes, ``conductor_group``'s and ``seq``'s
hold only the free nodes too (:data:`FREE_ON_POSTGRES`).

Defined once, as SQLAlchemy tables, in :mod:`._tables` (imported by the
migrations and the tests only; the hot statements of :mod:`._statements`
are written by hand on :data:`_COLUMNS`, which a test holds equal to the
``nodes`` table there). Migrations: the revision files of
:mod:`.migrations` (``versions/v0002_*.py`` ... one per version, run by
Alembic), see :mod:`._migrate`. This module holds what the hot path and the
revisions share, and imports neither SQLAlchemy nor Alembic.
"""

from __future__ import annotations

from typing import Final

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node

__all__ = ["SCHEMA_VERSION"]

#: The schema version this code writes and understands: the number of the last revision of
#: :mod:`.migrations` (``versions/v0018_*.py``; a test holds the two equal).
SCHEMA_VERSION: Final = 18

#: Column widths of the v1 layout; checked for both databases (SQLite does not).
_WIDTHS: Final = {"uuid": 36, "name": 255, "driver": 255, "provision_state": 64, "reservation": 255}
_NULLABLE: Final = frozenset(
    {"name", "reservation", "owner", "lessee", "instance_uuid", "shard", "parent_node",
     "instance_name"}
)  # fmt: skip
#: Text columns of v2: any length, may be unset.
_FREE_TEXT: Final = ("target_provision_state", "power_state", "resource_class", "fault")
#: Text columns added since v2, with their widths, in the order the revisions added them
#: (which is also their order at the end of :data:`_COLUMNS`).
_ADDED_TEXT: Final[tuple[tuple[str, int], ...]] = (
    ("conductor_group", 255),  # v6
    ("owner", 255),  # v8
    ("lessee", 255),
    ("instance_uuid", 36),
    ("shard", 255),  # v10
    ("parent_node", 36),
    ("instance_name", 255),  # v16
)
_CHECKED: Final[tuple[tuple[str, int | None], ...]] = (
    *_WIDTHS.items(),
    *((field, None) for field in _FREE_TEXT),
    *_ADDED_TEXT,
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
    *(field for field, _ in _ADDED_TEXT),
)
_RESERVATION: Final = _COLUMNS.index("reservation")
#: Index of ``created_at`` in a row's values (after :data:`_COLUMNS`).
_CREATED: Final = len(_COLUMNS)


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


#: The columns of the deploy template and runbook tables (schema 8), in statement order.
CATALOG_COLUMNS: Final = ("uuid", "name", "seq", "created_at", "updated_at", "data")


#: The history count's index holds only the nodes with more entries than this (schema 11):
#: the trim finds nodes over a limit at least this high through it, and reads every node's
#: count for a lower limit. Written out in revision 0011, as a migration must stay as it
#: ran: another value takes a new schema version (a test reads it back from the index).
HISTORY_INDEXED_OVER: Final = 100


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


#: The tables whose rows go with their node (the records step's trigger deletes them with it).
RECORDS_BY_NODE: Final = (
    "ports", "portgroups", "allocations", "volume_connectors", "volume_targets",
)  # fmt: skip


#: The sort indexes that hold only the nodes nobody holds (schema 15):
#: ``(key, seq, uuid) WHERE reservation IS NULL``. A page sorted on one of them reads the
#: held nodes apart, through the reservation index (:mod:`._paging`).
FREE_SORTED: Final = (
    ("nodes_created_at_idx", "created_at"),
    ("nodes_updated_at_idx", "updated_at"),
    ("nodes_provision_updated_at_idx", "provision_updated_at"),
)


#: The indexes that hold only the nodes nobody holds on PostgreSQL, and all of them on SQLite
#: (schema 18): ``(index, key, columns)``. PostgreSQL enters every saved row version of a
#: node in every index whose condition it meets, whatever the save changed, so a flow's
#: saves of its held node entered these each time; SQLite enters a row only in the
#: indexes whose columns the ``UPDATE`` sets, and there a condition on ``reservation``
#: would add them to every save that reserves or releases. On PostgreSQL a page sorted on
#: the state or ``driver``, or filtered on either or the group, and a scan by state that
#: names no reservation read the held nodes apart (:mod:`._paging`, :mod:`._scans`); the
#: last ``seq`` is the larger of the free nodes' (this index) and the held ones'.
FREE_ON_POSTGRES: Final = (
    ("nodes_provision_state_idx", "provision_state", "provision_state, seq, uuid"),
    ("nodes_driver_idx", "driver", "driver, seq, uuid"),
    ("nodes_conductor_group_idx", "conductor_group", "conductor_group"),
    ("nodes_seq_idx", "seq", "seq"),
)


#: The tables of schema 16 whose rows go with their node (its own trigger).
SETTINGS_BY_NODE: Final = ("firmware_components", "bios_settings")


#: The table of schema 17 whose rows go with their node (its own trigger).
INVENTORY_BY_NODE: Final = ("node_inventory",)
