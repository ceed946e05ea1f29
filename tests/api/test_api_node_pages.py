"""A listing's page shows each node byte for byte as ``GET /v1/nodes/{id}`` shows it.

Listings render their nodes a page at a time (``views.NodePage``), single
nodes one field at a time (``views.node_view``). Both are compared over HTTP,
for a mixed set of nodes (secrets at several depths, nulls, traits, a
reservation, a console, chosen and default interfaces, renamed states), at
every microversion, with and without ``fields``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import orjson
import pytest
from api_helpers import api_client

from ironic_fsm import Conductor
from ironic_fsm.api import views
from ironic_fsm.api.versions import MAX_VERSION
from ironic_fsm.api.views import NODE_FIELD_VERSIONS, SUMMARY_FIELDS
from ironic_fsm.node import Node

#: Secret values stored in the nodes: none may appear in any answer.
SECRETS = ("hunter22", "tok123", "x1y2z3", "cfgdata", "pk-value", "k1-value", "agent-tok")

#: ``fields`` selections asked for at every version that has them (1.8 on).
SELECTIONS = (
    ",".join(SUMMARY_FIELDS),
    "uuid,driver_info,instance_info,traits,conductor",
    "console_enabled",
    "uuid,uuid,name,reservation,created_at,provision_state",
    "network_data,driver_internal_info,clean_step,boot_interface,deploy_interface",
    "conductor",
    "health,instance_name,disable_power_off,maintenance",
)


def at(version: tuple[int, int]) -> dict[str, str]:
    return {"X-OpenStack-Ironic-API-Version": f"{version[0]}.{version[1]}"}


def _mixed_nodes(conductor: Conductor) -> list[str]:
    """Nodes whose views differ in every way a view can: their UUIDs."""
    plain = conductor.create_node(driver="fake-hardware")
    secret = conductor.create_node(
        driver="fake-hardware",
        name="secret",
        driver_info={
            "ipmi_address": "192.0.2.1",
            "ipmi_password": "hunter22",
            "nested": {"auth_token": "tok123", "list": [{"secret": "x1y2z3"}, "plain"]},
            "empty_password": None,
        },
        instance_info={"configdrive": "cfgdata", "admin_pass": None, "image_source": "http://i"},
        properties={"cpus": 8, "memory_mb": 4096, "capabilities": "boot_mode:uefi"},
        extra={"key": "k1-value", "rack": 4},
        network_data={"links": [{"id": "eth0"}], "private_key": "pk-value"},
    )
    chosen = conductor.create_node(
        driver="fake-hardware", provision_state="available", conductor_group="grp",
        deploy_interface="fake", resource_class="gold", description="d", owner="o", lessee="l",
    )  # fmt: skip
    conductor.update_node(chosen.uuid, traits=["CUSTOM_A", "HW_CPU_X86_VMX"], maintenance=True,
                          maintenance_reason="checking")  # fmt: skip
    waiting = conductor.create_node(driver="fake-hardware", provision_state="inspect wait")
    # What only the lifecycle writes (a console, a step, internal secrets), through the store.
    store = conductor.store
    node = store.get(waiting.uuid)
    node.driver_internal_info = {"console_enabled": True, "agent_secret_token": "agent-tok"}
    node.clean_step = {"step": "erase_devices", "interface": "deploy", "args": {"n": 1}}
    store.save(node)
    store.reserve(plain.uuid, "host-a:1234:abcd")
    return [plain.uuid, secret.uuid, chosen.uuid, waiting.uuid]


@pytest.fixture(name="api")
def api_fixture(tmp_path: Any) -> Iterator[tuple[httpx.Client, list[str]]]:
    with api_client(tmp_path / "pages.sqlite") as (conductor, client):
        yield client, _mixed_nodes(conductor)


def _versions() -> list[tuple[int, int]]:
    return [(1, minor) for minor in range(1, MAX_VERSION[1] + 1)]


def _page(client: httpx.Client, version: tuple[int, int], **params: str) -> list[bytes]:
    """Each node of a listing's one page, as JSON bytes (orjson keeps the answer's order)."""
    path = "/v1/nodes/detail" if "detail" in params else "/v1/nodes"
    params.pop("detail", None)
    response = client.get(path, params=params, headers=at(version))
    assert response.status_code == 200, (version, params, response.text)
    for secret in SECRETS:
        assert secret not in response.text, (version, params, secret)
    return [orjson.dumps(node) for node in orjson.loads(response.content)["nodes"]]


def _one(client: httpx.Client, version: tuple[int, int], uuid: str, **params: str) -> bytes:
    response = client.get(f"/v1/nodes/{uuid}", params=params, headers=at(version))
    assert response.status_code == 200, (version, params, response.text)
    for secret in SECRETS:
        assert secret not in response.text, (version, params, secret)
    return response.content


def test_detail_pages_show_each_node_as_its_get_does(api: tuple[httpx.Client, list[str]]) -> None:
    client, uuids = api
    for version in _versions():
        page = _page(client, version, detail="yes")
        assert page == [_one(client, version, uuid) for uuid in uuids], version
        if version >= (1, 43):
            assert _page(client, version, detail="true") == page, version


def test_fields_pages_show_each_node_as_its_get_does(api: tuple[httpx.Client, list[str]]) -> None:
    client, uuids = api
    for version in _versions():
        summary = _page(client, version)
        if version < (1, 8):  # no fields parameter: the summary is what a listing shows
            continue
        assert summary == [_one(client, version, u, fields=",".join(SUMMARY_FIELDS)) for u in uuids]
        for selection in SELECTIONS:
            known = [
                name
                for name in selection.split(",")
                if name in NODE_FIELD_VERSIONS or name == "conductor"
            ]
            since = max(
                (1, 49) if name == "conductor" else NODE_FIELD_VERSIONS[name][0] for name in known
            )
            if version < since:
                continue
            page = _page(client, version, fields=selection)
            assert page == [_one(client, version, u, fields=selection) for u in uuids], (
                version,
                selection,
            )


def test_pages_mask_secrets_and_show_what_only_the_lifecycle_writes(
    api: tuple[httpx.Client, list[str]],
) -> None:
    client, _ = api
    nodes = client.get("/v1/nodes", params={"detail": "true"}).json()["nodes"]
    plain, secret, chosen, waiting = nodes
    assert secret["driver_info"] == {
        "ipmi_address": "192.0.2.1",
        "ipmi_password": "******",
        "nested": {"auth_token": "******", "list": [{"secret": "******"}, "plain"]},
        "empty_password": None,
    }
    assert secret["instance_info"] == {
        "configdrive": "******", "admin_pass": None, "image_source": "http://i",
    }  # fmt: skip
    assert secret["extra"] == {"key": "******", "rack": 4}
    assert secret["network_data"] == {"links": [{"id": "eth0"}], "private_key": "******"}
    assert plain["reservation"] == "host-a"
    assert chosen["traits"] == ["CUSTOM_A", "HW_CPU_X86_VMX"]
    assert (chosen["deploy_interface"], chosen["boot_interface"]) == ("fake", "fake")
    assert waiting["console_enabled"] is True
    assert waiting["driver_internal_info"] == {
        "console_enabled": True, "agent_secret_token": "******",
    }  # fmt: skip
    assert waiting["clean_step"]["step"] == "erase_devices"
    old = client.get("/v1/nodes/detail", headers=at((1, 1))).json()["nodes"]
    assert [node["provision_state"] for node in old] == ["enroll", "enroll", None, "inspecting"]
    # A field read from another (console_enabled from driver_internal_info) in a listing.
    listed = client.get("/v1/nodes", params={"fields": "console_enabled"}).json()["nodes"]
    assert [node["console_enabled"] for node in listed] == [False, False, False, True]


def test_links_quote_what_the_host_header_says(api: tuple[httpx.Client, list[str]]) -> None:
    """The links' base comes from the Host header: quotes and backslashes stay JSON text."""
    client, uuids = api
    host = {"Host": 'odd"host\\name'}
    response = client.get("/v1/nodes", params={"detail": "true"}, headers=host)
    assert response.status_code == 200, response.text
    nodes = orjson.loads(response.content)["nodes"]
    assert nodes[0]["links"][0]["href"] == f'http://odd"host\\name/v1/nodes/{uuids[0]}'
    single = client.get(f"/v1/nodes/{uuids[0]}", headers=host)
    assert orjson.dumps(nodes[0]) == single.content


# -- the generated page (api/_page_code.py) against its reference, node_view ----------------

#: A time every timestamp field is set to (microseconds and all).
_WHEN = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
#: Values a plain rule would not give (states, UUIDs, a holder, a console and its token).
_SPECIAL: dict[str, Any] = {
    "uuid": "11111111-2222-4333-8444-555555555555",
    "driver": "ipmi",
    "provision_state": "inspect wait",  # renamed before 1.39
    "target_provision_state": "active",
    "power_state": "power on",
    "target_power_state": "power off",
    "boot_mode": "uefi",
    "secure_boot": True,
    "traits": ["CUSTOM_A", "HW_CPU_X86_VMX"],
    "reservation": "host-a:1234:abcd",
    "chassis_uuid": "22222222-2222-4333-8444-555555555555",
    "instance_uuid": "33333333-2222-4333-8444-555555555555",
    "allocation_uuid": "44444444-2222-4333-8444-555555555555",
    "fault": "power failure",
    "automated_clean": False,
    "health": "OK",
    "driver_internal_info": {"console_enabled": True, "agent_secret_token": "hidden-3"},
}
#: The dict fields a client may write, masked by both.
_MASKED = frozenset(
    {"driver_info", "properties", "extra", "instance_info", "driver_internal_info", "network_data"}
)
#: ``fields=`` subsets shown by both (each filtered to the version, as the API checks them).
_SUBSETS: tuple[tuple[str, ...] | None, ...] = (
    None,
    ("uuid", "driver_info", "conductor", "provision_state", "console_enabled", "extra"),
    ("created_at", "traits", "network_data", "health", "reservation", "boot_interface", "name"),
)


def _every_field_set() -> Node:
    """A node whose every shown field differs from a new node's, secrets (``hidden-``) in
    every dict."""
    node, blank = Node(), Node()
    for name in views.read_attributes(NODE_FIELD_VERSIONS):
        old = getattr(blank, name)
        if name in _SPECIAL:
            value = _SPECIAL[name]
        elif name.endswith("_at"):
            value = _WHEN
        elif name.endswith("_step"):
            value = {"step": "s", "interface": "deploy", "args": {"n": name}}
        elif isinstance(old, bool):
            value = not old
        elif isinstance(old, dict):  # secrets where a client may write them (raid_config: no)
            secret = name in _MASKED
            value = {"name": name, "nested": {"password": "hidden-1" if secret else "p"}}
        elif name.endswith("_interface"):
            value = "fake"
        else:
            value = f"{name}-value"
        setattr(node, name, value)
        assert getattr(node, name) != old, name
    return node


def test_the_generated_page_shows_every_field_as_node_view_at_every_version() -> None:
    """``NodePage`` (generated code) and ``node_view`` (one field at a time) agree byte for
    byte on every field at every version, for a node with every field set and a new one
    (whose interfaces the driver's defaults fill), whole and for ``fields`` subsets."""
    full = _every_field_set()
    nodes = [full, Node(driver="ipmi", name="blank")]
    shown = set(NODE_FIELD_VERSIONS)
    base = 'http://odd"host'
    defaults = {"boot": "pxe", "deploy": "direct", "power": "ipmitool"}
    for version in _versions():
        for subset in _SUBSETS:
            fields = None if subset is None else tuple(
                name for name in subset
                if (known := views.known_field(name)) is not None and version >= known
            )  # fmt: skip
            page = views.NodePage(
                version, base, fields, lambda node: f"conductor-of-{node.name}",
                lambda driver: defaults,
            ).show(nodes)  # fmt: skip
            for node, view in zip(nodes, page, strict=True):
                reference = views.node_view(
                    node, version, base, fields=fields, conductor=f"conductor-of-{node.name}",
                    defaults=defaults,
                )  # fmt: skip
                text = orjson.dumps(view)
                assert text == orjson.dumps(reference), (version, subset, node.name)
                assert b"hidden-" not in text, (version, subset, text)
                if subset is None and node is full:
                    shown -= set(view)
    assert not shown  # every field was compared at some version
