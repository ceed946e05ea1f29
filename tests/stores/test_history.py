"""Node history in the stores: written with the save, oldest first, trimmed, deleted with the node.

Every test runs on MemoryStore, a SQLite file and the real PostgreSQL (the
``store`` fixture).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import attrs
import pytest

from ironic_fsm import HistoryEntry
from ironic_fsm.exceptions import ConcurrentUpdate, InvalidParameterValue
from ironic_fsm.history import new_entry
from ironic_fsm.node import Node
from ironic_fsm.stores import MemoryStore, SQLStore, Store
from ironic_fsm.stores._schema import HISTORY_INDEXED_OVER
from ironic_fsm.stores.base import HistoryStore, save_with_history

UTC = timezone.utc
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def entry(node: Node, minutes: float = 0, event: str = "it failed", **kw: Any) -> HistoryEntry:
    fields: dict[str, Any] = {"severity": "ERROR", "event_type": "cleaning"} | kw
    return new_entry(
        node.uuid,
        T0 + timedelta(minutes=minutes),
        fields.pop("severity"),
        fields.pop("event_type"),
        event,
        conductor="host-a",
        **fields,
    )


def made(store: Store, name: str = "n") -> Node:
    node = Node(name=name, driver="fake-hardware")
    store.create(node)
    return node


def test_the_built_in_stores_keep_history(store: Store) -> None:
    assert isinstance(store, HistoryStore)


def test_a_save_writes_its_entries_oldest_first(store: Store) -> None:
    assert isinstance(store, HistoryStore)
    node = made(store)
    assert store.node_history(node.uuid) == []
    late, early = entry(node, 5, "late"), entry(node, 1, "early")
    node.provision_state = "clean failed"
    store.save(node, history=[late, early])
    assert store.get(node.uuid).provision_state == "clean failed"
    assert store.node_history(node.uuid) == [early, late]
    again = entry(node, 9, "again", severity="INFO", event_type="maintenance", user="alice")
    store.save(node, history=[again])
    got = store.node_history(node.uuid)
    assert got == [early, late, again]
    assert got[2].user == "alice"
    assert got[2].conductor == "host-a"
    assert got[2].created_at == T0 + timedelta(minutes=9)


def test_entries_of_one_instant_keep_the_order_they_were_written_in(store: Store) -> None:
    assert isinstance(store, HistoryStore)
    node = made(store)
    written = [entry(node, 0, f"event {i}") for i in range(5)]
    store.save(node, history=written[:2])
    store.add_history(written[2:4])
    store.save(node, history=written[4:])
    assert [e.event for e in store.node_history(node.uuid)] == [f"event {i}" for i in range(5)]


def test_a_refused_save_writes_no_entry(store: Store) -> None:
    assert isinstance(store, HistoryStore)
    node = made(store)
    stale = store.get(node.uuid)
    store.save(node)  # bumps the version: ``stale`` is now stale
    stale.provision_state = "clean failed"
    with pytest.raises(ConcurrentUpdate):
        store.save(stale, history=[entry(stale)])
    assert store.node_history(node.uuid) == []
    assert store.get(node.uuid).provision_state == "enroll"
    bad = store.get(node.uuid)
    bad.extra = {"x": object()}  # cannot be stored
    with pytest.raises(InvalidParameterValue):
        store.save(bad, history=[entry(bad)])
    assert store.node_history(node.uuid) == []


def test_an_entry_for_another_node_or_unstorable_is_refused_with_nothing_written(
    store: Store,
) -> None:
    assert isinstance(store, HistoryStore)
    node, other = made(store, "a"), made(store, "b")
    version = store.get(node.uuid).version
    with pytest.raises(InvalidParameterValue, match="is for node"):
        store.save(node, history=[entry(other)])
    bad = attrs.evolve(entry(node), severity="FATAL")
    with pytest.raises(InvalidParameterValue, match="severity"):
        store.save(node, history=[bad])
    with pytest.raises(InvalidParameterValue, match="created_at"):
        store.add_history([attrs.evolve(entry(node), created_at=datetime(2026, 1, 1))])
    assert store.get(node.uuid).version == version
    assert store.node_history(node.uuid) == store.node_history(other.uuid) == []


def test_add_history_skips_unknown_nodes(store: Store) -> None:
    assert isinstance(store, HistoryStore)
    node = made(store)
    ghost = Node(driver="fake-hardware")
    store.add_history([entry(ghost), entry(node, event="kept")])
    assert [e.event for e in store.node_history(node.uuid)] == ["kept"]
    assert store.node_history(ghost.uuid) == []


def test_deleting_a_node_deletes_its_history(store: Store) -> None:
    assert isinstance(store, HistoryStore)
    node, other = made(store, "gone"), made(store, "stays")
    store.save(node, history=[entry(node), entry(node, 1)])
    store.add_history([entry(other)])
    store.delete("gone")  # by name
    assert store.node_history(node.uuid) == []
    assert len(store.node_history(other.uuid)) == 1
    # A node created again with the same UUID starts with no history.
    store.create(Node(uuid=node.uuid, driver="fake-hardware"))
    assert store.node_history(node.uuid) == []
    # And the count starts from nothing: a trim at 1 keeps its only entry.
    store.add_history([entry(node, 3, "new life")])
    assert store.trim_history(1, before=None, limit=100) == 0
    assert [e.event for e in store.node_history(node.uuid)] == ["new life"]


def test_trim_deletes_the_oldest_beyond_the_limit_per_node(store: Store) -> None:
    assert isinstance(store, HistoryStore)
    big, small = made(store, "big"), made(store, "small")
    store.add_history([entry(big, m, f"big {m}") for m in range(10)])
    store.add_history([entry(small, m, f"small {m}") for m in range(3)])
    assert store.trim_history(4, before=None, limit=100) == 6
    assert [e.event for e in store.node_history(big.uuid)] == [f"big {m}" for m in range(6, 10)]
    assert len(store.node_history(small.uuid)) == 3
    assert store.trim_history(4, before=None, limit=100) == 0  # nothing left to do


def test_trim_goes_in_batches(store: Store) -> None:
    assert isinstance(store, HistoryStore)
    nodes = [made(store, f"n{i}") for i in range(3)]
    for node in nodes:
        store.add_history([entry(node, m, f"{node.name} {m}") for m in range(5)])
    batches = []
    while True:
        gone = store.trim_history(2, before=None, limit=4)
        batches.append(gone)
        if gone < 4:
            break
    assert batches == [4, 4, 1]
    for node in nodes:
        assert [e.event for e in store.node_history(node.uuid)] == [
            f"{node.name} 3",
            f"{node.name} 4",
        ]


def test_trim_never_deletes_entries_younger_than_the_cutoff(store: Store) -> None:
    assert isinstance(store, HistoryStore)
    node = made(store)
    store.add_history([entry(node, m, f"e{m}") for m in range(6)])
    # Over the limit of 1 by five, but only the first two are old enough.
    assert store.trim_history(1, before=T0 + timedelta(minutes=2), limit=100) == 2
    assert [e.event for e in store.node_history(node.uuid)] == ["e2", "e3", "e4", "e5"]
    # Later, the rest beyond the limit.
    assert store.trim_history(1, before=T0 + timedelta(days=1), limit=100) == 3
    assert [e.event for e in store.node_history(node.uuid)] == ["e5"]


def test_save_with_history_on_a_store_without_it_saves_and_drops_the_entries() -> None:
    class FirstRelease:
        """A third-party store of the first release: ``save(node)`` only."""

        def __init__(self) -> None:
            self.inner = MemoryStore()

        def save(self, node: Node) -> None:
            self.inner.save(node)

    legacy = FirstRelease()
    node = Node(driver="fake-hardware")
    legacy.inner.create(node)
    node.provision_state = "manageable"
    save_with_history(legacy, node, [entry(node)])  # type: ignore[arg-type]
    assert legacy.inner.get(node.uuid).provision_state == "manageable"
    assert legacy.inner.node_history(node.uuid) == []


# -- the trim costs what it deletes (SQLite, counting statements and rows) ---------------------


class _Counting(sqlite3.Connection):
    """Counts every statement, and the rows SELECTs hand back."""

    statements: list[str] = []

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        _Counting.statements.append(sql)
        return super().execute(sql, *args)


def _trim_cost(tmp_path: Path, fleet: int) -> tuple[int, list[str]]:
    url = f"sqlite:///{tmp_path / f'fleet-{fleet}.sqlite'}"
    with SQLStore(url, connect_args={"factory": _Counting}) as store:
        nodes = [Node(name=f"n{i}", driver="fake-hardware") for i in range(fleet)]
        store.create_many(nodes)
        for node in nodes:  # every node has some history, under the limit
            store.add_history([entry(node, 0), entry(node, 1)])
        busy = nodes[fleet // 2]
        limit = HISTORY_INDEXED_OVER + 5  # the count's index holds the nodes over 100
        store.add_history([entry(busy, m) for m in range(2, limit + 7)])  # 7 over the limit
        _Counting.statements = []
        assert store.trim_history(limit, before=None, limit=1000) == 7
        statements = list(_Counting.statements)
        assert store._sql.history_over in statements
        with store.connection() as conn:
            over = store._sql.history_over
            plan = conn.execute("EXPLAIN QUERY PLAN " + over, (limit,)).fetchall()
            trim_plan = conn.execute(
                "EXPLAIN QUERY PLAN " + store._sql.history_trim, (busy.uuid, "9999", 7)
            ).fetchall()
        assert len(store.node_history(busy.uuid)) == limit
    details = [str(row[-1]) for row in (*plan, *trim_plan)]
    return len(statements), details


def test_trim_reads_the_nodes_over_the_limit_not_the_fleet(tmp_path: Path) -> None:
    small, plan = _trim_cost(tmp_path, 20)
    large, _ = _trim_cost(tmp_path, 2000)
    assert small == large  # the same statements for 100 times the fleet
    assert small <= 6  # BEGIN, the nodes over, one DELETE, one count, COMMIT
    # And each statement searches an index rather than scanning a table.
    assert any("node_history_counts_entries_idx" in d for d in plan), plan
    assert any("node_history_node_idx" in d for d in plan), plan
    assert not any(d.startswith("SCAN") for d in plan), plan


# -- the command line: node history list / get ---------------------------------------------------


def test_cli_node_history_list_and_get(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from ironic_fsm import cli

    monkeypatch.delenv(cli.DB_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    db = str(tmp_path / "nodes.sqlite")

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = cli.main(["--db", db, *argv])
        out, err = capsys.readouterr()
        return code, out, err

    assert run("node", "create", "--name", "n1")[0] == 0
    assert run("node", "manage", "n1")[0] == 0
    code, out, err = run("node", "history", "list", "n1", "-f", "json")
    assert (code, json.loads(out)) == (0, []), err
    reason = "disk swap"
    assert run("node", "set", "n1", "--maintenance", "--maintenance-reason", reason)[0] == 0
    assert run("node", "unset", "n1", "--maintenance")[0] == 0

    code, out, err = run("node", "history", "list", "n1", "-f", "json")
    assert code == 0, err
    rows = json.loads(out)
    assert [list(row) for row in rows] == [["uuid", "created_at", "severity", "event"]] * 2
    assert [row["severity"] for row in rows] == ["INFO", "INFO"]
    assert reason in rows[0]["event"]
    assert "unset" in rows[1]["event"]

    code, out, _ = run("node", "history", "list", "n1", "--long", "-f", "json")
    assert [row["event_type"] for row in json.loads(out)] == ["maintenance", "maintenance"]
    code, out, _ = run("node", "history", "list", "n1", "-f", "value", "-c", "severity")
    assert out.split() == ["INFO", "INFO"]
    code, out, _ = run("node", "history", "list", "n1")  # the table
    assert "created_at" in out
    assert rows[0]["uuid"] in out

    code, out, err = run("node", "history", "get", "n1", rows[0]["uuid"], "-f", "json")
    assert code == 0, err
    got = json.loads(out)
    assert got["uuid"] == rows[0]["uuid"]
    assert got["event_type"] == "maintenance"
    assert got["severity"] == "INFO"
    assert reason in got["event"]
    assert got["user"] is None
    assert set(got) == {
        "uuid", "created_at", "severity", "event_type", "event", "conductor", "user"
    }  # fmt: skip

    code, out, err = run("node", "history", "get", "n1", "no-such-entry")
    assert code != 0
    assert "no history entry" in err
    code, out, err = run("node", "history", "list", "ghost")
    assert code != 0
    assert "ghost" in err
