"""The plans: which steps a node's clean, deploy or service runs, asked of its driver.

:mod:`ironic_fsm.planner` is pure (step lists in, a plan out). This module
is the part that talks to plugins: it gathers the driver's steps
(:func:`gather_steps`), caches declared steps, automated-clean and plain
deploy plans per set of interface classes, and holds the conductor's
deploy templates and runbooks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from ironic_fsm.conductor.catalog import Catalog
from ironic_fsm.conductor.common import check_ident, driver_error, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.jobs import Job
from ironic_fsm.conductor.registry import declared_steps_of
from ironic_fsm.exceptions import (
    DriverError,
    InvalidParameterValue,
    IronicFSMError,
    StepNotAllowed,
    StepsNotAvailable,
)
from ironic_fsm.hardware import HardwareType
from ironic_fsm.node import Node
from ironic_fsm.planner import (
    check_requested_steps,
    plan_automated_clean,
    plan_deploy,
    sort_steps,
    validate_user_steps,
)
from ironic_fsm.steps import INTERFACE_ORDER, Phase, step_id
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
            error = None
            try:
                declared = getattr(iface, method)(task)
            except IronicFSMError:
                raise
            except Exception as exc:
                error = driver_error(exc, task.node, kind, method)
            if error is not None:
                raise error  # outside the handler: the original must not become its context
        steps.extend(declared or ())
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


class Plans:
    """Step queries, pre-validation, and the plans of clean, deploy and service."""

    def __init__(self, ctx: Context, catalog: Catalog) -> None:
        self._ctx, self._catalog = ctx, catalog

    # -- the driver's steps -----------------------------------------------------------

    def driver_steps(self, job: Job, phase: Phase) -> list[dict[str, Any]]:
        return gather_steps(phase, job.driver, job.task)

    def _steps_for(
        self, ident: str, phase: Phase, *, fresh: bool = False
    ) -> tuple[Node, list[dict[str, Any]]]:
        node = self._ctx.caps.store.get(check_ident(ident))
        task = self._ctx.task_for(node)
        return node, gather_steps(phase, task.driver, task, fresh=fresh)

    def get_clean_steps(self, ident: str, min_priority: int = 0) -> list[dict[str, Any]]:
        """The node's clean steps (operator overrides applied), highest priority first."""
        if isinstance(min_priority, bool) or not isinstance(min_priority, int):
            raise InvalidParameterValue(
                f"Node {ident}: min_priority must be an integer, not {shown(min_priority)}",
                node=ident,
            )
        _, steps = self._steps_for(ident, "clean", fresh=True)
        overrides = self._ctx.config.clean_step_priority_override
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
        disallowed = getattr(self._ctx.config, f"disallow_{phase}_steps")
        return validate_user_steps(
            phase, steps, requested, disallowed=disallowed, disable_ramdisk=disable_ramdisk,
            node=node.uuid,
        )  # fmt: skip

    def validate_deploy_steps(
        self, ident: str, deploy_steps: Sequence[Any] | None = None
    ) -> list[dict[str, Any]]:
        """Check a deploy request (templates included) without changing anything."""
        if deploy_steps is not None:
            refuse_steps(ident, "deploy", deploy_steps)
        node, steps = self._steps_for(ident, "deploy")
        return self.plan_deploy(node, steps, deploy_steps)

    # -- plans --------------------------------------------------------------------------

    def deploy_plan(self, job: Job, user_steps: Sequence[Any] | None) -> list[dict[str, Any]]:
        """The job's deploy plan: :meth:`_plan_deploy` of the driver's steps.

        With no user steps and no instance traits (so no template either)
        only the driver's steps count: planned once per interface classes.
        """
        if not user_steps and not job.node.instance_info.get("traits"):
            plan = _plan_deploy_for(job.driver, self._ctx.config.disallow_deploy_steps)
            if plan is not None:
                return plan
        return self.plan_deploy(job.node, self.driver_steps(job, "deploy"), user_steps)

    def plan_deploy(
        self, node: Node, steps: list[dict[str, Any]], user_steps: Sequence[Any] | None
    ) -> list[dict[str, Any]]:
        instance_traits = node.instance_info.get("traits") or []
        # A template applies through a trait only: a node with none skips the store's read.
        templates = self._catalog.deploy_templates() if node.traits or instance_traits else {}
        return plan_deploy(
            steps,
            templates=templates,
            user_steps=user_steps,
            node_traits=node.traits,
            instance_traits=instance_traits,
            disallowed=self._ctx.config.disallow_deploy_steps,
            node=node.uuid,
        )

    def runbook_steps(self, node: Node, name: str) -> list[dict[str, Any]]:
        """A copy of the runbook's steps, if the node carries one of its traits."""
        steps, traits = self._catalog.find_runbook(node, name)
        allowed = traits or frozenset({name})
        if not allowed & set(node.traits):
            raise InvalidParameterValue(
                f"Runbook {name!r} has not been approved for node {node.uuid}: the node "
                f"carries none of its traits ({', '.join(sorted(allowed))})",
                node=node.uuid,
            )
        return [dict(step) for step in steps]

    def check_disallowed(self, node: Node, phase: Phase, steps: Sequence[Any]) -> None:
        blocked = set(getattr(self._ctx.config, f"disallow_{phase}_steps"))
        bad = [step_id(st) for st in steps if isinstance(st, Mapping) and step_id(st) in blocked]
        if bad:
            raise StepNotAllowed(
                f"Node {node.uuid}: {phase} step(s) {', '.join(bad)} are not allowed "
                f"(operator configuration disallow_{phase}_steps)",
                node=node.uuid,
                steps=bad,
            )

    def check_requested(
        self, job: Job, phase: Phase, steps: Sequence[Any], disable_ramdisk: bool
    ) -> None:
        """Check a manual clean's or a service's steps against the driver before anything moves.

        One rule for every entry point (library, CLI, API): a request with
        unknown steps or wrong arguments is refused, and the node stays as it
        was. A driver that learns its steps from the ramdisk cannot tell yet
        (:class:`StepsNotAvailable`): its steps are checked once it can. A
        driver that fails to list them is a hardware failure, not bad input:
        the flow meets it again and fails the node, as Ironic does.
        """
        try:
            steps_known = self.driver_steps(job, phase)
        except (StepsNotAvailable, DriverError):
            return
        disallowed = getattr(self._ctx.config, f"disallow_{phase}_steps")
        validate_user_steps(
            phase, steps_known, steps, disallowed=disallowed, disable_ramdisk=disable_ramdisk,
            node=job.node.uuid,
        )  # fmt: skip

    def skip_automated_clean(self, node: Node) -> bool:
        if node.automated_clean is None:
            return not self._ctx.config.automated_clean
        return not node.automated_clean

    def plan_clean(
        self, job: Job, user_steps: Sequence[Any] | None, disable_ramdisk: bool
    ) -> list[dict[str, Any]]:
        """The steps of this cleaning: the user's, a runbook's, or the driver's."""
        blocked = self._ctx.config.disallow_clean_steps
        if user_steps is not None:
            # No node prefix: the caller's message names the node already.
            return validate_user_steps(
                "clean", self.driver_steps(job, "clean"), user_steps, disallowed=blocked,
                disable_ramdisk=disable_ramdisk,
            )  # fmt: skip
        runbook = self.automated_runbook(job.node)
        if runbook is not None:
            # Declarative automated cleaning: in list order; disallowed steps
            # are dropped silently, as for driver steps.
            wanted = [st for st in runbook if step_id(st) not in blocked]
            return validate_user_steps("clean", self.driver_steps(job, "clean"), wanted)
        return plan_automated_clean_for(
            job.driver, job.task, overrides=self._ctx.config.clean_step_priority_override,
            disallowed=blocked,
        )  # fmt: skip

    def automated_runbook(self, node: Node) -> list[dict[str, Any]] | None:
        """The runbook automated cleaning must use, if the configuration asks for one."""
        config = self._ctx.config
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
            return self.runbook_steps(node, name)
        return [dict(step) for step in self._catalog.find_runbook(node, name)[0]]
