"""Keyset pages in SQL: ``SQLStore.list``, and which index ranges one page reads.

A page after a marker is a range of ``(key, seq, uuid)``, never an offset,
so it reads ``limit`` rows wherever it starts. A nullable key is read in
two ranges, its unset rows (first ascending, last descending) and the
others, each on the index. The timestamps' sort indexes hold only the free
nodes (see :mod:`._schema`): a range in their order is read in two parts,
the free nodes on that index and the held ones on the reservation index,
and merged.

With ``fields``, a page whose fields are all columns
(:data:`~ironic_fsm.stores.base.COLUMN_FIELDS`) selects just those columns
and decodes no record; any other field reads ``data`` and decodes the page.
"""

from __future__ import annotations

import builtins
import heapq
import itertools
from collections.abc import Sequence
from typing import Any, Final

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
from ironic_fsm.stores._schema import FREE_SORTED
from ironic_fsm.stores._statements import Statements, to_node

#: The columns that hold timestamps (read back through the dialect).
_TIMES: Final = frozenset({"created_at", "updated_at", "provision_updated_at"})
#: The columns a page of whole nodes reads.
_RECORD: Final = "data, reservation, version"
#: Sort keys whose index holds only the nodes nobody holds: a range in their order is read
#: in two parts, the free nodes on that index and the held ones on the reservation index.
_FREE_SORTED: Final = frozenset(column for _, column in FREE_SORTED)

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


class Paging:
    """The pages of ``SQLStore.list`` (its arguments checked by :func:`~._query.page_query`),
    one in SQL, on indexes."""

    def __init__(self, sql: Statements) -> None:
        self._sql = sql
        self._db = sql.db

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
            found: builtins.list[Any] = []
            selected = _RECORD if columns is None else ", ".join(columns)
            for cond, extra, order in ranges:
                left = None if limit is None else limit - len(found)
                if left == 0:
                    break
                terms = [*where, *cond]
                found += self._range(
                    conn, sort_key, selected, terms, [*params, *extra], order, left
                )
        if columns is not None:
            return [self._fields_of(row, columns) for row in found]
        nodes = [to_node(r[0], r[1], r[2]) for r in found]
        return nodes if names is None else [project(node, names) for node in nodes]

    def _range(
        self,
        conn: Any,
        sort_key: str,
        selected: str,
        terms: builtins.list[str],
        params: builtins.list[Any],
        order: str,
        limit: int | None,
    ) -> builtins.list[Any]:
        """The rows of one range of a page: ``selected`` where ``terms``, in ``order``."""
        if sort_key in _FREE_SORTED:
            return self._free_and_held(conn, selected, terms, params, order, limit)
        tail = f" ORDER BY {order}" + ("" if limit is None else f" LIMIT {int(limit)}")
        sql = f"SELECT {selected} FROM nodes"
        if sort_key == "name" and "name IS NULL" in terms:  # else SQLite takes the unique
            sql += self._sql.index_hint("nodes_unnamed_idx")  # index, and sorts them all
        sql += " WHERE " + " AND ".join(terms) if terms else ""
        if self._sql.echo:
            self._sql.log(sql + tail)
        return list(conn.execute(sql + tail, params).fetchall())

    def _free_and_held(
        self,
        conn: Any,
        selected: str,
        terms: builtins.list[str],
        params: builtins.list[Any],
        order: str,
        limit: int | None,
    ) -> builtins.list[Any]:
        """One range in ``order`` read in two parts and merged: the free nodes on the sort
        key's index (which holds only them; its unset rows too, in ``seq`` order),
        the held ones on the reservation index.

        Each part is sorted and cut to the page by itself, carrying its sort
        columns first; the merge takes them off. The held nodes are the
        flows in progress: a few, whatever the size of the fleet, sorted by the
        database (the one part that is).
        """
        keys = [part.split()[0] for part in order.split(", ")]
        tail = f" ORDER BY {order}" + ("" if limit is None else f" LIMIT {int(limit)}")
        head = f"SELECT {', '.join(keys)}, {selected} FROM nodes"
        parts = []
        for hint, held in (
            ("", "reservation IS NULL"),
            ("nodes_reservation_idx", "reservation >= ''"),
        ):
            sql = f"{head}{self._sql.index_hint(hint) if hint else ''} WHERE "
            sql += " AND ".join([*terms, held]) + tail
            if self._sql.echo:
                self._sql.log(sql)
            parts.append(conn.execute(sql, params).fetchall())
        width = len(keys)
        merged = heapq.merge(*parts, key=lambda row: row[:width], reverse=order.endswith(" DESC"))
        return [row[width:] for row in itertools.islice(merged, limit)]

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
