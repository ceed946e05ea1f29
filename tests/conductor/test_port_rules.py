"""Ports through the library: Ironic's rules on each field, the lookup by MAC, and a store
that keeps no ports (a clear typed error, never a silent loss)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ironic_fsm import Conductor
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    InvalidState,
    NodeNotFound,
    ResourceNotFound,
    StoreUnsupported,
)
from ironic_fsm.stores import MemoryStore, SQLStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))


@pytest.fixture(params=["memory", "sqlite"])
def conductor(request: pytest.FixtureRequest, tmp_path: Path) -> Conductor:
    if request.param == "memory":
        return Conductor(MemoryStore())
    return Conductor(SQLStore(f"sqlite:///{tmp_path / 'ports.sqlite'}"))


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"address": "aa:bb:cc:dd:ee"}, "Expected valid MAC address for address"),
        ({"address": "aa-bb-cc-dd-ee-ff"}, "Expected valid MAC address for address"),
        ({"pxe_enabled": "yes"}, "pxe_enabled must be True or False"),
        ({"extra": []}, "extra must be an object"),
        ({"physical_network": ""}, "physical_network must be a non-empty string"),
        ({"name": "6f1c4c5e-5d3b-4a2e-9b6f-2d1c0a9e8b7f"}, "looks like a UUID"),
        ({"local_link_connection": {"port_id": "x"}}, "needs port_id and switch_id"),
        ({"local_link_connection": {"switch_id": "nope", "port_id": "1"}}, "switch_id"),
        ({"local_link_connection": {"colour": "red"}}, "unknown key 'colour'"),
        ({"is_smartnic": True}, "Smart NIC port must have port_id and hostname"),
        ({"uuid": "not-a-uuid"}, "Expected UUID for uuid"),
        ({"colour": "red"}, "Unknown port field(s): colour"),
    ],
)
def test_bad_fields_are_refused_and_nothing_is_written(
    conductor: Conductor, fields: dict[str, object], words: str
) -> None:
    node = conductor.create_node(driver="fake-hardware")
    fields = dict(fields)
    address = fields.pop("address", "aa:bb:cc:dd:ee:ff")
    with pytest.raises(InvalidParameterValue) as caught:
        conductor.create_port(address, node.uuid, **fields)  # type: ignore[arg-type]
    assert words in str(caught.value)
    assert conductor.list_ports() == []


def test_a_bad_update_leaves_the_port_as_it_was(conductor: Conductor) -> None:
    node = conductor.create_node(driver="fake-hardware")
    port = conductor.create_port("aa:bb:cc:dd:ee:ff", node.uuid, extra={"a": 1})
    with pytest.raises(InvalidParameterValue):
        conductor.update_port(port.uuid, extra={"a": 2}, address="bad")
    assert conductor.get_port(port.uuid) == port


def test_the_lookup_finds_the_node_by_any_of_its_addresses(conductor: Conductor) -> None:
    one = conductor.create_node(driver="fake-hardware", name="one")
    two = conductor.create_node(driver="fake-hardware", name="two")
    conductor.create_port("aa:bb:cc:dd:ee:01", "one")
    conductor.create_port("aa:bb:cc:dd:ee:02", "one")
    conductor.create_port("aa:bb:cc:dd:ee:03", "two")
    assert conductor.get_node_by_addresses(["AA:BB:CC:DD:EE:02", "11:22:33:44:55:66"]).uuid == (
        one.uuid
    )
    assert conductor.get_node_by_addresses(["aa:bb:cc:dd:ee:03"]).uuid == two.uuid
    with pytest.raises(NodeNotFound, match="11:22:33:44:55:66"):
        conductor.get_node_by_addresses(["11:22:33:44:55:66"])
    with pytest.raises(InvalidState, match="several nodes"):
        conductor.get_node_by_addresses(["aa:bb:cc:dd:ee:01", "aa:bb:cc:dd:ee:03"])


def test_ports_need_their_node(conductor: Conductor) -> None:
    with pytest.raises(NodeNotFound):
        conductor.create_port("aa:bb:cc:dd:ee:01", "no-such-node")
    with pytest.raises(ResourceNotFound, match="Port eth9 could not be found"):
        conductor.get_port("eth9")
    node = conductor.create_node(driver="fake-hardware", name="n")
    port = conductor.create_port("aa:bb:cc:dd:ee:01", "n", name="eth0")
    assert conductor.get_port("eth0").uuid == port.uuid
    assert conductor.list_ports(node="n") == [port]
    conductor.delete_node(node.uuid)
    with pytest.raises(ResourceNotFound):
        conductor.get_port(port.uuid)


def test_a_store_without_ports_says_so() -> None:
    from kv_store import DictStore  # examples/kv_store.py: a store with nodes only

    conductor = Conductor(DictStore())
    node = conductor.create_node(driver="fake-hardware")
    with pytest.raises(StoreUnsupported, match="keeps no ports"):
        conductor.create_port("aa:bb:cc:dd:ee:01", node.uuid)
    with pytest.raises(StoreUnsupported):
        conductor.list_ports()
