"""``ironic-fsm port ...``: shaped like ``openstack baremetal port``, the conductor's answers."""

from __future__ import annotations

import json

from cli_harness import Run, ok


def _json(run: Run, *argv: str) -> object:
    return json.loads(ok(run(*argv, "-f", "json")).out)


def test_port_create_list_show_set_unset_delete(run: Run) -> None:
    ok(run("node", "create", "--name", "n1"))
    created = _json(run, "port", "create", "--node", "n1", "AA:BB:CC:00:00:01",
                    "--extra", "rack=4", "--local-link-connection", "switch_id=00:11:22:33:44:55",
                    "--local-link-connection", "port_id=Eth1/1")  # fmt: skip
    assert isinstance(created, dict)
    assert created["address"] == "aa:bb:cc:00:00:01"
    assert created["local_link_connection"] == {"switch_id": "00:11:22:33:44:55",
                                                "port_id": "Eth1/1"}  # fmt: skip
    assert _json(run, "port", "list") == [{"uuid": created["uuid"], "address": created["address"]}]
    long = _json(run, "port", "list", "--long", "--node", "n1")
    assert isinstance(long, list)
    assert list(long[0])[:5] == [
        "uuid",
        "address",
        "created_at",
        "extra",
        "node_uuid",
    ]
    ok(run("port", "set", created["uuid"], "--name", "eth0", "--extra", "row=2", "--pxe-disabled"))
    shown = _json(run, "port", "show", "eth0")
    assert isinstance(shown, dict)
    assert (shown["name"], shown["extra"], shown["pxe_enabled"]) == (
        "eth0", {"rack": 4, "row": 2}, False,
    )  # fmt: skip
    ok(run("port", "unset", "eth0", "--extra", "rack", "--name"))
    again = _json(run, "port", "show", "--address", "aa:bb:cc:00:00:01")
    assert isinstance(again, dict)
    assert (again["name"], again["extra"]) == (None, {"row": 2})
    ok(run("port", "delete", created["uuid"]))
    assert _json(run, "port", "list") == []


def test_a_duplicate_address_fails_and_changes_nothing(run: Run) -> None:
    ok(run("node", "create", "--name", "n1"))
    ok(run("port", "create", "--node", "n1", "aa:bb:cc:00:00:01"))
    result = run("port", "create", "--node", "n1", "AA:BB:CC:00:00:01", "--name", "twin")
    assert result.code == 1
    assert "A port with MAC address aa:bb:cc:00:00:01 already exists." in result.err
    assert len(_json(run, "port", "list")) == 1  # type: ignore[arg-type]
    bad = run("port", "create", "--node", "n1", "zz:bb:cc:00:00:01")
    assert bad.code == 1
    assert "Expected valid MAC address for address" in bad.err


def test_deleting_a_node_deletes_its_ports(run: Run) -> None:
    ok(run("node", "create", "--name", "n1"))
    ok(run("node", "create", "--name", "n2"))
    ok(run("port", "create", "--node", "n1", "aa:bb:cc:00:00:01"))
    ok(run("port", "create", "--node", "n2", "aa:bb:cc:00:00:02"))
    ok(run("node", "delete", "n1"))
    assert [p["address"] for p in _json(run, "port", "list")] == [  # type: ignore[union-attr]
        "aa:bb:cc:00:00:02"
    ]


def test_chassis_and_port_group_commands(run: Run) -> None:
    chassis = _json(run, "chassis", "create", "--description", "rack 1", "--extra", "row=3")
    assert isinstance(chassis, dict)
    assert _json(run, "chassis", "list") == [{"uuid": chassis["uuid"], "description": "rack 1"}]
    ok(run("chassis", "set", chassis["uuid"], "--description", "rack 2"))
    ok(run("chassis", "unset", chassis["uuid"], "--extra", "row"))
    shown = _json(run, "chassis", "show", chassis["uuid"])
    assert isinstance(shown, dict)
    assert (shown["description"], shown["extra"]) == ("rack 2", {})
    ok(run("node", "create", "--name", "n1"))
    group = _json(run, "port", "group", "create", "--node", "n1", "--name", "bond0",
                  "--address", "AA:BB:CC:00:00:10", "--property", "miimon=100")  # fmt: skip
    assert isinstance(group, dict)
    assert (group["address"], group["mode"], group["properties"]) == (
        "aa:bb:cc:00:00:10", "active-backup", {"miimon": 100},
    )  # fmt: skip
    ok(run("port", "create", "--node", "n1", "aa:bb:cc:00:00:11", "--port-group", "bond0"))
    busy = run("port", "group", "delete", "bond0")
    assert busy.code == 1
    assert "contains ports" in busy.err
    ok(run("port", "group", "set", "bond0", "--mode", "802.3ad"))
    listed = _json(run, "port", "group", "list", "--long")
    assert isinstance(listed, list)
    assert listed[0]["mode"] == "802.3ad"
    ok(run("port", "unset", "aa:bb:cc:00:00:11", "--port-group"))
    ok(run("port", "group", "delete", "bond0"))
    assert _json(run, "port", "group", "list") == []
    ok(run("chassis", "delete", chassis["uuid"]))


def test_allocation_commands(run: Run) -> None:
    ok(run("node", "create", "--name", "n1", "--resource-class", "gold"))
    ok(run("node", "manage", "n1"))
    ok(run("node", "provide", "n1"))
    made = _json(run, "allocation", "create", "--resource-class", "gold", "--name", "a1")
    assert isinstance(made, dict)
    assert made["state"] == "active"
    node = _json(run, "node", "show", "n1")
    assert isinstance(node, dict)
    assert node["instance_uuid"] == node["allocation_uuid"] == made["uuid"]
    none = _json(run, "allocation", "create", "--resource-class", "gold")
    assert isinstance(none, dict)
    assert none["state"] == "error"
    assert "no available nodes match the resource class gold" in none["last_error"]
    rows = _json(run, "allocation", "list", "--state", "active")
    assert rows == [{"uuid": made["uuid"], "name": "a1", "resource_class": "gold",
                     "state": "active", "node_uuid": node["uuid"]}]  # fmt: skip
    ok(run("allocation", "delete", "a1"))
    freed = _json(run, "node", "show", "n1")
    assert isinstance(freed, dict)
    assert freed["instance_uuid"] is None


def test_volume_commands(run: Run) -> None:
    ok(run("node", "create", "--name", "n1"))
    ok(run("node", "manage", "n1"))
    ok(run("node", "power", "off", "n1"))
    made = _json(run, "volume", "connector", "create", "--node", "n1", "--type", "iqn",
                 "--connector-id", "iqn.2017-07.org.openstack:01:abc")  # fmt: skip
    assert isinstance(made, dict)
    twin = run("volume", "connector", "create", "--node", "n1", "--type", "iqn",
               "--connector-id", "iqn.2017-07.org.openstack:01:abc")  # fmt: skip
    assert twin.code == 1
    assert "already exists" in twin.err
    target = _json(run, "volume", "target", "create", "--node", "n1", "--type", "iscsi",
                   "--boot-index", "0", "--volume-id", "v1", "--property", "lun=2")  # fmt: skip
    assert isinstance(target, dict)
    assert (target["boot_index"], target["properties"]) == (0, {"lun": 2})
    ok(run("node", "power", "on", "n1"))
    refused = run("volume", "target", "set", target["uuid"], "--volume-id", "v2")
    assert refused.code == 1
    assert "while it is in state" in refused.err
    ok(run("node", "delete", "n1"))
    assert _json(run, "volume", "connector", "list") == []
    assert _json(run, "volume", "target", "list") == []
