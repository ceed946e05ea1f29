"""``/v1/drivers`` and ``/v1/conductors``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from api_helpers import api_client

from ironic_fsm import Conductor


@pytest.fixture
def api(tmp_path: Any) -> Iterator[tuple[Conductor, httpx.Client]]:
    with api_client(tmp_path / "nodes.sqlite") as pair:
        yield pair


def test_drivers_list_and_show(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    conductor.register()
    drivers = client.get("/v1/drivers").json()["drivers"]
    names = {d["name"] for d in drivers}
    assert {"fake-hardware", "ipmi", "redfish"} <= names
    fake = client.get("/v1/drivers/fake-hardware")
    assert fake.status_code == 200
    assert fake.json()["hosts"] == [conductor.config.host]
    assert fake.json()["type"] == "dynamic"
    assert client.get("/v1/drivers", params={"type": "classic"}).json() == {"drivers": []}
    assert client.get("/v1/drivers/no-such-driver").status_code == 404


def test_conductors_list_and_show(api: tuple[Conductor, httpx.Client]) -> None:
    conductor, client = api
    conductor.register()
    listed = client.get("/v1/conductors").json()["conductors"]
    assert [(c["hostname"], c["alive"]) for c in listed] == [(conductor.config.host, True)]
    shown = client.get(f"/v1/conductors/{conductor.config.host}").json()
    assert "fake-hardware" in shown["drivers"]
    assert client.get("/v1/conductors/elsewhere").status_code == 404
    conductor.unregister()
    listed = client.get("/v1/conductors").json()["conductors"]
    assert [c["alive"] for c in listed] == [False]
