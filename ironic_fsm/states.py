"""Provision and power state constants, with Ironic's exact string values.

This module is plain data: no logic and no imports from the rest of the
package, so that any layer (and any application) may import it freely.
The lifecycle that connects these states lives in :mod:`ironic_fsm.machine`.
"""

from __future__ import annotations

from typing import Final

# -- provision states ------------------------------------------------------

ENROLL: Final = "enroll"
VERIFYING: Final = "verifying"
MANAGEABLE: Final = "manageable"
INSPECTING: Final = "inspecting"
INSPECTWAIT: Final = "inspect wait"
INSPECTFAIL: Final = "inspect failed"
CLEANING: Final = "cleaning"
CLEANWAIT: Final = "clean wait"
CLEANFAIL: Final = "clean failed"
CLEANHOLD: Final = "clean hold"
AVAILABLE: Final = "available"
DEPLOYING: Final = "deploying"
DEPLOYWAIT: Final = "wait call-back"
DEPLOYFAIL: Final = "deploy failed"
DEPLOYHOLD: Final = "deploy hold"
ACTIVE: Final = "active"
DELETING: Final = "deleting"
ERROR: Final = "error"
ADOPTING: Final = "adopting"
ADOPTFAIL: Final = "adopt failed"
RESCUING: Final = "rescuing"
RESCUEWAIT: Final = "rescue wait"
RESCUEFAIL: Final = "rescue failed"
RESCUE: Final = "rescue"
UNRESCUING: Final = "unrescuing"
UNRESCUEFAIL: Final = "unrescue failed"
SERVICING: Final = "servicing"
SERVICEWAIT: Final = "service wait"
SERVICEFAIL: Final = "service failed"
SERVICEHOLD: Final = "service hold"

#: "No state": an empty target.
NOSTATE: Final = None

# -- machine events --------------------------------------------------------

ABORT_EVENT: Final = "abort"
ADOPT_EVENT: Final = "adopt"
CLEAN_EVENT: Final = "clean"
DELETE_EVENT: Final = "delete"
DEPLOY_EVENT: Final = "deploy"
DONE_EVENT: Final = "done"
FAIL_EVENT: Final = "fail"
HOLD_EVENT: Final = "hold"
INSPECT_EVENT: Final = "inspect"
MANAGE_EVENT: Final = "manage"
PROVIDE_EVENT: Final = "provide"
REBUILD_EVENT: Final = "rebuild"
RESCUE_EVENT: Final = "rescue"
RESUME_EVENT: Final = "resume"
SERVICE_EVENT: Final = "service"
UNHOLD_EVENT: Final = "unhold"
UNRESCUE_EVENT: Final = "unrescue"
WAIT_EVENT: Final = "wait"

# -- user verbs (API "target" values) ---------------------------------------

#: Map from the verbs a user may ask for to the machine event they fire.
VERBS: Final[dict[str, str]] = {
    "active": DEPLOY_EVENT,
    "deploy": DEPLOY_EVENT,
    "rebuild": REBUILD_EVENT,
    "deleted": DELETE_EVENT,
    "undeploy": DELETE_EVENT,
    "manage": MANAGE_EVENT,
    "provide": PROVIDE_EVENT,
    "inspect": INSPECT_EVENT,
    "clean": CLEAN_EVENT,
    "adopt": ADOPT_EVENT,
    "rescue": RESCUE_EVENT,
    "unrescue": UNRESCUE_EVENT,
    "abort": ABORT_EVENT,
    "unhold": UNHOLD_EVENT,
    "service": SERVICE_EVENT,
}

# -- state sets --------------------------------------------------------------

#: States a node rests in until a user asks for something.
STABLE_STATES: Final = frozenset({ENROLL, MANAGEABLE, AVAILABLE, ACTIVE, ERROR, RESCUE})

#: States in which work is in progress (Ironic's ``UNSTABLE_STATES``).
UNSTABLE_STATES: Final = frozenset(
    {
        DEPLOYING, DEPLOYWAIT, CLEANING, CLEANWAIT, VERIFYING, DELETING,
        INSPECTING, INSPECTWAIT, ADOPTING, RESCUING, RESCUEWAIT, UNRESCUING,
        SERVICING, SERVICEWAIT,
    }
)  # fmt: skip

#: The ``* failed`` states: a flow stopped and an operator should look.
FAILURE_STATES: Final = frozenset(
    {DEPLOYFAIL, CLEANFAIL, INSPECTFAIL, RESCUEFAIL, UNRESCUEFAIL, ADOPTFAIL, SERVICEFAIL}
)

#: States waiting for an asynchronous step, a ramdisk or a callback.
WAIT_STATES: Final = frozenset({DEPLOYWAIT, CLEANWAIT, INSPECTWAIT, RESCUEWAIT, SERVICEWAIT})

#: States paused by a ``hold`` step until ``unhold``; they never time out.
HOLD_STATES: Final = frozenset({DEPLOYHOLD, CLEANHOLD, SERVICEHOLD})

#: Working states that a restarted conductor cannot resume by itself.
STUCK_STATES_TREATED_AS_FAIL: Final = frozenset(
    {
        DEPLOYING,
        CLEANING,
        VERIFYING,
        INSPECTING,
        ADOPTING,
        RESCUING,
        UNRESCUING,
        DELETING,
        SERVICING,
    }
)

#: States from which a node record may be deleted (``available`` too when
#: ``Config.allow_deleting_available_nodes``).
DELETE_ALLOWED_STATES: Final = frozenset({MANAGEABLE, ENROLL, ADOPTFAIL})

# -- power states --------------------------------------------------------------

POWER_ON: Final = "power on"
POWER_OFF: Final = "power off"
REBOOT: Final = "rebooting"
SOFT_POWER_OFF: Final = "soft power off"
SOFT_REBOOT: Final = "soft rebooting"

#: Power states a user may request through ``Conductor.set_power_state``.
POWER_STATES: Final = frozenset({POWER_ON, POWER_OFF, REBOOT, SOFT_POWER_OFF, SOFT_REBOOT})
