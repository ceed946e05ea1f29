"""The ``--config`` settings file: conductor options and steps, checked before any store opens."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from ironic_fsm._node_fields import json_kind as _kind
from ironic_fsm.cli.argtypes import _parse_json, _read_source
from ironic_fsm.cli.errors import CLIError
from ironic_fsm.exceptions import (
    IronicFSMError,
)

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor
    from ironic_fsm.config import Config

CONFIG_ENV: Final = "IRONIC_FSM_CONFIG"


# -- the settings file ----------------------------------------------------------------


class _Settings(NamedTuple):
    path: str
    config: Config
    runbooks: dict[str, tuple[list[dict[str, Any]], list[str]]]
    deploy_templates: dict[str, list[dict[str, Any]]]


def _check_steps(path: str, where: str, steps: object) -> list[dict[str, Any]]:
    if not isinstance(steps, list):
        raise CLIError(
            f"settings file {path}: {where}: expected a list of steps, got {_kind(steps)}"
        )
    for i, step in enumerate(steps):
        at = f"{where}[{i}]"
        if not isinstance(step, dict):
            raise CLIError(f"settings file {path}: {at}: expected a step object, got {_kind(step)}")
        for key in ("interface", "step"):
            if not isinstance(step.get(key), str):
                raise CLIError(
                    f"settings file {path}: {at}.{key}: expected a string, got "
                    f"{_kind(step.get(key)) if key in step else 'nothing'}"
                )
        if "args" in step and not isinstance(step["args"], dict):
            raise CLIError(
                f"settings file {path}: {at}.args: expected an object, got {_kind(step['args'])}"
            )
    return steps


def _check_object(path: str, where: str, value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CLIError(f"settings file {path}: {where}: expected an object, got {_kind(value)}")
    return value


def _read_settings(path: str | None) -> _Settings | None:
    """Read and check the whole settings file; every mistake names its place in the file."""
    path = path or os.environ.get(CONFIG_ENV) or None
    if path is None:
        return None
    text, _ = _read_source(path, "--config")
    data = _parse_json(text, f"settings file {path}", "--config")
    if not isinstance(data, dict):
        raise CLIError(
            f"settings file {path}: expected a JSON object with the keys config, runbooks "
            f"and deploy_templates, got {_kind(data)}"
        )
    unknown = sorted(set(data) - {"config", "runbooks", "deploy_templates"})
    if unknown:
        raise CLIError(
            f"settings file {path}: unknown key(s) {', '.join(map(repr, unknown))}; the file "
            "may only have config, runbooks and deploy_templates"
        )
    options = _check_object(path, "config", data.get("config", {}))
    from ironic_fsm.config import Config

    try:
        config = Config(**options)
    except (IronicFSMError, TypeError, ValueError) as exc:
        raise CLIError(f"settings file {path}: config: {exc}") from exc
    runbooks: dict[str, tuple[list[dict[str, Any]], list[str]]] = {}
    for name, runbook in _check_object(path, "runbooks", data.get("runbooks", {})).items():
        where = f"runbooks.{name}"
        runbook = _check_object(path, where, runbook)
        extra = sorted(set(runbook) - {"steps", "traits"})
        if extra:
            raise CLIError(
                f"settings file {path}: {where}: unknown key(s) {', '.join(map(repr, extra))}; "
                "a runbook has steps and traits"
            )
        if "steps" not in runbook:
            raise CLIError(f"settings file {path}: {where}: needs a 'steps' list")
        steps = _check_steps(path, f"{where}.steps", runbook["steps"])
        traits = runbook.get("traits", [])
        if not isinstance(traits, list):
            raise CLIError(
                f"settings file {path}: {where}.traits: expected a list of strings, "
                f"got {_kind(traits)}"
            )
        for i, trait in enumerate(traits):
            if not isinstance(trait, str):
                raise CLIError(
                    f"settings file {path}: {where}.traits[{i}]: expected a string, "
                    f"got {_kind(trait)}"
                )
        runbooks[name] = (steps, traits)
    templates = {
        name: _check_steps(path, f"deploy_templates.{name}", steps)
        for name, steps in _check_object(
            path, "deploy_templates", data.get("deploy_templates", {})
        ).items()
    }
    return _Settings(path, config, runbooks, templates)


def _settings_conductor(store: Any, settings: _Settings | None) -> Conductor:
    from ironic_fsm.conductor import Conductor

    if settings is None:
        return Conductor(store=store)
    path = settings.path
    conductor = Conductor(store=store, config=settings.config)
    for name, (steps, traits) in settings.runbooks.items():
        try:
            conductor.add_runbook(name, steps, traits=traits)
        except (IronicFSMError, TypeError, ValueError) as exc:
            raise CLIError(f"settings file {path}: runbooks.{name}: {exc}") from exc
    for name, steps in settings.deploy_templates.items():
        try:
            conductor.add_deploy_template(name, steps)
        except (IronicFSMError, TypeError, ValueError) as exc:
            raise CLIError(f"settings file {path}: deploy_templates.{name}: {exc}") from exc
    return conductor


def configured_conductor(store: Any, path: str | None) -> Conductor:
    """A conductor with the operator's settings file (``--config`` or ``$IRONIC_FSM_CONFIG``).

    The file is JSON: ``{"config": {<Config options>}, "runbooks": {name:
    {"steps": [...], "traits": [...]}}, "deploy_templates": {name: [...]}}``,
    every part optional. Runbooks and templates live in this file, not in
    the database, so every command sees the same ones.
    """
    return _settings_conductor(store, _read_settings(path))
