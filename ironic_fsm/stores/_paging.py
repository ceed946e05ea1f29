"""Keyset pages in SQL: ``SQLStore.list``, and which index ranges one page reads.

A page after a marker is a range of ``(key, seq, uuid)``, never an offset,
so it reads ``limit`` rows wherever it starts. A nullable key is read in
two ranges, its unset rows (first ascending, last descending) and the
others, each on the index. The timestamps' sort indexes hold only the free
nodes (see :mod:`._schema`), and on PostgreSQL the driver's and the
conductor group's too: a range in the order of one of them, or filtered on
the driver or group there, is read in two parts, the free nodes on that
index and the held ones on the reservation index.
Whatever its ranges and parts, a page is one statement (one snapshot).

With ``fields``, a page whose fields are all columns
(:data:`~ironic_fsm.stores.base.COLUMN_FIELDS`) selects just those columns
and decodes no record; any other field reads ``data`` and decodes the page.
"""

from __future__ import annotations

import builtins
import heapq
import itertools
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from ironic_fsm.node import Node
from ironic_fsm.stores._query import (
    BOOL_FILTERS,
    COLUMN_FIELDS,
    NULLABLE_SORT_KEYS,
    NodeFields,
    PageQuery,
    bad_marker,
    project,
)
from ironic_fsm.stores._scans import where_terms
from ironic_fsm.stores._schema import FREE_ON_POSTGRES, FREE_SORTED
from ironic_fsm.stores._statements import Statements, to_node

#: The columns that hold timestamps (read back through the dialect).
_TIMES: Final = frozenset({"created_at", "updated_at", "provision_updated_at"})
#: The columns a page of whole nodes reads.
_RECORD: Final = "data, reservation, version"
#: Sort keys whose index holds only the nodes nobody holds: a range in their order is read
#: in two parts, the free nodes on that index and the held ones on the reservation index.
_FREE_SORTED: Final = frozenset(column for _, column in FREE_SORTED)
#: On PostgreSQL, the keys whose index holds only the free nodes too: a page sorted on one,
#: or filtered on one (whose index else could not serve the held nodes), reads in two parts.
_FREE_ON_POSTGRES: Final = frozenset(key for _, key, _ in FREE_ON_POSTGRES)

#: One range: its conditions, their parameters, its ``ORDER BY``.
Range = tuple[list[str], list[Any], str]


def page_ranges(sort_key: str, desc: bool, after: Any, marker: str | None, q: str) -> list[Range]:
    """The ranges of a page, in page order.

    ``after`` is the marker's row (``(key, seq)``, or ``(uuid,)`` when the
    page is sorted on ``uuid``), ``None`` for the first page; ``q`` is the
    dialect's placeholder.
    """
    if sort_key == "uuid":
        op, way = ("<", " DESC") if desc else (">", "")
        cond = [] if after is None else [f"uuid {op} {q}"]
        return [(cond, [] if after is None else [marker], f"uuid{way}")]
    valued, nulls = _keyed_ranges(sort_key, desc, after, marker, q)
    first, second = (nulls, valued) if not desc else (valued, nulls)
    return [r for r in (first, second) if r is not None]


def _keyed_ranges(
    sort_key: str, desc: bool, after: Any, marker: str | None, q: str
) -> tuple[Range | None, Range | None]:
    """The range of rows with a ``sort_key`` value, and the range of those without."""
    op, way = ("<", " DESC") if desc else (">", "")
    order = f"{sort_key}{way}, seq{way}, uuid{way}"
    nulls_order = f"seq{way}, uuid{way}"
    nullable = sort_key in NULLABLE_SORT_KEYS
    if after is None:
        valued: Range = ([f"{sort_key} IS NOT NULL"] if nullable else [], [], order)
        return valued, (([f"{sort_key} IS NULL"], [], nulls_order) if nullable else None)
    if after[0] is None:
        nulls: Range = (
            [f"{sort_key} IS NULL", f"(seq, uuid) {op} ({q}, {q})"],
            [after[1], marker],
            nulls_order,
        )
        return (None if desc else ([f"{sort_key} IS NOT NULL"], [], order)), nulls
    valued = (
        [f"({sort_key}, seq, uuid) {op} ({q}, {q}, {q})"],
        [after[0], after[1], marker],
        order,
    )
    return valued, (([f"{sort_key} IS NULL"], [], nulls_order) if nullable and desc else None)


class _Read(NamedTuple):
    """What one range of a page reads: columns, conditions and their values, order, limit."""

    selected: str
    terms: builtins.list[str]
    params: builtins.list[Any]
    order: str
    limit: int | None


class Paging:
    """The pages of ``SQLStore.list`` (its arguments checked by :func:`~._query.page_query`),
    one in SQL, on indexes."""

    def __init__(self, sql: Statements) -> None:
        self._sql = sql
        self._db = sql.db
        postgres = sql.dialect == "postgresql"
        #: Sort keys, and filters, that read the free and the held nodes apart.
        self._free_sorted = _FREE_SORTED | _FREE_ON_POSTGRES if postgres else _FREE_SORTED
        self._free_filtered = _FREE_ON_POSTGRES if postgres else frozenset()

    def page(self, query: PageQuery) -> builtins.list[Node] | builtins.list[NodeFields]:
        """One page in SQL: filters and order on indexes, after ``marker`` a keyset range.

        A page after ``marker`` is a range of ``(key, seq, uuid)`` greater
        than the marker's, so it reads ``limit`` rows wherever it starts.
        With ``fields``, read from their columns alone when every one is a column.
        """
        limit, marker, sort_key, names = query.limit, query.marker, query.sort_key, query.fields
        columns = names if names is not None and COLUMN_FIELDS.issuperset(names) else None
        with self._db.connection() as conn:
            after = None if marker is None else self._marker_row(conn, marker, sort_key)
            if query.filters is None or limit == 0:
                return []
            where, params = where_terms(query.filters, self._sql.q)
            ranges = page_ranges(sort_key, query.descending, after, marker, self._sql.q)
            selected = _RECORD if columns is None else ", ".join(columns)
            parts: builtins.list[tuple[int, _Read, str]] = []
            split = sort_key in self._free_sorted or not self._free_filtered.isdisjoint(
                query.filters
            )
            for number, (cond, extra, order) in enumerate(ranges):
                read = _Read(selected, [*where, *cond], [*params, *extra], order, limit)
                if split:
                    parts += [
                        (number, read._replace(terms=terms), hint)
                        for terms, hint in self._sql.free_and_held(read.terms)
                    ]
                else:
                    unnamed = sort_key == "name" and "name IS NULL" in cond
                    parts.append((number, read, "nodes_unnamed_idx" if unnamed else ""))
            found = self._read(conn, parts, sort_key, query.descending, limit)
        if columns is not None:
            return [self._fields_of(row, columns) for row in found]
        nodes = [to_node(r[0], r[1], r[2]) for r in found]
        return nodes if names is None else [project(node, names) for node in nodes]

    def _read(
        self,
        conn: Any,
        parts: Sequence[tuple[int, _Read, str]],
        sort_key: str,
        desc: bool,
        limit: int | None,
    ) -> builtins.list[Any]:
        """The page's rows, read by one statement whatever its parts.

        One statement is one snapshot, on PostgreSQL (read committed) as on
        SQLite: read as separate statements, a node reserved or released, or
        its key set or cleared, between two parts fell in neither or in both.
        Each part, ``(range number, read, index hint)``, is sorted and cut
        to the page on its index, and its rows come back tagged with it, in
        its order (a ``UNION ALL`` sorts nothing; sorting the union again
        copied every record, 7 ms a page of 1,000 on SQLite). The ranges
        follow one another; a range's free and held parts are merged by key.
        """
        if len(parts) == 1:
            _, read, hint = parts[0]
            return self._fetch(conn, self._select(read, hint), read.params)
        subs, params = [], []
        for index, (_, read, hint) in enumerate(parts):
            keyed = read._replace(selected=f"{index}, {sort_key}, seq, uuid, {read.selected}")
            subs.append(f"SELECT * FROM ({self._select(keyed, hint)}) AS part{index}")
            params += read.params
        runs: builtins.list[builtins.list[Any]] = [[] for _ in parts]
        for row in self._fetch(conn, " UNION ALL ".join(subs), params):
            runs[row[0]].append(row)
        found: builtins.list[Any] = []
        for _, indexes in itertools.groupby(range(len(parts)), key=lambda i: parts[i][0]):
            legs = [runs[i] for i in indexes]
            # Within a range the key is set in every row or in none: no None meets a value.
            found += (
                legs[0]
                if len(legs) == 1
                else heapq.merge(*legs, key=lambda row: row[1:4], reverse=desc)
            )
            if limit is not None and len(found) >= limit:
                break
        return [row[4:] for row in found[:limit]]

    def _select(self, read: _Read, hint: str) -> str:
        """One part in ``order`` on one index; ``hint`` names it where SQLite would choose
        worse (the unnamed nodes: else it takes the unique index on names and sorts them all;
        the held nodes: else it walks every free one)."""
        selected, terms, _, order, limit = read
        sql = f"SELECT {selected} FROM nodes"
        if hint:
            sql += self._sql.index_hint(hint)
        if terms:
            sql += " WHERE " + " AND ".join(terms)
        return sql + f" ORDER BY {order}" + ("" if limit is None else f" LIMIT {int(limit)}")

    def _fetch(self, conn: Any, sql: str, params: Sequence[Any]) -> builtins.list[Any]:
        if self._sql.echo:
            self._sql.log(sql)
        return conn.execute(sql, params).fetchall()  # type: ignore[no-any-return]

    def _fields_of(self, row: Sequence[Any], columns: Sequence[str]) -> NodeFields:
        """A row of columns as the node's fields: timestamps and flags as the node has them."""
        out = NodeFields(zip(columns, row, strict=True))
        for name in columns:
            value = out[name]
            if name in _TIMES:
                out[name] = None if value is None else self._db.read_time(value)
            elif name in BOOL_FILTERS:
                out[name] = bool(value)
        return out

    def _marker_row(self, conn: Any, marker: str, sort_key: str) -> Any:
        """The marker's ``(key, seq)`` (``(uuid,)`` sorted on uuid); a bad marker is refused."""
        column = "uuid" if sort_key == "uuid" else f"{sort_key}, seq"
        rows = conn.execute(
            f"SELECT {column} FROM nodes WHERE uuid = {self._sql.q}", (marker,)
        ).fetchall()
        if not rows:
            raise bad_marker(marker)
        return rows[0]
