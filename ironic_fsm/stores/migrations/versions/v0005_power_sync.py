"""Schema 5: when each node's power state was last synced, on an index.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from typing import Final

from ironic_fsm.stores.migrations import run, step_context

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

#: SQLite: the triggers that keep one ``node_power_sync`` row per node.
_SQLITE_TRIGGERS: Final = (
    "CREATE TRIGGER nodes_power_sync_add AFTER INSERT ON nodes BEGIN "
    "INSERT INTO node_power_sync (node_uuid, synced_at) VALUES (NEW.uuid, NULL); END",
    "CREATE TRIGGER nodes_power_sync_drop AFTER DELETE ON nodes BEGIN "
    "DELETE FROM node_power_sync WHERE node_uuid = OLD.uuid; END",
)
#: PostgreSQL: the same, as trigger functions (in the schema the store works in).
_POSTGRES_TRIGGERS: Final = (
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


def upgrade() -> None:
    """``node_power_sync``, a row per node kept by triggers (they differ in syntax only)."""
    context = step_context()
    run([
        "CREATE TABLE node_power_sync (\n"
        "\tnode_uuid VARCHAR(36) NOT NULL, \n"
        f"\tsynced_at {context.timestamp}, \n"
        "\tPRIMARY KEY (node_uuid)\n"
        ")",
        "CREATE INDEX node_power_sync_due_idx ON node_power_sync (synced_at)",
        "INSERT INTO node_power_sync (node_uuid, synced_at) SELECT uuid, NULL FROM nodes",
    ])  # fmt: skip
    run(_POSTGRES_TRIGGERS if context.dialect == "postgresql" else _SQLITE_TRIGGERS)
