"""Deploy templates and runbooks in SQL: :class:`~._catalog.CatalogStore` for ``SQLStore``.

Schema 8's ``deploy_templates`` and ``runbooks`` tables, one row per entry.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.stores._catalog import (
    CatalogEntry,
    CatalogKind,
    _check_text,
    _now,
    exists,
    not_found,
)
from ironic_fsm.stores._connect import _Database


class Catalog:
    """The catalog in schema 8's tables, one statement per request (a transaction for writes)."""

    def __init__(self, db: _Database) -> None:
        self._db = db
        self._q = db.placeholder

    def _rows(self, conn: Any, kind: CatalogKind, ident: str) -> Any:
        q = self._q
        return conn.execute(
            f"SELECT uuid, name, data, created_at, updated_at FROM {kind} "
            f"WHERE uuid = {q} OR name = {q} ORDER BY seq",
            (ident, ident),
        ).fetchall()

    def _entry(self, row: Any) -> CatalogEntry:
        updated = None if row[4] is None else self._db.read_time(row[4])
        return CatalogEntry.from_settings(
            row[0], row[1], row[2], self._db.read_time(row[3]), updated
        )

    def add_entry(self, kind: CatalogKind, entry: CatalogEntry) -> CatalogEntry:
        now = _now()
        q = self._q
        with self._writing(kind, entry) as conn:
            for ident in (entry.uuid, entry.name):
                for row in self._rows(conn, kind, ident):
                    raise exists(kind, entry, row[0])
            conn.execute(
                f"INSERT INTO {kind} (uuid, name, seq, created_at, updated_at, data) VALUES "
                f"({q}, {q}, (SELECT COALESCE(MAX(seq), 0) + 1 FROM {kind}), {q}, NULL, {q})",
                (entry.uuid, entry.name, self._db.bind_time(now), entry.settings().decode()),
            )
        return attrs.evolve(entry.copy(), created_at=now, updated_at=None)

    @contextmanager
    def _writing(
        self, kind: CatalogKind, entry: CatalogEntry, keep: str | None = None
    ) -> Iterator[Any]:
        """A transaction writing ``entry``, checked first; a refusal goes by :meth:`_lost_race`."""
        _check_text(kind, entry)
        try:
            with self._db.transaction() as conn:
                yield conn
        except InvalidParameterValue:
            self._lost_race(kind, entry, keep)
            raise

    def _lost_race(self, kind: CatalogKind, entry: CatalogEntry, keep: str | None = None) -> None:
        """After a refused write: if another writer took the name or UUID since our check
        (PostgreSQL's unique index refused the row), say so as the check would have."""
        with self._db.connection() as conn:
            for ident in (entry.name, entry.uuid):
                for row in self._rows(conn, kind, ident):
                    if row[0] != keep:
                        raise exists(kind, entry, row[0]) from None

    def get_entry(self, kind: CatalogKind, ident: str) -> CatalogEntry:
        with self._db.connection() as conn:
            rows = self._rows(conn, kind, ident)
        row = next((r for r in rows if r[0] == ident), rows[0] if rows else None)
        if row is None:
            raise not_found(kind, ident)
        return self._entry(row)

    def list_entries(self, kind: CatalogKind) -> builtins.list[CatalogEntry]:
        with self._db.connection() as conn:
            rows = conn.execute(
                f"SELECT uuid, name, data, created_at, updated_at FROM {kind} ORDER BY seq"
            ).fetchall()
        return [self._entry(row) for row in rows]

    def replace_entry(self, kind: CatalogKind, entry: CatalogEntry) -> CatalogEntry:
        now = _now()
        q = self._q
        with self._writing(kind, entry, keep=entry.uuid) as conn:
            for row in self._rows(conn, kind, entry.name):
                if row[0] != entry.uuid:
                    raise exists(kind, entry, row[0])
            done = conn.execute(
                f"UPDATE {kind} SET name = {q}, data = {q}, updated_at = {q} WHERE uuid = {q}",
                (entry.name, entry.settings().decode(), self._db.bind_time(now), entry.uuid),
            )
            if done.rowcount == 0:
                raise not_found(kind, entry.uuid)
        return self.get_entry(kind, entry.uuid)

    def delete_entry(self, kind: CatalogKind, ident: str) -> None:
        q = self._q
        with self._db.transaction() as conn:
            rows = self._rows(conn, kind, ident)
            if not rows:
                raise not_found(kind, ident)
            uuid = next((r[0] for r in rows if r[0] == ident), rows[0][0])
            conn.execute(f"DELETE FROM {kind} WHERE uuid = {q}", (uuid,))
