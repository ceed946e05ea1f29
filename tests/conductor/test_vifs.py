"""VIFs through the library: nothing recorded with ``noop`` networking, as Ironic; recorded
on a free port group or port with ``flat`` (Ironic's order of preference)."""

from __future__ import annotations

import pytest

from ironic_fsm import Conductor
from ironic_fsm.conductor import vifs
from ironic_fsm.exceptions import InvalidParameterValue, NodeNotFound, ResourceExists
from ironic_fsm.stores import MemoryStore


def test_noop_networking_records_nothing() -> None:
    conductor = Conductor(MemoryStore())
    node = conductor.create_node(driver="fake-hardware")
    conductor.create_port("aa:bb:cc:dd:ee:01", node.uuid)
    conductor.attach_vif(node.uuid, "vif-1")
    assert conductor.list_vifs(node.uuid) == []
    conductor.detach_vif(node.uuid, "vif-1")
    assert conductor.list_ports()[0].internal_info == {}
    with pytest.raises(NodeNotFound):
        conductor.attach_vif("ghost", "vif-1")


@pytest.fixture
def flat(monkeypatch: pytest.MonkeyPatch) -> Conductor:
    """Nodes with the ``flat`` network interface (the node's ``network_interface`` field
    comes with per-node interfaces; until then this stands in for its value)."""
    monkeypatch.setattr(vifs, "_network", lambda node: "flat")
    return Conductor(MemoryStore())


def test_flat_networking_records_vifs_on_free_ports(flat: Conductor) -> None:
    node = flat.create_node(driver="fake-hardware", name="n")
    quiet = flat.create_port("aa:bb:cc:dd:ee:01", "n", pxe_enabled=False)
    pxe = flat.create_port("aa:bb:cc:dd:ee:02", "n")
    flat.attach_vif("n", "vif-1")
    assert flat.get_port(pxe.uuid).internal_info == {vifs.VIF_KEY: "vif-1"}  # PXE first
    flat.attach_vif("n", "vif-2")
    assert flat.get_port(quiet.uuid).internal_info == {vifs.VIF_KEY: "vif-2"}
    assert sorted(v["id"] for v in flat.list_vifs("n")) == ["vif-1", "vif-2"]
    with pytest.raises(ResourceExists, match="already attached to Ironic Port"):
        flat.attach_vif("n", "vif-1")
    with pytest.raises(InvalidParameterValue, match="not enough free physical ports"):
        flat.attach_vif("n", "vif-3")
    flat.detach_vif("n", "vif-1")
    assert flat.get_port(pxe.uuid).internal_info == {}
    with pytest.raises(InvalidParameterValue, match="because it is not attached"):
        flat.detach_vif("n", "vif-1")
    assert flat.get_node(node.uuid).reservation is None


def test_flat_networking_prefers_a_port_group_with_ports(flat: Conductor) -> None:
    flat.create_node(driver="fake-hardware", name="n")
    empty = flat.create_portgroup("n", name="empty")
    bond = flat.create_portgroup("n", name="bond")
    flat.create_port("aa:bb:cc:dd:ee:01", "n", portgroup="bond")
    alone = flat.create_port("aa:bb:cc:dd:ee:02", "n")
    flat.attach_vif("n", "vif-1")
    assert flat.get_portgroup(bond.uuid).internal_info == {vifs.VIF_KEY: "vif-1"}
    assert flat.get_portgroup(empty.uuid).internal_info == {}  # no ports: not a candidate
    flat.attach_vif("n", "vif-2", port_uuid=alone.uuid)
    assert flat.get_port(alone.uuid).internal_info == {vifs.VIF_KEY: "vif-2"}
