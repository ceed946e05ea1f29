"""The fleet file's records: a checked file, its nodes, and the error that lists every problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.masking import scrub

#: File keys that are node fields of the same name.
PLAIN_FIELDS: Final = (
    "driver",
    "driver_info",
    "properties",
    "instance_info",
    "extra",
    "traits",
    "resource_class",
    "conductor_group",
    "automated_clean",
    "maintenance",
    "maintenance_reason",
)
#: File keys passed to reconcile, not stored on the node.
VERB_ARGS: Final = ("deploy_steps", "rescue_password")


class FleetFileError(InvalidParameterValue):
    """The fleet file has problems; ``errors`` lists every one as ``path: message``."""

    errors: list[str]


@attrs.frozen
class NodeSpec:
    """One node of the file: its identity, the fields it states and how to reconcile it."""

    index: int
    name: str
    #: Node fields the file states (``interfaces`` flattened to ``<kind>_interface``).
    fields: Mapping[str, Any]
    wanted: str | None
    #: ``retired`` and ``retired_reason`` when stated (applied after the others).
    retirement: Mapping[str, Any]
    #: Arguments for reconcile (``deploy_steps``, ``rescue_password``).
    verb_args: Mapping[str, Any]

    @property
    def where(self) -> str:
        return f"nodes[{self.index}]"


@attrs.frozen
class FleetFile:
    """A checked fleet file."""

    source: str
    nodes: tuple[NodeSpec, ...]
    #: The values substituted from the environment: never shown.
    secrets: frozenset[str] = frozenset()

    def scrub(self, text: str) -> str:
        """``text`` without any substituted value (nor any secret of the file)."""
        return scrub(text, set(self.secrets)) if self.secrets else text
