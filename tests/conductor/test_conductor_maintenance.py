"""Conductor: maintenance refuses provisioning (``provide`` by choice) and unsetting it clears.

As the operator guide's "Maintenance and protection" section (docs/operator.rst) says.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import (
    FAKE_HW,
    calls,
    make_conductor,
    new_node,
    step,
    unchanged,
)

from ironic_fsm import Config, states
from ironic_fsm.exceptions import (
    NodeInMaintenance,
)


@pytest.mark.parametrize(
    ("state", "verb", "kwargs"),
    [
        (states.AVAILABLE, "deploy", {}),
        (states.AVAILABLE, "active", {}),
        (states.ACTIVE, "rebuild", {}),
        (states.MANAGEABLE, "clean", {"clean_steps": [step("vendor", "step_a")]}),
        (states.ACTIVE, "service", {"service_steps": [step("vendor", "step_a")]}),
        (states.ACTIVE, "rescue", {"rescue_password": "pw"}),
    ],
    ids=["deploy", "active", "rebuild", "clean", "service", "rescue"],
)
def test_maintenance_refuses_provisioning(state: str, verb: str, kwargs: dict[str, Any]) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state, maintenance=True, maintenance_reason="broken fan")
    with unchanged(conductor, node.uuid), pytest.raises(NodeInMaintenance) as info:
        conductor.do_provisioning_action(node.uuid, verb, **kwargs)
    assert node.uuid in str(info.value)
    after = conductor.get_node(node.uuid)
    assert calls(after) == []


def test_provide_allowed_in_maintenance_by_default() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW, maintenance=True)
    conductor.do_provisioning_action(node.uuid, "provide")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.AVAILABLE
    assert node.maintenance is True


def test_provide_refused_in_maintenance_when_configured() -> None:
    conductor = make_conductor(config=Config(allow_provisioning_in_maintenance=False))
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW, maintenance=True)
    with unchanged(conductor, node.uuid), pytest.raises(NodeInMaintenance):
        conductor.do_provisioning_action(node.uuid, "provide")


def test_unsetting_maintenance_clears_reason_and_fault() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "boom")])
    conductor.update_node(node.uuid, maintenance=False)
    node = conductor.get_node(node.uuid)
    assert node.maintenance is False
    assert node.maintenance_reason is None
    assert node.fault is None
