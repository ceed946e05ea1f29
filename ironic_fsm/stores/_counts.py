"""Node counts by one field's values: what a metrics scrape reads, on any store.

A scrape asks how many nodes there are per provision state, hardware type,
conductor group and fault, every few seconds, on fleets of a hundred
thousand nodes. Decoding every record for that would make the scrape cost
what the fleet holds. So a store may add :class:`NodeCounter`: one
``GROUP BY`` over an index of its own (the SQL store: the covering
indexes of listings, and schema 13's partial index of the nodes in
maintenance), returning a row per value, whatever the fleet's size.

:meth:`~.capabilities.StoreCapabilities.count_nodes` falls back, for a
store without it, to the same answer from one listing of those fields.

This module imports nothing else of the stores package at run time, so that
the capabilities can use it without loading the SQL modules.
"""

from __future__ import annotations

from typing import Any, Final, Protocol, runtime_checkable

from ironic_fsm.exceptions import InvalidParameterValue

__all__ = ["COUNT_FIELDS", "NodeCounter", "check_count"]

#: The fields nodes may be counted by: each a column of the SQL store on an index that
#: holds it, each with few values across a fleet (no UUIDs or names: that is a listing).
COUNT_FIELDS: Final = frozenset(
    {"driver", "provision_state", "conductor_group", "fault", "reservation"}
)


@runtime_checkable
class NodeCounter(Protocol):
    """A store that counts its nodes by one field's values itself, reading no record."""

    def count_nodes(
        self, field: str, *, maintenance: bool | None = None, reserved: bool | None = None
    ) -> dict[Any, int]:
        """How many nodes have each value of ``field``; only values some node has appear.

        ``maintenance`` and ``reserved`` (``None``: either) narrow the count
        to the nodes in maintenance or not, held by someone or free.
        """


def check_count(field: str, maintenance: bool | None, reserved: bool | None) -> None:
    """InvalidParameterValue unless ``field`` is one of :data:`COUNT_FIELDS` and the
    conditions are ``None``, ``True`` or ``False``."""
    if field not in COUNT_FIELDS:
        raise InvalidParameterValue(
            f"Cannot count nodes by {field!r}: choose among {', '.join(sorted(COUNT_FIELDS))}"
        )
    for name, value in (("maintenance", maintenance), ("reserved", reserved)):
        if value is not None and not isinstance(value, bool):
            raise InvalidParameterValue(f"{name} must be True, False or None, not {value!r}")
