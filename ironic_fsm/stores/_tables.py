"""The SQL store's layout, defined once: SQLAlchemy tables of the current schema version.

What :data:`~._schema.SCHEMA_VERSION` looks like, read in one place rather
than pieced together from sixteen revision files. It is not how a database
is made (the revision files of :mod:`.migrations` make every one, new or
old, so that there is one path to the layout); it is what they must end at:
a test builds a database from :data:`METADATA` (``create_all``) and compares
it, table by table, column by column, index by index, trigger by trigger,
with one the revisions made, on SQLite and on PostgreSQL. A new revision
changes this module too, or that test fails.

Imported by the tests and the migration tools only: SQLAlchemy costs an
import of 0.3 s that opening an up-to-date database never pays. The hot
statements (:mod:`._statements`) are written by hand on
:data:`~._schema._COLUMNS`, which a test holds equal to :data:`nodes`'.

Column order is the order the revisions added them (SQLite appends a
column that ``ALTER TABLE`` adds). What the tables cannot say (triggers,
PostgreSQL's trigger functions, the ``nodes`` fill factor, and
``node_history``'s key, which only PostgreSQL keeps) is DDL run after the
tables are made, per dialect.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    event,
    text,
)
from sqlalchemy.engine import Connection

from ironic_fsm.stores._schema import (
    FREE_ON_POSTGRES,
    FREE_SORTED,
    HISTORY_INDEXED_OVER,
    INVENTORY_BY_NODE,
    RECORDS_BY_NODE,
    SETTINGS_BY_NODE,
    V7_WAITING,
    V12_SPARSE,
)

__all__ = ["METADATA"]

METADATA: Final = MetaData()

#: Every timestamp: ``DATETIME`` on SQLite (naive UTC text), ``TIMESTAMP WITH TIME ZONE`` on
#: PostgreSQL.
_TIME: Final = DateTime(timezone=True)


def _uuid(name: str = "uuid", *, nullable: bool = False) -> Column[str]:
    return Column(name, String(36), nullable=nullable)


def _partial(name: str, *columns: str, where: str) -> Index:
    """An index holding only the rows ``where`` holds for (the same text on both databases)."""
    return Index(name, *columns, sqlite_where=text(where), postgresql_where=text(where))


def _free_on_postgres(name: str, columns: str) -> Index:
    """An index of every node on SQLite, of the free ones on PostgreSQL (schema 18)."""
    return Index(name, *columns.split(", "), postgresql_where=text("reservation IS NULL"))


schema_version: Final = Table(
    "ironic_fsm_schema",
    METADATA,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("version", Integer, nullable=False),
)

nodes: Final = Table(
    "nodes",
    METADATA,
    # Schema 1.
    _uuid(),
    Column("name", String(255)),
    Column("driver", String(255), nullable=False),
    Column("provision_state", String(64), nullable=False),
    Column("maintenance", Boolean, nullable=False),
    Column("retired", Boolean, nullable=False),
    Column("reservation", String(255)),
    Column("version", Integer, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("created_at", _TIME, nullable=False),
    Column("data", Text, nullable=False),
    # Schema 2: what listings and scans filter and sort on.
    Column("target_provision_state", Text),
    Column("power_state", Text),
    Column("protected", Boolean, nullable=False, server_default=text("FALSE")),
    Column("resource_class", Text),
    Column("fault", Text),
    Column("provision_updated_at", _TIME),
    Column("updated_at", _TIME),
    Column("wait_until", _TIME),
    # Schema 6, 8, 9, 10, 16.
    Column("conductor_group", String(255), nullable=False, server_default=""),
    Column("owner", String(255)),
    Column("lessee", String(255)),
    _uuid("instance_uuid", nullable=True),
    Column("history_entries", Integer, nullable=False, server_default=text("0")),
    Column("history_last_seq", BigInteger, nullable=False, server_default=text("0")),
    Column("shard", String(255)),
    _uuid("parent_node", nullable=True),
    Column("instance_name", String(255)),
    PrimaryKeyConstraint("uuid"),
    UniqueConstraint("name", name="uniq_nodes0name"),
    # Name order reads the unique constraint's index and, for the unnamed nodes, their own;
    # the timestamps' hold the free nodes.
    _partial("nodes_unnamed_idx", "seq", "uuid", where="name IS NULL"),
    *(
        _partial(index, key, "seq", "uuid", where="reservation IS NULL")
        for index, key in FREE_SORTED
    ),
    _partial("nodes_state_age_idx", "provision_state", "provision_updated_at", where=V7_WAITING),
    _partial("nodes_reservation_idx", "reservation", where="reservation IS NOT NULL"),
    *(_free_on_postgres(index, columns) for index, _, columns in FREE_ON_POSTGRES),
    *(_partial(index, column, where=f"{column} IS NOT NULL") for index, column in V12_SPARSE),
    _partial(
        "node_history_counts_entries_idx",
        "history_entries",
        where=f"history_entries > {HISTORY_INDEXED_OVER}",
    ),
    _partial("nodes_maintenance_idx", "fault", where="maintenance"),
    _partial("nodes_instance_name_idx", "instance_name", where="instance_name IS NOT NULL"),
)

holders: Final = Table(
    "holders",
    METADATA,
    Column("holder", String(255), primary_key=True),
    Column("heartbeat", _TIME, nullable=False),
)

conductors: Final = Table(
    "conductors",
    METADATA,
    Column("holder", String(255), primary_key=True),
    Column("hostname", String(255), nullable=False),
    Column("conductor_group", String(255), nullable=False),
    Column("hardware_types", Text, nullable=False),
    Column("online", Boolean, nullable=False),
    Column("started_at", _TIME, nullable=False),
    Column("updated_at", _TIME, nullable=False),
    Index("conductors_hostname_idx", "hostname"),
)

#: Keyed on ``uuid`` on PostgreSQL only (see :data:`_POSTGRES_ONLY`).
node_history: Final = Table(
    "node_history",
    METADATA,
    _uuid(),
    _uuid("node_uuid"),
    Column("created_at", _TIME, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("severity", String(16), nullable=False),
    Column("event_type", String(255), nullable=False),
    Column("event", Text, nullable=False),
    Column("conductor", String(255)),
    Column("username", String(64)),
    Index("node_history_node_idx", "node_uuid", "created_at", "seq"),
)

node_power_sync: Final = Table(
    "node_power_sync",
    METADATA,
    Column("node_uuid", String(36), primary_key=True),
    Column("synced_at", _TIME),
    Index("node_power_sync_due_idx", "synced_at"),
)


def _catalog(name: str) -> Table:
    """Deploy templates and runbooks: identity, unique name, order, times, JSON."""
    return Table(
        name,
        METADATA,
        _uuid(),
        Column("name", String(255), nullable=False),
        Column("seq", BigInteger, nullable=False),
        Column("created_at", _TIME, nullable=False),
        Column("updated_at", _TIME),
        Column("data", Text, nullable=False),
        PrimaryKeyConstraint("uuid"),
        UniqueConstraint("name", name=f"uniq_{name}0name"),
        Index(f"{name}_seq_idx", "seq", "uuid"),
    )


deploy_templates: Final = _catalog("deploy_templates")
runbooks: Final = _catalog("runbooks")


def _records(name: str, *columns: Column[Any] | UniqueConstraint | Index) -> Table:
    """A table of records beside nodes: identity, order, times, its own columns, JSON."""
    own = [c for c in columns if isinstance(c, Column)]
    rest = [c for c in columns if not isinstance(c, Column)]
    return Table(
        name,
        METADATA,
        _uuid(),
        Column("seq", BigInteger, nullable=False),
        Column("created_at", _TIME, nullable=False),
        Column("updated_at", _TIME),
        *own,
        Column("data", Text, nullable=False),
        PrimaryKeyConstraint("uuid"),
        *rest,
        Index(f"{name}_seq_idx", "seq", "uuid"),
    )


ports: Final = _records(
    "ports",
    Column("address", String(255), nullable=False),
    Column("name", String(255)),
    _uuid("node_uuid"),
    _uuid("portgroup_uuid", nullable=True),
    UniqueConstraint("address", name="uniq_ports0address"),
    UniqueConstraint("name", name="uniq_ports0name"),
    Index("ports_node_uuid_idx", "node_uuid"),
    _partial("ports_portgroup_uuid_idx", "portgroup_uuid", where="portgroup_uuid IS NOT NULL"),
)
portgroups: Final = _records(
    "portgroups",
    Column("address", String(255)),
    Column("name", String(255)),
    _uuid("node_uuid"),
    UniqueConstraint("address", name="uniq_portgroups0address"),
    UniqueConstraint("name", name="uniq_portgroups0name"),
    Index("portgroups_node_uuid_idx", "node_uuid"),
)
chassis: Final = _records("chassis")
allocations: Final = _records(
    "allocations",
    Column("name", String(255)),
    _uuid("node_uuid", nullable=True),
    Column("state", String(15), nullable=False),
    Column("resource_class", String(80)),
    Column("owner", String(255)),
    UniqueConstraint("name", name="uniq_allocations0name"),
    UniqueConstraint("node_uuid", name="uniq_allocations0node_uuid"),
    Index("allocations_state_idx", "state"),
)
volume_connectors: Final = _records(
    "volume_connectors",
    _uuid("node_uuid"),
    Column("type", String(32), nullable=False),
    Column("connector_id", String(255), nullable=False),
    UniqueConstraint("type", "connector_id", name="uniq_volumeconnectors0type0connectorid"),
    Index("volume_connectors_node_uuid_idx", "node_uuid"),
)
volume_targets: Final = _records(
    "volume_targets",
    _uuid("node_uuid"),
    _uuid("volume_id"),
    Column("boot_index", Integer, nullable=False),
    UniqueConstraint("node_uuid", "boot_index", name="uniq_volumetargets0node_uuid0boot_index"),
)
inspection_rules: Final = _records(
    "inspection_rules",
    Column("phase", String(16), nullable=False),
    Column("priority", Integer, nullable=False),
)
firmware_components: Final = _records(
    "firmware_components",
    _uuid("node_uuid"),
    Column("component", String(255), nullable=False),
    UniqueConstraint("node_uuid", "component", name="uniq_firmwarecomponents0node_uuid0component"),
)
bios_settings: Final = _records(
    "bios_settings",
    _uuid("node_uuid"),
    Column("name", String(255), nullable=False),
    UniqueConstraint("node_uuid", "name", name="uniq_biossettings0node_uuid0name"),
)

node_inventory: Final = _records(
    "node_inventory",
    _uuid("node_uuid"),
    UniqueConstraint("node_uuid", name="uniq_nodeinventory0node_uuid"),
)


def _deletes(tables: tuple[str, ...]) -> str:
    return " ".join(f"DELETE FROM {table} WHERE node_uuid = OLD.uuid;" for table in tables)


#: The rows that go with a node: a ``node_power_sync`` row made and deleted with it, its
#: records, firmware components and BIOS settings deleted with it.
_RECORDS_DROP: Final = _deletes(RECORDS_BY_NODE)
_SETTINGS_DROP: Final = _deletes(SETTINGS_BY_NODE)
_INVENTORY_DROP: Final = _deletes(INVENTORY_BY_NODE)
_SQLITE_ONLY: Final = (
    "CREATE TRIGGER nodes_power_sync_add AFTER INSERT ON nodes BEGIN "
    "INSERT INTO node_power_sync (node_uuid, synced_at) VALUES (NEW.uuid, NULL); END",
    "CREATE TRIGGER nodes_power_sync_drop AFTER DELETE ON nodes BEGIN "
    "DELETE FROM node_power_sync WHERE node_uuid = OLD.uuid; END",
    f"CREATE TRIGGER nodes_records_drop AFTER DELETE ON nodes BEGIN {_RECORDS_DROP} END",
    f"CREATE TRIGGER nodes_settings_drop AFTER DELETE ON nodes BEGIN {_SETTINGS_DROP} END",
    f"CREATE TRIGGER nodes_inventory_drop AFTER DELETE ON nodes BEGIN {_INVENTORY_DROP} END",
)
_POSTGRES_ONLY: Final = (
    "ALTER TABLE node_history ADD PRIMARY KEY (uuid)",
    "ALTER TABLE nodes SET (fillfactor = 70)",
    "CREATE FUNCTION nodes_power_sync_add() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "INSERT INTO node_power_sync (node_uuid, synced_at) VALUES (NEW.uuid, NULL); "
    "RETURN NULL; END $$",
    "CREATE FUNCTION nodes_power_sync_drop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "DELETE FROM node_power_sync WHERE node_uuid = OLD.uuid; RETURN NULL; END $$",
    "CREATE FUNCTION nodes_records_drop() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN {_RECORDS_DROP} RETURN NULL; END $$",
    "CREATE FUNCTION nodes_settings_drop() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN {_SETTINGS_DROP} RETURN NULL; END $$",
    "CREATE FUNCTION nodes_inventory_drop() RETURNS trigger LANGUAGE plpgsql AS $$ "
    f"BEGIN {_INVENTORY_DROP} RETURN NULL; END $$",
    "CREATE TRIGGER nodes_power_sync_add AFTER INSERT ON nodes "
    "FOR EACH ROW EXECUTE FUNCTION nodes_power_sync_add()",
    "CREATE TRIGGER nodes_power_sync_drop AFTER DELETE ON nodes "
    "FOR EACH ROW EXECUTE FUNCTION nodes_power_sync_drop()",
    "CREATE TRIGGER nodes_records_drop AFTER DELETE ON nodes "
    "FOR EACH ROW EXECUTE FUNCTION nodes_records_drop()",
    "CREATE TRIGGER nodes_settings_drop AFTER DELETE ON nodes "
    "FOR EACH ROW EXECUTE FUNCTION nodes_settings_drop()",
    "CREATE TRIGGER nodes_inventory_drop AFTER DELETE ON nodes "
    "FOR EACH ROW EXECUTE FUNCTION nodes_inventory_drop()",
)


@event.listens_for(METADATA, "after_create")
def _after_tables(target: MetaData, connection: Connection, **kw: Any) -> None:
    """What the tables cannot say, in the dialect's words, once they all exist."""
    postgres = connection.dialect.name == "postgresql"
    for statement in _POSTGRES_ONLY if postgres else _SQLITE_ONLY:
        connection.exec_driver_sql(statement)
