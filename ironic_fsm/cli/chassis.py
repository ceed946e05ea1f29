"""``chassis``: groups of nodes, as ``openstack baremetal chassis``."""

from __future__ import annotations

import argparse
from typing import Final

from ironic_fsm.cli.records import CliKind, Option

__all__ = ["CHASSIS"]

_LONG: Final = ("uuid", "description", "created_at", "updated_at", "extra")


def _nothing(p: argparse.ArgumentParser) -> None:
    """Chassis take no arguments of their own."""


CHASSIS: Final = CliKind(
    noun="chassis", columns=("uuid", "description"), long=_LONG, shown=_LONG,
    options=(
        Option("--description", "description", "what the chassis is"),
        Option("--extra", "extra", "an extra entry; repeatable", kind="dict"),
        Option("--uuid", "uuid", "the chassis' UUID (default: a new one)", set=False,
               unset=False),
    ),
    get=lambda c, ident: c.get_chassis(ident),
    listing=lambda c, args, page: c.list_chassis(**page),
    create=lambda c, args, fields: c.create_chassis(**fields),
    update=lambda c, uuid, fields: c.update_chassis(uuid, **fields),
    delete=lambda c, ident: c.delete_chassis(ident),
    create_arguments=_nothing, list_arguments=_nothing,
)  # fmt: skip
