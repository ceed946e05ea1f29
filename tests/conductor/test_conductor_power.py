"""Conductor: power actions, allowed in stable and failure states, refused while a flow works.

As the operator guide's "Power actions" section (docs/operator.rst) says.
"""

from __future__ import annotations

import pytest
from helpers import (
    make_conductor,
    new_node,
    unchanged,
)

from ironic_fsm import states
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    InvalidStateRequested,
)


@pytest.mark.parametrize("state", [states.CLEANING, states.CLEANWAIT, states.DEPLOYING])
def test_power_refused_while_busy(state: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state, power_state=states.POWER_OFF)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidStateRequested) as info:
        conductor.set_power_state(node.uuid, states.POWER_ON)
    assert node.uuid in str(info.value)
    assert state in str(info.value)


@pytest.mark.parametrize(
    "state",
    [
        states.CLEANFAIL,
        states.ENROLL,
        states.MANAGEABLE,
        states.AVAILABLE,
        states.ACTIVE,
        states.ERROR,
    ],
)
def test_power_allowed_in_stable_and_clean_failed(state: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, state, power_state=states.POWER_OFF)
    conductor.set_power_state(node.uuid, states.POWER_ON)
    node = conductor.get_node(node.uuid)
    assert node.power_state == states.POWER_ON
    assert node.target_power_state is None
    assert node.provision_state == state
    conductor.set_power_state(node.uuid, states.POWER_OFF)
    assert conductor.get_node(node.uuid).power_state == states.POWER_OFF
    conductor.set_power_state(node.uuid, states.REBOOT)
    assert conductor.get_node(node.uuid).power_state == states.POWER_ON


@pytest.mark.parametrize("bad", ["power sideways", "on", "", "POWER ON"])
def test_unknown_power_state_is_rejected(bad: str) -> None:
    conductor = make_conductor()
    node = new_node(conductor, states.MANAGEABLE, power_state=states.POWER_OFF)
    with unchanged(conductor, node.uuid), pytest.raises(InvalidParameterValue):
        conductor.set_power_state(node.uuid, bad)
