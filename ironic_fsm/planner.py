"""Step planning: which steps run, in which order, with which arguments.

Everything here is pure: step lists in, step lists out, no I/O, no clock,
no node changes, no calls into interfaces or hardware types. The conductor
gathers the driver's steps (:func:`ironic_fsm.conductor.plans.gather_steps`),
calls the planner, and executes the plan it gets back; callers can also use
the planner to check a request before acting on it.

Steps are Ironic-style dicts (``interface``, ``step``, ``priority``,
``abortable``, ``argsinfo``, ...). A requested step is
``{'interface', 'step', 'args'}``. Plans are lists of fresh dicts with
``interface``, ``step``, ``args``, ``priority`` and ``abortable`` (and
``requires_ramdisk`` for clean and service steps), ready to persist.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.node import check_json
from ironic_fsm.steps import INTERFACE_ORDER, RESERVED_STEPS, Phase, step_id

__all__ = [
    "CORE_DEPLOY_STEP",
    "MAX_WAIT_SECONDS",
    "check_priority_conflicts",
    "check_requested_steps",
    "plan_automated_clean",
    "plan_deploy",
    "sort_steps",
    "validate_user_steps",
]

#: The deploy step every deploy interface provides; it may be disabled, not moved.
CORE_DEPLOY_STEP: Final = "deploy.deploy"

#: The longest a ``wait`` step may wait (a week): longer is a typo, and
#: beyond what a clock can add without overflowing.
MAX_WAIT_SECONDS: Final = 7 * 24 * 3600

Step = dict[str, Any]


def sort_steps(phase: Phase, steps: Iterable[Step]) -> list[Step]:
    """Highest priority first; ties by interface (vendor, power, management, ...).

    Equal priority and interface keep their given order (the sort is stable).
    """
    rank = INTERFACE_ORDER[phase]
    return sorted(
        steps, key=lambda st: (st.get("priority") or 0, rank.get(st["interface"], 0)), reverse=True
    )


def _plan_entry(step: Mapping[str, Any], priority: int, args: Mapping[str, Any]) -> Step:
    entry: Step = {
        "interface": step["interface"],
        "step": step["step"],
        "args": dict(args),
        "priority": priority,
        "abortable": bool(step.get("abortable", False)),
    }
    if "requires_ramdisk" in step:
        entry["requires_ramdisk"] = step["requires_ramdisk"]
    return entry


def plan_automated_clean(
    driver_steps: Iterable[Step],
    *,
    overrides: Mapping[str, int] | None = None,
    disallowed: Iterable[str] = (),
) -> list[Step]:
    """The steps of an automated clean, in run order.

    Operator ``overrides`` (``{'iface.step': priority}``) apply first: they
    can enable a priority-0 step or disable one (0). Disabled and
    ``disallowed`` steps are dropped; the rest are sorted by priority, then
    by interface.
    """
    # By interface, so that the common case (no override, not blocked) needs
    # no "iface.step" string per step.
    override_by_iface: dict[str, dict[str, int]] = {}
    for sid, prio in (overrides or {}).items():
        iface, _, name = sid.partition(".")
        override_by_iface.setdefault(iface, {})[name] = prio
    blocked_by_iface: dict[str, set[str]] = {}
    for sid in disallowed:
        iface, _, name = sid.partition(".")
        blocked_by_iface.setdefault(iface, set()).add(name)
    rank = INTERFACE_ORDER["clean"]
    chosen: list[tuple[int, int, int, Mapping[str, Any]]] = []
    for index, step in enumerate(driver_steps):
        iface = step["interface"]
        priority = step["priority"]
        if iface in override_by_iface:
            priority = override_by_iface[iface].get(step["step"], priority)
        if priority and not (iface in blocked_by_iface and step["step"] in blocked_by_iface[iface]):
            chosen.append((priority, rank.get(iface, 0), -index, step))
    chosen.sort(reverse=True)  # the unique -index decides before the dicts compare
    return [
        {
            "interface": step["interface"],
            "step": step["step"],
            "args": {},
            "priority": priority,
            "abortable": step.get("abortable", False),
            "requires_ramdisk": step.get("requires_ramdisk", True),
        }
        for priority, _, _, step in chosen
    ]


def check_priority_conflicts(
    phase: Phase,
    driver_steps: Iterable[Step],
    *,
    overrides: Mapping[str, int] | None = None,
    owner: str = "hardware type",
) -> None:
    """Refuse two enabled steps of one interface with the same priority.

    Their order would be an accident of method names; Ironic silently
    accepts it, we make the operator decide.

    Raises:
        InvalidParameterValue: naming both steps and their priority.
    """
    overrides = overrides or {}
    seen: dict[tuple[str, int], str] = {}
    for step in driver_steps:
        sid = step_id(step)
        priority = overrides.get(sid, step["priority"])
        if not priority:
            continue
        other = seen.setdefault((step["interface"], priority), sid)
        if other != sid:
            raise InvalidParameterValue(
                f"{owner}: {phase} steps {other} and {sid} of the {step['interface']} "
                f"interface both have priority {priority}; give one another priority "
                f"(e.g. with clean_step_priority_override)",
                steps=[other, sid],
                priority=priority,
            )


def _describe(phase: str, step: Any) -> str:
    if isinstance(step, Mapping):
        return f"{phase} step {step_id(step)}"
    return f"{phase} step {step!r}"


_USER_KEYS: Final = frozenset({"interface", "step", "args", "priority", "order"})
_RESERVED_ARGS: Final[Mapping[str, frozenset[str]]] = {
    "hold": frozenset(),
    "wait": frozenset({"seconds"}),
    "power_on": frozenset(),
    "power_off": frozenset(),
    "reboot": frozenset(),
}


def _check_shape(phase: Phase, step: Any, require_priority: bool) -> list[str]:
    if not isinstance(step, Mapping):
        return [f"{phase} step {step!r} is not a dictionary"]
    if not all(isinstance(key, str) for key in step):
        return [f"{phase} step {step!r} has keys that are not strings"]
    problems = []
    for key in ("interface", "step"):
        if not isinstance(step.get(key), str) or not step.get(key):
            problems.append(f"{_describe(phase, step)} needs a non-empty string {key!r}")
    extra = sorted(set(step) - _USER_KEYS)
    if extra:
        problems.append(f"{_describe(phase, step)} has unknown keys: {', '.join(extra)}")
    args = step.get("args", {})
    if args is not None and not isinstance(args, Mapping):
        problems.append(f"{_describe(phase, step)}: 'args' must be a dictionary, not {args!r}")
    if require_priority:
        prio = step.get("priority")
        if isinstance(prio, str) and prio.isdigit():
            prio = int(prio)
        if isinstance(prio, bool) or not isinstance(prio, int) or prio < 0:
            problems.append(
                f"{_describe(phase, step)} needs a 'priority' that is an integer >= 0, "
                f"not {step.get('priority')!r}"
            )
    elif (
        step.get("interface") is not None
        and step.get("interface") not in INTERFACE_ORDER[phase]
        and step.get("step") not in RESERVED_STEPS
    ):
        problems.append(
            f"{_describe(phase, step)}: unknown interface {step.get('interface')!r} "
            f"(expected one of {', '.join(INTERFACE_ORDER[phase])})"
        )
    return problems


def _check_reserved(phase: Phase, step: Mapping[str, Any]) -> list[str]:
    args = dict(step.get("args") or {})
    allowed = _RESERVED_ARGS[step["step"]]
    problems = []
    unexpected = sorted(set(args) - allowed)
    if unexpected:
        problems.append(
            f"{phase} step {step['step']} has these unexpected arguments: {', '.join(unexpected)}"
        )
    problems.extend(_check_wait_seconds(phase, args))
    return problems


def _check_wait_seconds(phase: str, args: Mapping[str, Any]) -> list[str]:
    seconds = args.get("seconds")
    if seconds is None:
        return []
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not math.isfinite(seconds)
        or not 0 <= seconds <= MAX_WAIT_SECONDS
    ):
        return [
            f"{phase} step wait: 'seconds' must be a number from 0 to {MAX_WAIT_SECONDS}, "
            f"not {seconds!r}"
        ]
    return []


def check_requested_steps(
    phase: Phase, steps: Any, *, source: str, require_priority: bool = False
) -> list[str]:
    """Problems of a step list that no driver could fix, found before anything is locked.

    Each entry must be a dictionary with string keys, non-empty string
    ``interface`` and ``step``, ``args`` a JSON-safe dictionary (it is
    persisted with the plan), a ``wait`` step's ``seconds`` a sane number,
    and, for deploy steps, a ``priority``. Whether the driver has the step
    is the planner's later question.
    """
    if not isinstance(steps, list):
        return [f"{source} must be a list of steps, not {type(steps).__name__}"]
    problems: list[str] = []
    for index, step in enumerate(steps):
        problems.extend(
            _requested_step_problems(phase, step, f"{source}[{index}]", require_priority)
        )
    return problems


def _requested_step_problems(
    phase: Phase, step: Any, where: str, require_priority: bool
) -> list[str]:
    if not isinstance(step, dict):
        return [f"{where} must be a dictionary, not {type(step).__name__}"]
    if not all(type(key) is str for key in step):
        return [f"{where} has keys that are not strings"]
    problems: list[str] = []
    for key in ("interface", "step"):
        value = step.get(key)
        if type(value) is not str or not value or "\x00" in value:
            problems.append(f"{where} needs a non-empty string {key!r}")
    args = step.get("args")
    if args is not None:
        unreadable = _args_problem(args, where)
        if unreadable is not None:
            return [*problems, unreadable]  # nothing more to learn from this step
        if step.get("step") == "wait":
            problems.extend(f"{where}: {p}" for p in _check_wait_seconds(phase, args))
    if require_priority:
        prio = step.get("priority")
        if isinstance(prio, str) and prio.isdigit():
            prio = int(prio)
        if isinstance(prio, bool) or not isinstance(prio, int) or prio < 0:
            problems.append(f"{where} needs a 'priority' that is an integer >= 0")
    return problems


def _args_problem(args: Any, where: str) -> str | None:
    """Why a step's ``args`` cannot be persisted with the plan, if they cannot."""
    if type(args) is not dict:
        return f"{where}: 'args' must be a dictionary, not {type(args).__name__}"
    try:
        check_json(args, f"{where} args")
    except InvalidParameterValue as exc:
        return str(exc)
    return None


def _check_against_driver(
    phase: Phase,
    step: Mapping[str, Any],
    known: Mapping[str, Mapping[str, Any]],
    *,
    check_required: bool = True,
    disable_ramdisk: bool = False,
) -> tuple[list[str], Mapping[str, Any] | None]:
    sid = step_id(step)
    driver_step = known.get(sid)
    if driver_step is None:
        return [f"{phase} step {sid} is not supported by the node's driver"], None
    problems = []
    argsinfo = driver_step.get("argsinfo") or {}
    args = step.get("args") or {}
    unexpected = sorted(set(args) - set(argsinfo))
    if unexpected:
        problems.append(
            f"{phase} step {sid} has these unexpected arguments: {', '.join(unexpected)}"
        )
    if check_required:
        missing = [
            f"{name} ({info.get('description', '')})"
            for name, info in argsinfo.items()
            if info.get("required") and name not in args
        ]
        if missing:
            problems.append(
                f"{phase} step {sid} is missing these required arguments: {', '.join(missing)}"
            )
    if disable_ramdisk and driver_step.get("requires_ramdisk", True):
        problems.append(f"{phase} step {sid} requires booting a ramdisk, which is disabled")
    return problems, driver_step


def _raise(problems: list[str], prefix: str, node: str | None) -> None:
    if problems:
        where = f"Node {node}: " if node else ""
        raise InvalidParameterValue(
            f"{where}{prefix}{'; '.join(problems)}", problems=problems, node=node
        )


def validate_user_steps(
    phase: Phase,
    driver_steps: Iterable[Step],
    user_steps: Sequence[Any],
    *,
    disallowed: Iterable[str] = (),
    disable_ramdisk: bool = False,
    node: str | None = None,
) -> list[Step]:
    """Check user-requested steps (manual clean, service, runbook) and plan them.

    The plan keeps the user's order; a user-given ``priority`` is ignored
    (the driver's is recorded). Reserved steps (``hold``, ``wait``,
    ``power_on``, ``power_off``, ``reboot``) are kept, whatever interface
    they name.

    Raises:
        InvalidParameterValue: listing every problem at once: malformed
            entries, unknown interfaces or steps, unexpected arguments,
            missing required arguments (with their descriptions),
            disallowed steps, and steps needing a ramdisk when it is
            disabled.
    """
    if not isinstance(user_steps, Sequence) or isinstance(user_steps, (str, bytes)):
        _raise([f"{phase} steps must be a list, not {user_steps!r}"], "", node)
    if not user_steps:
        _raise([f"{phase} steps must not be empty"], "", node)
    known = {step_id(st): st for st in driver_steps}
    blocked = frozenset(disallowed)
    problems: list[str] = []
    plan: list[Step] = []
    for step in user_steps:
        shape = _check_shape(phase, step, require_priority=False)
        if shape:
            problems.extend(shape)
            continue
        if step["step"] in RESERVED_STEPS:
            problems.extend(_check_reserved(phase, step))
            plan.append(_reserved_entry(step))
            continue
        sid = step_id(step)
        if sid in blocked:
            problems.append(
                f"{phase} step {sid} is not allowed (operator configuration disallow_{phase}_steps)"
            )
            continue
        found, driver_step = _check_against_driver(
            phase, step, known, disable_ramdisk=disable_ramdisk
        )
        problems.extend(found)
        if driver_step is not None and not found:
            plan.append(_plan_entry(driver_step, driver_step["priority"], step.get("args") or {}))
    _raise(problems, f"invalid {phase} steps: ", node)
    return plan


def _reserved_entry(step: Mapping[str, Any], priority: int = 0) -> Step:
    return {
        "interface": step["interface"],
        "step": step["step"],
        "args": dict(step.get("args") or {}),
        "priority": priority,
        "abortable": True,
        "requires_ramdisk": False,
    }


def _priority(step: Mapping[str, Any]) -> int:
    prio = step["priority"]
    return int(prio)


def plan_deploy(
    driver_steps: Iterable[Step],
    *,
    templates: Mapping[str, Sequence[Any]] | None = None,
    user_steps: Sequence[Any] | None = None,
    node_traits: Iterable[str] = (),
    instance_traits: Iterable[str] = (),
    disallowed: Iterable[str] = (),
    node: str | None = None,
) -> list[Step]:
    """The deploy steps to run, in order.

    Sources, strongest last: the driver's enabled steps, the steps of the
    deploy templates named by ``instance_traits`` (which must all be node
    traits), and ``user_steps``. A stronger source overrides a weaker one
    for the same ``iface.step``; priority 0 removes the step. The core step
    ``deploy.deploy`` may be disabled but not given another priority. A step
    twice in one source is an error, and so is a step the driver does not
    have: nothing is silently dropped.

    Raises:
        InvalidParameterValue: every problem at once.
    """
    templates = templates or {}
    known = {step_id(st): st for st in driver_steps}
    blocked = frozenset(disallowed)
    problems: list[str] = []
    if isinstance(instance_traits, (str, bytes)) or not all(
        isinstance(trait, str) for trait in instance_traits
    ):
        _raise(
            [f"instance_info['traits'] must be a list of trait names, not {instance_traits!r}"],
            "invalid deploy steps: ",
            node,
        )
    instance = list(instance_traits)
    missing_traits = sorted(set(instance) - set(node_traits))
    if missing_traits:
        problems.append(
            "instance traits that are not also node traits cannot be used: "
            + ", ".join(missing_traits)
        )
    merged: dict[str, tuple[int, Step]] = {}
    for sid, st in known.items():
        if st["priority"] and sid not in blocked:
            merged[sid] = (st["priority"], _plan_entry(st, st["priority"], {}))

    def apply(source: str, steps: Sequence[Any], user: bool, seen: set[str]) -> None:
        for step in steps:
            shape = _check_shape("deploy", step, require_priority=True)
            if shape:
                problems.extend(f"{source}: {p}" for p in shape)
                continue
            sid = step_id(step)
            if sid in seen:
                problems.append(
                    f"{source}: deploy step {sid} appears more than once"
                    + ("" if user else " across the matching deploy templates")
                )
                continue
            seen.add(sid)
            prio = _priority(step)
            if step["step"] in RESERVED_STEPS:
                problems.extend(f"{source}: {p}" for p in _check_reserved("deploy", step))
                if prio:
                    merged[sid] = (prio, _reserved_entry(step, prio))
                else:
                    merged.pop(sid, None)
                continue
            if sid in blocked:
                if user:
                    problems.append(
                        f"{source}: deploy step {sid} is not allowed (operator configuration "
                        "disallow_deploy_steps)"
                    )
                continue
            found, driver_step = _check_against_driver(
                "deploy", step, known, check_required=prio > 0
            )
            if (
                driver_step is not None
                and sid == CORE_DEPLOY_STEP
                and prio
                not in (
                    0,
                    driver_step["priority"],
                )
            ):
                found.append(
                    f"deploy step {sid} is the core step: it may be disabled with priority 0 "
                    f"but not given priority {prio}"
                )
            problems.extend(f"{source}: {p}" for p in found)
            if found or driver_step is None:
                continue
            if prio:
                merged[sid] = (prio, _plan_entry(driver_step, prio, step.get("args") or {}))
            else:
                merged.pop(sid, None)

    template_seen: set[str] = set()
    for name in instance:
        if name in templates:
            apply(f"deploy template {name}", templates[name], False, template_seen)
    if user_steps:
        apply("deploy_steps argument", user_steps, True, set())
    _raise(problems, "invalid deploy steps: ", node)
    return sort_steps("deploy", (entry for _, entry in merged.values()))
