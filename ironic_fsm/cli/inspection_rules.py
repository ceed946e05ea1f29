"""``inspection rule``: rules run on inspection data, as ``openstack baremetal inspection rule``."""

from __future__ import annotations

import argparse
from typing import Final

from ironic_fsm.cli.records import CliKind, Option

__all__ = ["INSPECTION_RULE"]

_LONG: Final = (
    "uuid", "description", "priority", "sensitive", "phase", "actions", "conditions",
    "created_at", "updated_at",
)  # fmt: skip


def _nothing(p: argparse.ArgumentParser) -> None:
    """Rules take no arguments of their own beyond the options."""


def _phase(p: argparse.ArgumentParser) -> None:
    p.add_argument("--phase", help="only rules of this phase")


INSPECTION_RULE: Final = CliKind(
    noun="inspection rule", columns=("uuid", "description"), long=_LONG, shown=_LONG,
    options=(
        Option("--uuid", "uuid", "the rule's UUID (default: a new one)", set=False,
               unset=False),
        Option("--description", "description", "what the rule is for"),
        Option("--priority", "priority", "rules run highest first (0 to 9999; default 0)",
               kind="int"),
        Option("--sensitive", "sensitive", "true: never show its conditions and actions",
               kind="bool", set=False, unset=False),
        Option("--phase", "phase", "when the rule runs (main, the default)"),
        Option("--conditions", "conditions",
               "what must hold: JSON (inline, @FILE, FILE or '-')", kind="json", unset=False),
        Option("--actions", "actions", "what to do: JSON (inline, @FILE, FILE or '-')",
               kind="json", unset=False),
    ),
    get=lambda c, ident: c.get_inspection_rule(ident),
    listing=lambda c, args, page: c.list_inspection_rules(phase=args.phase, **page),
    create=lambda c, args, fields: c.create_inspection_rule(**fields),
    update=lambda c, uuid, fields: c.update_inspection_rule(uuid, **fields),
    delete=lambda c, ident: c.delete_inspection_rule(ident),
    create_arguments=_nothing, list_arguments=_phase,
)  # fmt: skip
