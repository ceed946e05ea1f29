"""ironic_fsm.node: the node record, its JSON form and secret masking (docs/userguide.rst)."""

from __future__ import annotations

import json
import math
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.masking import MASK, is_secret_key, mask_secrets
from ironic_fsm.node import INTERFACE_KINDS, NODE_FIELDS, Node, check_field, freeze, thaw

CONTRACT_FIELDS = [
    "uuid", "name", "driver", "driver_info", "driver_internal_info", "properties",
    "instance_info", "extra", "traits", "resource_class", "provision_state",
    "target_provision_state", "power_state", "target_power_state", "maintenance",
    "maintenance_reason", "fault", "last_error", "retired", "retired_reason", "protected",
    "protected_reason", "automated_clean", "clean_step", "deploy_step", "service_step",
    "reservation", "provision_updated_at", "created_at", "updated_at", "version",
    "target_raid_config", "raid_config",
]  # fmt: skip

KINDS = ["power", "management", "deploy", "boot", "bios", "raid", "inspect", "rescue",
         "vendor", "firmware", "console", "network", "storage"]  # fmt: skip


def _field_names() -> set[str]:
    return {f.name for f in attrs.fields(Node)}


@pytest.mark.parametrize("name", CONTRACT_FIELDS)
def test_contract_field_present(name: str) -> None:
    assert name in _field_names()


@pytest.mark.parametrize("kind", KINDS)
def test_interface_field_present(kind: str) -> None:
    assert f"{kind}_interface" in _field_names()
    assert Node().interface_name(kind) is None
    fields: dict[str, Any] = {f"{kind}_interface": "custom"}
    assert Node(**fields).interface_name(kind) == "custom"


def test_interface_kinds_are_ironics_thirteen_kinds() -> None:
    assert list(INTERFACE_KINDS) == KINDS


def test_node_fields_constant_lists_every_field() -> None:
    assert list(NODE_FIELDS) == [f.name for f in attrs.fields(Node)]
    assert set(NODE_FIELDS) == set(CONTRACT_FIELDS) | {f"{k}_interface" for k in KINDS} | {
        "conductor_group", "owner", "lessee", "description", "instance_uuid", "boot_mode",
        "secure_boot", "network_data", "shard", "parent_node", "inspection_started_at",
        "inspection_finished_at", "disable_power_off", "instance_name", "health",
    }  # fmt: skip


def test_tenancy_fields_are_checked_and_kept() -> None:
    node = Node(
        owner="p1", lessee="p2", description="rack 4, " * 500,
        instance_uuid="{6D9F2E3A-0C1B-4E5F-8A7B-9C0D1E2F3A4B}",
    )  # fmt: skip
    assert node.instance_uuid == "6d9f2e3a-0c1b-4e5f-8a7b-9c0d1e2f3a4b"  # canonical: filterable
    assert Node.from_json(node.to_json()) == node
    assert check_field("instance_uuid", None) is None
    for name, value in [
        ("owner", "x" * 256), ("lessee", 5), ("description", "d" * 4097),
        ("instance_uuid", "not-a-uuid"), ("owner", "a\x00b"),
    ]:  # fmt: skip
        with pytest.raises(InvalidParameterValue) as caught:
            check_field(name, value)
        assert caught.value.details["field"] == name
        with pytest.raises(InvalidParameterValue):
            Node(**{name: value})


def test_node_is_slotted_with_only_its_fields() -> None:
    assert set(Node.__slots__) - {"__weakref__"} <= _field_names()
    node = Node()
    assert not hasattr(node, "__dict__")
    with pytest.raises(AttributeError):
        node.not_a_field = 1  # type: ignore[attr-defined]


def test_defaults() -> None:
    node = Node()
    assert node.provision_state == "enroll"
    assert node.target_provision_state is None
    assert node.maintenance is False
    assert node.version == 0
    assert node.automated_clean is None
    assert node.retired is False
    assert node.protected is False
    assert node.last_error is None
    assert node.reservation is None
    assert node.driver_info == {}
    assert node.traits == []
    assert node.clean_step is None
    assert node.deploy_step is None
    assert node.service_step is None


def test_each_node_gets_its_own_uuid_and_containers() -> None:
    a, b = Node(), Node()
    assert a.uuid != b.uuid
    a.driver_info["x"] = 1
    a.traits.append("CUSTOM_A")
    assert b.driver_info == {}
    assert b.traits == []


def _rich_node() -> Node:
    when = datetime(2024, 5, 17, 12, 30, 45, 123456, tzinfo=timezone.utc)
    return Node(
        uuid="1be26c0b-03f2-4d2e-ae87-c02d7f33c123",
        name="node-1",
        driver="fake-hardware",
        driver_info={"ipmi_address": "10.0.0.1", "ipmi_password": "pw", "nested": {"a": [1, 2]}},
        driver_internal_info={
            "clean_steps": [{"interface": "deploy", "step": "erase", "args": {}}]
        },
        properties={"cpus": 2, "memory_mb": 4096},
        instance_info={"traits": ["CUSTOM_X"], "image_source": "http://x/img"},
        extra={"k": {"deep": {"deeper": True}}},
        traits=["CUSTOM_X", "CUSTOM_Y"],
        resource_class="baremetal",
        provision_state="clean wait",
        target_provision_state="manageable",
        power_state="power on",
        maintenance=True,
        maintenance_reason="why",
        fault="clean failure",
        last_error="boom",
        retired=True,
        retired_reason="old",
        protected=False,
        automated_clean=False,
        clean_step={"interface": "deploy", "step": "erase", "args": {"x": 1}, "priority": 10},
        reservation="host:123",
        provision_updated_at=when,
        created_at=when - timedelta(days=1),
        updated_at=datetime(2024, 5, 17, 14, 30, tzinfo=timezone(timedelta(hours=2))),
        version=7,
        target_raid_config={"logical_disks": [{"size_gb": 100, "raid_level": "1"}]},
        raid_config={},
        boot_interface="pxe",
    )


def test_json_round_trip_is_lossless() -> None:
    node = _rich_node()
    text = json.dumps(node.to_dict())
    back = Node.from_dict(json.loads(text))
    assert back == node
    assert back.created_at is not None
    assert back.created_at.tzinfo is not None
    assert back.provision_updated_at == node.provision_updated_at
    assert back.updated_at is not None
    assert back.updated_at.utcoffset() == timedelta(hours=2)
    assert back.extra["k"]["deep"]["deeper"] is True


def test_default_node_round_trips() -> None:
    node = Node()
    assert Node.from_dict(json.loads(json.dumps(node.to_dict()))) == node


def test_to_dict_has_every_field_and_is_json_safe() -> None:
    data = _rich_node().to_dict()
    assert set(data) == set(NODE_FIELDS)
    assert isinstance(data["created_at"], str)
    json.dumps(data)  # must not raise


def test_to_dict_keeps_secrets() -> None:
    data = _rich_node().to_dict()
    assert data["driver_info"]["ipmi_password"] == "pw"


def test_to_dict_returns_copies() -> None:
    node = _rich_node()
    data = node.to_dict()
    data["driver_info"]["ipmi_address"] = "changed"
    data["driver_info"]["nested"]["a"].append(3)
    data["traits"].append("CUSTOM_Z")
    data["extra"]["k"]["deep"]["deeper"] = False
    data["clean_step"]["args"]["x"] = 2
    assert node.driver_info["ipmi_address"] == "10.0.0.1"
    assert node.driver_info["nested"]["a"] == [1, 2]
    assert node.traits == ["CUSTOM_X", "CUSTOM_Y"]
    assert node.extra["k"]["deep"]["deeper"] is True
    assert node.clean_step is not None
    assert node.clean_step["args"]["x"] == 1


def test_from_dict_copies_its_input() -> None:
    data = _rich_node().to_dict()
    node = Node.from_dict(data)
    data["driver_info"]["nested"]["a"].append(99)
    assert node.driver_info["nested"]["a"] == [1, 2]


def test_from_dict_rejects_unknown_keys() -> None:
    data = Node().to_dict()
    data["bogus_field"] = 1
    with pytest.raises(InvalidParameterValue, match="bogus_field"):
        Node.from_dict(data)


def test_from_dict_accepts_partial_records() -> None:
    node = Node.from_dict({"name": "n", "provision_state": "manageable"})
    assert node.name == "n"
    assert node.provision_state == "manageable"
    assert node.version == 0


# -- secrets -----------------------------------------------------------------------

SECRETS = {
    "ipmi_password": "hunter2-pw",
    "redfish_password": "rf-secret-value",
    "auth_token": "tok-abcdef",
    "ssh_key": "ssh-rsa-AAAAB3",
    "client_secret": "cs-0001",
    "IPMI_PASSWORD_UPPER": "upper-pw-1",
}


def _secret_node() -> Node:
    return Node(
        name="visible-name",
        driver_info={
            "ipmi_address": "10.1.2.3",
            **SECRETS,
            "nested": {"deeper": {"bmc_password": "deep-pw-77"}, "list": [{"api_key": "lk-42"}]},
        },
        instance_info={"image_source": "http://img", "root_password": "root-pw-88"},
        driver_internal_info={"agent_secret_token": "agent-tok-99"},
    )


HIDDEN = [*SECRETS.values(), "deep-pw-77", "lk-42", "root-pw-88", "agent-tok-99"]


@pytest.mark.parametrize("render", [repr, str], ids=["repr", "str"])
def test_secrets_not_in_repr_or_str(render: object) -> None:
    text = render(_secret_node())  # type: ignore[operator]
    for secret in HIDDEN:
        assert secret not in text
    assert "10.1.2.3" in text
    assert "visible-name" in text
    assert MASK in text


def test_secrets_in_step_args_not_in_repr() -> None:
    node = Node(
        clean_step={"interface": "vendor", "step": "x", "args": {"bmc_password": "step-pw-5"}},
        deploy_step={"interface": "deploy", "step": "y", "args": {"token": "step-tok-6"}},
    )
    text = repr(node)
    assert "step-pw-5" not in text
    assert "step-tok-6" not in text


def test_masked_to_dict_hides_secrets_everywhere() -> None:
    masked = _secret_node().to_dict(mask=True)
    text = json.dumps(masked)
    for secret in HIDDEN:
        assert secret not in text
    assert masked["driver_info"]["ipmi_password"] == MASK
    assert masked["driver_info"]["nested"]["deeper"]["bmc_password"] == MASK
    assert masked["driver_info"]["nested"]["list"][0]["api_key"] == MASK
    assert masked["driver_info"]["ipmi_address"] == "10.1.2.3"


def test_unmasked_to_dict_keeps_secrets() -> None:
    node = _secret_node()
    data = node.to_dict()
    text = json.dumps(data)
    for secret in HIDDEN:
        assert secret in text
    assert Node.from_dict(data) == node


def test_masking_does_not_change_node() -> None:
    node = _secret_node()
    repr(node)
    node.to_dict(mask=True)
    assert node.driver_info["ipmi_password"] == "hunter2-pw"
    assert node.driver_info["nested"]["deeper"]["bmc_password"] == "deep-pw-77"


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("ipmi_password", True),
        ("redfish_password", True),
        ("auth_token", True),
        ("ssh_key", True),
        ("client_secret", True),
        ("Password", True),
        ("ipmi_address", False),
        ("ipmi_username", False),
        ("redfish_verify_ca", False),
        (42, False),
    ],
)
def test_is_secret_key(key: object, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_mask_secrets_returns_copy() -> None:
    data: dict[str, Any] = {"a": {"password": "x"}, "b": [{"token": "y"}], "c": ("z",)}
    masked = mask_secrets(data)
    assert masked == {"a": {"password": MASK}, "b": [{"token": MASK}], "c": ("z",)}
    assert data["a"]["password"] == "x"


# -- field checks (hostile input) ------------------------------------------------------


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"k": value}
    return value


AWARE = datetime(2030, 1, 1, tzinfo=timezone.utc)

BAD_FIELDS = [
    ("uuid", "not-a-uuid"),
    ("uuid", None),
    ("uuid", 123),
    ("name", ""),
    ("name", ["x"]),
    ("name", "n" * 256),
    ("name", "a\x00b"),
    ("name", "a\nb"),
    ("name", "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"),
    ("name", "1BE26C0B03F24D2EAE87C02D7F33C123"),
    ("driver", None),
    ("driver", ""),
    ("traits", "CUSTOM_X"),
    ("traits", [1]),
    ("traits", [""]),
    ("driver_info", "str"),
    ("driver_info", None),
    ("driver_info", {"k": object()}),
    ("driver_info", {"k": {1, 2}}),
    ("driver_info", {1: "a"}),
    ("driver_info", {"k": float("nan")}),
    ("driver_info", {"k": (1, 2)}),
    ("driver_info", {"k": "a\x00"}),
    ("extra", _deep(100_000)),
    ("properties", _deep(40)),
    ("clean_step", "x"),
    ("maintenance", "yes"),
    ("maintenance", 1),
    ("retired", None),
    ("automated_clean", "yes"),
    ("created_at", "2024-01-01"),
    ("created_at", datetime(2024, 1, 1)),  # naive
    ("updated_at", 1.5),
    ("version", "1"),
    ("version", -1),
    ("version", True),
    ("provision_state", None),
    ("last_error", 1),
    ("resource_class", "a\x00"),
    ("power_interface", 1),
]


@pytest.mark.parametrize(
    ("field", "value"), BAD_FIELDS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD_FIELDS)]
)
def test_bad_field_values_are_refused_on_construction(field: str, value: object) -> None:
    with pytest.raises(InvalidParameterValue, match=field):
        Node(**{field: value})  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterValue, match=field):
        check_field(field, value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "node-1"),
        ("name", "x" * 255),
        ("name", None),
        ("traits", ["CUSTOM_A"]),
        ("extra", {"a": [1, 2.5, None, True, {"b": "c"}]}),
        ("properties", _deep(31)),
        ("created_at", AWARE),
        ("automated_clean", None),
    ],
)
def test_good_field_values_are_accepted(field: str, value: object) -> None:
    assert getattr(Node(**{field: value}), field) == value  # type: ignore[arg-type]


def test_uuid_is_normalised() -> None:
    canonical = "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
    assert Node(uuid=canonical.upper()).uuid == canonical
    assert Node(uuid=uuid.UUID(canonical)).uuid == canonical
    assert check_field("uuid", "{" + canonical + "}") == canonical


def test_from_dict_refuses_bad_timestamps_with_a_library_error() -> None:
    with pytest.raises(InvalidParameterValue, match="created_at"):
        Node.from_dict({"created_at": "yesterday"})
    with pytest.raises(InvalidParameterValue, match="created_at"):
        Node.from_dict({"created_at": "2024-01-01T00:00:00"})  # naive


def test_from_json_refuses_garbage_with_a_library_error() -> None:
    for text in ("not json", "[1]", '{"maintenance": "yes"}', '{"bogus": 1}'):
        with pytest.raises(InvalidParameterValue):
            Node.from_json(text)


def test_check_types_catches_what_assignment_let_through() -> None:
    node = Node()
    node.check_types()
    node.properties = "oops"  # type: ignore[assignment]
    with pytest.raises(InvalidParameterValue, match="properties"):
        node.check_types()


# -- the stores' codec: to_json writes only what reads back; from_json checks what it builds ---


def _bypass(node: Node, **fields: Any) -> Node:
    """Assign past nothing: assignment is unchecked, as drivers do it."""
    for key, value in fields.items():
        setattr(node, key, value)
    return node


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        float("inf"),
        (1, 2),
        {"nested": (1,)},
        uuid.UUID("1be26c0b-03f2-4d2e-ae87-c02d7f33c123"),
        datetime(2024, 1, 1, tzinfo=timezone.utc),
        {1: "int key"},
        2**64,
    ],
    ids=["nan", "inf", "tuple", "nested-tuple", "uuid", "datetime", "int-key", "big-int"],
)
def test_to_json_refuses_what_would_not_read_back_equal(value: object) -> None:
    node = _bypass(Node(), extra={"k": value})
    with pytest.raises((TypeError, ValueError)):
        node.to_json()


def test_to_json_writes_timestamps_as_isoformat_and_reads_them_back() -> None:
    node = _rich_node()
    data = json.loads(node.to_json())
    for name in ("provision_updated_at", "created_at", "updated_at"):
        assert data[name] == getattr(node, name).isoformat()
    back = Node.from_json(node.to_json())
    assert back == node
    assert back.updated_at is not None
    assert back.updated_at.utcoffset() == timedelta(hours=2)


def test_to_json_refuses_a_field_of_the_wrong_type() -> None:
    node = _bypass(Node(), last_error=5)
    with pytest.raises(InvalidParameterValue, match="last_error"):
        node.to_json()


def _record_with(**fields: Any) -> str:
    data = Node(uuid="1be26c0b-03f2-4d2e-ae87-c02d7f33c123").to_dict()
    data.update(fields)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "1be26c0b-03f2-4d2e-ae87-c02d7f33c124"),
        ("name", "tab\there"),
        ("name", ""),
        ("provision_state", ""),
        ("provision_state", 5),
        ("last_error", ["x"]),
        ("maintenance", "yes"),
        ("automated_clean", 1),
        ("version", -1),
        ("version", True),
        ("traits", ["ok", ""]),
        ("traits", "CUSTOM_X"),
        ("driver_info", []),
        ("clean_step", "x"),
        ("created_at", "2024-01-01T00:00:00"),
        ("created_at", "yesterday"),
        ("uuid", "not-a-uuid"),
    ],
)
def test_from_json_of_a_whole_record_checks_every_field(field: str, value: object) -> None:
    with pytest.raises(InvalidParameterValue, match=field):
        Node.from_json(_record_with(**{field: value}))


def test_from_json_normalises_a_uuid_and_reads_partial_and_json_module_records() -> None:
    node = Node.from_json(_record_with(uuid="{1BE26C0B-03F2-4D2E-AE87-C02D7F33C123}"))
    assert node.uuid == "1be26c0b-03f2-4d2e-ae87-c02d7f33c123"
    assert Node.from_json('{"name": "n"}').name == "n"
    # Earlier releases wrote with the json module, which writes NaN: still readable.
    assert math.isnan(Node.from_json(_record_with(extra={"x": float("nan")})).extra["x"])


def test_from_json_builds_new_containers_each_time() -> None:
    text = _rich_node().to_json()
    first, second = Node.from_json(text), Node.from_json(text)
    first.driver_info["nested"]["a"].append(3)
    first.traits.append("CUSTOM_Z")
    assert second.driver_info["nested"]["a"] == [1, 2]
    assert second.traits == ["CUSTOM_X", "CUSTOM_Y"]


def test_freeze_and_thaw_copy_exactly_and_share_nothing() -> None:
    node = _rich_node()
    frozen = freeze(node)
    node.driver_info["nested"]["a"].append(3)  # after freezing: not in the snapshot
    first, second = thaw(frozen), thaw(frozen)
    assert first == _rich_node()
    assert first.updated_at is not None
    assert first.updated_at.utcoffset() == timedelta(hours=2)
    first.extra["k"]["deep"]["deeper"] = False
    first.traits.append("CUSTOM_Z")
    assert second == _rich_node()


@pytest.mark.parametrize("value", [float("nan"), (1,), {1: 2}, datetime.now(timezone.utc)])
def test_freeze_refuses_what_would_not_read_back_equal(value: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        freeze(_bypass(Node(), driver_internal_info={"k": [value]}))


def test_a_datetime_subclass_in_a_timestamp_field_is_written_as_isoformat() -> None:
    class FrozenClock(datetime):  # what freezegun and pendulum hand out
        pass

    node = Node(updated_at=FrozenClock(2024, 1, 2, 3, 4, 5, 6, tzinfo=timezone.utc))
    back = Node.from_json(node.to_json())
    assert back.updated_at == node.updated_at
    with pytest.raises(ValueError, match="read back"):
        _bypass(Node(), extra={"when": node.updated_at}).to_json()
