"""``ironic-fsm node create|set|unset --<kind>-interface`` and ``--reset-interfaces``:
the same choices and refusals as the library and the API."""

from __future__ import annotations

import json

import pytest
from cli_harness import Run, ok

from ironic_fsm import Conductor
from ironic_fsm.stores import SQLStore

pytestmark = pytest.mark.usefixtures("cli_env")


def _stored(db: str, ident: str) -> dict[str, str | None]:
    store = SQLStore(f"sqlite:///{db}")
    try:
        node = Conductor(store).get_node(ident)
        return {k: getattr(node, f"{k}_interface") for k in ("raid", "deploy", "boot")}
    finally:
        store.close()


def test_create_and_set_interfaces(run: Run, db: str) -> None:
    made = json.loads(ok(run("node", "create", "--name", "n1", "--deploy-interface", "fake",
                             "--raid-interface", "no-raid", "-f", "json")).out)  # fmt: skip
    assert (made["deploy_interface"], made["raid_interface"]) == ("fake", "no-raid")
    assert made["boot_interface"] == "fake"  # the default's name, shown
    ok(run("node", "set", "n1", "--boot-interface", "pxe"))
    assert _stored(db, "n1") == {"raid": "no-raid", "deploy": "fake", "boot": "pxe"}
    ok(run("node", "unset", "n1", "--boot-interface"))
    assert _stored(db, "n1")["boot"] is None


def test_refusals_change_nothing(run: Run, db: str) -> None:
    ok(run("node", "create", "--name", "i1", "--driver", "ipmi", "--raid-interface", "agent"))
    refused = run("node", "set", "i1", "--raid-interface", "redfish")
    assert refused.code == 1
    assert "raid interface implementation 'redfish' is not supported" in refused.err
    unknown = run("node", "create", "--name", "x", "--boot-interface", "nope")
    assert unknown.code == 1
    assert "Could not find the following interface" in unknown.err
    alone = run("node", "set", "i1", "--reset-interfaces", "--boot-interface", "pxe")
    assert alone.code == 1
    assert "only be used when changing the node's driver" in alone.err
    assert _stored(db, "i1") == {"raid": "agent", "deploy": None, "boot": None}


def test_a_new_driver_resets_interfaces(run: Run, db: str) -> None:
    ok(run("node", "create", "--name", "m1", "--raid-interface", "no-raid"))
    ok(run("node", "set", "m1", "--driver", "manual-management", "--reset-interfaces"))
    shown = json.loads(ok(run("node", "show", "m1", "-f", "json")).out)
    assert (shown["raid_interface"], shown["management_interface"]) == ("no-raid", "noop")
    assert shown["deploy_interface"] == "direct"
    assert _stored(db, "m1")["raid"] is None
