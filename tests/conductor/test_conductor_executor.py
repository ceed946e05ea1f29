"""Conductor in executor mode: the flow runs in the background, the node held meanwhile.

As the embedding guide's "Synchronous and executor mode" section (docs/embedding.rst) says.
"""

from __future__ import annotations

import pytest
from helpers import (
    FAKE_HW,
    ManualExecutor,
)

from ironic_fsm import Conductor, states
from ironic_fsm.exceptions import (
    NodeLocked,
)
from ironic_fsm.stores import MemoryStore


def test_executor_runs_the_flow_in_the_background() -> None:
    executor = ManualExecutor()
    conductor = Conductor(store=MemoryStore(), executor=executor)
    node = conductor.create_node(driver=FAKE_HW, provision_state=states.MANAGEABLE)
    returned = conductor.do_provisioning_action(node.uuid, "provide")
    # The first transition happened in the caller and is saved; the rest waits.
    assert returned.provision_state == states.CLEANING
    stored = conductor.get_node(node.uuid)
    assert stored.provision_state == states.CLEANING
    assert stored.target_provision_state == states.AVAILABLE
    assert "fake_log_passthrough" not in stored.driver_internal_info
    assert executor.jobs
    executor.run_all()
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    assert node.target_provision_state is None
    assert node.reservation is None
    assert node.driver_internal_info["fake_log_passthrough"] == 1


def test_node_busy_in_the_background_is_locked_for_the_same_conductor() -> None:
    # docs/embedding.rst: a busy node raises NodeLocked. The worker holds the node's
    # reservation until it finishes; another request, even from the same
    # conductor, must not slip in (Ironic's reserve_node refuses any
    # existing reservation, its own host's included).
    executor = ManualExecutor()
    conductor = Conductor(store=MemoryStore(), executor=executor)
    node = conductor.create_node(driver=FAKE_HW, provision_state=states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "provide")
    stored = conductor.get_node(node.uuid)
    assert stored.reservation is not None
    with pytest.raises(NodeLocked) as info:
        conductor.do_provisioning_action(node.uuid, "manage")  # cleaning accepts 'manage'
    assert info.value.retryable is True
    with pytest.raises(NodeLocked):
        conductor.update_node(node.uuid, extra={"x": 1})
    assert conductor.get_node(node.uuid).provision_state == states.CLEANING
    executor.run_all()
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    assert node.driver_internal_info["fake_log_passthrough"] == 1
    assert node.reservation is None
