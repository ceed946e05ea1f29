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
