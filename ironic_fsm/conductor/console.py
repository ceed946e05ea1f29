"""A node's console (enable, disable, where to reach it) and a non-maskable interrupt.

Whether the console is enabled is kept in the node's
``driver_internal_info`` under :data:`CONSOLE_KEY`, set once the console
interface started or stopped it; ``no-console`` refuses
(``UnsupportedDriverExtension``), as Ironic's does.
"""

from __future__ import annotations

from typing import Any, Final

from ironic_fsm.conductor.common import check_ident, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.exceptions import InvalidParameterValue

__all__ = ["CONSOLE_KEY", "Console"]

#: Where a node's "console enabled" is kept.
CONSOLE_KEY: Final = "console_enabled"


class Console:
    """Start and stop a node's console; say where it is; inject an NMI."""

    def __init__(self, ctx: Context, reservations: Reservations) -> None:
        self._ctx = ctx
        self._reservations = reservations

    def set_console_mode(self, ident: str, enabled: object) -> None:
        ident = check_ident(ident)
        if type(enabled) is not bool:
            raise InvalidParameterValue(
                f"Node {ident}: enabled must be True or False, not {shown(enabled)}", node=ident
            )
        with self._reservations.reserved(ident) as job:
            job.call("console", "start_console" if enabled else "stop_console")
            job.node.driver_internal_info[CONSOLE_KEY] = enabled

    def get_console(self, ident: str) -> dict[str, Any]:
        """``{'console_enabled', 'console_info'}``: where the console is, ``None`` when off."""
        node = self._ctx.caps.store.get(check_ident(ident))
        task = self._ctx.task_for(node)
        enabled = bool(node.driver_internal_info.get(CONSOLE_KEY, False))
        info = dict(task.driver.console.get_console(task)) if enabled else None
        return {"console_enabled": enabled, "console_info": info}

    def inject_nmi(self, ident: str) -> None:
        with self._reservations.reserved(check_ident(ident)) as job:
            job.call("management", "inject_nmi")
