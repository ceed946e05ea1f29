"""Schema 8: the node's tenancy and instance, and the deploy template and runbook tables.

``owner``, ``lessee`` and ``instance_uuid`` are filtered, so columns on
indexes; existing rows have none of them, in ``data`` as in the columns
(NULL), so no row is rewritten. Templates and runbooks keep their steps and
settings in ``data`` (JSON) beside the columns they are found and ordered by.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from ironic_fsm.stores.migrations import run, step_context

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


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


def upgrade() -> None:
    """``owner``, ``lessee``, ``instance_uuid``; ``deploy_templates``, ``runbooks``."""
    timestamp = step_context().timestamp
    run([
        "ALTER TABLE nodes ADD COLUMN owner VARCHAR(255)",
        "ALTER TABLE nodes ADD COLUMN lessee VARCHAR(255)",
        "ALTER TABLE nodes ADD COLUMN instance_uuid VARCHAR(36)",
        "CREATE INDEX nodes_owner_idx ON nodes (owner)",
        "CREATE INDEX nodes_lessee_idx ON nodes (lessee)",
        "CREATE INDEX nodes_instance_uuid_idx ON nodes (instance_uuid)",
        *_catalog_table("deploy_templates", timestamp),
        *_catalog_table("runbooks", timestamp),
    ])  # fmt: skip
