"""Keyset pages in SQL: which index ranges one page of ``SQLStore.list`` reads.

A page after a marker is a range of ``(key, seq, uuid)``, never an offset,
so it reads ``limit`` rows wherever it starts. A nullable key is read in
two ranges, its unset rows (first ascending, last descending) and the
others, each on the index.
"""

from __future__ import annotations

from typing import Any

from ironic_fsm.stores._query import NULLABLE_SORT_KEYS

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
