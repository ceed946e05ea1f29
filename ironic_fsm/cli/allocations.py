"""``allocation``: ask for a node, as ``openstack baremetal allocation``."""

from __future__ import annotations

import argparse
from typing import Any, Final

from ironic_fsm.cli.records import CliKind, Option
from ironic_fsm.conductor import Conductor
from ironic_fsm.records import Record

__all__ = ["ALLOCATION"]

_LONG: Final = (
    "uuid", "name", "state", "owner", "node_uuid", "last_error", "resource_class", "traits",
    "candidate_nodes", "extra", "created_at", "updated_at",
)  # fmt: skip


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--node", metavar="NODE", help="only the allocation of this node")
    p.add_argument("--resource-class", metavar="RC", help="only this resource class")
    p.add_argument("--state", choices=("allocating", "active", "error"), help="only this state")
    p.add_argument("--owner", metavar="PROJECT", help="only this owner's")


def _listing(c: Conductor, args: argparse.Namespace, page: dict[str, Any]) -> list[Any]:
    return c.list_allocations(
        node=args.node, resource_class=args.resource_class, state=args.state,
        owner=args.owner, **page,
    )  # fmt: skip


def _create(c: Conductor, args: argparse.Namespace, fields: dict[str, Any]) -> Record:
    """Allocate at once: the allocation is shown settled (``active`` or ``error``)."""
    return c.create_allocation(**fields)


def _nothing(p: argparse.ArgumentParser) -> None:
    """``allocation create`` takes only options."""


ALLOCATION: Final = CliKind(
    noun="allocation", columns=("uuid", "name", "resource_class", "state", "node_uuid"),
    long=_LONG, shown=_LONG,
    options=(
        Option("--resource-class", "resource_class", "the resource class wanted", set=False,
               unset=False),
        Option("--trait", "traits", "a trait the node must have; repeatable", kind="list",
               set=False, unset=False),
        Option("--candidate-node", "candidate_nodes", "a node it may get; repeatable",
               kind="list", set=False, unset=False),
        Option("--name", "name", "a unique name for the allocation"),
        Option("--uuid", "uuid", "its UUID (default: a new one)", set=False, unset=False),
        Option("--extra", "extra", "an extra entry; repeatable", kind="dict"),
        Option("--owner", "owner", "the project that owns it", set=False, unset=False),
        Option("--node", "node", "backfill: record an allocation for this deployed node",
               set=False, unset=False),
    ),
    get=lambda c, ident: c.get_allocation(ident), listing=_listing, create=_create,
    update=lambda c, uuid, fields: c.update_allocation(uuid, **fields),
    delete=lambda c, ident: c.delete_allocation(ident),
    create_arguments=_nothing, list_arguments=_filters,
)  # fmt: skip
