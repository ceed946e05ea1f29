"""The catalog: deploy templates and runbooks, stored or given to this process.

Stored ones live in the store's catalog if it keeps one (both built-in stores
do), else in this conductor's memory (:attr:`~ironic_fsm.stores.capabilities.
StoreCapabilities.catalog`); those given with ``add_deploy_template`` and
``add_runbook`` (a settings file's) live in this part only, and shadow stored
ones of the same name.
"""

from __future__ import annotations

import re
import uuid as _uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, cast

import attrs

from ironic_fsm.conductor.common import check_ident, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import Node, check_json, is_uuid_like
from ironic_fsm.planner import check_requested_steps
from ironic_fsm.steps import INTERFACE_ORDER, Phase
from ironic_fsm.stores.base import CatalogEntry, CatalogEntryNotFound, CatalogKind

__all__ = ["Catalog"]


#: Ironic's trait names (custom, or shaped like os-traits'): what a deploy template is named.
_TRAIT: Final = re.compile(r"(CUSTOM_[A-Z0-9_]+|[A-Z][A-Z0-9_]*)")
#: A logical name (a node's name's characters): what a runbook may be named from 1.112.
_LOGICAL_NAME: Final = re.compile(r"[A-Za-z0-9\-._~]+")
#: The keys of a stored deploy template's and runbook's steps (``args`` optional in a runbook).
_STEP_KEYS: Final[dict[CatalogKind, frozenset[str]]] = {
    "deploy_templates": frozenset({"interface", "step", "args", "priority"}),
    "runbooks": frozenset({"interface", "step", "args", "order"}),
}
_WORDS: Final[dict[CatalogKind, str]] = {
    "deploy_templates": "Deploy template",
    "runbooks": "Runbook",
}


def _whole_number(value: Any) -> int | None:
    """An integer >= 0, or a string of digits (Ironic takes both for priority and order)."""
    if type(value) is int and value >= 0:
        return value
    if type(value) is str and value.isdigit() and value.isascii():
        return int(value)
    return None


def _step_problems(kind: CatalogKind, number: int, step: Any) -> list[str]:
    where = f"step {number}"
    if not isinstance(step, Mapping):
        return [f"{where} must be an object, not {type(step).__name__}"]
    rank = "priority" if kind == "deploy_templates" else "order"
    required = _STEP_KEYS[kind] - ({"args"} if kind == "runbooks" else set())
    problems = [f"{where} lacks {key!r}" for key in sorted(required - step.keys())]
    problems += [
        f"{where} has an unknown key {key!r}" for key in sorted(step.keys() - _STEP_KEYS[kind])
    ]
    phase: Phase = "deploy" if kind == "deploy_templates" else "clean"
    if "interface" in step and step["interface"] not in INTERFACE_ORDER[phase]:
        problems.append(f"{where}: {shown(step['interface'])} is not a {phase} interface")
    if rank in step and _whole_number(step[rank]) is None:
        problems.append(f"{where}: {rank} must be an integer >= 0, not {shown(step[rank])}")
    return problems


def _checked_steps(kind: CatalogKind, name: str, steps: Any) -> list[dict[str, Any]]:
    """The steps of a stored template or runbook, in Ironic's shape; numbers as integers."""
    problems: list[str] = []
    if not isinstance(steps, list) or not steps:
        problems.append("steps must be a non-empty list")
    else:
        for number, step in enumerate(steps, 1):
            problems += _step_problems(kind, number, step)
    if not problems:
        problems = check_requested_steps(
            "deploy" if kind == "deploy_templates" else "clean", steps, source="steps"
        )
    seen = [(st.get("interface"), st.get("step")) for st in steps] if not problems else []
    if len(set(seen)) != len(seen):
        problems.append("a step (interface and step) appears twice")
    if problems:
        raise InvalidParameterValue(
            f"Invalid {_WORDS[kind].lower()} {name!r}: {'; '.join(problems)}", problems=problems
        )
    rank = "priority" if kind == "deploy_templates" else "order"
    return [{**step, "args": dict(step.get("args") or {}), rank: _whole_number(step[rank])}
            for step in steps]  # fmt: skip


def _unchecked(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The caller's steps as given: :func:`_check_entry` checks them before anything is kept."""
    return cast(list[dict[str, Any]], list(steps))


def _new_uuid(uuid: str | None) -> str:
    """The UUID a new template or runbook was given, else a fresh one."""
    return str(_uuid.uuid4()) if uuid is None else uuid


def _check_name(kind: CatalogKind, entry: CatalogEntry) -> None:
    """A template's name is a trait; a runbook's may also be a logical name (Ironic 1.112)."""
    name = entry.name
    if not isinstance(name, str) or not 0 < len(name) <= 255:
        pass
    elif _TRAIT.fullmatch(name) or (kind == "runbooks" and _LOGICAL_NAME.fullmatch(name)):
        return
    what = "a trait name (CUSTOM_ and capitals, digits, '_')"
    if kind == "runbooks":
        what += " or a logical name (letters, digits, '-', '.', '_', '~')"
    raise InvalidParameterValue(
        f"{_WORDS[kind]} name {shown(name)} is not {what}, of at most 255 characters",
        field="name",
    )


def _check_runbook_fields(name: str, entry: CatalogEntry) -> None:
    """The fields only a runbook sets: flags, owner, description, traits."""
    for flag in ("public", "disable_ramdisk"):
        if type(getattr(entry, flag)) is not bool:
            raise InvalidParameterValue(f"Runbook {name!r}: {flag} must be True or False")
    owner = entry.owner
    if owner is not None and (type(owner) is not str or len(owner) > 255):
        raise InvalidParameterValue(f"Runbook {name!r}: owner must be a string of <= 255")
    if entry.public and owner is not None:
        raise InvalidParameterValue(f"Runbook {name!r}: a public runbook cannot have an owner")
    description = entry.description
    if description is not None and (type(description) is not str or len(description) > 255):
        raise InvalidParameterValue(
            f"Runbook {name!r}: description must be a string of <= 255 characters",
            field="description",
        )
    traits = entry.traits
    if type(traits) is not list or not all(
        type(t) is str and len(t) <= 255 and _TRAIT.fullmatch(t) for t in traits
    ):
        raise InvalidParameterValue(
            f"Runbook {name!r}: traits must be a list of trait names", field="traits"
        )


def _check_entry(kind: CatalogKind, entry: CatalogEntry) -> CatalogEntry:
    """Ironic's rules for a template's or runbook's fields, before the store sees it."""
    _check_name(kind, entry)
    name = entry.name
    _check_runbook_fields(name, entry)
    check_json(entry.extra, f"{_WORDS[kind]} {name!r} extra")
    if type(entry.extra) is not dict:
        raise InvalidParameterValue(f"{_WORDS[kind]} {name!r}: extra must be an object")
    steps = _checked_steps(kind, name, entry.steps)
    uuid = entry.uuid
    if not is_uuid_like(uuid):
        # Ironic's words ("Expected UUID for uuid: ..."), which clients match.
        raise InvalidParameterValue(
            f"{_WORDS[kind]} {name!r}: Expected UUID for uuid: {shown(uuid)}"
        )
    return attrs.evolve(entry, uuid=str(_uuid.UUID(uuid)), steps=steps)


class Catalog:
    """Deploy templates and runbooks: created, read, changed and deleted, checked as Ironic does."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        #: The templates given to :meth:`add_deploy_template`, by name.
        self._templates: dict[str, list[dict[str, Any]]] = {}
        #: The runbooks given to :meth:`add_runbook`, by name: steps and the traits allowing them.
        self._runbooks: dict[str, tuple[list[dict[str, Any]], frozenset[str]]] = {}

    def added_deploy_templates(self) -> dict[str, list[dict[str, Any]]]:
        """The templates given to :meth:`add_deploy_template` (this process's), as copies."""
        return {name: [dict(step) for step in steps] for name, steps in self._templates.items()}

    def create_deploy_template(
        self, name: str, steps: Sequence[Mapping[str, Any]], *, uuid: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> CatalogEntry:  # fmt: skip
        """Store a deploy template: its name is a trait, its steps Ironic's
        ``{interface, step, args, priority}``. Raises CatalogEntryExists for a taken name."""
        entry = CatalogEntry(
            _new_uuid(uuid), name, _unchecked(steps), {} if extra is None else extra
        )
        return self._ctx.caps.catalog.add_entry(
            "deploy_templates", _check_entry("deploy_templates", entry)
        )

    def create_runbook(
        self, name: str, steps: Sequence[Mapping[str, Any]], *, uuid: str | None = None,
        extra: dict[str, Any] | None = None, public: bool = False, owner: str | None = None,
        disable_ramdisk: bool = False, description: str | None = None,
        traits: Sequence[str] | None = None,
    ) -> CatalogEntry:  # fmt: skip
        """Store a runbook: steps ``{interface, step, order[, args]}``; its name is the
        trait a node needs, unless ``traits`` lists them (then any name will do)."""
        entry = CatalogEntry(
            _new_uuid(uuid), name, _unchecked(steps), {} if extra is None else extra, public, owner,
            disable_ramdisk, description=description, traits=list(traits or ()),
        )  # fmt: skip
        return self._ctx.caps.catalog.add_entry("runbooks", _check_entry("runbooks", entry))

    def get_deploy_template(self, ident: str) -> CatalogEntry:
        """The stored deploy template with this UUID or name (CatalogEntryNotFound if none)."""
        return self._ctx.caps.catalog.get_entry("deploy_templates", check_ident(ident))

    def get_runbook(self, ident: str) -> CatalogEntry:
        """The stored runbook with this UUID or name (CatalogEntryNotFound if none)."""
        return self._ctx.caps.catalog.get_entry("runbooks", check_ident(ident))

    def list_deploy_templates(self) -> list[CatalogEntry]:
        """Every stored deploy template, in creation order."""
        return self._ctx.caps.catalog.list_entries("deploy_templates")

    def list_runbooks(self) -> list[CatalogEntry]:
        """Every stored runbook, in creation order."""
        return self._ctx.caps.catalog.list_entries("runbooks")

    def update_deploy_template(self, ident: str, **fields: Any) -> CatalogEntry:
        """Change ``name``, ``steps`` or ``extra``; checked as on creation."""
        return self.update_entry("deploy_templates", ident, fields, {"name", "steps", "extra"})

    def update_runbook(self, ident: str, **fields: Any) -> CatalogEntry:
        """Change ``name``, ``steps``, ``extra``, ``public``, ``owner``, ``disable_ramdisk``,
        ``description`` or ``traits``."""
        allowed = {
            "name", "steps", "extra", "public", "owner", "disable_ramdisk", "description", "traits",
        }  # fmt: skip
        return self.update_entry("runbooks", ident, fields, allowed)

    def delete_deploy_template(self, ident: str) -> None:
        self._ctx.caps.catalog.delete_entry("deploy_templates", check_ident(ident))

    def delete_runbook(self, ident: str) -> None:
        self._ctx.caps.catalog.delete_entry("runbooks", check_ident(ident))

    def update_entry(
        self, kind: CatalogKind, ident: str, fields: dict[str, Any], allowed: set[str]
    ) -> CatalogEntry:
        unknown = sorted(set(fields) - allowed)
        if unknown:
            raise InvalidParameterValue(
                f"{_WORDS[kind]} fields {', '.join(unknown)} cannot be changed", fields=unknown
            )
        current = self._ctx.caps.catalog.get_entry(kind, check_ident(ident))
        changed = _check_entry(kind, attrs.evolve(current, **fields))
        return self._ctx.caps.catalog.replace_entry(kind, changed)

    def deploy_templates(self) -> dict[str, list[dict[str, Any]]]:
        """The templates a deploy may use: the stored ones, and this process's by name."""
        stored = {e.name: e.steps for e in self._ctx.caps.catalog.list_entries("deploy_templates")}
        return {**stored, **self._templates}

    def find_runbook(self, node: Node, name: str) -> tuple[list[dict[str, Any]], frozenset[str]]:
        """A runbook's clean steps (in ``order``) and the traits that allow it."""
        entry = self._runbooks.get(name)
        if entry is not None:
            return entry
        try:
            stored = self._ctx.caps.catalog.get_entry("runbooks", name)
        except CatalogEntryNotFound:
            raise InvalidParameterValue(
                f"Node {node.uuid}: no runbook named {name!r}", node=node.uuid
            ) from None
        ordered = sorted(stored.steps, key=lambda st: st["order"])
        steps = [{k: v for k, v in st.items() if k != "order"} for st in ordered]
        # Its traits (1.112), else its name is the trait, as before.
        return steps, frozenset(stored.traits or (stored.name,))

    def add_deploy_template(self, name: str, steps: Sequence[Mapping[str, Any]]) -> None:
        """A named set of deploy steps, applied to nodes whose instance traits name it.

        Each step is ``{'interface', 'step', 'args', 'priority'}``.
        """
        if not isinstance(name, str) or not name:
            raise InvalidParameterValue(f"Deploy template name must be a string, not {shown(name)}")
        problems = check_requested_steps(
            "deploy", steps, source=f"deploy template {name}", require_priority=True
        )
        if problems:
            raise InvalidParameterValue(
                f"Invalid deploy template {name!r}: {'; '.join(problems)}", problems=problems
            )
        self._templates[name] = [dict(step) for step in steps]

    def add_runbook(
        self, name: str, steps: Sequence[Mapping[str, Any]], traits: Iterable[str] = ()
    ) -> None:
        """A named list of steps for manual cleaning or servicing.

        A runbook may be used on a node that carries one of ``traits``
        (or, with no traits, a node that carries the runbook's name as a trait).
        """
        if not isinstance(name, str) or not name:
            raise InvalidParameterValue(f"Runbook name must be a string, not {shown(name)}")
        problems = check_requested_steps("clean", steps, source=f"runbook {name}")
        if not isinstance(traits, (list, tuple, set, frozenset)) or not all(
            type(trait) is str and trait for trait in traits
        ):
            problems.append(f"the traits of runbook {name} must be a list of trait names")
        if problems:
            raise InvalidParameterValue(
                f"Invalid runbook {name!r}: {'; '.join(problems)}", problems=problems
            )
        self._runbooks[name] = ([dict(step) for step in steps], frozenset(traits))
