"""``node history list|get``: the node's event log."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Final

from ironic_fsm.cli.database import _open_conductor
from ironic_fsm.cli.output import emit_list, emit_one

if TYPE_CHECKING:
    from ironic_fsm.history import HistoryEntry

#: ``node history list`` columns, as ``openstack baremetal node history list``; ``--long``
#: adds its detail ones (those this history does not record are shown empty).
_HISTORY_COLUMNS: Final = ("uuid", "created_at", "severity", "event")
_HISTORY_LONG_COLUMNS: Final = (
    "uuid", "created_at", "severity", "event_type", "event", "conductor", "user", "project",
    "state", "target_provision_state", "duration_seconds",
)  # fmt: skip


def _history_record(entry: HistoryEntry) -> dict[str, object]:
    return {
        "uuid": entry.uuid,
        "created_at": entry.created_at.isoformat(),
        "severity": entry.severity,
        "event_type": entry.event_type,
        "event": entry.event,
        "conductor": entry.conductor,
        "user": entry.user,
    }


def _cmd_history_list(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        entries = conductor.get_node_history(args.node)
    rows: list[list[object]] = []
    for entry in entries:
        when = entry.created_at.isoformat()
        if args.long:
            row: list[object] = [entry.uuid, when, entry.severity, entry.event_type, entry.event,
                                 entry.conductor, entry.user, None, None, None, None]  # fmt: skip
        else:
            row = [entry.uuid, when, entry.severity, entry.event]
        rows.append(row)
    emit_list(args, _HISTORY_LONG_COLUMNS if args.long else _HISTORY_COLUMNS, rows)
    return 0


def _cmd_history_get(args: argparse.Namespace) -> int:
    with _open_conductor(args) as conductor:
        entry = conductor.get_node_history_entry(args.node, args.event)
    emit_one(args, _history_record(entry))
    return 0
