"""One IPMI node and one Redfish node taken to ``active`` and back through the CLI alone.

The BMCs are the project's real peers on 127.0.0.1 (pyghmi's BMC, the
sushy-tools emulator); the API runs as its own process; ``openstack
baremetal`` is the only thing that talks to it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from api_helpers import api_process
from api_helpers import openstack as osc
from helpers import stopped_after

from ironic_fsm import states as s
from ironic_fsm.testing.ipmi_bmc import BMC, start_bmc
from ironic_fsm.testing.redfish_emulator import Emulator, start_emulator


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with api_process(tmp_path_factory.mktemp("api-bmc") / "nodes.sqlite") as base:
        yield base


@pytest.fixture
def bmc(tmp_path: Path) -> Iterator[BMC]:
    yield from stopped_after(start_bmc(tmp_path))


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    yield from stopped_after(start_emulator(tmp_path, password="Redfish-Api-Secret"))


def _round_trip(url: str, name: str, driver: str, info: dict[str, Any]) -> None:
    args = [arg for key, value in info.items() for arg in ("--driver-info", f"{key}={value}")]
    created = osc(url, "node", "create", "--driver", driver, "--name", name, *args, "-f", "json")
    for key, value in info.items():
        shown = created["driver_info"][key]
        assert shown == "******" if "password" in key else str(shown) == str(value)
    for verb in ("manage", "provide", "deploy"):
        osc(url, "node", verb, name, "--wait", "120")
    node = osc(url, "node", "show", name, "-f", "json")
    assert (node["provision_state"], node["power_state"]) == (s.ACTIVE, s.POWER_ON), node
    osc(url, "node", "undeploy", name, "--wait", "120")
    node = osc(url, "node", "show", name, "-f", "json")
    assert (node["provision_state"], node["last_error"]) == (s.AVAILABLE, None)


def test_ipmi_node_round_trip(url: str, bmc: BMC) -> None:
    info = {"ipmi_address": bmc.address, "ipmi_port": bmc.port,
            "ipmi_username": bmc.user, "ipmi_password": bmc.password}  # fmt: skip
    _round_trip(url, "ipmi-node", "ipmi", info)
    assert bmc.state()["power"] == "off"


def test_redfish_node_round_trip(url: str, emulator: Emulator) -> None:
    _round_trip(url, "redfish-node", "redfish", emulator.driver_info())
    assert emulator.system_state()["power_state"] == "Off"
