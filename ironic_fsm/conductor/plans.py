"""The plans: which steps a node's clean, deploy or service runs, asked of its driver.

:mod:`ironic_fsm.planner` is pure (step lists in, a plan out). This module
is the part that talks to plugins: it gathers the driver's steps
(:func:`gather_steps`), caches declared steps, automated-clean and plain
deploy plans per set of interface classes, and holds the conductor's
deploy templates and runbooks.
"""

from __future__ import annotations

import re
import uuid as _uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, cast

import attrs

from ironic_fsm.conductor.common import check_ident, driver_error, shown
from ironic_fsm.conductor.registry import declared_steps_of
from ironic_fsm.conductor.runtime import Job, Runtime
from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError, StepNotAllowed
from ironic_fsm.hardware import HardwareType
from ironic_fsm.node import Node, check_json, is_uuid_like
from ironic_fsm.planner import (
    check_requested_steps,
    plan_automated_clean,
    plan_deploy,
    sort_steps,
    validate_user_steps,
)
from ironic_fsm.steps import INTERFACE_ORDER, Phase, step_id
from ironic_fsm.stores.base import (
    CatalogEntry,
    CatalogEntryNotFound,
    CatalogKind,
    CatalogStore,
)
from ironic_fsm.task import Task

__all__ = ["Plans", "gather_steps", "plan_automated_clean_for", "refuse_steps"]

Step = dict[str, Any]


def gather_steps(
    phase: Phase, driver: HardwareType, task: Task, *, fresh: bool = False
) -> list[Step]:
    """The driver's ``phase`` steps (priority 0 included), in interface-table order.

    Only the interfaces of the phase's table are asked (for cleaning:
    vendor, power, management, firmware, deploy, bios, raid). An interface
    may raise :class:`~ironic_fsm.exceptions.StepsNotAvailable`.

    Declared steps are shared with their class unless ``fresh`` is true:
    read them, or ask for fresh dicts when the result will be changed or
    handed to users.
    """
    if not fresh:
        found = declared_steps_of(phase, driver)
        if found is not None:
            return list(found[1])
    steps: list[Step] = []
    for kind in INTERFACE_ORDER[phase]:
        iface = getattr(driver, kind, None)
        if iface is None:
            continue
        # Decorator-declared steps are read from the class, not copied: the
        # planner never changes the steps it is given.
        declared = None if fresh else iface.declared_steps(phase)
        if declared is None:
            method = f"get_{phase}_steps"
            try:
                declared = getattr(iface, method)(task)
            except IronicFSMError:
                raise
            except Exception as exc:
                raise driver_error(exc, task.node, kind, method) from exc
        steps.extend(declared)
    return steps


#: Plans that depend only on interface classes and settings, by those (see ``_cached_plan``).
_PLAN_CACHE: dict[tuple[Any, ...], tuple[Step, ...]] = {}
_CACHE_SIZE: Final = 256


def _cached_plan(key: tuple[Any, ...], plan: Callable[[], list[Step]]) -> list[Step]:
    """Fresh copies of the plan cached under ``key``, made by ``plan()`` the first time.

    A plan's dicts hold only strings, numbers and flags, besides the
    ``args`` dict: a shallow copy and new ``args`` make it the caller's own.
    """
    cached = _PLAN_CACHE.get(key)
    if cached is None:
        cached = tuple(plan())
        if len(_PLAN_CACHE) >= _CACHE_SIZE:
            _PLAN_CACHE.clear()
        _PLAN_CACHE[key] = cached
    return [{**step, "args": dict(step["args"])} for step in cached]


def plan_automated_clean_for(
    driver: HardwareType,
    task: Task,
    *,
    overrides: Mapping[str, int] | None = None,
    disallowed: Iterable[str] = (),
) -> list[Step]:
    """:func:`~ironic_fsm.planner.plan_automated_clean` of the driver's steps, once per classes.

    When every cleaning interface declares its steps with decorators (the
    usual case), the plan depends only on the interface classes and the
    operator's settings, so it is computed once and then only copied.
    Interfaces whose steps depend on the node (agent-style ones that
    override ``get_clean_steps``) are asked every time.
    """
    found = declared_steps_of("clean", driver)
    if found is None:
        return plan_automated_clean(
            gather_steps("clean", driver, task), overrides=overrides, disallowed=disallowed
        )
    classes, steps = found
    blocked = tuple(disallowed)
    key = ("clean", classes, frozenset((overrides or {}).items()), blocked)
    return _cached_plan(
        key,
        lambda: plan_automated_clean(list(steps), overrides=overrides, disallowed=blocked),
    )


def _plan_deploy_for(driver: HardwareType, disallowed: Iterable[str]) -> list[Step] | None:
    """The deploy plan of the driver's own steps alone (no template, no user steps), once
    per classes; ``None`` when some interface's steps depend on the node."""
    found = declared_steps_of("deploy", driver)
    if found is None:
        return None
    classes, steps = found
    blocked = frozenset(disallowed)
    return _cached_plan(
        ("deploy", classes, blocked), lambda: plan_deploy(steps, disallowed=blocked)
    )


def refuse_steps(ident: str, phase: Phase, steps: Any) -> None:
    """Refuse a step list no driver could accept (see ``check_requested_steps``)."""
    problems = check_requested_steps(
        phase, steps, source=f"{phase}_steps", require_priority=phase == "deploy"
    )
    if problems:
        raise InvalidParameterValue(
            f"Node {ident}: invalid {phase} steps: {'; '.join(problems)}", node=ident
        )


#: Ironic's trait names (custom, or shaped like os-traits'): what a deploy template is named.
_TRAIT: Final = re.compile(r"(CUSTOM_[A-Z0-9_]+|[A-Z][A-Z0-9_]*)")
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


def _check_entry(kind: CatalogKind, entry: CatalogEntry) -> CatalogEntry:
    """Ironic's rules for a template's or runbook's fields, before the store sees it."""
    name = entry.name
    if not isinstance(name, str) or len(name) > 255 or not _TRAIT.fullmatch(name):
        raise InvalidParameterValue(
            f"{_WORDS[kind]} name {shown(name)} is not a trait name (CUSTOM_ and capitals, "
            "digits, '_'; at most 255 characters)",
            field="name",
        )
    check_json(entry.extra, f"{_WORDS[kind]} {name!r} extra")
    if type(entry.extra) is not dict:
        raise InvalidParameterValue(f"{_WORDS[kind]} {name!r}: extra must be an object")
    for flag in ("public", "disable_ramdisk"):
        if type(getattr(entry, flag)) is not bool:
            raise InvalidParameterValue(f"Runbook {name!r}: {flag} must be True or False")
    owner = entry.owner
    if owner is not None and (type(owner) is not str or len(owner) > 255):
        raise InvalidParameterValue(f"Runbook {name!r}: owner must be a string of <= 255")
    if entry.public and owner is not None:
        raise InvalidParameterValue(f"Runbook {name!r}: a public runbook cannot have an owner")
    steps = _checked_steps(kind, name, entry.steps)
    uuid = entry.uuid
    if not is_uuid_like(uuid):
        raise InvalidParameterValue(f"{_WORDS[kind]} {name!r}: {shown(uuid)} is not a UUID")
    return attrs.evolve(entry, uuid=str(_uuid.UUID(uuid)), steps=steps)


class Plans(Runtime):
    """Step queries, pre-validation, deploy templates and runbooks."""

    _templates: dict[str, list[dict[str, Any]]]
    _runbooks: dict[str, tuple[list[dict[str, Any]], frozenset[str]]]
    #: Where deploy templates and runbooks are kept: the store, if it can (both built-in
    #: stores do), else this process.
    _catalog: CatalogStore

    # -- deploy templates and runbooks kept in the store --------------------------------

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
        return self._catalog.add_entry("deploy_templates", _check_entry("deploy_templates", entry))

    def create_runbook(
        self, name: str, steps: Sequence[Mapping[str, Any]], *, uuid: str | None = None,
        extra: dict[str, Any] | None = None, public: bool = False, owner: str | None = None,
        disable_ramdisk: bool = False,
    ) -> CatalogEntry:  # fmt: skip
        """Store a runbook: a trait name, steps ``{interface, step, order[, args]}``."""
        entry = CatalogEntry(
            _new_uuid(uuid), name, _unchecked(steps), {} if extra is None else extra, public, owner,
            disable_ramdisk,
        )  # fmt: skip
        return self._catalog.add_entry("runbooks", _check_entry("runbooks", entry))

    def get_deploy_template(self, ident: str) -> CatalogEntry:
        """The stored deploy template with this UUID or name (CatalogEntryNotFound if none)."""
        return self._catalog.get_entry("deploy_templates", check_ident(ident))

    def get_runbook(self, ident: str) -> CatalogEntry:
        """The stored runbook with this UUID or name (CatalogEntryNotFound if none)."""
        return self._catalog.get_entry("runbooks", check_ident(ident))

    def list_deploy_templates(self) -> list[CatalogEntry]:
        """Every stored deploy template, in creation order."""
        return self._catalog.list_entries("deploy_templates")

    def list_runbooks(self) -> list[CatalogEntry]:
        """Every stored runbook, in creation order."""
        return self._catalog.list_entries("runbooks")

    def update_deploy_template(self, ident: str, **fields: Any) -> CatalogEntry:
        """Change ``name``, ``steps`` or ``extra``; checked as on creation."""
        return self._update_entry("deploy_templates", ident, fields, {"name", "steps", "extra"})

    def update_runbook(self, ident: str, **fields: Any) -> CatalogEntry:
        """Change ``name``, ``steps``, ``extra``, ``public``, ``owner`` or ``disable_ramdisk``."""
        allowed = {"name", "steps", "extra", "public", "owner", "disable_ramdisk"}
        return self._update_entry("runbooks", ident, fields, allowed)

    def delete_deploy_template(self, ident: str) -> None:
        self._catalog.delete_entry("deploy_templates", check_ident(ident))

    def delete_runbook(self, ident: str) -> None:
        self._catalog.delete_entry("runbooks", check_ident(ident))

    def _update_entry(
        self, kind: CatalogKind, ident: str, fields: dict[str, Any], allowed: set[str]
    ) -> CatalogEntry:
        unknown = sorted(set(fields) - allowed)
        if unknown:
            raise InvalidParameterValue(
                f"{_WORDS[kind]} fields {', '.join(unknown)} cannot be changed", fields=unknown
            )
        current = self._catalog.get_entry(kind, check_ident(ident))
        changed = _check_entry(kind, attrs.evolve(current, **fields))
        return self._catalog.replace_entry(kind, changed)

    def _deploy_templates(self) -> dict[str, list[dict[str, Any]]]:
        """The templates a deploy may use: the stored ones, and this process's by name."""
        stored = {e.name: e.steps for e in self._catalog.list_entries("deploy_templates")}
        return {**stored, **self._templates}

    def _find_runbook(self, node: Node, name: str) -> tuple[list[dict[str, Any]], frozenset[str]]:
        """A runbook's clean steps (in ``order``) and the traits that allow it."""
        entry = self._runbooks.get(name)
        if entry is not None:
            return entry
        try:
            stored = self._catalog.get_entry("runbooks", name)
        except CatalogEntryNotFound:
            raise InvalidParameterValue(
                f"Node {node.uuid}: no runbook named {name!r}", node=node.uuid
            ) from None
        ordered = sorted(stored.steps, key=lambda st: st["order"])
        steps = [{k: v for k, v in st.items() if k != "order"} for st in ordered]
        return steps, frozenset({stored.name})  # below 1.112 the name is the trait

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

    # -- the driver's steps -----------------------------------------------------------

    def _driver_steps(self, job: Job, phase: Phase) -> list[dict[str, Any]]:
        return gather_steps(phase, job.driver, job.task)

    def _steps_for(
        self, ident: str, phase: Phase, *, fresh: bool = False
    ) -> tuple[Node, list[dict[str, Any]]]:
        node = self.store.get(check_ident(ident))
        task = self._task_for(node)
        return node, gather_steps(phase, task.driver, task, fresh=fresh)

    def get_clean_steps(self, ident: str, min_priority: int = 0) -> list[dict[str, Any]]:
        """The node's clean steps (operator overrides applied), highest priority first."""
        if isinstance(min_priority, bool) or not isinstance(min_priority, int):
            raise InvalidParameterValue(
                f"Node {ident}: min_priority must be an integer, not {shown(min_priority)}",
                node=ident,
            )
        _, steps = self._steps_for(ident, "clean", fresh=True)
        overrides = self.config.clean_step_priority_override
        for step in steps:
            step["priority"] = overrides.get(step_id(step), step["priority"])
        return [st for st in sort_steps("clean", steps) if st["priority"] >= min_priority]

    def get_deploy_steps(self, ident: str) -> list[dict[str, Any]]:
        """The node's deploy steps, highest priority first."""
        _, steps = self._steps_for(ident, "deploy", fresh=True)
        return sort_steps("deploy", steps)

    def get_service_steps(self, ident: str) -> list[dict[str, Any]]:
        """The node's service steps, highest priority first."""
        _, steps = self._steps_for(ident, "service", fresh=True)
        return sort_steps("service", steps)

    # -- checking a request, with no state change -------------------------------------

    def validate_clean_steps(
        self, ident: str, clean_steps: Sequence[Any], disable_ramdisk: bool = False
    ) -> list[dict[str, Any]]:
        """Check a manual clean request without changing anything; return the plan."""
        return self._validate_user_request(ident, "clean", clean_steps, disable_ramdisk)

    def validate_service_steps(
        self, ident: str, service_steps: Sequence[Any], disable_ramdisk: bool = False
    ) -> list[dict[str, Any]]:
        """Check a service request without changing anything; return the plan."""
        return self._validate_user_request(ident, "service", service_steps, disable_ramdisk)

    def _validate_user_request(
        self, ident: str, phase: Phase, requested: Sequence[Any], disable_ramdisk: bool
    ) -> list[dict[str, Any]]:
        refuse_steps(ident, phase, requested)
        node, steps = self._steps_for(ident, phase)
        return validate_user_steps(
            phase, steps, requested, disallowed=getattr(self.config, f"disallow_{phase}_steps"),
            disable_ramdisk=disable_ramdisk, node=node.uuid,
        )  # fmt: skip

    def validate_deploy_steps(
        self, ident: str, deploy_steps: Sequence[Any] | None = None
    ) -> list[dict[str, Any]]:
        """Check a deploy request (templates included) without changing anything."""
        if deploy_steps is not None:
            refuse_steps(ident, "deploy", deploy_steps)
        node, steps = self._steps_for(ident, "deploy")
        return self._plan_deploy(node, steps, deploy_steps)

    # -- plans --------------------------------------------------------------------------

    def _deploy_plan(self, job: Job, user_steps: Sequence[Any] | None) -> list[dict[str, Any]]:
        """The job's deploy plan: :meth:`_plan_deploy` of the driver's steps.

        With no user steps and no instance traits (so no template either)
        only the driver's steps count: planned once per interface classes.
        """
        if not user_steps and not job.node.instance_info.get("traits"):
            plan = _plan_deploy_for(job.driver, self.config.disallow_deploy_steps)
            if plan is not None:
                return plan
        return self._plan_deploy(job.node, self._driver_steps(job, "deploy"), user_steps)

    def _plan_deploy(
        self, node: Node, steps: list[dict[str, Any]], user_steps: Sequence[Any] | None
    ) -> list[dict[str, Any]]:
        instance_traits = node.instance_info.get("traits") or []
        # A template applies through a trait only: a node with none skips the store's read.
        templates = self._deploy_templates() if node.traits or instance_traits else {}
        return plan_deploy(
            steps,
            templates=templates,
            user_steps=user_steps,
            node_traits=node.traits,
            instance_traits=instance_traits,
            disallowed=self.config.disallow_deploy_steps,
            node=node.uuid,
        )

    def _runbook_steps(self, node: Node, name: str) -> list[dict[str, Any]]:
        """A copy of the runbook's steps, if the node carries one of its traits."""
        steps, traits = self._find_runbook(node, name)
        allowed = traits or frozenset({name})
        if not allowed & set(node.traits):
            raise InvalidParameterValue(
                f"Runbook {name!r} has not been approved for node {node.uuid}: the node "
                f"carries none of its traits ({', '.join(sorted(allowed))})",
                node=node.uuid,
            )
        return [dict(step) for step in steps]

    def _check_disallowed(self, node: Node, phase: Phase, steps: Sequence[Any]) -> None:
        blocked = set(getattr(self.config, f"disallow_{phase}_steps"))
        bad = [step_id(st) for st in steps if isinstance(st, Mapping) and step_id(st) in blocked]
        if bad:
            raise StepNotAllowed(
                f"Node {node.uuid}: {phase} step(s) {', '.join(bad)} are not allowed "
                f"(operator configuration disallow_{phase}_steps)",
                node=node.uuid,
                steps=bad,
            )

    def _skip_automated_clean(self, node: Node) -> bool:
        if node.automated_clean is None:
            return not self.config.automated_clean
        return not node.automated_clean

    def _plan_clean(
        self, job: Job, user_steps: Sequence[Any] | None, disable_ramdisk: bool
    ) -> list[dict[str, Any]]:
        """The steps of this cleaning: the user's, a runbook's, or the driver's."""
        blocked = self.config.disallow_clean_steps
        if user_steps is not None:
            # No node prefix: the caller's message names the node already.
            return validate_user_steps(
                "clean", self._driver_steps(job, "clean"), user_steps, disallowed=blocked,
                disable_ramdisk=disable_ramdisk,
            )  # fmt: skip
        runbook = self._automated_runbook(job.node)
        if runbook is not None:
            # Declarative automated cleaning: in list order; disallowed steps
            # are dropped silently, as for driver steps.
            wanted = [st for st in runbook if step_id(st) not in blocked]
            return validate_user_steps("clean", self._driver_steps(job, "clean"), wanted)
        return plan_automated_clean_for(
            job.driver, job.task, overrides=self.config.clean_step_priority_override,
            disallowed=blocked,
        )  # fmt: skip

    def _automated_runbook(self, node: Node) -> list[dict[str, Any]] | None:
        """The runbook automated cleaning must use, if the configuration asks for one."""
        config = self.config
        if config.automated_cleaning_step_source == "autogenerated":
            return None
        name = None
        if config.automated_cleaning_runbook_from_node:
            name = node.driver_info.get("cleaning_runbook")
        name = (
            name
            or config.automated_cleaning_runbook_by_resource_class.get(node.resource_class or "")
            or config.automated_cleaning_runbook
        )
        if name is None:
            if config.automated_cleaning_step_source == "runbook":
                raise InvalidParameterValue(
                    f"Unable to perform cleaning for node {node.uuid}: configuration requires a "
                    "runbook for automated cleaning and none was configured",
                    node=node.uuid,
                )
            return None
        if config.automated_cleaning_runbook_validate_traits:
            return self._runbook_steps(node, name)
        return [dict(step) for step in self._find_runbook(node, name)[0]]
