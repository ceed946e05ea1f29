"""Schema 15: the timestamps' sort indexes hold only the nodes nobody holds; name order reads
the unique index.

Every save changes ``provision_state`` or the timestamps, so PostgreSQL never
updates a node in place (HOT) and enters each new row version in every index
whose condition it meets: a lifecycle's ten saves made about 120 index
entries, a fifth of the server's CPU per save, besides WAL and vacuum. A flow
holds its node for every save but the last of each verb (the one that
releases it), and a held node's timestamps are the ones that move: the
indexes listings sort creation, update and provision-update times on now
leave held nodes out, and a page sorted on them reads the few held nodes
through the reservation index and merges the two (``_paging``).
``nodes_name_idx`` (``name, seq, uuid``) repeated the unique constraint's
index on ``name``, which sorts names as well (unique names have no ties); the
unnamed nodes, which a page on names reads in ``seq`` order, are on an index
of their own (``nodes_unnamed_idx``), which the saves of named nodes leave
alone.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from ironic_fsm.stores._schema import FREE_SORTED
from ironic_fsm.stores.migrations import run

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """``nodes_name_idx`` dropped, ``nodes_unnamed_idx`` made; three sort indexes
    ``WHERE reservation IS NULL``."""
    statements = [
        "DROP INDEX nodes_name_idx",
        "CREATE INDEX nodes_unnamed_idx ON nodes (seq, uuid) WHERE name IS NULL",
    ]
    for index, column in FREE_SORTED:
        statements += [
            f"DROP INDEX {index}",
            f"CREATE INDEX {index} ON nodes ({column}, seq, uuid) WHERE reservation IS NULL",
        ]
    run(statements)
