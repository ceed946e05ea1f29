"""Conductor: retirement, where Ironic allows it and what a retired node may still do.

What the operator guide's "Retirement" section (docs/operator.rst) promises:
refused in ``available``, a reason only with the flag, no ``provide``, any
cleaning ending in ``manageable``, and nothing else blocked.
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

from ironic_fsm import LIFECYCLE, states
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    InvalidState,
    NodeIsRetired,
)


def test_retired_refused_in_available() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.AVAILABLE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidState) as info:
        conductor.update_node(node.uuid, retired=True, retired_reason="end of life")
    assert node.uuid in str(info.value)
    assert "available" in str(info.value)


@pytest.mark.parametrize("state", sorted(set(LIFECYCLE.states) - {states.AVAILABLE}))
def test_retired_accepted_in_other_states(state: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state)
    updated = conductor.update_node(node.uuid, retired=True, retired_reason="end of life")
    node = conductor.get_node(node.uuid)
    assert updated.retired is node.retired is True
    assert node.retired_reason == "end of life"
    assert node.provision_state == state


def test_retired_reason_without_retired_is_refused() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue) as info:
        conductor.update_node(node.uuid, retired_reason="end of life")
    assert "retired" in str(info.value)


def test_retired_node_cannot_provide() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, driver=FAKE_HW)
    conductor.update_node(node.uuid, retired=True)
    with unchanged(conductor, node.uuid), pytest.raises(NodeIsRetired) as info:
        conductor.do_provisioning_action(node.uuid, "provide")
    assert node.uuid in str(info.value)
    after = conductor.get_node(node.uuid)
    assert "fake_log_passthrough" not in after.driver_internal_info


def test_retired_node_undeploy_cleans_into_manageable() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.ACTIVE, driver=FAKE_HW)
    conductor.update_node(node.uuid, retired=True, retired_reason="decommission")
    conductor.do_provisioning_action(node.uuid, "undeploy")
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert node.target_provision_state is None
    assert node.driver_internal_info["fake_log_passthrough"] == 1
    assert node.retired is True


def test_retired_node_manual_clean_ends_in_manageable() -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, retired=True)
    conductor.do_provisioning_action(node.uuid, "clean", clean_steps=[step("vendor", "step_a")])
    node = conductor.get_node(node.uuid)
    assert node.provision_state == states.MANAGEABLE
    assert calls(node) == ["step_a"]


@pytest.mark.parametrize(
    ("state", "verb", "kwargs", "end"),
    [
        (states.AVAILABLE, "deploy", {}, states.ACTIVE),
        (states.ACTIVE, "rescue", {"rescue_password": "pw"}, states.RESCUE),
        (states.MANAGEABLE, "inspect", {}, states.MANAGEABLE),
        (states.ACTIVE, "service", {"service_steps": [step("vendor", "step_a")]}, states.ACTIVE),
    ],
    ids=["deploy", "rescue", "inspect", "service"],
)
def test_retirement_blocks_nothing_else(
    state: str, verb: str, kwargs: dict[str, Any], end: str
) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state, retired=True, retired_reason="eol")
    conductor.do_provisioning_action(node.uuid, verb, **kwargs)
    node = conductor.get_node(node.uuid)
    assert node.provision_state == end
    assert node.last_error is None
