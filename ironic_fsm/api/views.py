"""A node as Ironic's API shows it at a given microversion.

Fields newer than the request's version are left out, as Ironic does.
Ironic fields that ironic_fsm does not store (chassis, console,
allocation, ...) are shown with the value Ironic gives a node that never had
them, and cannot be set (see ``docs/api-server.rst``). Values under
secret-looking keys are masked in every dict field, not only in
``driver_info`` as Ironic does.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from types import SimpleNamespace
from typing import Any, Final

from ironic_fsm._unstored import UNSTORED_FIELDS
from ironic_fsm.api.common import link_pair
from ironic_fsm.api.versions import Version
from ironic_fsm.conductor.console import CONSOLE_KEY
from ironic_fsm.masking import mask_secrets
from ironic_fsm.node import Node

__all__ = [
    "ABSENT_FIELDS",
    "NODE_FIELD_VERSIONS",
    "SUMMARY_FIELDS",
    "node_view",
    "older_state_names",
    "stamp",
]


def stamp(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _step(value: dict[str, Any] | None) -> dict[str, Any]:
    return value if value is not None else {}


def _holder(value: str | None) -> str | None:
    # The library's reservation names host, process and instance; Ironic's names the host.
    return value.split(":", 1)[0] if value else None


#: Reads one field of a node, or of a listing's row that carries the same attributes.
Getter = Callable[[Any], Any]

#: Ironic fields ironic_fsm does not keep: their value on every node.
ABSENT_FIELDS: Final[dict[str, Any]] = dict(UNSTORED_FIELDS)


def _attr(name: str) -> Getter:
    return operator.attrgetter(name)


def console_enabled(node: Node) -> bool:
    """Whether the node's console was enabled (kept in ``driver_internal_info``)."""
    return bool(node.driver_internal_info.get(CONSOLE_KEY, False))


def _absent(name: str) -> Getter:
    value = ABSENT_FIELDS[name]
    return lambda node: value.copy() if isinstance(value, dict) else value


#: Every field: the version that introduced it and how to read it.
NODE_FIELD_VERSIONS: Final[dict[str, tuple[Version, Getter]]] = {
    "uuid": ((1, 1), _attr("uuid")),
    "driver": ((1, 1), _attr("driver")),
    "driver_info": ((1, 1), lambda n: mask_secrets(n.driver_info)),
    "properties": ((1, 1), lambda n: mask_secrets(n.properties)),
    "extra": ((1, 1), lambda n: mask_secrets(n.extra)),
    "instance_info": ((1, 1), lambda n: mask_secrets(n.instance_info)),
    "chassis_uuid": ((1, 1), _attr("chassis_uuid")),
    "instance_uuid": ((1, 1), _attr("instance_uuid")),
    "maintenance": ((1, 1), _attr("maintenance")),
    "maintenance_reason": ((1, 1), _attr("maintenance_reason")),
    "provision_state": ((1, 1), _attr("provision_state")),
    "target_provision_state": ((1, 1), _attr("target_provision_state")),
    "provision_updated_at": ((1, 1), lambda n: stamp(n.provision_updated_at)),
    "power_state": ((1, 1), _attr("power_state")),
    "target_power_state": ((1, 1), _attr("target_power_state")),
    "console_enabled": ((1, 1), lambda n: console_enabled(n)),
    "last_error": ((1, 1), _attr("last_error")),
    "reservation": ((1, 1), lambda n: _holder(n.reservation)),
    "created_at": ((1, 1), lambda n: stamp(n.created_at)),
    "updated_at": ((1, 1), lambda n: stamp(n.updated_at)),
    "driver_internal_info": ((1, 3), lambda n: mask_secrets(n.driver_internal_info)),
    "name": ((1, 5), _attr("name")),
    "inspection_started_at": ((1, 6), lambda n: stamp(n.inspection_started_at)),
    "inspection_finished_at": ((1, 6), lambda n: stamp(n.inspection_finished_at)),
    "clean_step": ((1, 7), lambda n: _step(n.clean_step)),
    "raid_config": ((1, 12), _attr("raid_config")),
    "target_raid_config": ((1, 12), _attr("target_raid_config")),
    "network_interface": ((1, 20), _attr("network_interface")),
    "resource_class": ((1, 21), _attr("resource_class")),
    **{
        f"{kind}_interface": ((1, 31), _attr(f"{kind}_interface"))
        for kind in ("boot", "deploy", "inspect", "management", "power", "raid", "vendor")
    },
    "console_interface": ((1, 31), _attr("console_interface")),
    "storage_interface": ((1, 33), _attr("storage_interface")),
    "traits": ((1, 37), _attr("traits")),
    "rescue_interface": ((1, 38), _attr("rescue_interface")),
    "bios_interface": ((1, 40), _attr("bios_interface")),
    "fault": ((1, 42), _attr("fault")),
    "deploy_step": ((1, 44), lambda n: _step(n.deploy_step)),
    "conductor_group": ((1, 46), _attr("conductor_group")),
    "automated_clean": ((1, 47), _attr("automated_clean")),
    "protected": ((1, 48), _attr("protected")),
    "protected_reason": ((1, 48), _attr("protected_reason")),
    "owner": ((1, 50), _attr("owner")),
    "description": ((1, 51), _attr("description")),
    "allocation_uuid": ((1, 52), _attr("allocation_uuid")),
    "retired": ((1, 61), _attr("retired")),
    "retired_reason": ((1, 61), _attr("retired_reason")),
    "lessee": ((1, 65), _attr("lessee")),
    "network_data": ((1, 66), lambda n: mask_secrets(n.network_data)),
    "boot_mode": ((1, 75), _attr("boot_mode")),
    "secure_boot": ((1, 75), _attr("secure_boot")),
    "shard": ((1, 82), _attr("shard")),
    "parent_node": ((1, 83), _attr("parent_node")),
    "firmware_interface": ((1, 86), _attr("firmware_interface")),
    "service_step": ((1, 87), lambda n: _step(n.service_step)),
    "disable_power_off": ((1, 95), _attr("disable_power_off")),
    "instance_name": ((1, 104), _attr("instance_name")),
    "health": ((1, 109), _attr("health")),
}

#: What ``GET /v1/nodes`` shows of each node without ``detail``.
SUMMARY_FIELDS: Final = (
    "uuid", "name", "instance_uuid", "power_state", "provision_state", "maintenance",
)  # fmt: skip


@functools.lru_cache(maxsize=256)
def _getters(version: Version, fields: tuple[str, ...] | None) -> tuple[tuple[str, Getter], ...]:
    """The fields shown at ``version`` and how to read each: worked out once, not per node."""
    names = NODE_FIELD_VERSIONS if fields is None else fields
    return tuple(
        (name, NODE_FIELD_VERSIONS[name][1])
        for name in names
        if name in NODE_FIELD_VERSIONS and version >= NODE_FIELD_VERSIONS[name][0]
    )


def node_view(
    node: Node | SimpleNamespace,
    version: Version,
    base: str,
    *,
    fields: Iterable[str] | None = None,
    conductor: str | None = None,
    links: bool = True,
    defaults: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """The node at ``version``; ``fields`` restricts it (already checked against the version).

    ``node`` may be a listing's row (the stored columns ``fields`` needs, as attributes).

    ``defaults`` names the interfaces of the node's driver, shown where the
    node has not chosen one.
    """
    chosen = None if fields is None else tuple(fields)
    out: dict[str, Any] = {name: getter(node) for name, getter in _getters(version, chosen)}
    for kind, name in (defaults or {}).items():
        field = f"{kind}_interface"
        if field in out and out[field] is None:
            out[field] = name
    if (chosen is None or "conductor" in chosen) and version >= (1, 49):
        out["conductor"] = conductor
    older_state_names(out, version)
    if links:
        out["links"] = link_pair(base, "nodes", node.uuid)
        if chosen is None:
            out["ports"] = link_pair(base, f"nodes/{node.uuid}", "ports")
            if version >= (1, 14):
                out["states"] = link_pair(base, f"nodes/{node.uuid}", "states")
    return out


def older_state_names(shown: dict[str, Any], version: Version) -> None:
    """State names as older versions knew them, wherever a state is shown (node, ``/states``).

    Before 1.2 ``available`` was "no state" (null); before 1.39 there was no
    ``inspect wait``, only ``inspecting``.
    """
    state = shown.get("provision_state")
    if state == "available" and version < (1, 2):
        shown["provision_state"] = None
    elif state == "inspect wait" and version < (1, 39):
        shown["provision_state"] = "inspecting"


def known_field(name: str) -> Version | None:
    """The version that introduced field ``name`` (None: no such field)."""
    if name == "conductor":
        return (1, 49)
    entry = NODE_FIELD_VERSIONS.get(name)
    return entry[0] if entry else None
