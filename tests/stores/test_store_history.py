"""What a save with history costs the SQL store, and that the cheaper path keeps every guarantee.

A failing lifecycle writes its entries with the saves of the node (issue 12):
on PostgreSQL that is one statement in autocommit (the ``UPDATE`` is a CTE
of the entries' ``INSERT``), on SQLite one short transaction. Refusals
(stale version, node gone, name taken) write nothing, on every store.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from conftest import fresh_postgres_url
from psycopg.pq import TransactionStatus

from ironic_fsm.exceptions import ConcurrentUpdate, InvalidParameterValue, NodeNotFound
from ironic_fsm.history import HistoryEntry, new_entry
from ironic_fsm.node import Node
from ironic_fsm.stores import SQLStore, Store

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=timezone.utc)


def entry(node: Node, event: str, **kw: Any) -> HistoryEntry:
    return new_entry(node.uuid, T0, "ERROR", "cleaning", event, conductor="host-a", **kw)


def counts(store: Store, node: Node) -> tuple[int, int] | None:
    """The row's ``(history_entries, history_last_seq)`` on a SQL store, else ``None``."""
    if not isinstance(store, SQLStore):
        return None
    q = "?" if store.dialect == "sqlite" else "%s"
    sql = f"SELECT history_entries, history_last_seq FROM nodes WHERE uuid = {q}"
    with store.connection() as conn:
        (row,) = conn.execute(sql, (node.uuid,)).fetchall()
    return int(row[0]), int(row[1])


def seqs(store: Store, node: Node) -> list[tuple[str, int]]:
    """``(event, seq)`` of the node's stored entries in ``seq`` order (SQL stores)."""
    assert isinstance(store, SQLStore)
    q = "?" if store.dialect == "sqlite" else "%s"
    sql = f"SELECT event, seq FROM node_history WHERE node_uuid = {q} ORDER BY seq"
    with store.connection() as conn:
        return [(str(e), int(s)) for e, s in conn.execute(sql, (node.uuid,)).fetchall()]


def test_refused_saves_with_history_write_nothing(store: Store) -> None:
    node = Node(name="n", driver="fake-hardware")
    store.create(node)
    store.save(node, history=[entry(node, "first"), entry(node, "second")])
    before = counts(store, node)
    other = Node(name="other", driver="fake-hardware")
    store.create(other)

    stale = store.get(node.uuid)
    store.save(node)  # ``stale`` is one version behind now
    stale.provision_state = "clean failed"
    with pytest.raises(ConcurrentUpdate):
        store.save(stale, history=[entry(stale, "stale")])

    taken = store.get(node.uuid)
    taken.name = "other"
    with pytest.raises(InvalidParameterValue):
        store.save(taken, history=[entry(taken, "renamed")])

    held = store.get(node.uuid)  # reserved by someone else: the save sets it, as ever
    held.reservation = "conductor-b"
    store.save(held, history=[entry(held, "held")])
    assert store.get(node.uuid).reservation == "conductor-b"

    gone = store.get(other.uuid)
    store.delete(other.uuid)
    with pytest.raises(NodeNotFound):
        store.save(gone, history=[entry(gone, "ghost")])

    got = store.get(node.uuid)
    assert (got.name, got.provision_state) == ("n", "enroll")
    assert [e.event for e in store.node_history(node.uuid)] == ["first", "second", "held"]
    assert store.node_history(other.uuid) == []
    if before is not None:
        assert before == (2, 2)
        assert counts(store, node) == (3, 3)


def test_entries_are_numbered_after_the_row_whatever_wrote_them(sql_url: str) -> None:
    with SQLStore(sql_url) as store:
        node = Node(driver="fake-hardware")
        store.create(node)
        store.save(node, history=[entry(node, "a"), entry(node, "b")])
        store.add_history([entry(node, "c")])
        store.save(node, history=[entry(node, "d")])
        assert store.trim_history(2, before=None, limit=10) == 2
        store.save(node, history=[entry(node, "e"), entry(node, "f"), entry(node, "g")])
        assert seqs(store, node) == [("c", 3), ("d", 4), ("e", 5), ("f", 6), ("g", 7)]
        assert counts(store, node) == (5, 7)
        assert [e.event for e in store.node_history(node.uuid)] == ["c", "d", "e", "f", "g"]


def test_a_duplicate_entry_uuid_on_postgresql_refuses_the_whole_save(
    postgres_server: Any,
) -> None:
    for url in fresh_postgres_url(postgres_server):
        with SQLStore(url) as store:
            node = Node(driver="fake-hardware")
            store.create(node)
            first = entry(node, "first")
            store.save(node, history=[first])
            node.provision_state = "clean failed"
            with pytest.raises(InvalidParameterValue, match="cannot be stored"):
                store.save(node, history=[entry(node, "new"), first])  # its UUID is taken
            assert store.get(node.uuid).provision_state == "enroll"
            assert [e.event for e in store.node_history(node.uuid)] == ["first"]
            assert counts(store, node) == (1, 1)


class _Recording(psycopg.Cursor[Any]):
    """Notes every statement sent, its parameters, and whether it ran in an open transaction."""

    sent: list[tuple[str, bool, Any]] = []

    def execute(self, query: Any, params: Any = None, **kw: Any) -> Any:
        self._note(query, params)
        return super().execute(query, params, **kw)

    def executemany(self, query: Any, params_seq: Any, **kw: Any) -> None:
        self._note(query, params_seq)
        super().executemany(query, params_seq, **kw)

    def _note(self, query: Any, params: Any) -> None:
        status = self.connection.info.transaction_status
        _Recording.sent.append((str(query), status != TransactionStatus.IDLE, params))


@pytest.fixture
def recorded_postgres(postgres_server: Any) -> Iterator[SQLStore]:
    for url in fresh_postgres_url(postgres_server):
        with SQLStore(url, connect_args={"cursor_factory": _Recording}) as store:
            yield store


def test_a_save_with_history_is_one_autocommit_statement_on_postgresql(
    recorded_postgres: SQLStore,
) -> None:
    store = recorded_postgres
    node = Node(driver="fake-hardware", reservation="conductor-a")
    store.create(node)
    store.save(node)
    node.provision_state = "clean failed"
    _Recording.sent = []
    store.save(node, history=[entry(node, "fault"), entry(node, "failure")])
    assert len(_Recording.sent) == 1, _Recording.sent
    sql, in_transaction, params = _Recording.sent[0]
    assert not in_transaction
    assert sql.startswith("WITH saved AS (UPDATE nodes")
    # No array parameters: psycopg dumps those in Python, at more than the INSERT's cost.
    assert not any(isinstance(p, (list, tuple)) for p in params), params
    assert [e.event for e in store.node_history(node.uuid)] == ["fault", "failure"]
    assert counts(store, node) == (2, 2)
    assert store.get(node.uuid).provision_state == "clean failed"


def test_entry_times_and_texts_come_back_exactly(store: Store) -> None:
    node = Node(driver="fake-hardware")
    store.create(node)
    plus_two = timezone(timedelta(hours=2))
    odd = new_entry(
        node.uuid,
        datetime(2026, 3, 1, 10, 0, 0, 123456, tzinfo=plus_two),
        "WARNING",
        "power",
        'quotes " and \\ backslash, é, 😀, tab\t, newline\n',
        conductor=None,
        user="bob",
    )
    plain = entry(node, "plain")
    store.save(node, history=[odd, plain])
    got = store.node_history(node.uuid)
    assert got == [plain, odd]  # oldest first: ``odd`` is 123456 µs later
    back = got[1]
    assert back.created_at == datetime(2026, 3, 1, 8, 0, 0, 123456, tzinfo=timezone.utc)
    assert (back.event, back.conductor, back.user) == (odd.event, None, "bob")


def test_an_entry_text_that_is_not_unicode_is_refused_with_nothing_written(sql_url: str) -> None:
    with SQLStore(sql_url) as store:
        node = Node(driver="fake-hardware")
        store.create(node)
        node.provision_state = "clean failed"
        with pytest.raises(InvalidParameterValue):
            store.save(node, history=[entry(node, "ok"), entry(node, "half \ud800 a pair")])
        assert store.get(node.uuid).provision_state == "enroll"
        assert store.node_history(node.uuid) == []
        assert counts(store, node) == (0, 0)


def test_history_of_one_node_alone_is_one_autocommit_statement_on_postgresql(
    recorded_postgres: SQLStore,
) -> None:
    store = recorded_postgres
    node, other = Node(driver="fake-hardware"), Node(driver="fake-hardware")
    store.create(node)
    store.create(other)
    _Recording.sent = []
    store.add_history([entry(node, "refused"), entry(node, "again")])
    assert [(sql[:15], in_transaction) for sql, in_transaction, _ in _Recording.sent] == [
        ("WITH saved AS (", False)
    ]
    # Several nodes: all or none, in one transaction; an unknown node's entries are dropped.
    _Recording.sent = []
    ghost = Node(driver="fake-hardware")
    store.add_history([entry(other, "o"), entry(ghost, "g"), entry(node, "third")])
    assert [in_transaction for _, in_transaction, _ in _Recording.sent] == [True] * 3
    assert [e.event for e in store.node_history(node.uuid)] == ["refused", "again", "third"]
    assert [e.event for e in store.node_history(other.uuid)] == ["o"]
    assert store.node_history(ghost.uuid) == []
    assert (counts(store, node), counts(store, other)) == ((3, 3), (1, 1))
    assert seqs(store, node) == [("refused", 1), ("again", 2), ("third", 3)]


# -- entries: made cheaply, checked cheaply, the same objects and refusals as ever ----------------


def test_new_entry_makes_what_the_class_makes() -> None:
    import uuid

    import attrs

    made = new_entry("n-1", T0, "INFO", "power", "on", conductor="c", user="u")
    assert type(made) is HistoryEntry
    assert made == HistoryEntry(**attrs.asdict(made))
    assert hash(made) == hash(HistoryEntry(**attrs.asdict(made)))
    assert repr(made).startswith("HistoryEntry(uuid=")
    assert uuid.UUID(made.uuid).version == 4
    assert made.uuid != new_entry("n-1", T0, "INFO", "power", "on").uuid
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        made.event = "changed"  # type: ignore[misc]
    # new_entry sets the slots directly: only sound while the class checks nothing itself.
    assert all(f.validator is None and f.converter is None for f in attrs.fields(HistoryEntry))


class _Text(str):
    pass


class _Moment(datetime):
    pass


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("uuid", ""),
        ("uuid", "u" * 37),
        ("uuid", 5),
        ("node_uuid", None),
        ("node_uuid", "a\x00b"),
        ("severity", "FATAL"),
        ("event", b"bytes"),
        ("event", "nul \x00 inside"),
        ("event_type", "t" * 256),
        ("event_type", None),
        ("conductor", 0),  # falsy, but not text
        ("conductor", "c" * 256),
        ("user", False),
        ("user", "u" * 65),
        ("created_at", datetime(2026, 1, 1)),
        ("created_at", "2026-01-01T00:00:00+00:00"),
    ],
)
def test_every_bad_field_is_refused_by_name(field: str, value: object) -> None:
    import attrs

    from ironic_fsm.history import check_entry

    good = new_entry("n-1", T0, "INFO", "power", "on", conductor="c", user="u")
    check_entry(good)
    check_entry(attrs.evolve(good, conductor=None, user=None, event=_Text("sub")))
    check_entry(attrs.evolve(good, created_at=_Moment(2026, 1, 1, tzinfo=timezone.utc)))
    with pytest.raises(InvalidParameterValue) as refused:
        check_entry(attrs.evolve(good, **{field: value}))
    assert refused.value.details.get("field") == field


def test_a_forked_child_never_hands_out_its_parents_entry_uuids() -> None:
    import os

    from ironic_fsm.history import _random_uuid

    _random_uuid()  # the parent now holds drawn UUIDs it has not handed out
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the next few it would hand out
        try:
            os.write(write, " ".join(_random_uuid() for _ in range(5)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = set(pipe.read().split())
    os.waitpid(pid, 0)
    parent = {_random_uuid() for _ in range(200)}
    assert len(child) == 5
    assert not child & parent
