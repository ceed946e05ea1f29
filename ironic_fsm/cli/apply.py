"""``apply``: a fleet file enrolled, updated and reconciled."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any, Final

from ironic_fsm.cli import verbs
from ironic_fsm.cli.argtypes import _read_source
from ironic_fsm.cli.database import _open_conductor
from ironic_fsm.cli.errors import _error, _one_line
from ironic_fsm.cli.output import emit_list

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor

#: ``apply`` summary columns.
_APPLY_COLUMNS: Final = ("name", "provision_state", "wanted", "result", "last_error")


def _cmd_apply(args: argparse.Namespace) -> int:
    """Enroll, update and reconcile the nodes of a fleet file (see :mod:`ironic_fsm.fleetfile`)."""
    from ironic_fsm import fleetfile

    text, _ = _read_source(args.file, "FLEET_FILE")
    source = "standard input" if args.file == "-" else args.file
    try:
        with _open_conductor(args) as conductor:
            fleet = fleetfile.load_fleet(text, source=source, conductor=conductor)
            if args.dry_run:
                plan = fleetfile.plan_fleet(conductor, fleet)
                sys.stdout.write("".join(line + "\n" for line in fleetfile.plan_lines(plan, fleet)))
                return 0
            return _apply(args, conductor, fleet)
    except fleetfile.FleetFileError as exc:
        errors = exc.errors
        _error(f"{source}: {len(errors)} problem(s) in the fleet file; nothing was changed")
        for line in errors:
            print(f"  {_one_line(line)}", file=sys.stderr)
        return 1


def _apply(args: argparse.Namespace, conductor: Conductor, fleet: Any) -> int:
    from ironic_fsm import fleetfile

    applier = fleetfile.FleetApply(conductor, fleet, workers=args.workers)
    applier.enroll()
    deadline = None if not args.wait else time.monotonic() + args.wait
    timed_out = False
    while True:
        report = applier.round()
        print(report.line(), file=sys.stderr, flush=True)
        if args.wait is None or applier.settled:
            break
        if deadline is not None and time.monotonic() >= deadline:
            timed_out = True
            break
        if not report.verbs:  # everything busy elsewhere: look again later
            pause = verbs.POLL_INTERVAL
            if deadline is not None:
                pause = max(0.0, min(pause, deadline - time.monotonic()))
            time.sleep(pause)
    rows = [
        [
            status.name,
            status.state,
            status.wanted,
            status.result,
            status.last_error or status.note,
        ]
        for status in applier.summary()
    ]
    emit_list(args, _APPLY_COLUMNS, rows)
    if applier.created or applier.updated:
        print(
            f"{len(applier.created)} node(s) enrolled, {len(applier.updated)} updated",
            file=sys.stderr,
        )
    if applier.untouched:
        print(
            f"{len(applier.untouched)} node(s) in the store are not in the file and were left "
            "alone",
            file=sys.stderr,
        )
    if timed_out:
        _error(f"the fleet did not settle within {args.wait:g} seconds")
        return 1
    return 1 if applier.failed else 0
