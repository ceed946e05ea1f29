"""``volume connector`` and ``volume target``: as ``openstack baremetal volume ...``."""

from __future__ import annotations

import argparse
from typing import Any, Final

from ironic_fsm.cli.records import CliKind, Option
from ironic_fsm.conductor import Conductor
from ironic_fsm.records import Record

__all__ = ["CONNECTOR", "TARGET"]


def _node_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--node", dest="owner", required=True, metavar="NODE",
                   help="UUID or name of its node")  # fmt: skip


def _node_filter(p: argparse.ArgumentParser) -> None:
    p.add_argument("--node", metavar="NODE", help="only this node's")


def _common(word: str) -> tuple[Option, ...]:
    return (
        Option("--extra", "extra", "an extra entry; repeatable", kind="dict"),
        Option("--uuid", "uuid", f"the {word}'s UUID (default: a new one)", set=False,
               unset=False),
        Option("--node", "node", f"move the {word} to this node", create=False, unset=False),
    )  # fmt: skip


def _kind(what: str, columns: tuple[str, ...], long: tuple[str, ...],
          options: tuple[Option, ...]) -> CliKind:  # fmt: skip
    def create(c: Conductor, args: argparse.Namespace, fields: dict[str, Any]) -> Record:
        made: Record = getattr(c, f"create_volume_{what}")(args.owner, **fields)
        return made

    def listing(c: Conductor, args: argparse.Namespace, page: dict[str, Any]) -> list[Any]:
        found: list[Any] = getattr(c, f"list_volume_{what}s")(node=args.node, **page)
        return found

    return CliKind(
        noun=f"volume {what}", columns=columns, long=long, shown=long,
        options=(*_common(what), *options),
        get=lambda c, uuid: getattr(c, f"get_volume_{what}")(uuid), listing=listing,
        create=create,
        update=lambda c, uuid, fields: getattr(c, f"update_volume_{what}")(uuid, **fields),
        delete=lambda c, uuid: getattr(c, f"delete_volume_{what}")(uuid),
        create_arguments=_node_option, list_arguments=_node_filter,
    )  # fmt: skip


CONNECTOR: Final = _kind(
    "connector", ("uuid", "node_uuid", "type", "connector_id"),
    ("uuid", "node_uuid", "type", "connector_id", "extra", "created_at", "updated_at"),
    (
        Option("--type", "type", "iqn, ip, mac, wwnn, wwpn, port or portgroup", unset=False),
        Option("--connector-id", "connector_id", "the initiator's ID (an IQN, a WWPN...)",
               unset=False),
    ),
)  # fmt: skip
TARGET: Final = _kind(
    "target", ("uuid", "node_uuid", "volume_type", "boot_index", "volume_id"),
    ("uuid", "node_uuid", "volume_type", "properties", "boot_index", "extra", "volume_id",
     "created_at", "updated_at"),
    (
        Option("--type", "volume_type", "the volume's type (iscsi, fibre_channel...)",
               unset=False),
        Option("--volume-id", "volume_id", "the volume's ID", unset=False),
        Option("--boot-index", "boot_index", "its boot index on the node", kind="int",
               unset=False),
        Option("--property", "properties", "a property of the target; repeatable",
               kind="dict"),
    ),
)  # fmt: skip
