"""The records beside nodes in SQL: :class:`~._records.RecordStore` for ``SQLStore``.

Schema 13's tables, one per kind, one row per record (see
:mod:`._schema`). The default listing (creation order) is a keyset range on
``(seq, uuid)``, so a page after a marker reads ``limit`` rows wherever it
starts; another sort key reads the matching rows and sorts them here.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any, Final, TypeVar

import orjson

from ironic_fsm.exceptions import InvalidParameterValue, NodeNotFound
from ironic_fsm.records import Record
from ironic_fsm.stores._connect import _Database
from ironic_fsm.stores._records import (
    Kind,
    RecordQuery,
    check_query,
    exists,
    not_found,
    sort_and_page,
)

__all__ = ["SQLRecords"]

_UTC: Final = timezone.utc
R = TypeVar("R", bound=Record)


class SQLRecords:
    """Every kind's records in its table; a write is one transaction, checked first.

    Args:
        db: The store's database.
        kinds: How each kind is kept, by table name.
    """

    def __init__(self, db: _Database, kinds: Mapping[str, Kind]) -> None:
        self._db = db
        self._q = db.placeholder
        self._kinds = kinds

    def _select(self, kind: Kind) -> str:
        return f"SELECT uuid, seq, created_at, updated_at, data FROM {kind.table}"

    def _record(self, kind: Kind, row: Any) -> tuple[int, Record]:
        read = self._db.read_time
        updated = None if row[3] is None else read(row[3])
        data = orjson.loads(row[4])
        return int(row[1]), kind.record.from_data(row[0], data, read(row[2]), updated)

    def _clash(self, conn: Any, kind: Kind, record: Record) -> tuple[str, ...] | None:
        """The first unique group another row shares with ``record``, if any."""
        q = self._q
        for group in kind.unique:
            values = [getattr(record, c) for c in group]
            if None in values:
                continue
            where = " AND ".join(f"{c} = {q}" for c in group)
            rows = conn.execute(
                f"SELECT uuid FROM {kind.table} WHERE {where} AND uuid <> {q}",
                (*values, record.uuid),
            ).fetchall()
            if rows:
                return group
        return None

    @contextmanager
    def _writing(self, kind: Kind, record: Record) -> Iterator[Any]:
        """A transaction writing ``record``; a refusal by the database (a unique index, when
        another writer came in after our check) becomes the clash the check would name."""
        try:
            with self._db.transaction() as conn:
                yield conn
        except InvalidParameterValue:
            with self._db.connection() as conn:
                clash = self._clash(conn, kind, record)
            if clash is not None:
                raise exists(kind, clash, record) from None
            raise

    def add_record(self, record: R) -> R:
        kind = self._kinds[record.kind]
        q, now = self._q, datetime.now(_UTC)
        names = ", ".join(kind.columns)
        marks = ", ".join(q for _ in kind.columns)
        with self._writing(kind, record) as conn:
            if kind.by_node is not None:
                node = getattr(record, kind.by_node)
                if (
                    node is not None
                    and not conn.execute(
                        f"SELECT 1 FROM nodes WHERE uuid = {q}", (node,)
                    ).fetchall()
                ):
                    raise NodeNotFound(f"Node {node} could not be found.", node=node)
            if conn.execute(
                f"SELECT 1 FROM {kind.table} WHERE uuid = {q}", (record.uuid,)
            ).fetchall():
                raise exists(kind, ("uuid",), record)
            clash = self._clash(conn, kind, record)
            if clash is not None:
                raise exists(kind, clash, record)
            conn.execute(
                f"INSERT INTO {kind.table} (uuid, seq, created_at, updated_at, "
                f"{names}{', ' if names else ''}data) VALUES ({q}, "
                f"(SELECT COALESCE(MAX(seq), 0) + 1 FROM {kind.table}), {q}, NULL, "
                f"{marks}{', ' if names else ''}{q})",
                (record.uuid, self._db.bind_time(now), *kind.values(record), _dumps(record)),
            )
        return self.get_record(type(record), record.uuid)

    def get_record(self, kind: type[R], uuid: str) -> R:
        spec = self._kinds[kind.kind]
        with self._db.connection() as conn:
            rows = conn.execute(f"{self._select(spec)} WHERE uuid = {self._q}", (uuid,)).fetchall()
        if not rows:
            raise not_found(spec, uuid)
        return self._record(spec, rows[0])[1]  # type: ignore[return-value]

    def find_record(self, kind: type[R], column: str, value: Any) -> R | None:
        spec = self._kinds[kind.kind]
        if column not in spec.columns:
            raise InvalidParameterValue(f"{kind.word} records have no column {column}")
        with self._db.connection() as conn:
            rows = conn.execute(
                f"{self._select(spec)} WHERE {column} = {self._q} ORDER BY seq, uuid", (value,)
            ).fetchall()
        return self._record(spec, rows[0])[1] if rows else None  # type: ignore[return-value]

    def list_records(self, kind: type[R], query: RecordQuery) -> builtins.list[R]:
        spec = self._kinds[kind.kind]
        check_query(spec, query)
        q = self._q
        terms: list[str] = []
        params: list[Any] = []
        for column, wanted in query.filters.items():
            if isinstance(wanted, tuple):
                if not wanted:
                    return []
                terms.append(f"{column} IN ({', '.join(q for _ in wanted)})")
                params.extend(wanted)
            elif wanted is None:
                terms.append(f"{column} IS NULL")
            else:
                terms.append(f"{column} = {q}")
                params.append(wanted)
        keyset = query.sort_key == "id"
        with self._db.connection() as conn:
            if keyset and query.marker is not None:
                after = conn.execute(
                    f"SELECT seq FROM {spec.table} WHERE uuid = {q}", (query.marker,)
                ).fetchall()
                if not after:
                    raise InvalidParameterValue(
                        f"The marker {query.marker} is not a {spec.table[:-1]}"
                    )
                op = "<" if query.sort_dir == "desc" else ">"
                terms.append(f"(seq, uuid) {op} ({q}, {q})")
                params.extend((after[0][0], query.marker))
            sql = self._select(spec) + (f" WHERE {' AND '.join(terms)}" if terms else "")
            if keyset:
                way = " DESC" if query.sort_dir == "desc" else ""
                sql += f" ORDER BY seq{way}, uuid{way}"
                if query.limit is not None:
                    sql += f" LIMIT {int(query.limit)}"
            rows = conn.execute(sql, params).fetchall()
        records = [self._record(spec, row) for row in rows]
        if keyset:
            return [record for _, record in records]  # type: ignore[misc]
        return sort_and_page(spec, records, query)  # type: ignore[return-value]

    def replace_record(self, record: R) -> R:
        kind = self._kinds[record.kind]
        q = self._q
        sets = "".join(f"{column} = {q}, " for column in kind.columns)
        with self._writing(kind, record) as conn:
            clash = self._clash(conn, kind, record)
            if clash is not None:
                raise exists(kind, clash, record)
            done = conn.execute(
                f"UPDATE {kind.table} SET {sets}data = {q}, updated_at = {q} WHERE uuid = {q}",
                (
                    *kind.values(record),
                    _dumps(record),
                    self._db.bind_time(datetime.now(_UTC)),
                    record.uuid,
                ),
            )
            if done.rowcount == 0:
                raise not_found(kind, record.uuid)
        return self.get_record(type(record), record.uuid)

    def delete_record(self, kind: type[R], uuid: str) -> None:
        spec = self._kinds[kind.kind]
        with self._db.connection() as conn:
            done = conn.execute(f"DELETE FROM {spec.table} WHERE uuid = {self._q}", (uuid,))
        if done.rowcount == 0:
            raise not_found(spec, uuid)

    def drop_node(self, node_uuid: str) -> None:
        """Delete the node's records (the trigger on ``nodes`` does it as the node goes)."""
        with self._db.transaction() as conn:
            for spec in self._kinds.values():
                if spec.by_node is not None:
                    conn.execute(
                        f"DELETE FROM {spec.table} WHERE {spec.by_node} = {self._q}", (node_uuid,)
                    )


def _dumps(record: Record) -> str:
    try:
        return orjson.dumps(record.data()).decode()
    except TypeError as error:
        raise InvalidParameterValue(
            f"{record.word} {record.uuid} cannot be stored: {error}", ident=record.uuid
        ) from None
