"""ironic_fsm.config: Ironic's option names and defaults (docs/userguide.rst)."""

from __future__ import annotations

import warnings
from typing import Any

import attrs
import pytest

from ironic_fsm.config import Config
from ironic_fsm.exceptions import InvalidParameterValue

TIMEOUTS = [
    "clean_callback_timeout",
    "deploy_callback_timeout",
    "service_callback_timeout",
    "rescue_callback_timeout",
    "inspect_wait_timeout",
]
DISALLOW = ["disallow_clean_steps", "disallow_deploy_steps", "disallow_service_steps"]


def test_defaults() -> None:
    config = Config()
    assert config.automated_clean is True
    assert config.poweroff_in_cleanfail is False
    assert config.allow_provisioning_in_maintenance is True
    assert config.allow_deleting_available_nodes is True
    assert dict(config.clean_step_priority_override) == {}


@pytest.mark.parametrize("option", TIMEOUTS)
def test_timeout_defaults(option: str) -> None:
    assert getattr(Config(), option) == 1800


@pytest.mark.parametrize("option", DISALLOW)
def test_disallow_defaults(option: str) -> None:
    assert list(getattr(Config(), option)) == ["vendor.send_raw"]


@pytest.mark.parametrize("option", TIMEOUTS)
def test_timeout_zero_allowed(option: str) -> None:
    assert getattr(Config(**{option: 0}), option) == 0


def test_options_set_by_keyword() -> None:
    config = Config(
        automated_clean=False,
        clean_step_priority_override={"deploy.erase_devices": 0, "raid.create_configuration": 5},
        disallow_clean_steps=["bios.factory_reset"],
        disallow_deploy_steps=[],
        clean_callback_timeout=60,
        poweroff_in_cleanfail=True,
        allow_provisioning_in_maintenance=False,
        allow_deleting_available_nodes=False,
    )
    assert config.automated_clean is False
    assert dict(config.clean_step_priority_override) == {
        "deploy.erase_devices": 0,
        "raid.create_configuration": 5,
    }
    assert list(config.disallow_clean_steps) == ["bios.factory_reset"]
    assert list(config.disallow_deploy_steps) == []
    assert list(config.disallow_service_steps) == ["vendor.send_raw"]
    assert config.clean_callback_timeout == 60
    assert config.poweroff_in_cleanfail is True
    assert config.allow_provisioning_in_maintenance is False
    assert config.allow_deleting_available_nodes is False


def test_positional_arguments_refused() -> None:
    with pytest.raises(TypeError):
        Config(False)  # type: ignore[misc]


def test_override_string_values_like_ironic_config() -> None:
    config = Config(clean_step_priority_override={"deploy.erase_devices": "0", "bios.x": "15"})
    assert dict(config.clean_step_priority_override) == {"deploy.erase_devices": 0, "bios.x": 15}


@pytest.mark.parametrize("legacy", [False, True])
def test_clean_nodes_is_deprecated_alias(legacy: bool) -> None:
    with pytest.warns(DeprecationWarning, match="clean_nodes"):
        config = Config(clean_nodes=legacy)
    assert config.automated_clean is legacy


def test_clean_nodes_attribute_warns() -> None:
    config = Config(automated_clean=False)
    with pytest.warns(DeprecationWarning, match="automated_clean"):
        assert config.clean_nodes is False


def test_automated_clean_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Config(automated_clean=False).automated_clean is False


def test_unknown_option_rejected() -> None:
    with pytest.raises(InvalidParameterValue, match="cleannodes"):
        Config(cleannodes=True)


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("automated_clean", "yes"),
        ("automated_clean", 1),
        ("automated_clean", None),
        ("poweroff_in_cleanfail", "false"),
        ("allow_provisioning_in_maintenance", 0),
        ("allow_deleting_available_nodes", "no"),
        ("clean_callback_timeout", -1),
        ("deploy_callback_timeout", "1800"),
        ("inspect_wait_timeout", True),
        ("service_callback_timeout", None),
        ("disallow_clean_steps", "vendor.send_raw"),
        ("disallow_clean_steps", ["send_raw"]),
        ("disallow_deploy_steps", [1]),
        ("disallow_service_steps", 5),
        ("clean_step_priority_override", {"erase_devices": 1}),
        ("clean_step_priority_override", {"deploy.erase_devices": -1}),
        ("clean_step_priority_override", {"deploy.erase_devices": "high"}),
        ("clean_step_priority_override", {"deploy.erase_devices": True}),
        ("clean_step_priority_override", {"deploy.erase_devices": 1.5}),
        ("clean_step_priority_override", ["deploy.erase_devices"]),
        ("clean_step_priority_override", 5),
    ],
)
def test_bad_values_rejected(option: str, value: Any) -> None:
    with pytest.raises(InvalidParameterValue):
        Config(**{option: value})


def test_config_is_frozen() -> None:
    config = Config()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        config.automated_clean = False  # type: ignore[misc]


def test_configs_compare_by_value() -> None:
    assert Config(host="h") == Config(host="h")
    assert Config(host="h") != Config(host="h", automated_clean=False)


# -- fleet options (docs/fleet.rst): Ironic's names and defaults -----------------------------------

#: Ironic's periodic and conductor options, with Ironic's defaults.
FLEET_DEFAULTS = {
    "sync_power_state_interval": 60,
    "force_power_state_during_sync": True,
    "power_state_sync_max_retries": 3,
    "sync_power_state_workers": 8,
    "heartbeat_interval": 10,
    "heartbeat_timeout": 60,
    "check_provision_state_interval": 60,
    "conductor_group": "",
    "enabled_hardware_types": None,
}


@pytest.mark.parametrize(("option", "default"), sorted(FLEET_DEFAULTS.items()))
def test_fleet_option_defaults(option: str, default: Any) -> None:
    assert option in {a.name for a in attrs.fields(Config)}
    assert getattr(Config(), option) == default


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("sync_power_state_interval", 0),  # 0 disables, as in Ironic
        ("sync_power_state_interval", 2.5),
        ("check_provision_state_interval", 0),
        ("heartbeat_interval", 0.5),
        ("heartbeat_timeout", 0),
        ("store_retry_timeout", 0),
        ("store_retry_timeout", 2.5),
        ("power_state_sync_max_retries", 0),
        ("sync_power_state_workers", 1),
        ("force_power_state_during_sync", False),
    ],
)
def test_fleet_options_accept_their_range(option: str, value: Any) -> None:
    assert getattr(Config(**{option: value}), option) == value


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("sync_power_state_interval", -1, ">= 0"),
        ("sync_power_state_interval", "60", ">= 0"),
        ("sync_power_state_interval", True, ">= 0"),
        ("check_provision_state_interval", -0.5, ">= 0"),
        ("check_provision_state_interval", None, ">= 0"),
        ("heartbeat_interval", 0, "> 0"),
        ("heartbeat_interval", -10, "> 0"),
        ("heartbeat_interval", "10", "> 0"),
        ("heartbeat_timeout", -1, ">= 0"),
        ("store_retry_timeout", -1, ">= 0"),
        ("store_retry_timeout", "30", ">= 0"),
        ("power_state_sync_max_retries", -1, "integer >= 0"),
        ("power_state_sync_max_retries", 1.5, "integer >= 0"),
        ("power_state_sync_max_retries", True, "integer >= 0"),
        ("sync_power_state_workers", 0, "integer >= 1"),
        ("sync_power_state_workers", "8", "integer >= 1"),
        ("force_power_state_during_sync", "yes", "True or False"),
        ("force_power_state_during_sync", 1, "True or False"),
        ("conductor_group", "rack 1", "conductor_group"),
        ("conductor_group", "a/b", "conductor_group"),
        ("conductor_group", "x" * 256, "conductor_group"),
        ("conductor_group", None, "conductor_group"),
        ("host", "", "Config.host"),
        ("host", "a:b", "Config.host"),
        ("host", "has space", "Config.host"),
        ("host", "x" * 201, "Config.host"),
        ("host", 5, "Config.host"),
        ("enabled_hardware_types", "ipmi", "enabled_hardware_types"),
        ("enabled_hardware_types", ["ipmi", 3], "enabled_hardware_types"),
        ("enabled_hardware_types", [""], "enabled_hardware_types"),
    ],
)
def test_fleet_options_refuse_bad_values(option: str, value: Any, message: str) -> None:
    with pytest.raises(InvalidParameterValue, match=message) as info:
        Config(**{option: value})
    assert info.value.details.get("option") == option


def test_conductor_group_is_case_insensitive_as_in_ironic() -> None:
    assert Config(conductor_group="Rack-A.1_x").conductor_group == "rack-a.1_x"
    assert Config(conductor_group="RACK") == Config(conductor_group="rack")


def test_enabled_hardware_types_is_a_tuple_without_repeats() -> None:
    config = Config(enabled_hardware_types=["redfish", "ipmi", "redfish"])
    assert config.enabled_hardware_types == ("redfish", "ipmi")
    assert Config(enabled_hardware_types=[]).enabled_hardware_types == ()


def test_host_defaults_to_the_hostname_and_takes_a_name() -> None:
    import socket

    assert Config().host == socket.gethostname()
    assert Config(host="conductor-1.example.org").host == "conductor-1.example.org"


#: Ironic's node history options (``[conductor]``), with Ironic's defaults.
HISTORY_DEFAULTS = {
    "node_history": True,
    "node_history_max_entries": 300,
    "node_history_minimum_days": 0,
    "node_history_cleanup_interval": 86400,
    "node_history_cleanup_batch_count": 1000,
}


@pytest.mark.parametrize(("option", "default"), sorted(HISTORY_DEFAULTS.items()))
def test_history_option_defaults(option: str, default: Any) -> None:
    assert getattr(Config(), option) == default


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("node_history", False),
        ("node_history_max_entries", 0),  # as Ironic: only what minimum_days keeps
        ("node_history_minimum_days", 0),
        ("node_history_minimum_days", 30),
        ("node_history_cleanup_interval", 0),
        ("node_history_cleanup_interval", 3600.5),
        ("node_history_cleanup_batch_count", 1),
    ],
)
def test_history_options_accept_their_range(option: str, value: Any) -> None:
    assert getattr(Config(**{option: value}), option) == value


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("node_history", "yes", "True or False"),
        ("node_history", 1, "True or False"),
        ("node_history_max_entries", -1, "integer >= 0"),
        ("node_history_max_entries", 2.5, "integer >= 0"),
        ("node_history_max_entries", True, "integer >= 0"),
        ("node_history_minimum_days", -1, "integer >= 0"),
        ("node_history_minimum_days", "3", "integer >= 0"),
        ("node_history_cleanup_interval", -1, ">= 0"),
        ("node_history_cleanup_interval", None, ">= 0"),
        ("node_history_cleanup_batch_count", 0, "integer >= 1"),
        ("node_history_cleanup_batch_count", 10.0, "integer >= 1"),
    ],
)
def test_history_options_refuse_bad_values(option: str, value: Any, message: str) -> None:
    with pytest.raises(InvalidParameterValue, match=message) as info:
        Config(**{option: value})
    assert info.value.details.get("option") == option
