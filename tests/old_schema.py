"""Databases as older releases left them, and what every migration test checks on them.

Today's store writes every column of today's layout, which an older
database lacks; a fixture that stands for an older release writes its
nodes with that release's columns instead (the rest of the store, which
v6 and v8 did not change, is used as it is). The migration tests of
schemas 6 to 9 share one such database, with something in every table,
so that each upgrade is seen to keep all of it.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final

import psycopg
import pytest

from ironic_fsm.history import HistoryEntry
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore, sql
from ironic_fsm.stores._upgrade import revision_of, scripts
from ironic_fsm.stores.base import ConductorRecord
from ironic_fsm.stores.sql import _COLUMNS

UTC = timezone.utc
T0 = datetime(2026, 3, 1, 8, 0, 0, 125000, tzinfo=UTC)
FREE = "aaaaaaaa-0000-4000-8000-000000000001"
HELD = "aaaaaaaa-0000-4000-8000-000000000002"
SYNCED = "aaaaaaaa-0000-4000-8000-000000000003"
HOLDER = "old-host:42:1-abcd"
CONDUCTOR = ConductorRecord(
    holder=HOLDER,
    hostname="old-host",
    conductor_group="rack-1",
    hardware_types=("ipmi",),
    online=True,
    started_at=T0,
    updated_at=T0 + timedelta(seconds=5),
)


def v5_nodes() -> list[Node]:
    """The old releases' nodes: one free, one reserved in a wait state, one active."""
    common: dict[str, Any] = {"created_at": T0, "updated_at": T0, "provision_updated_at": T0}
    return [
        Node(uuid=FREE, name="free", driver="ipmi", provision_state="available", **common),
        Node(
            uuid=HELD,
            name="held",
            driver="redfish",
            provision_state="clean wait",
            driver_info={"redfish_password": "pw"},
            **common,
        ),
        Node(
            uuid=SYNCED, driver="ipmi", provision_state="active", power_state="power on", **common
        ),
    ]


def cleaning_failure(
    node_uuid: str, at: datetime, event: str, uuid: str, host: str
) -> HistoryEntry:
    """A history entry as every release wrote one for a failed cleaning."""
    return HistoryEntry(
        uuid=uuid,
        node_uuid=node_uuid,
        created_at=at,
        severity="ERROR",
        event_type="cleaning",
        event=event,
        conductor=host,
        user=None,
    )


def entry(minutes: int) -> HistoryEntry:
    """HELD's entry ``minutes`` after T0, written by the old host."""
    at = T0 + timedelta(minutes=minutes)
    uuid = f"bbbbbbbb-0000-4000-8000-{minutes:012d}"
    return cleaning_failure(HELD, at, f"failure {minutes}", uuid, "old-host")


def raw_pg(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect("postgresql" + url[url.index("://") :], autocommit=True)


def raw_rows(url: str, sql_text: str) -> list[tuple[Any, ...]]:
    """Rows read past the store, with the database's own driver."""
    if url.startswith("sqlite"):
        with sqlite3.connect(url[len("sqlite:///") :]) as conn:
            return [tuple(r) for r in conn.execute(sql_text).fetchall()]
    with raw_pg(url) as conn:
        return [tuple(r) for r in conn.execute(sql_text).fetchall()]


def schema_version(url: str) -> int:
    return int(raw_rows(url, "SELECT version FROM ironic_fsm_schema")[0][0])


#: The tables beside ``nodes`` that schemas 5 to 9 keep as they were.
KEPT_TABLES: Final = ("holders", "conductors", "node_history", "node_power_sync")


def every_row(url: str, nodes: str, *, counts: bool = True) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the kept tables, the columns of ``nodes`` that the query ``nodes`` reads
    and (with ``counts``) each node's history count: what an upgrade must keep."""
    out = {table: sorted(raw_rows(url, f"SELECT * FROM {table}")) for table in KEPT_TABLES}
    out["nodes"] = sorted(raw_rows(url, nodes))
    if counts:
        out["counts"] = sorted(raw_rows(url, history_counts_sql(schema_version(url))))
    return out


def fill_every_table(
    store: SQLStore,
    columns: tuple[str, ...],
    *,
    history: tuple[int, ...] = (1, 2),
    synced: str | None = None,
) -> None:
    """Write the old releases' nodes (with ``columns``), a reservation, a heartbeat, a
    registered conductor, HELD's ``history`` and, if asked, a power-sync time."""
    create_with(store, columns, *v5_nodes())
    store.reserve(HELD, HOLDER)
    store.heartbeat(HOLDER, T0 + timedelta(seconds=5))
    store.register_conductor(CONDUCTOR)
    add_history_before_v9(store, [entry(m) for m in history])
    if synced is not None:
        store.mark_power_synced([synced], T0 + timedelta(minutes=1))


def as_release(url: str, release: int, fill: Callable[[SQLStore], None]) -> str:
    """Make the database at ``url`` as ``release`` did (no later migration), ``fill`` it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sql, "SCHEMA_VERSION", release)  # the revisions up to ``release`` run
        with SQLStore(url) as store:
            fill(store)
    assert schema_version(url) == release
    return url


def release_urls(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    release: int,
    fill: Callable[[SQLStore], None],
) -> Iterator[str]:
    """A database as ``release`` made it, in a SQLite file or a private PostgreSQL schema."""
    if request.param == "sqlite":
        yield as_release(f"sqlite:///{tmp_path / f'v{release}.sqlite'}", release, fill)
        return
    from conftest import fresh_postgres_url

    for url in fresh_postgres_url(request.getfixturevalue("postgres_server")):
        yield as_release(url, release, fill)


def release_fixture(release: int, fill: Callable[[SQLStore], None]) -> Any:
    """The fixture ``v{release}_url``: :func:`release_urls` of ``release``, over both kinds."""

    @pytest.fixture(params=["sqlite", "postgres"], name=f"v{release}_url")
    def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
        yield from release_urls(request, tmp_path, release, fill)

    return url


def assert_old_records_kept(store: SQLStore) -> dict[str, Node]:
    """What ``fill_every_table`` wrote reads back as it was written; the nodes expected."""
    expected = {n.uuid: n for n in v5_nodes()}
    expected[HELD].reservation = HOLDER
    for uuid, node in expected.items():
        node.version = 1
        assert store.get(uuid) == node
    assert store.list_conductors() == [CONDUCTOR]
    assert store.node_history(HELD) == [entry(1), entry(2)]
    assert store.holders() == {HOLDER: T0 + timedelta(seconds=5)}
    return expected


def assert_a_failed_step_keeps(
    url: str,
    monkeypatch: pytest.MonkeyPatch,
    version: int,
    *views: Callable[[str], object],
) -> None:
    """The step from ``version`` fails after all its own work: the database stays at
    ``version`` and every view of it reads as before (one transaction, rolled back)."""
    before = [view(url) for view in views]
    fail_at_the_end_of(monkeypatch, version)
    with pytest.raises(RuntimeError, match="disk on fire"):
        SQLStore(url)
    assert [view(url) for view in views] == before
    assert schema_version(url) == version


def assert_failed_then_upgraded(
    url: str, monkeypatch: pytest.MonkeyPatch, version: int, *views: Callable[[str], object]
) -> None:
    """:func:`assert_a_failed_step_keeps`, then the next opening upgrades the database and
    the old records read back as they were written."""
    assert_a_failed_step_keeps(url, monkeypatch, version, *views)
    monkeypatch.undo()
    with SQLStore(url) as store:
        assert_old_records_kept(store)


def assert_reopening_keeps(url: str, view: Callable[[str], object], seen: object) -> None:
    """Opening an upgraded database again migrates nothing: ``view`` still reads ``seen``."""
    with SQLStore(url):
        assert schema_version(url) == sql.SCHEMA_VERSION
        assert view(url) == seen


#: The node columns of schemas 2 to 5, as they wrote them (``data`` and bookkeeping apart).
COLUMNS_BEFORE_V6: Final = (
    "name", "driver", "provision_state", "maintenance", "retired", "reservation",
    "target_provision_state", "power_state", "protected", "resource_class", "fault",
    "provision_updated_at", "updated_at", "wait_until",
)  # fmt: skip


#: The node columns of schemas 6 and 7: those of 2 to 5, and the conductor group.
COLUMNS_BEFORE_V8: Final = (*COLUMNS_BEFORE_V6, "conductor_group")


#: The node columns of schema 8 (all of today's but the history count of schema 9).
COLUMNS_BEFORE_V9: Final = (*COLUMNS_BEFORE_V8, "owner", "lessee", "instance_uuid")


#: The node columns of schemas 9 to 14, before the resources step added ``instance_name``.
COLUMNS_BEFORE_RESOURCES: Final = _COLUMNS[: _COLUMNS.index("instance_name")]


def create_before_v6(store: SQLStore, *nodes: Node) -> None:
    """Create ``nodes`` (version 1, next ``seq``) with the columns schemas 2 to 5 had."""
    create_with(store, COLUMNS_BEFORE_V6, *nodes)


def create_before_v8(store: SQLStore, *nodes: Node) -> None:
    """Create ``nodes`` with the columns schemas 6 and 7 had."""
    create_with(store, COLUMNS_BEFORE_V8, *nodes)


def create_with(store: SQLStore, columns: tuple[str, ...], *nodes: Node) -> None:
    """Create ``nodes`` with the first ``columns`` of today's (an older release's layout)."""
    q = store._q
    names = ", ".join(columns)
    marks = ", ".join([q] * (1 + len(columns)))
    insert = (
        f"INSERT INTO nodes (uuid, {names}, version, seq, created_at, data) VALUES "
        f"({marks}, 1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM nodes), {q}, {q})"
    )
    with store.connection() as conn:
        for node in nodes:
            values = store._columns(node)[: len(columns)]
            when = node.created_at or datetime.now(timezone.utc)
            created = store._db.bind_time(when)
            conn.execute(insert, (node.uuid, *values, created, node.to_json()))
            node.version = 1


#: Every column of a node row before schema 6: what an upgrade to 6 or later must keep.
NODES_BEFORE_V6: Final = (
    f"SELECT uuid, {', '.join(COLUMNS_BEFORE_V6)}, version, seq, created_at, data FROM nodes"
)

#: Every column of a node row before schema 8.
NODES_BEFORE_V8: Final = (
    f"SELECT uuid, {', '.join(COLUMNS_BEFORE_V8)}, version, seq, created_at, data FROM nodes"
)


#: Every column of a node row before schema 9.
NODES_BEFORE_V9: Final = (
    f"SELECT uuid, {', '.join(COLUMNS_BEFORE_V9)}, version, seq, created_at, data FROM nodes"
)


def fail_at_the_end_of(monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """Make the step from ``version`` fail (``RuntimeError``) after all its own work."""

    module = revision_module(version + 1)
    step = module.upgrade

    def broken() -> None:
        step()
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(module, "upgrade", broken)


def revision_module(version: int) -> Any:
    """The module of the revision file that makes schema ``version``, as the store runs it."""
    script = scripts().get_revision(revision_of(version))
    assert script is not None
    return script.module


#: Per node, how many history entries it has and its last ``seq``: in the table of their
#: own before schema 9, in the node rows since (a node never given any: none in either).
COUNTS_BEFORE_V9: Final = "SELECT node_uuid, entries, last_seq FROM node_history_counts"
COUNTS_SINCE_V9: Final = (
    "SELECT uuid, history_entries, history_last_seq FROM nodes WHERE history_last_seq > 0"
)


def history_counts_sql(version: int) -> str:
    """The query of the per-node history counts in a database of schema ``version``."""
    return COUNTS_BEFORE_V9 if version < 9 else COUNTS_SINCE_V9


def add_history_before_v9(store: SQLStore, entries: list[HistoryEntry]) -> None:
    """Write ``entries`` (of one node) as schemas 4 to 8 did: rows, and a count in a row apart."""
    q = store._q
    node_uuid = entries[0].node_uuid
    n = len(entries)
    with store.connection() as conn:
        conn.execute(
            "INSERT INTO node_history_counts (node_uuid, entries, last_seq) "
            f"VALUES ({q}, {q}, {q}) ON CONFLICT (node_uuid) DO UPDATE SET "
            "entries = node_history_counts.entries + excluded.entries, "
            "last_seq = node_history_counts.last_seq + excluded.last_seq",
            (node_uuid, n, n),
        )
        last = (
            conn.execute(
                f"SELECT last_seq FROM node_history_counts WHERE node_uuid = {q}", (node_uuid,)
            ).fetchall()[0][0]
            - n
        )
        for seq, e in enumerate(entries, last + 1):
            conn.execute(
                "INSERT INTO node_history (uuid, node_uuid, created_at, seq, severity, "
                f"event_type, event, conductor, username) VALUES ({q}, {q}, {q}, {q}, {q}, "
                f"{q}, {q}, {q}, {q})",
                (
                    e.uuid, e.node_uuid, store._db.bind_time(e.created_at), seq, e.severity,
                    e.event_type, e.event, e.conductor, e.user,
                ),
            )  # fmt: skip


#: Indexes schema 9 drops or moves (the history count's index now on ``nodes``; the keys of
#: the counts table and, on SQLite, of the rebuilt ``node_history``): an upgrade past 8
#: keeps every other index as it was.
CHANGED_BY_V9: Final = frozenset({
    "node_history_counts_entries_idx", "node_history_counts_pkey",
    "sqlite_autoindex_node_history_counts_1", "sqlite_autoindex_node_history_1",
})  # fmt: skip


#: The indexes schema 12 makes partial (each on a column most nodes leave unset).
CHANGED_BY_V12: Final = frozenset({
    "nodes_resource_class_idx", "nodes_wait_until_idx", "nodes_owner_idx", "nodes_lessee_idx",
    "nodes_instance_uuid_idx", "nodes_shard_idx", "nodes_parent_node_idx",
})  # fmt: skip


#: The indexes schema 13 adds (the nodes in maintenance, by fault, for metrics scrapes).
ADDED_BY_V13: Final = frozenset({"nodes_maintenance_idx"})


#: The indexes the step after the records step drops (``nodes_name_idx``), adds (the
#: unnamed nodes') or makes hold only the free nodes (the timestamps' sort indexes).
CHANGED_BY_FREE_SORTED: Final = frozenset({
    "nodes_name_idx", "nodes_unnamed_idx", "nodes_created_at_idx", "nodes_updated_at_idx",
    "nodes_provision_updated_at_idx",
})  # fmt: skip


#: The indexes schema 18 changes (on PostgreSQL: they hold only the free nodes).
CHANGED_BY_V18: Final = frozenset(
    {"nodes_provision_state_idx", "nodes_driver_idx", "nodes_conductor_group_idx", "nodes_seq_idx"}
)


def kept_by_v18(indexes: dict[str, str]) -> dict[str, str]:
    """``indexes`` (name: definition) but those schema 18 changes."""
    return {name: text for name, text in indexes.items() if name not in CHANGED_BY_V18}


def kept_by_free_sorted(indexes: dict[str, str]) -> dict[str, str]:
    """``indexes`` (name: definition) but those the free-sorted step, or 18, drops or changes."""
    changed = CHANGED_BY_FREE_SORTED | CHANGED_BY_V18
    return {name: text for name, text in indexes.items() if name not in changed}


def before_v13(indexes: dict[str, str]) -> dict[str, str]:
    """``indexes`` (name: definition) but those schema 13 and later add or change."""
    return {name: text for name, text in kept_by_free_sorted(indexes).items()
            if name not in ADDED_BY_V13}  # fmt: skip


def kept_by_v9(indexes: dict[str, str]) -> dict[str, str]:
    """``indexes`` (name: definition) but those later schemas change (9, 12, free-sorted)."""
    changed = CHANGED_BY_V9 | CHANGED_BY_V12 | CHANGED_BY_FREE_SORTED | CHANGED_BY_V18
    return {name: text for name, text in indexes.items() if name not in changed}


def nodes_since_v9(columns: tuple[str, ...]) -> str:
    """Every column of a node row in a schema (9 or later) whose node columns are ``columns``."""
    return (
        f"SELECT uuid, {', '.join(columns)}, history_entries, history_last_seq, "
        "version, seq, created_at, data FROM nodes"
    )


def fill_since_v9(columns: tuple[str, ...]) -> Callable[[SQLStore], None]:
    """What a release of schema 9 or later left, its nodes written with ``columns``: a
    reservation, a heartbeat, a conductor, HELD's history counted in its row, a power-sync
    time."""

    def fill(store: SQLStore) -> None:
        create_with(store, columns, *v5_nodes())
        store.reserve(HELD, HOLDER)
        store.heartbeat(HOLDER, T0 + timedelta(seconds=5))
        store.register_conductor(CONDUCTOR)
        store.add_history([entry(1), entry(2)])
        store.mark_power_synced([FREE], T0 + timedelta(minutes=1))

    return fill


def commit_frames(store: SQLStore, path: Path, node: Node, history: list[HistoryEntry]) -> int:
    """The WAL frames (pages) of one save's commit: ``node``, its maintenance flipped, with
    ``history``, on the SQLite file at ``path`` (checkpointed first, so the WAL holds only it)."""
    with store.connection() as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    node.maintenance = not node.maintenance
    store.save(node, history=history)
    return (os.path.getsize(f"{path}-wal") - 32) // (4096 + 24)
