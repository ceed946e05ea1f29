"""The package root: one public namespace, cheap to import (docs/api.rst)."""

from __future__ import annotations

import importlib
import json
import types

import pytest
from helpers import python_ok

import ironic_fsm

ROOT_NAMES = [
    "LIFECYCLE",
    "Node",
    "Config",
    "ConductorInfo",
    "HardwareType",
    "HistoryEntry",
    "clean_step",
    "deploy_step",
    "service_step",
    "verify_step",
    "states",
    "interfaces",
    "exceptions",
]


def test_all_is_sorted() -> None:
    assert list(ironic_fsm.__all__) == sorted(ironic_fsm.__all__)
    assert len(set(ironic_fsm.__all__)) == len(ironic_fsm.__all__)


@pytest.mark.parametrize("name", sorted(ironic_fsm.__all__))
def test_every_exported_name_is_importable(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from ironic_fsm import {name}", namespace)
    assert namespace[name] is getattr(ironic_fsm, name)


@pytest.mark.parametrize("name", ROOT_NAMES)
def test_contract_names_at_root(name: str) -> None:
    assert name in ironic_fsm.__all__
    assert getattr(ironic_fsm, name) is not None


@pytest.mark.parametrize("name", ["states", "interfaces", "exceptions"])
def test_contract_modules_at_root(name: str) -> None:
    module = getattr(ironic_fsm, name)
    assert isinstance(module, types.ModuleType)
    assert module is importlib.import_module(f"ironic_fsm.{name}")


def test_root_objects_are_the_real_ones() -> None:
    from ironic_fsm.conductor.fleet import ConductorInfo
    from ironic_fsm.config import Config
    from ironic_fsm.hardware import HardwareType
    from ironic_fsm.history import HistoryEntry
    from ironic_fsm.machine import LIFECYCLE, Lifecycle
    from ironic_fsm.node import Node
    from ironic_fsm.steps import clean_step, deploy_step, service_step, verify_step

    assert ironic_fsm.LIFECYCLE is LIFECYCLE
    assert isinstance(ironic_fsm.LIFECYCLE, Lifecycle)
    assert ironic_fsm.Node is Node
    assert ironic_fsm.Config is Config
    assert ironic_fsm.ConductorInfo is ConductorInfo
    assert ironic_fsm.HardwareType is HardwareType
    assert ironic_fsm.HistoryEntry is HistoryEntry
    assert ironic_fsm.clean_step is clean_step
    assert ironic_fsm.deploy_step is deploy_step
    assert ironic_fsm.service_step is service_step
    assert ironic_fsm.verify_step is verify_step


def test_lifecycle_is_built_once() -> None:
    again = importlib.import_module("ironic_fsm.machine").LIFECYCLE
    assert again is ironic_fsm.LIFECYCLE


def _modules_after_import(statement: str) -> set[str]:
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))\n"
    return set(json.loads(python_ok(code)))


HEAVY = [
    "sqlalchemy", "pyghmi", "sushy", "stevedore",
    # The metrics and notification extras: loaded only when they are turned on.
    "prometheus_client", "httpx", "tenacity", "cloudevents",
    # Schemas (fleet files, RAID targets) are compiled when first checked.
    "fastjsonschema",
]  # fmt: skip


def test_import_does_not_pull_heavy_dependencies() -> None:
    loaded = _modules_after_import("import ironic_fsm")
    assert "ironic_fsm" in loaded
    for heavy in HEAVY:
        assert not any(m == heavy or m.startswith(heavy + ".") for m in loaded), heavy


def test_fake_driver_import_is_light_too() -> None:
    loaded = _modules_after_import("import ironic_fsm.drivers.fake")
    for heavy in HEAVY:
        assert not any(m == heavy or m.startswith(heavy + ".") for m in loaded), heavy


def test_the_check_can_fail() -> None:
    # The subprocess check sees modules that are imported.
    assert "stevedore" in _modules_after_import("import ironic_fsm, stevedore")


def test_the_notifier_without_a_webhook_loads_no_http_client() -> None:
    loaded = _modules_after_import("import ironic_fsm.notifications")
    for heavy in ("httpx", "tenacity", "cloudevents", "prometheus_client"):
        assert not any(m == heavy or m.startswith(heavy + ".") for m in loaded), heavy
