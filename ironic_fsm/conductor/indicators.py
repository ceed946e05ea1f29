"""A node's indicators (LEDs, 1.63), through its management interface.

An indicator is named ``<indicator>@<component>`` (``led@system``), as in
Ironic; a state must be one the indicator takes, and a read-only one is
not set.
"""

from __future__ import annotations

from typing import Any

from ironic_fsm.conductor.common import check_ident, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.exceptions import InvalidParameterValue, ResourceNotFound

__all__ = ["Indicators"]


class Indicators:
    """List a node's indicators; read and set one."""

    def __init__(self, ctx: Context, reservations: Reservations) -> None:
        self._ctx = ctx
        self._reservations = reservations

    def list_indicators(self, ident: str) -> dict[str, dict[str, dict[str, Any]]]:
        node = self._ctx.caps.store.get(check_ident(ident))
        task = self._ctx.task_for(node)
        return dict(task.driver.management.get_supported_indicators(task))

    def get_indicator_state(self, ident: str, name: str) -> str:
        node = self._ctx.caps.store.get(check_ident(ident))
        task = self._ctx.task_for(node)
        component, indicator, _ = self._find(task.driver.management.get_supported_indicators(task),
                                             node.uuid, name)  # fmt: skip
        return str(task.driver.management.get_indicator_state(task, component, indicator))

    def set_indicator_state(self, ident: str, name: str, state: str) -> None:
        with self._reservations.reserved(check_ident(ident)) as job:
            supported = job.call("management", "get_supported_indicators")
            component, indicator, info = self._find(supported, job.node.uuid, name)
            if info.get("readonly"):
                raise InvalidParameterValue(
                    f"Node {job.node.uuid}: indicator {name} is read-only", node=job.node.uuid
                )
            if state not in info.get("states", ()):
                raise InvalidParameterValue(
                    f"Node {job.node.uuid}: indicator {name} takes "
                    f"{', '.join(info.get('states', ()))}, not {shown(state)}",
                    node=job.node.uuid,
                )
            job.call("management", "set_indicator_state", component, indicator, state)

    @staticmethod
    def _find(
        supported: dict[str, dict[str, dict[str, Any]]], node: str, name: str
    ) -> tuple[str, str, dict[str, Any]]:
        indicator, _, component = name.partition("@")
        info = supported.get(component, {}).get(indicator)
        if info is None:
            raise ResourceNotFound(f"Node {node} has no indicator {name}", ident=name)
        return component, indicator, info
