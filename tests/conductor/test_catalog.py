"""Deploy templates and runbooks kept in the store: CRUD in every store, Ironic's rules, use.

Every store (memory, a SQLite file, the real PostgreSQL) keeps them; the
conductor checks names and steps before the store sees them, a refused
request leaves the catalog as it was, and deploys and cleanings read the
stored ones as they read those added in-process.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import TEMPLATES_HW, TEST_HW, calls, dstep, make_conductor, new_node, step

from ironic_fsm import Conductor, states
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.stores import SQLStore, Store
from ironic_fsm.stores._sql_catalog import Catalog
from ironic_fsm.stores.base import CatalogEntryExists, CatalogEntryNotFound, CatalogStore

TEMPLATE = [dstep("bios", "b1", 90), dstep("bios", "b2", 10)]
UUID = "0d6b4a51-1f0b-4c8e-9a55-3c2f1d9e8b70"


def ordered(interface: str, name: str, order: int | str, **args: Any) -> dict[str, Any]:
    """A runbook step (runbooks order their steps; args are optional)."""
    return {"interface": interface, "step": name, "order": order, "args": args}


@pytest.fixture
def conductor(store: Store) -> Conductor:
    return make_conductor(store=store)


def test_every_built_in_store_keeps_a_catalog(store: Store) -> None:
    assert isinstance(store, CatalogStore)


def test_deploy_template_crud(conductor: Conductor) -> None:
    made = conductor.create_deploy_template(
        "CUSTOM_BIOS", TEMPLATE, uuid=UUID.upper(), extra={"k": "v"}
    )
    assert (made.uuid, made.name, made.extra) == (UUID, "CUSTOM_BIOS", {"k": "v"})
    assert made.created_at is not None
    assert made.updated_at is None
    assert conductor.get_deploy_template("CUSTOM_BIOS") == made
    assert conductor.get_deploy_template(UUID) == made
    other = conductor.create_deploy_template(
        "CUSTOM_RAID", [{**dstep("raid", "r1", 5), "priority": "5"}]
    )
    assert other.steps == [dstep("raid", "r1", 5)]  # a digit string is a priority too
    assert [t.name for t in conductor.list_deploy_templates()] == ["CUSTOM_BIOS", "CUSTOM_RAID"]
    changed = conductor.update_deploy_template(UUID, name="CUSTOM_FAST", extra={})
    assert (changed.name, changed.steps, changed.extra) == ("CUSTOM_FAST", TEMPLATE, {})
    assert changed.updated_at is not None
    assert changed.created_at == made.created_at
    with pytest.raises(CatalogEntryNotFound):
        conductor.get_deploy_template("CUSTOM_BIOS")
    conductor.delete_deploy_template("CUSTOM_FAST")
    assert [t.name for t in conductor.list_deploy_templates()] == ["CUSTOM_RAID"]
    with pytest.raises(CatalogEntryNotFound):
        conductor.delete_deploy_template(UUID)


def test_runbook_crud(conductor: Conductor) -> None:
    made = conductor.create_runbook(
        "CUSTOM_FW",
        [ordered("vendor", "step_a", 1), {"interface": "bios", "step": "s", "order": 0}],
    )
    assert (made.public, made.owner, made.disable_ramdisk) == (False, None, False)
    assert made.steps[1] == {"interface": "bios", "step": "s", "order": 0, "args": {}}
    changed = conductor.update_runbook("CUSTOM_FW", public=True, disable_ramdisk=True)
    assert (changed.public, changed.disable_ramdisk) == (True, True)
    assert conductor.list_runbooks() == [changed]
    assert conductor.list_deploy_templates() == []  # two catalogs, not one
    conductor.delete_runbook(made.uuid)
    assert conductor.list_runbooks() == []


@pytest.mark.parametrize(
    ("kind", "name", "steps", "words"),
    [
        ("template", "not-a-trait", TEMPLATE, "trait"),
        ("template", "CUSTOM_X", [], "non-empty"),
        ("template", "CUSTOM_X", [step("bios", "b1")], "'priority'"),
        ("template", "CUSTOM_X", [{**dstep("bios", "b1", 1), "extra": 1}], "unknown key"),
        ("template", "CUSTOM_X", [dstep("bios", "b1", -1)], "priority"),
        ("template", "CUSTOM_X", [dstep("console", "b1", 1)], "not a deploy interface"),
        ("template", "CUSTOM_X", [dstep("bios", "b1", 1), dstep("bios", "b1", 2)], "twice"),
        ("runbook", "CUSTOM_X", [step("vendor", "a")], "'order'"),
        ("runbook", "has space", [ordered("vendor", "a", 1)], "logical name"),
        ("runbook", "CUSTOM_X", [ordered("vendor", "a", "x")], "order"),
    ],
)  # fmt: skip
def test_bad_entries_are_refused_and_store_nothing(
    conductor: Conductor, kind: str, name: str, steps: Any, words: str
) -> None:
    create = conductor.create_deploy_template if kind == "template" else conductor.create_runbook
    with pytest.raises(InvalidParameterValue, match=words):
        create(name, steps)
    assert conductor.list_deploy_templates() == conductor.list_runbooks() == []


def test_refused_changes_leave_the_entry_as_it_was(conductor: Conductor) -> None:
    first = conductor.create_deploy_template("CUSTOM_A", TEMPLATE)
    second = conductor.create_deploy_template("CUSTOM_B", TEMPLATE)
    with pytest.raises(CatalogEntryExists):
        conductor.create_deploy_template("CUSTOM_A", TEMPLATE)
    with pytest.raises(CatalogEntryExists):
        conductor.create_deploy_template("CUSTOM_C", TEMPLATE, uuid=first.uuid)
    with pytest.raises(CatalogEntryExists):
        conductor.update_deploy_template("CUSTOM_B", name="CUSTOM_A")
    with pytest.raises(InvalidParameterValue):
        conductor.update_deploy_template("CUSTOM_B", steps=[step("bios", "b1")])
    with pytest.raises(InvalidParameterValue):
        conductor.update_deploy_template("CUSTOM_B", uuid=UUID)  # not a changeable field
    runbook = conductor.create_runbook("CUSTOM_RB", [ordered("vendor", "a", 1)], owner="p1")
    with pytest.raises(InvalidParameterValue, match="public"):
        conductor.update_runbook("CUSTOM_RB", public=True)
    assert conductor.list_deploy_templates() == [first, second]
    assert conductor.list_runbooks() == [runbook]


def test_the_catalog_outlives_the_conductor(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'catalog.sqlite'}"
    with SQLStore(url) as store:
        make_conductor(store=store).create_deploy_template("CUSTOM_BIOS", TEMPLATE)
    with SQLStore(url) as store:
        assert [t.name for t in make_conductor(store=store).list_deploy_templates()] == [
            "CUSTOM_BIOS"
        ]


def test_a_stored_deploy_template_shapes_the_deploy(conductor: Conductor) -> None:
    conductor.create_deploy_template("CUSTOM_BIOS", TEMPLATE)
    node = new_node(
        conductor, states.AVAILABLE, driver=TEMPLATES_HW, traits=["CUSTOM_BIOS"],
        instance_info={"traits": ["CUSTOM_BIOS"]},
    )  # fmt: skip
    conductor.do_provisioning_action(node.uuid, "deploy")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.ACTIVE
    assert calls(node) == ["deploy", "b4", "b1", "b3", "b2"]


def test_a_stored_runbook_cleans_in_its_order(conductor: Conductor) -> None:
    conductor.create_runbook(
        "CUSTOM_FW", [ordered("vendor", "step_a", 2), ordered("vendor", "step_b", "1")]
    )
    refused = new_node(conductor, states.MANAGEABLE, driver=TEST_HW, traits=["CUSTOM_OTHER"])
    with pytest.raises(InvalidParameterValue, match="CUSTOM_FW"):
        conductor.do_provisioning_action(refused.uuid, "clean", runbook="CUSTOM_FW")
    node = new_node(conductor, states.MANAGEABLE, driver=TEST_HW, traits=["CUSTOM_FW"])
    conductor.do_provisioning_action(node.uuid, "clean", runbook="CUSTOM_FW")
    node = conductor.get_node(node.uuid)
    assert (node.provision_state, node.target_provision_state) == (states.MANAGEABLE, None)
    assert calls(node) == ["step_b", "step_a"]
    assert conductor.get_node(refused.uuid).provision_state == states.MANAGEABLE


def test_in_process_entries_still_count(conductor: Conductor) -> None:
    conductor.add_runbook("rb", [step("vendor", "step_a")], traits=["CUSTOM_RB"])
    node = new_node(conductor, states.MANAGEABLE, driver=TEST_HW, traits=["CUSTOM_RB"])
    conductor.do_provisioning_action(node.uuid, "clean", runbook="rb")
    assert calls(conductor.get_node(node.uuid)) == ["step_a"]
    assert conductor.list_runbooks() == []  # in-process ones are not stored


def test_a_name_taken_between_the_check_and_the_write_is_a_conflict(
    sql_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers check at once and both find the name free: the database's unique index
    refuses the second row, and the second writer hears what the check would have said."""
    with SQLStore(sql_url) as store:
        conductor = make_conductor(store=store)
        first = conductor.create_deploy_template("CUSTOM_A", TEMPLATE)
        looks = Catalog._rows
        calls_made: list[str] = []

        def blind_once(self: Catalog, conn: Any, kind: Any, ident: str) -> Any:
            calls_made.append(ident)
            return [] if len(calls_made) <= 2 else looks(self, conn, kind, ident)

        monkeypatch.setattr(Catalog, "_rows", blind_once)
        with pytest.raises(CatalogEntryExists, match=first.uuid):
            conductor.create_deploy_template("CUSTOM_A", TEMPLATE)
        monkeypatch.undo()
        assert conductor.list_deploy_templates() == [first]
