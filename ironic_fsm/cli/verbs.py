"""The provisioning verbs (``node manage``, ``node deploy``...) and ``--wait``."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any, Final

from ironic_fsm import states as s
from ironic_fsm.cli.argtypes import _load_configdrive, _load_steps
from ironic_fsm.cli.database import _open_conductor
from ironic_fsm.cli.errors import _error, _usage_error
from ironic_fsm.cli.output import Cell, _label, emit_list
from ironic_fsm.machine import LIFECYCLE

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor
    from ironic_fsm.node import Node

#: Seconds between two looks at the node under ``--wait`` (as Ironic's client).
POLL_INTERVAL: float = 2.0


# The provisioning verbs offered as ``node VERB NODE``, in the order of the
# lifecycle, with the one-line help shown by ``node --help``.
_VERBS: Final = {
    "manage": "Move the node to manageable (verifying its BMC when coming from enroll).",
    "provide": "Make a manageable node available (running automated cleaning).",
    "inspect": "Inspect the node's hardware.",
    "clean": "Run manual cleaning steps on a manageable node.",
    "deploy": "Deploy an available node to active.",
    "undeploy": "Tear down an active node (then clean it back to available).",
    "rebuild": "Redeploy an active node.",
    "rescue": "Boot an active node into a rescue ramdisk.",
    "unrescue": "Return a rescued node to active.",
    "abort": "Abort cleaning, deploying, servicing, rescue or inspection.",
    "adopt": "Take over a node that is already deployed.",
    "service": "Run service steps on an active node.",
    "unhold": "Release a node held by a hold step.",
}

# Options of the provisioning verbs: which verbs may use each. Every verb
# accepts every option so that a misplaced one gets a clear message (and
# exit code 2) rather than argparse's terse "unrecognized arguments".
_VERB_OPTIONS: Final = {
    "clean_steps": ("--clean-steps", frozenset({"clean"})),
    "deploy_steps": ("--deploy-steps", frozenset({"deploy", "rebuild"})),
    "service_steps": ("--service-steps", frozenset({"service"})),
    "runbook": ("--runbook", frozenset({"clean", "service"})),
    "disable_ramdisk": ("--disable-ramdisk", frozenset({"clean", "service"})),
    "rescue_password": ("--rescue-password", frozenset({"rescue"})),
    "configdrive": ("--config-drive", frozenset({"deploy", "rebuild"})),
}


def _cmd_verb(args: argparse.Namespace) -> int:
    verb: str = args.verb
    for dest, (option, verbs) in _VERB_OPTIONS.items():
        value = getattr(args, dest)
        if value not in (None, False) and verb not in verbs:
            allowed = " or ".join(f"'{v}'" for v in sorted(verbs))
            _usage_error(args, f"{option} can only be used with {allowed}, not with '{verb}'")
    for steps_option in ("clean_steps", "service_steps"):
        steps_verb = steps_option.split("_")[0]
        if verb == steps_verb and (getattr(args, steps_option) is None) == (args.runbook is None):
            _usage_error(
                args,
                f"'{verb}' needs exactly one of {_VERB_OPTIONS[steps_option][0]} FILE "
                "or --runbook NAME",
            )
    kwargs: dict[str, Any] = {
        "runbook": args.runbook,
        "disable_ramdisk": args.disable_ramdisk,
        "rescue_password": args.rescue_password,
        "configdrive": None
        if args.configdrive is None
        else _load_configdrive(args.configdrive, "--config-drive"),
    }
    for dest in ("clean_steps", "deploy_steps", "service_steps"):
        value = getattr(args, dest)
        kwargs[dest] = None if value is None else _load_steps(value, _VERB_OPTIONS[dest][0])
    with _open_conductor(args, hand_off_for=args.node) as conductor:
        node = conductor.do_provisioning_action(args.node, verb, **kwargs)
        if args.wait is not None:
            settled = _wait_for(conductor, node, verb, args.wait)
            if settled is None:
                return 1
            node = settled
    return _report_outcome(node, verb)


def _settled(node: Node) -> bool:
    """Whether ``--wait`` may stop: nothing is in progress on the node any more."""
    state = node.provision_state
    return (
        LIFECYCLE.is_stable(state)
        or state in s.FAILURE_STATES
        or state in s.HOLD_STATES
        or state == s.ERROR
    )


def _wait_for(conductor: Conductor, node: Node, verb: str, timeout: float) -> Node | None:
    """Poll until the node settles (``--wait``); ``None`` after saying that time ran out.

    Another process (an embedding application, a conductor service)
    continues nodes left waiting for an asynchronous step; this only
    watches the shared database, as Ironic's client watches the API.
    """
    deadline = None if timeout == 0 else time.monotonic() + timeout
    while not _settled(node):
        if deadline is not None and time.monotonic() >= deadline:
            _error(
                f"node {_label(node)}: '{verb}' did not settle within {timeout:g} seconds; "
                f"it is in provision state '{node.provision_state}'"
            )
            return None
        pause = POLL_INTERVAL
        if deadline is not None:
            pause = max(0.0, min(pause, deadline - time.monotonic()))
        time.sleep(pause)
        node = conductor.get_node(node.uuid)
    return node


def _report_outcome(node: Node, verb: str) -> int:
    """Say where the node settled; a flow that ended in failure is exit code 1.

    The verb itself was accepted, but a script running ``ironic-fsm node
    clean ... && ironic-fsm node provide ...`` must not go on after a
    failed clean. A node back in ``enroll`` with ``last_error`` (its BMC
    could not be verified) failed too.
    """
    state = node.provision_state
    failed = state in s.FAILURE_STATES or state == s.ERROR
    if failed or (state == s.ENROLL and node.last_error):
        detail = f": {node.last_error}" if node.last_error else ""
        _error(f"node {_label(node)}: '{verb}' ended in provision state '{state}'{detail}")
        return 1
    if state in s.WAIT_STATES:
        print(f"Node {_label(node)} is in '{state}', waiting for an asynchronous step")
    elif state in s.HOLD_STATES:
        print(f"Node {_label(node)} is in '{state}'; run 'node unhold' to go on")
    elif not _settled(node):
        print(f"Node {_label(node)} is in '{state}': a conductor service is working on it")
    else:
        print(f"Node {_label(node)} is now in provision state '{state}'")
    return 0


def _cmd_clean_steps(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        steps = conductor.get_clean_steps(args.node, min_priority=args.min_priority)
    rows = []
    for step in steps:
        argsinfo = step.get("argsinfo") or {}
        rows.append(
            [
                step.get("interface"),
                step.get("step"),
                step.get("priority"),
                step.get("abortable"),
                step.get("requires_ramdisk"),
                Cell(", ".join(sorted(argsinfo)), argsinfo),
            ]
        )
    headers = ("interface", "step", "priority", "abortable", "requires_ramdisk", "argsinfo")
    emit_list(args, headers, rows)
    return 0
