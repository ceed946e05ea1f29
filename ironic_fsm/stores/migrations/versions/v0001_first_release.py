"""Schema 1: the first release's layout: nodes, holders, the schema version.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from ironic_fsm.stores.migrations import raw_connection, run, step_context

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """The tables as the first release created them (names, types, constraints)."""
    context = step_context()
    timestamp = context.timestamp
    run([
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
    ])  # fmt: skip
    conn = raw_connection()
    if not conn.execute("SELECT version FROM ironic_fsm_schema WHERE id = 1").fetchall():
        conn.execute(f"INSERT INTO ironic_fsm_schema (id, version) VALUES (1, {context.q})", (1,))
