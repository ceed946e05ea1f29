"""The records beside nodes (ports first) in every built-in store: uniqueness, cascades, pages.

Run on MemoryStore, a SQLite file and PostgreSQL (the ``store`` fixture).
"""

from __future__ import annotations

import uuid

import pytest

from ironic_fsm.exceptions import NodeNotFound, ResourceExists, ResourceNotFound
from ironic_fsm.node import Node
from ironic_fsm.records import Allocation, Port, VolumeTarget
from ironic_fsm.stores import SQLStore, Store
from ironic_fsm.stores.base import RecordQuery, RecordStore


def _records(store: Store) -> RecordStore:
    records = getattr(store, "records", None)
    assert isinstance(records, RecordStore)
    return records


def _node(store: Store, name: str) -> Node:
    node = Node(driver="fake-hardware", name=name)
    store.create(node)
    return node


def _port(node: Node, address: str, **fields: object) -> Port:
    return Port(uuid=str(uuid.uuid4()), address=address, node_uuid=node.uuid, **fields)  # type: ignore[arg-type]


def test_a_duplicate_address_is_refused_and_nothing_is_written(store: Store) -> None:
    records = _records(store)
    node = _node(store, "n1")
    first = records.add_record(_port(node, "aa:bb:cc:dd:ee:01", extra={"a": 1}))
    assert first.created_at is not None
    assert first.updated_at is None
    twin = _port(node, "aa:bb:cc:dd:ee:01", name="other")
    with pytest.raises(ResourceExists, match="MAC address aa:bb:cc:dd:ee:01 already exists"):
        records.add_record(twin)
    with pytest.raises(ResourceNotFound):
        records.get_record(Port, twin.uuid)
    assert records.find_record(Port, "name", "other") is None
    assert [p.uuid for p in records.list_records(Port, RecordQuery())] == [first.uuid]


def test_a_duplicate_name_or_uuid_is_refused_on_create_and_on_replace(store: Store) -> None:
    records = _records(store)
    node = _node(store, "n1")
    one = records.add_record(_port(node, "aa:bb:cc:dd:ee:01", name="eth0"))
    two = records.add_record(_port(node, "aa:bb:cc:dd:ee:02"))
    with pytest.raises(ResourceExists, match="name eth0"):
        records.add_record(_port(node, "aa:bb:cc:dd:ee:03", name="eth0"))
    with pytest.raises(ResourceExists, match="UUID"):
        records.add_record(Port(uuid=one.uuid, address="aa:bb:cc:dd:ee:04", node_uuid=node.uuid))
    two.address = one.address
    with pytest.raises(ResourceExists, match="MAC address"):
        records.replace_record(two)
    assert records.get_record(Port, two.uuid).address == "aa:bb:cc:dd:ee:02"
    two.address, two.name = "aa:bb:cc:dd:ee:05", "eth1"
    replaced = records.replace_record(two)
    assert (replaced.address, replaced.name) == ("aa:bb:cc:dd:ee:05", "eth1")
    assert replaced.updated_at is not None
    assert replaced.created_at == two.created_at


def test_deleting_a_node_deletes_its_records_and_only_its(store: Store) -> None:
    records = _records(store)
    doomed, kept = _node(store, "doomed"), _node(store, "kept")
    records.add_record(_port(doomed, "aa:bb:cc:dd:ee:01"))
    records.add_record(_port(doomed, "aa:bb:cc:dd:ee:02"))
    survivor = records.add_record(_port(kept, "aa:bb:cc:dd:ee:03"))
    records.add_record(Allocation(uuid=str(uuid.uuid4()), node_uuid=doomed.uuid, state="active"))
    records.add_record(VolumeTarget(uuid=str(uuid.uuid4()), node_uuid=doomed.uuid, volume_id="v"))
    store.delete(doomed.uuid)
    assert [p.uuid for p in records.list_records(Port, RecordQuery())] == [survivor.uuid]
    assert records.list_records(Allocation, RecordQuery()) == []
    assert records.list_records(VolumeTarget, RecordQuery()) == []
    # The address is free again.
    records.add_record(_port(kept, "aa:bb:cc:dd:ee:01"))


def test_records_come_back_as_copies(store: Store) -> None:
    records = _records(store)
    node = _node(store, "n1")
    port = records.add_record(_port(node, "aa:bb:cc:dd:ee:01", extra={"a": [1]}))
    port.extra["a"].append(2)
    assert records.get_record(Port, port.uuid).extra == {"a": [1]}


def test_pages_by_creation_and_by_another_key(store: Store) -> None:
    records = _records(store)
    node, other = _node(store, "n1"), _node(store, "n2")
    made = [
        records.add_record(_port(node if i % 2 else other, f"aa:bb:cc:dd:ee:{9 - i:02x}"))
        for i in range(7)
    ]
    first = records.list_records(Port, RecordQuery(limit=3))
    assert [p.uuid for p in first] == [p.uuid for p in made[:3]]
    rest = records.list_records(Port, RecordQuery(limit=10, marker=first[-1].uuid))
    assert [p.uuid for p in rest] == [p.uuid for p in made[3:]]
    backwards = records.list_records(Port, RecordQuery(sort_dir="desc", limit=2))
    assert [p.uuid for p in backwards] == [made[6].uuid, made[5].uuid]
    by_address = records.list_records(Port, RecordQuery(sort_key="address"))
    assert [p.address for p in by_address] == sorted(p.address for p in made)
    mine = records.list_records(Port, RecordQuery({"node_uuid": node.uuid}))
    assert {p.uuid for p in mine} == {p.uuid for i, p in enumerate(made) if i % 2}
    some = records.list_records(Port, RecordQuery({"address": (made[0].address, "x")}))
    assert [p.uuid for p in some] == [made[0].uuid]


def test_a_record_of_a_missing_node_is_refused_by_sql_stores(sql_url: str) -> None:
    with SQLStore(sql_url) as store:
        records = _records(store)
        orphan = Port(
            uuid=str(uuid.uuid4()), address="aa:bb:cc:dd:ee:01", node_uuid=str(uuid.uuid4())
        )
        with pytest.raises(NodeNotFound):
            records.add_record(orphan)
        assert records.list_records(Port, RecordQuery()) == []


def test_the_schema_keeps_ports_unique_and_indexed(sql_url: str) -> None:
    """Schema 13's ports table: a unique index on address, an index on node (what the
    agent's lookup and a node's listing read)."""
    with SQLStore(sql_url) as store, store.connection() as conn:
        if store.dialect == "sqlite":
            rows = conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'ports' AND type = 'index'"
            ).fetchall()
            text = " ".join(f"{name} {sql}" for name, sql in rows)
            table = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'ports'").fetchall()[
                0
            ][0]
            text += " " + table
        else:
            rows = conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'ports'"
            ).fetchall()
            text = " ".join(f"{name} {sql}" for name, sql in rows)
    assert "ports_node_uuid_idx" in text
    assert "UNIQUE (address)" in text or "UNIQUE INDEX uniq_ports0address" in text


def test_one_node_is_given_to_one_allocation(store: Store) -> None:
    records = _records(store)
    node = _node(store, "n1")
    records.add_record(Allocation(uuid=str(uuid.uuid4()), node_uuid=node.uuid))
    with pytest.raises(ResourceExists, match=f"node {node.uuid}"):
        records.add_record(Allocation(uuid=str(uuid.uuid4()), node_uuid=node.uuid))
    # Unallocated ones (no node yet) never clash.
    records.add_record(Allocation(uuid=str(uuid.uuid4())))
    records.add_record(Allocation(uuid=str(uuid.uuid4())))
    assert len(records.list_records(Allocation, RecordQuery())) == 3
