"""Alembic's environment for the store's revisions: the store lends its connection.

Run by :mod:`ironic_fsm.stores._upgrade` inside the store's transaction
(``BEGIN IMMEDIATE`` on SQLite, an advisory lock on PostgreSQL), which
Alembic takes as an external one: it neither commits nor rolls back. After
each revision it stamps ``ironic_fsm_schema`` with the revision's number,
the version every release reads.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from alembic import context
from alembic.runtime.migration import MigrationContext, MigrationInfo

from ironic_fsm.stores.migrations import CONTEXT_KEY, RAW_KEY


def _stamp_schema_version(
    ctx: MigrationContext, step: MigrationInfo, heads: Collection[Any], run_args: Mapping[str, Any]
) -> None:
    """``ironic_fsm_schema`` follows each upgrade (a stamp alone leaves it: it is the source)."""
    if step.is_upgrade and not step.is_stamp:
        (revision,) = step.up_revision_ids
        store = context.config.attributes[CONTEXT_KEY]
        context.config.attributes[RAW_KEY].execute(
            f"UPDATE ironic_fsm_schema SET version = {store.q} WHERE id = 1", (int(revision),)
        )


connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "ironic_fsm's migrations run when a store opens its database "
        "(SQLStore(url), or any ironic-fsm command), not from the alembic command"
    )
context.configure(connection=connection, on_version_apply=_stamp_schema_version)
with context.begin_transaction():
    context.run_migrations()
