"""Ironic's provisioning lifecycle as data: its states and transitions.

Only the table: :mod:`ironic_fsm.machine` compiles it into
:data:`~ironic_fsm.machine.LIFECYCLE`. Kept apart so that the machine
module reads as the machine, and the table as Ironic's state diagram.
"""

from __future__ import annotations

from typing import Final

from ironic_fsm import states as s

#: ``(name, stable, default target)`` of each state, as
#: :class:`~ironic_fsm.machine.StateSpec` takes them.
STATES: Final[tuple[tuple[str, bool, str | None], ...]] = (
    (s.ENROLL, True, None),
    (s.VERIFYING, False, s.MANAGEABLE),
    (s.MANAGEABLE, True, None),
    (s.INSPECTING, False, s.MANAGEABLE),
    (s.INSPECTWAIT, False, s.MANAGEABLE),
    (s.INSPECTFAIL, False, s.MANAGEABLE),
    (s.CLEANING, False, s.AVAILABLE),
    (s.CLEANWAIT, False, s.AVAILABLE),
    (s.CLEANFAIL, False, s.AVAILABLE),
    (s.CLEANHOLD, False, s.AVAILABLE),
    (s.AVAILABLE, True, None),
    (s.DEPLOYING, False, s.ACTIVE),
    (s.DEPLOYWAIT, False, s.ACTIVE),
    (s.DEPLOYFAIL, False, s.ACTIVE),
    (s.DEPLOYHOLD, False, s.ACTIVE),
    (s.ACTIVE, True, None),
    (s.DELETING, False, s.AVAILABLE),
    (s.ERROR, True, None),
    (s.ADOPTING, False, s.ACTIVE),
    (s.ADOPTFAIL, False, s.ACTIVE),
    (s.RESCUING, False, s.RESCUE),
    (s.RESCUEWAIT, False, s.RESCUE),
    (s.RESCUEFAIL, False, s.RESCUE),
    (s.RESCUE, True, None),
    (s.UNRESCUING, False, s.ACTIVE),
    (s.UNRESCUEFAIL, False, s.ACTIVE),
    (s.SERVICING, False, s.ACTIVE),
    (s.SERVICEWAIT, False, s.ACTIVE),
    (s.SERVICEFAIL, False, s.ACTIVE),
    (s.SERVICEHOLD, False, s.ACTIVE),
)

# Grouped by flow, in the order a node meets them.
#: ``(source, event, dest)``.
TRANSITIONS: Final[tuple[tuple[str, str, str], ...]] = (
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
    (s.CLEANING, "done", s.AVAILABLE),
    (s.CLEANING, "manage", s.MANAGEABLE),
    (s.CLEANING, "wait", s.CLEANWAIT),
    (s.CLEANING, "hold", s.CLEANHOLD),
    (s.CLEANING, "fail", s.CLEANFAIL),
    (s.CLEANWAIT, "resume", s.CLEANING),
    (s.CLEANWAIT, "hold", s.CLEANHOLD),
    (s.CLEANWAIT, "fail", s.CLEANFAIL),
    (s.CLEANWAIT, "abort", s.CLEANFAIL),
    (s.CLEANHOLD, "unhold", s.CLEANWAIT),
    (s.CLEANHOLD, "abort", s.CLEANFAIL),
    (s.CLEANFAIL, "manage", s.MANAGEABLE),
    (s.AVAILABLE, "manage", s.MANAGEABLE),
    # deployment
    (s.AVAILABLE, "deploy", s.DEPLOYING),
    (s.ACTIVE, "rebuild", s.DEPLOYING),
    (s.ERROR, "rebuild", s.DEPLOYING),
    (s.DEPLOYING, "done", s.ACTIVE),
    (s.DEPLOYING, "wait", s.DEPLOYWAIT),
    (s.DEPLOYING, "hold", s.DEPLOYHOLD),
    (s.DEPLOYING, "fail", s.DEPLOYFAIL),
    (s.DEPLOYWAIT, "resume", s.DEPLOYING),
    (s.DEPLOYWAIT, "hold", s.DEPLOYHOLD),
    (s.DEPLOYWAIT, "fail", s.DEPLOYFAIL),
    (s.DEPLOYWAIT, "abort", s.DEPLOYFAIL),
    (s.DEPLOYHOLD, "unhold", s.DEPLOYWAIT),
    (s.DEPLOYHOLD, "abort", s.DEPLOYFAIL),
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
    (s.SERVICING, "done", s.ACTIVE),
    (s.SERVICING, "wait", s.SERVICEWAIT),
    (s.SERVICING, "hold", s.SERVICEHOLD),
    (s.SERVICING, "fail", s.SERVICEFAIL),
    (s.SERVICEWAIT, "resume", s.SERVICING),
    (s.SERVICEWAIT, "hold", s.SERVICEHOLD),
    (s.SERVICEWAIT, "fail", s.SERVICEFAIL),
    (s.SERVICEWAIT, "abort", s.SERVICEFAIL),
    (s.SERVICEHOLD, "unhold", s.SERVICEWAIT),
    (s.SERVICEHOLD, "fail", s.SERVICEFAIL),
    (s.SERVICEHOLD, "abort", s.SERVICEFAIL),
    (s.SERVICEFAIL, "wait", s.SERVICEWAIT),
    (s.SERVICEFAIL, "hold", s.SERVICEHOLD),
    (s.SERVICEFAIL, "abort", s.ACTIVE),
)
