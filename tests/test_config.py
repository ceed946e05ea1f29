"""ironic_fsm.config: Ironic's option names and defaults (DESIGN §6)."""

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
