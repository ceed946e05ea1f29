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
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from types import SimpleNamespace
from typing import Any, Final

from ironic_fsm._unstored import UNSTORED_FIELDS
from ironic_fsm.api._page_code import PageCode, Read, json_text
from ironic_fsm.api.common import link_pair
from ironic_fsm.api.versions import Version
from ironic_fsm.conductor.console import CONSOLE_KEY
from ironic_fsm.masking import mask_secrets, masked
from ironic_fsm.node import Node

__all__ = [
    "ABSENT_FIELDS",
    "NODE_FIELD_VERSIONS",
    "SUMMARY_FIELDS",
    "NodePage",
    "node_view",
    "older_state_names",
    "read_attributes",
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
#: Turns the attribute a field is read from into what the field shows.
Shown = Callable[[Any], Any]

#: Ironic fields ironic_fsm does not keep: their value on every node.
ABSENT_FIELDS: Final[dict[str, Any]] = dict(UNSTORED_FIELDS)


def console_enabled(node: Node) -> bool:
    """Whether the node's console was enabled (kept in ``driver_internal_info``)."""
    return _console_on(node.driver_internal_info)


def _console_on(driver_internal_info: dict[str, Any]) -> bool:
    return bool(driver_internal_info.get(CONSOLE_KEY, False))


#: The node's fields in the order Ironic shows them, after the version that introduced
#: them (the versions only grow down the list; a line without one continues the last).
_FIELDS_SINCE: Final = """
1.1   uuid driver driver_info properties extra instance_info chassis_uuid instance_uuid
      maintenance maintenance_reason provision_state target_provision_state provision_updated_at
      power_state target_power_state console_enabled last_error reservation created_at
      updated_at
1.3   driver_internal_info
1.5   name
1.6   inspection_started_at inspection_finished_at
1.7   clean_step
1.12  raid_config target_raid_config
1.20  network_interface
1.21  resource_class
1.31  boot_interface deploy_interface inspect_interface management_interface power_interface
      raid_interface vendor_interface console_interface
1.33  storage_interface
1.37  traits
1.38  rescue_interface
1.40  bios_interface
1.42  fault
1.44  deploy_step
1.46  conductor_group
1.47  automated_clean
1.48  protected protected_reason
1.50  owner
1.51  description
1.52  allocation_uuid
1.61  retired retired_reason
1.65  lessee
1.66  network_data
1.75  boot_mode secure_boot
1.82  shard
1.83  parent_node
1.86  firmware_interface
1.87  service_step
1.95  disable_power_off
1.104 instance_name
1.109 health
"""


def _versioned_fields(table: str) -> Iterator[tuple[Version, str]]:
    """``(since, name)`` of each field of a table like :data:`_FIELDS_SINCE`, in its order."""
    since: Version = (1, 1)
    for line in table.strip().splitlines():
        first, *names = line.split()
        if "." in first:
            major, minor = first.split(".")
            since = (int(major), int(minor))
        else:
            names.insert(0, first)
        yield from ((since, name) for name in names)


#: The fields not shown as the node keeps them: the attribute each reads and what it shows.
#: Secrets are masked in every dict of the record a client may write.
_SHOWN_AS: Final[dict[str, tuple[str, Shown]]] = {
    **{name: (name, mask_secrets) for name in (
        "driver_info", "properties", "extra", "instance_info", "driver_internal_info",
        "network_data",
    )},
    **{name: (name, stamp) for name in (
        "provision_updated_at", "created_at", "updated_at", "inspection_started_at",
        "inspection_finished_at",
    )},
    **{name: (name, _step) for name in ("clean_step", "deploy_step", "service_step")},
    "console_enabled": ("driver_internal_info", _console_on),
    "reservation": ("reservation", _holder),
}  # fmt: skip


def _getter(name: str) -> Getter:
    attribute, shown = _SHOWN_AS.get(name, (name, None))
    read = operator.attrgetter(attribute)
    return read if shown is None else lambda node: shown(read(node))


#: Every field: the version that introduced it and how to read it.
NODE_FIELD_VERSIONS: Final[dict[str, tuple[Version, Getter]]] = {
    name: (since, _getter(name)) for since, name in _versioned_fields(_FIELDS_SINCE)
}

#: What ``GET /v1/nodes`` shows of each node without ``detail``.
SUMMARY_FIELDS: Final = (
    "uuid", "name", "instance_uuid", "power_state", "provision_state", "maintenance",
)  # fmt: skip


def read_attributes(fields: Iterable[str]) -> list[str]:
    """The node attributes the given fields are read from, each once, in their order."""
    return list(dict.fromkeys(_SHOWN_AS.get(name, (name,))[0] for name in fields))


@functools.lru_cache(maxsize=256)
def _shown_fields(version: Version, fields: tuple[str, ...] | None) -> tuple[str, ...]:
    """The fields shown at ``version``, in the order shown (each once): worked out once,
    not per node."""
    names = NODE_FIELD_VERSIONS if fields is None else dict.fromkeys(fields)
    return tuple(
        name
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
    node has not chosen one. One field at a time: the reference that a
    listing's :class:`NodePage` must show byte for byte.
    """
    chosen = None if fields is None else tuple(fields)
    out: dict[str, Any] = {
        name: NODE_FIELD_VERSIONS[name][1](node) for name in _shown_fields(version, chosen)
    }
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


class NodePage:
    """A listing's nodes at one version and field set, shown as :func:`node_view` shows each.

    What a page's nodes share is worked out once, and a node costs one
    dict display: the fields shown, each read from its attribute and only
    those that need it worked on (masking, timestamps), compiled for the
    version and field set (:func:`_plan`, :mod:`._page_code`). ``conductor_of`` and
    ``defaults_of`` answer for a node and for a driver as :func:`node_view`'s
    ``conductor`` and ``defaults`` do.
    """

    def __init__(
        self,
        version: Version,
        base: str,
        fields: tuple[str, ...] | None,
        conductor_of: Callable[[Any], str | None],
        defaults_of: Callable[[str], Mapping[str, str | None]],
    ) -> None:
        self._plan = _plan(version, fields)
        self._base = base
        self._conductor_of = conductor_of
        self._defaults_of = defaults_of
        self._defaults: dict[str, tuple[tuple[str, str | None], ...]] = {}

    def show(self, nodes: Iterable[Any]) -> list[dict[str, Any]]:
        """The nodes' views, for orjson to encode at once (:func:`~.common.send`): their links
        are encoded already, and their dicts may be the nodes' own."""
        own, mark = (json_text(f"{self._base}{path}") for path in ("/v1/nodes/", "/nodes/"))
        return self._plan.page(nodes, own, mark, self._conductor_of, self._interfaces)

    def _interfaces(self, driver: str) -> tuple[tuple[str, str | None], ...]:
        """The shown interface fields the driver names a default for, with that default."""
        found = self._defaults.get(driver)
        if found is None:
            fields = (
                (f"{kind}_interface", name) for kind, name in self._defaults_of(driver).items()
            )
            found = self._defaults[driver] = tuple(
                (field, name) for field, name in fields if field in self._plan.keys
            )
        return found


#: The helper each of the :data:`_SHOWN_AS` functions is called by in a page's generated code,
#: and what runs for it (the masking that copies no dict without secrets: the page is
#: encoded at once).
_HELPERS: Final[dict[Callable[..., Any], tuple[str, Callable[..., Any]]]] = {
    mask_secrets: ("mask", masked), stamp: ("stamp", stamp), _step: ("step", _step),
    _console_on: ("console_on", _console_on), _holder: ("holder", _holder),
}  # fmt: skip


@functools.lru_cache(maxsize=256)
def _plan(version: Version, fields: tuple[str, ...] | None) -> PageCode:
    """:class:`NodePage`'s shared part for one version and field set: the generated page
    (:mod:`._page_code`) of the fields :func:`node_view` shows, read as it reads them."""
    keys = _shown_fields(version, fields)
    reads = []
    for name in keys:
        attribute, shown = _SHOWN_AS.get(name, (name, None))
        reads.append(Read(name, attribute, None if shown is None else _HELPERS[shown][0]))
    renamed = "provision_state" in keys and version < (1, 39)
    return PageCode(
        reads,
        {**dict(_HELPERS.values()), "older_state_names": older_state_names},
        conductor=(fields is None or "conductor" in fields) and version >= (1, 49),
        older_states=version if renamed else None,
        links=1 if fields is not None else 2 + (version >= (1, 14)),
    )


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
