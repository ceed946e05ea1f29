"""An application-defined store: node records in SQLite, through the standard library only.

Run it with ``python examples/own_store.py``. The conductor needs nine
methods from a store (``create``, ``get``, ``list``, ``save``, ``delete``,
``reserve``, ``release``, ``heartbeat``, ``holders``) and two guarantees:

* optimistic versions: ``save`` refuses a record whose ``version`` is not
  the stored one, and bumps the version of the record it accepts;
* atomic reservations: ``reserve`` takes a node only if nobody holds it.

Here both are single conditional ``UPDATE`` statements, so they hold across
threads and processes sharing the file. The database lives in a temporary
directory that is removed at the end.
"""

from __future__ import annotations

import sqlite3
import tempfile
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import ironic_fsm
from ironic_fsm import exceptions
from ironic_fsm.node import NODE_FIELDS
from ironic_fsm.stores import Store

SCHEMA = """
CREATE TABLE IF NOT EXISTS nodes (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,  -- creation order, for list()
    uuid        TEXT NOT NULL UNIQUE,
    name        TEXT UNIQUE,
    reservation TEXT,                  -- authoritative over the JSON copy
    version     INTEGER NOT NULL,      -- authoritative over the JSON copy
    data        TEXT NOT NULL          -- Node.to_json(): every field, losslessly
);
CREATE TABLE IF NOT EXISTS holders (holder TEXT PRIMARY KEY, heartbeat TEXT NOT NULL);
"""


class SQLite3Store:
    """Node records in one SQLite file, with Python's own ``sqlite3`` module."""

    def __init__(self, path: Path) -> None:
        # One connection shared by the conductor's threads, used under a lock;
        # autocommit, so that each statement is its own transaction.
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        self._db.close()

    # -- helpers ---------------------------------------------------------------------

    def _run(self, sql: str, *params: Any) -> sqlite3.Cursor:
        with self._lock:
            return self._db.execute(sql, params)

    @staticmethod
    def _node(row: tuple[str, str | None, int]) -> ironic_fsm.Node:
        data, reservation, version = row
        node = ironic_fsm.Node.from_json(data)
        node.reservation, node.version = reservation, version
        return node

    def _row(self, ident: str) -> tuple[str, str | None, int]:
        """The record of the node whose UUID, or else name, is ``ident``."""
        for column in ("uuid", "name"):
            row = self._run(
                f"SELECT data, reservation, version FROM nodes WHERE {column} = ?", ident
            ).fetchone()
            if row is not None:
                return row
        raise exceptions.NodeNotFound(f"Node {ident} could not be found", node=ident)

    # -- the Store protocol ------------------------------------------------------------

    def create(self, node: ironic_fsm.Node) -> None:
        node.version = 1
        try:
            self._run(
                "INSERT INTO nodes (uuid, name, reservation, version, data) VALUES (?, ?, ?, ?, ?)",
                node.uuid,
                node.name,
                node.reservation,
                node.version,
                node.to_json(),
            )
        except sqlite3.IntegrityError as exc:
            raise exceptions.InvalidParameterValue(
                f"A node with UUID {node.uuid} or name {node.name!r} already exists"
            ) from exc

    def get(self, ident: str) -> ironic_fsm.Node:
        return self._node(self._row(ident))

    def list(self, **filters: Any) -> list[ironic_fsm.Node]:
        unknown = set(filters) - set(NODE_FIELDS)
        if unknown:
            raise exceptions.InvalidParameterValue(f"Unknown node fields: {sorted(unknown)}")
        rows = self._run("SELECT data, reservation, version FROM nodes ORDER BY seq").fetchall()
        nodes = [self._node(row) for row in rows]
        return [n for n in nodes if all(getattr(n, k) == v for k, v in filters.items())]

    def save(self, node: ironic_fsm.Node) -> None:
        # Guarantee 1: write only if nobody saved since we read (same version).
        # The reservation is saved too: the conductor releases a node by
        # saving it with reservation=None, in the same write as its final state.
        cursor = self._run(
            "UPDATE nodes SET name = ?, reservation = ?, version = version + 1, data = ? "
            "WHERE uuid = ? AND version = ?",
            node.name,
            node.reservation,
            node.to_json(),
            node.uuid,
            node.version,
        )
        if cursor.rowcount == 0:
            self._row(node.uuid)  # NodeNotFound if it is gone
            raise exceptions.ConcurrentUpdate(
                f"Node {node.uuid} was changed by someone else; re-read it and retry",
                node=node.uuid,
            )
        node.version += 1

    def delete(self, ident: str) -> None:
        uuid = self.get(ident).uuid
        self._run("DELETE FROM nodes WHERE uuid = ?", uuid)

    def reserve(self, ident: str, holder: str) -> ironic_fsm.Node:
        # Guarantee 2: take the node only if it is free, in one statement.
        # Only the reservation changes: a lock is not data, so the version
        # stays and a request refused after reserving leaves the record as it was.
        uuid = self.get(ident).uuid
        cursor = self._run(
            "UPDATE nodes SET reservation = ? WHERE uuid = ? AND reservation IS NULL",
            holder,
            uuid,
        )
        node = self.get(uuid)
        if cursor.rowcount == 0:
            raise exceptions.NodeLocked(
                f"Node {uuid} is locked by {node.reservation}; the operation may be retried",
                node=uuid,
                holder=node.reservation,
            )
        return node

    def release(self, ident: str, holder: str) -> None:
        uuid = self.get(ident).uuid
        self._run(
            "UPDATE nodes SET reservation = NULL WHERE uuid = ? AND reservation = ?",
            uuid,
            holder,
        )

    def heartbeat(self, holder: str, now: datetime) -> None:
        self._run(
            "INSERT INTO holders VALUES (?, ?) "
            "ON CONFLICT (holder) DO UPDATE SET heartbeat = excluded.heartbeat",
            holder,
            now.isoformat(),
        )

    def holders(self) -> dict[str, datetime]:
        rows = self._run("SELECT holder, heartbeat FROM holders").fetchall()
        return {holder: datetime.fromisoformat(beat) for holder, beat in rows}


def main() -> None:
    """Run a lifecycle on the store, then show its two guarantees at work."""
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLite3Store(Path(tmp) / "nodes.db")
        print("SQLite3Store satisfies the Store protocol:", isinstance(store, Store))

        conductor = ironic_fsm.Conductor(store=store)
        conductor.create_node(name="node-0")
        for verb in ("manage", "provide", "deploy"):
            node = conductor.do_provisioning_action("node-0", verb)
            print(f"{verb:>8}: {node.provision_state!r} (record version {node.version})")

        print("A second conductor, as after a restart, reads the same records:")
        later_store = SQLite3Store(Path(tmp) / "nodes.db")
        later = ironic_fsm.Conductor(store=later_store)
        print(
            "  ", [(n.name, n.provision_state) for n in later.list_nodes(provision_state="active")]
        )

        print("Optimistic versions: a save based on a stale read is refused")
        first, second = store.get("node-0"), store.get("node-0")
        first.extra["owner"] = "alice"
        store.save(first)
        second.extra["owner"] = "bob"
        try:
            store.save(second)
        except exceptions.ConcurrentUpdate as exc:
            print(f"   ConcurrentUpdate (retryable={exc.retryable}); owner stays", end=" ")
            print(repr(store.get("node-0").extra["owner"]))

        print("Atomic reservations: a reserved node is busy for every conductor")
        store.reserve("node-0", "maintenance-script")
        try:
            later.do_provisioning_action("node-0", "undeploy")
        except exceptions.NodeLocked as exc:
            print(f"   NodeLocked: {exc}")
        store.release("node-0", "maintenance-script")
        node = later.do_provisioning_action("node-0", "undeploy")
        print(f"   released; undeploy -> {node.provision_state!r}")

        later.heartbeat()
        print("Heartbeats recorded:", list(store.holders()) == [later.holder])
        store.close()
        later_store.close()


if __name__ == "__main__":
    main()
