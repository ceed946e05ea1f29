"""Persistence the embedding application controls.

A store keeps node records. The conductor reads a node, reserves it,
changes it and saves it; the store guarantees two things:

* **optimistic versions**: :meth:`Store.save` refuses a record whose
  ``version`` is not the stored one (:class:`~ironic_fsm.exceptions.ConcurrentUpdate`)
  and bumps the version of the record it accepts, in place;
* **reservations**: :meth:`Store.reserve` sets ``reservation`` only when the
  node is free (:class:`~ironic_fsm.exceptions.NodeLocked` otherwise).
  A reservation is a lock, not data: reserving and releasing change
  nothing else, not even the version.

Built in: :class:`MemoryStore` (:mod:`ironic_fsm.stores.memory`), and
:class:`SQLStore` (:mod:`ironic_fsm.stores.sql`: SQLite through the standard
library, PostgreSQL through psycopg), loaded only when first used so that
``import ironic_fsm`` loads no database driver. Applications may pass any
object with the methods of :class:`Store`.

Both built-in stores are scanning stores (:class:`ScanningStore`): ``list`` pages and
sorts (``limit``, ``marker``, ``sort_key``, ``sort_dir``), and the periodic
scans (``reserved``, ``in_states``, ``waking``) read only their candidates.
Callers reach any store through :func:`~ironic_fsm.stores.base.list_page`,
:func:`~ironic_fsm.stores.base.reserved`,
:func:`~ironic_fsm.stores.base.in_states` and
:func:`~ironic_fsm.stores.base.waking`, which fall back on ``list()`` for a
store that has only the first release's methods.

Both are also conductor registries (:class:`ConductorRegistry`: one record
per conductor, :class:`ConductorRecord`), through which conductors sharing a
store see each other. A store without those methods still works; each
conductor then sees only itself.

What a store offers beyond :class:`Store` is asked once, by
:class:`StoreCapabilities` (built when a conductor is), never by testing the
store again at each call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ironic_fsm.stores.base import (
    ConductorRecord,
    ConductorRegistry,
    ListScans,
    Reserved,
    ScanningStore,
    Store,
    check_filters,
    locked_error,
    matches,
)
from ironic_fsm.stores.capabilities import StoreCapabilities
from ironic_fsm.stores.kv import KeyValueStore
from ironic_fsm.stores.memory import MemoryStore

if TYPE_CHECKING:
    from ironic_fsm.stores.sql import SQLStore

__all__ = [
    "ConductorRecord",
    "ConductorRegistry",
    "KeyValueStore",
    "ListScans",
    "MemoryStore",
    "Reserved",
    "SQLStore",
    "ScanningStore",
    "Store",
    "StoreCapabilities",
    "check_filters",
    "locked_error",
    "matches",
]


def __getattr__(name: str) -> Any:
    # SQLStore loads sqlite3 (and psycopg for PostgreSQL): only when asked for.
    if name == "SQLStore":
        from ironic_fsm.stores.sql import SQLStore

        return SQLStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
