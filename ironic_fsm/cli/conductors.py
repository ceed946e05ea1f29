"""``conductor list``: the conductors sharing the database."""

from __future__ import annotations

import argparse
from typing import Final

from ironic_fsm.cli.database import _open_conductor
from ironic_fsm.cli.output import Cell, emit_list

#: ``conductor list`` columns, as ``openstack baremetal conductor list``; ``--long`` adds
#: its detail ones (``created_at`` is not recorded here: shown empty).
_CONDUCTOR_COLUMNS: Final = ("hostname", "conductor_group", "alive")
_CONDUCTOR_LONG_COLUMNS: Final = (*_CONDUCTOR_COLUMNS, "drivers", "created_at", "updated_at")


def _cmd_conductor_list(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        conductors = conductor.list_conductors()
    rows: list[list[object]] = []
    for info in conductors:
        row: list[object] = [info.hostname, info.conductor_group, info.alive]
        if args.long:
            types = list(info.hardware_types)
            when = info.updated_at.isoformat()
            row += [Cell(", ".join(types), types), None, Cell(when, when)]
        rows.append(row)
    emit_list(args, _CONDUCTOR_LONG_COLUMNS if args.long else _CONDUCTOR_COLUMNS, rows)
    return 0
