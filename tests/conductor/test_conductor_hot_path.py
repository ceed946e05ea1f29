"""What the conductor's hot path keeps or skips, and that it stays right.

Plans are made once per set of interface classes (declared steps are
settled when a class is made): the interfaces are not asked again, and a
type registered later plans with its own steps. A node's name is checked
once per job, the reservation is a plain context manager, and the verb
check is one lookup (``Lifecycle.accepts``): each keeps its old behaviour.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import FAKE_HW, make_conductor, new_node

from ironic_fsm import states
from ironic_fsm.drivers.fake import FakeDeploy, FakeVendor
from ironic_fsm.hardware import HardwareType
from ironic_fsm.interfaces import BaseInterface, VendorInterface
from ironic_fsm.steps import Phase, clean_step, deploy_step
from ironic_fsm.task import Task


class _OtherVendor(VendorInterface):
    @clean_step(priority=5)
    def other(self, task: Task) -> None:
        task.node.driver_internal_info["other"] = True


class _SlowDeploy(FakeDeploy):
    @deploy_step(priority=150)
    def before_deploy(self, task: Task) -> None:
        task.node.driver_internal_info["before_deploy"] = True


def _lifecycle(conductor: Any, driver: str) -> Any:
    node = new_node(conductor, states.MANAGEABLE, driver=driver)
    conductor.do_provisioning_action(node.uuid, "provide")
    conductor.do_provisioning_action(node.uuid, "deploy")
    return conductor.get_node(node.uuid)


def test_declared_steps_are_gathered_once_per_set_of_classes() -> None:
    class Counting(VendorInterface):
        """Counts how often the planner asks for its declared steps (a new class per test)."""

        asked = 0

        def declared_steps(self, phase: Phase) -> tuple[dict[str, Any], ...] | None:
            type(self).asked += 1
            return super().declared_steps(phase)

        @clean_step(priority=7)
        def counted(self, task: Task) -> None:
            task.node.driver_internal_info["counted"] = True

    conductor = make_conductor()
    conductor.register_hardware_type(
        "counting", HardwareType(vendor=Counting(), deploy=FakeDeploy())
    )
    first = _lifecycle(conductor, "counting")
    asked = Counting.asked
    assert asked >= 1
    second = _lifecycle(conductor, "counting")
    # The second node plans from what the first gathered: the interface is not asked again.
    assert Counting.asked == asked
    for node in (first, second):
        assert node.provision_state == states.ACTIVE
        assert node.driver_internal_info["counted"] is True


def test_a_type_registered_later_under_the_same_name_plans_with_its_own_steps() -> None:
    conductor = make_conductor()
    conductor.register_hardware_type(
        "swapped", HardwareType(vendor=FakeVendor(), deploy=FakeDeploy())
    )
    before = _lifecycle(conductor, "swapped")
    conductor.register_hardware_type(
        "swapped", HardwareType(vendor=_OtherVendor(), deploy=_SlowDeploy())
    )
    after = _lifecycle(conductor, "swapped")
    assert "other" not in before.driver_internal_info
    assert "before_deploy" not in before.driver_internal_info
    assert after.provision_state == states.ACTIVE
    assert after.driver_internal_info["other"] is True
    assert after.driver_internal_info["before_deploy"] is True
    assert "fake_log_passthrough" not in after.driver_internal_info


def test_a_cached_plan_is_each_nodes_own() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE, driver=FAKE_HW)
    conductor.do_provisioning_action(node.uuid, "deploy")
    plan = conductor.validate_deploy_steps(node.uuid)
    plan[0]["args"]["changed"] = True
    plan[0]["priority"] = 1
    again = conductor.validate_deploy_steps(node.uuid)
    assert again[0]["args"] == {}
    assert again[0]["priority"] != 1
    other = new_node(conductor, states.AVAILABLE, driver=FAKE_HW)
    conductor.do_provisioning_action(other.uuid, "deploy")
    stored = conductor.get_node(other.uuid).driver_internal_info["deploy_steps"]
    assert stored is None or all(step["args"] == {} for step in stored)


def test_an_interface_that_overrides_get_clean_steps_is_asked_every_time() -> None:
    class Agent(VendorInterface):
        seen: list[str] = []

        def get_clean_steps(self, task: Task) -> list[dict[str, Any]]:
            self.seen.append(task.node.uuid)
            return [
                {"interface": "vendor", "step": "agent_step", "priority": 9,
                 "abortable": False, "argsinfo": None, "requires_ramdisk": False}
            ]  # fmt: skip

        def agent_step(self, task: Task) -> None:
            task.node.driver_internal_info["agent_step"] = task.node.uuid

    assert Agent().declared_steps("clean") is None
    assert BaseInterface().declared_steps("clean") == ()
    conductor = make_conductor()
    conductor.register_hardware_type("agent", HardwareType(vendor=Agent()))
    nodes = [new_node(conductor, states.MANAGEABLE, driver="agent") for _ in range(2)]
    for node in nodes:
        conductor.do_provisioning_action(node.uuid, "provide")
    assert Agent.seen == [node.uuid for node in nodes]


def test_a_name_checked_once_per_job_still_refuses_a_bad_rename_by_a_step() -> None:
    """The conductor checks a name once per job, not per save: a step's new name is new."""

    class Renaming(VendorInterface):
        @clean_step(priority=9)
        def rename(self, task: Task) -> None:
            task.node.name = "".join(["renamed", "\x07"])  # a new str, with a control character

        @clean_step(priority=8)
        def after(self, task: Task) -> None:
            task.node.driver_internal_info["after"] = True

    conductor = make_conductor()
    conductor.register_hardware_type("renaming", HardwareType(vendor=Renaming()))
    node = new_node(conductor, states.MANAGEABLE, driver="renaming", name="kept")
    conductor.do_provisioning_action(node.uuid, "provide")
    stored = conductor.get_node(node.uuid)
    assert stored.name == "kept"
    assert stored.provision_state == states.CLEANFAIL
    assert stored.reservation is None
    assert "control characters" in (stored.last_error or "")
    assert "after" not in stored.driver_internal_info


def test_a_driver_unknown_under_the_reservation_leaves_the_node_unreserved() -> None:
    """Reserving, then failing to find the node's hardware type, releases the node at once."""
    from ironic_fsm import Conductor
    from ironic_fsm.exceptions import DriverNotFound

    owner = make_conductor()
    owner.register_hardware_type("only-here", HardwareType(vendor=FakeVendor()))
    node = new_node(owner, states.MANAGEABLE, driver="only-here")
    stranger = Conductor(store=owner.store)
    before = owner.get_node(node.uuid)
    with pytest.raises(DriverNotFound, match="only-here"):
        stranger.do_provisioning_action(node.uuid, "provide")
    after = owner.get_node(node.uuid)
    assert after.reservation is None
    assert after == before


def test_lifecycle_accepts_is_allowed_events_as_a_lookup() -> None:
    from ironic_fsm import LIFECYCLE

    for state in LIFECYCLE.states:
        allowed = set(LIFECYCLE.allowed_events(state))
        for event in LIFECYCLE.events:
            assert LIFECYCLE.accepts(state, event) is (event in allowed)
    assert LIFECYCLE.accepts("no such state", "manage") is False


class _Corrupting(VendorInterface):
    """Its automated clean step leaves a value no record can hold, as its last act."""

    @clean_step(priority=9)
    def corrupts(self, task: Task) -> None:
        task.node.properties = "not a dict"  # type: ignore[assignment]


def _corrupting() -> HardwareType:
    return HardwareType(vendor=_Corrupting(), deploy=FakeDeploy())


def _failed_from_the_saved_copy(node: Any) -> None:
    assert node.provision_state == states.CLEANFAIL
    assert node.properties == {"cpus": 2}
    assert "properties" in (node.last_error or "")
    assert node.reservation is None


def test_a_bad_value_left_by_the_last_step_fails_the_node_and_the_caller_sees_it() -> None:
    """The final save finds the bad value; the node the verb returns is the failed one."""
    conductor = make_conductor()
    conductor.register_hardware_type("corrupting", _corrupting())
    node = new_node(conductor, states.MANAGEABLE, driver="corrupting", properties={"cpus": 2})
    returned = conductor.do_provisioning_action(node.uuid, "provide")
    _failed_from_the_saved_copy(returned)
    stored = conductor.get_node(node.uuid)
    _failed_from_the_saved_copy(stored)
    assert returned == stored


def test_a_bad_value_left_in_the_background_fails_the_node_too() -> None:
    from helpers import ManualExecutor

    from ironic_fsm import Conductor

    executor = ManualExecutor()
    conductor = Conductor(executor=executor)
    conductor.register_hardware_type("corrupting", _corrupting())
    node = new_node(conductor, states.MANAGEABLE, driver="corrupting", properties={"cpus": 2})
    conductor.do_provisioning_action(node.uuid, "provide")
    executor.run_all()
    _failed_from_the_saved_copy(conductor.get_node(node.uuid))
    assert conductor.running() == 0


def test_a_bad_value_left_by_claimed_work_fails_the_node_without_its_queue_entry() -> None:
    from ironic_fsm import Conductor, Config
    from ironic_fsm.conductor.reservations import QUEUED_KEY

    api = Conductor(config=Config(host="api"), hand_off=True)
    worker = Conductor(store=api.store, config=Config(host="worker"))
    for conductor in (api, worker):
        conductor.register_hardware_type("corrupting", _corrupting())
    node = new_node(api, states.MANAGEABLE, driver="corrupting", properties={"cpus": 2})
    api.do_provisioning_action(node.uuid, "provide")
    assert QUEUED_KEY in api.get_node(node.uuid).driver_internal_info
    assert worker.claim_work() == [node.uuid]
    stored = worker.get_node(node.uuid)
    _failed_from_the_saved_copy(stored)
    assert QUEUED_KEY not in stored.driver_internal_info
    assert worker.running() == 0
