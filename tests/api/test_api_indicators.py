"""Indicators (1.63): listed by component, read and set through the management interface;
a read-only indicator or a state it does not take is refused and nothing changes."""

from __future__ import annotations

import httpx
from api_helpers import LATEST, error_text


def test_fake_indicators_over_http(served_url: str) -> None:
    with httpx.Client(base_url=served_url, headers=LATEST, timeout=60) as client:
        node = client.post("/v1/nodes", json={"driver": "fake-hardware"}).json()["uuid"]
        base = f"/v1/nodes/{node}/management/indicators"
        assert [c["name"] for c in client.get(base).json()["components"]] == ["chassis", "system"]
        [led] = client.get(f"{base}/system").json()["indicators"]
        assert (led["name"], led["readonly"], led["states"]) == (
            "led", False, ["BLINKING", "OFF", "ON"],
        )  # fmt: skip
        assert client.get(f"{base}/led@system").json() == {"state": "ON"}
        assert client.put(f"{base}/led@system", json={"state": "BLINKING"}).status_code == 204
        assert client.get(f"{base}/led@system").json() == {"state": "BLINKING"}
        readonly = client.put(f"{base}/led-0@chassis", json={"state": "OFF"})
        assert readonly.status_code == 400
        assert "read-only" in error_text(readonly)
        wrong = client.put(f"{base}/led@system", json={"state": "PURPLE"})
        assert wrong.status_code == 400
        assert client.get(f"{base}/led@system").json() == {"state": "BLINKING"}
        assert client.get(f"{base}/nope@system").status_code == 404
        old = client.get(base, headers={"X-OpenStack-Ironic-API-Version": "1.62"})
        assert old.status_code == 404
        body = {"driver": "fake-hardware", "management_interface": "noop"}
        plain = client.post("/v1/nodes", json=body).json()["uuid"]
        assert client.get(f"/v1/nodes/{plain}/management/indicators").status_code == 400
