"""Ironic's provisioning lifecycle as data: its states and transitions.

Only the table: :mod:`ironic_fsm.machine` compiles it into
:data:`~ironic_fsm.machine.LIFECYCLE`. Kept apart so that the machine
module reads as the machine, and the table as Ironic's state diagram.
"""

from __future__ import annotations

from typing import Final

from ironic_fsm import states as s

_State = tuple[str, bool, str | None]
_Edge = tuple[str, str, str]


def _stable(name: str) -> tuple[_State]:
    return ((name, True, None),)


def _busy(target: str, *names: str) -> tuple[_State, ...]:
    """States where work is under way toward ``target``, their default target."""
    return tuple((name, False, target) for name in names)


#: The states of each step-running phase: busy, wait, fail, hold (the order of :data:`STATES`).
_CLEANING: Final = (s.CLEANING, s.CLEANWAIT, s.CLEANFAIL, s.CLEANHOLD)
_DEPLOYING: Final = (s.DEPLOYING, s.DEPLOYWAIT, s.DEPLOYFAIL, s.DEPLOYHOLD)
_SERVICING: Final = (s.SERVICING, s.SERVICEWAIT, s.SERVICEFAIL, s.SERVICEHOLD)


def _step_flow(
    phase: tuple[str, str, str, str],
    done: str,
    *,
    busy_extra: tuple[tuple[str, str], ...] = (),
    hold_extra: tuple[tuple[str, str], ...] = (),
) -> tuple[_Edge, ...]:
    """The step-running sub-machine that cleaning, deployment and servicing share.

    Each phase runs steps in ``busy``, waits for the ramdisk in ``wait``, pauses
    in ``hold`` and fails into ``fail``; only a few edges differ (the extras).
    """
    busy, wait, fail, hold = phase
    return (
        (busy, "done", done),
        *((busy, event, dest) for event, dest in busy_extra),
        (busy, "wait", wait),
        (busy, "hold", hold),
        (busy, "fail", fail),
        (wait, "resume", busy),
        (wait, "hold", hold),
        (wait, "fail", fail),
        (wait, "abort", fail),
        (hold, "unhold", wait),
        *((hold, event, dest) for event, dest in hold_extra),
        (hold, "abort", fail),
    )


#: ``(name, stable, default target)`` of each state, as
#: :class:`~ironic_fsm.machine.StateSpec` takes them.
STATES: Final[tuple[_State, ...]] = (
    *_stable(s.ENROLL),
    *_busy(s.MANAGEABLE, s.VERIFYING),
    *_stable(s.MANAGEABLE),
    *_busy(s.MANAGEABLE, s.INSPECTING, s.INSPECTWAIT, s.INSPECTFAIL),
    *_busy(s.AVAILABLE, *_CLEANING),
    *_stable(s.AVAILABLE),
    *_busy(s.ACTIVE, *_DEPLOYING),
    *_stable(s.ACTIVE),
    *_busy(s.AVAILABLE, s.DELETING),
    *_stable(s.ERROR),
    *_busy(s.ACTIVE, s.ADOPTING, s.ADOPTFAIL),
    *_busy(s.RESCUE, s.RESCUING, s.RESCUEWAIT, s.RESCUEFAIL),
    *_stable(s.RESCUE),
    *_busy(s.ACTIVE, s.UNRESCUING, s.UNRESCUEFAIL),
    *_busy(s.ACTIVE, *_SERVICING),
)

# Grouped by flow, in the order a node meets them.
#: ``(source, event, dest)``.
TRANSITIONS: Final[tuple[_Edge, ...]] = (
    # verification
    (s.ENROLL, "manage", s.VERIFYING),
    (s.VERIFYING, "done", s.MANAGEABLE),
    (s.VERIFYING, "fail", s.ENROLL),
    # inspection
    (s.MANAGEABLE, "inspect", s.INSPECTING),
    (s.INSPECTING, "done", s.MANAGEABLE),
    (s.INSPECTING, "wait", s.INSPECTWAIT),
    (s.INSPECTING, "fail", s.INSPECTFAIL),
    (s.INSPECTWAIT, "done", s.MANAGEABLE),
    (s.INSPECTWAIT, "resume", s.INSPECTING),
    (s.INSPECTWAIT, "fail", s.INSPECTFAIL),
    (s.INSPECTWAIT, "abort", s.INSPECTFAIL),
    (s.INSPECTFAIL, "inspect", s.INSPECTING),
    (s.INSPECTFAIL, "manage", s.MANAGEABLE),
    # cleaning
    (s.MANAGEABLE, "provide", s.CLEANING),
    (s.MANAGEABLE, "clean", s.CLEANING),
    *_step_flow(_CLEANING, s.AVAILABLE, busy_extra=(("manage", s.MANAGEABLE),)),
    (s.CLEANFAIL, "manage", s.MANAGEABLE),
    (s.AVAILABLE, "manage", s.MANAGEABLE),
    # deployment
    (s.AVAILABLE, "deploy", s.DEPLOYING),
    (s.ACTIVE, "rebuild", s.DEPLOYING),
    (s.ERROR, "rebuild", s.DEPLOYING),
    *_step_flow(_DEPLOYING, s.ACTIVE),
    (s.DEPLOYFAIL, "deploy", s.DEPLOYING),
    (s.DEPLOYFAIL, "rebuild", s.DEPLOYING),
    # tear-down
    (s.ACTIVE, "delete", s.DELETING),
    (s.ERROR, "delete", s.DELETING),
    (s.RESCUE, "delete", s.DELETING),
    (s.RESCUEWAIT, "delete", s.DELETING),
    (s.RESCUEFAIL, "delete", s.DELETING),
    (s.UNRESCUEFAIL, "delete", s.DELETING),
    (s.DEPLOYWAIT, "delete", s.DELETING),
    (s.DEPLOYFAIL, "delete", s.DELETING),
    (s.SERVICEWAIT, "delete", s.DELETING),
    (s.SERVICEFAIL, "delete", s.DELETING),
    (s.DELETING, "clean", s.CLEANING),
    (s.DELETING, "fail", s.ERROR),
    # adoption
    (s.MANAGEABLE, "adopt", s.ADOPTING),
    (s.ADOPTING, "done", s.ACTIVE),
    (s.ADOPTING, "fail", s.ADOPTFAIL),
    (s.ADOPTFAIL, "adopt", s.ADOPTING),
    (s.ADOPTFAIL, "manage", s.MANAGEABLE),
    # rescue
    (s.ACTIVE, "rescue", s.RESCUING),
    (s.RESCUE, "rescue", s.RESCUING),
    (s.RESCUEFAIL, "rescue", s.RESCUING),
    (s.UNRESCUEFAIL, "rescue", s.RESCUING),
    (s.SERVICEFAIL, "rescue", s.RESCUING),
    (s.RESCUING, "done", s.RESCUE),
    (s.RESCUING, "wait", s.RESCUEWAIT),
    (s.RESCUING, "fail", s.RESCUEFAIL),
    (s.RESCUEWAIT, "resume", s.RESCUING),
    (s.RESCUEWAIT, "fail", s.RESCUEFAIL),
    (s.RESCUEWAIT, "abort", s.RESCUEFAIL),
    (s.RESCUE, "unrescue", s.UNRESCUING),
    (s.RESCUEFAIL, "unrescue", s.UNRESCUING),
    (s.UNRESCUEFAIL, "unrescue", s.UNRESCUING),
    (s.UNRESCUING, "done", s.ACTIVE),
    (s.UNRESCUING, "fail", s.UNRESCUEFAIL),
    # servicing
    (s.ACTIVE, "service", s.SERVICING),
    (s.SERVICEHOLD, "service", s.SERVICING),
    (s.SERVICEFAIL, "service", s.SERVICING),
    *_step_flow(_SERVICING, s.ACTIVE, hold_extra=(("fail", s.SERVICEFAIL),)),
    (s.SERVICEFAIL, "wait", s.SERVICEWAIT),
    (s.SERVICEFAIL, "hold", s.SERVICEHOLD),
    (s.SERVICEFAIL, "abort", s.ACTIVE),
)
