"""The conductor service: what ``ironic-fsm serve`` runs, usable from Python too.

:class:`Service` hosts one :class:`~ironic_fsm.Conductor`: flow threads
(:class:`FlowExecutor`), periodic duties on their own timers
(:mod:`~ironic_fsm.service.periodic`), a wake-up on PostgreSQL
notifications (:mod:`~ironic_fsm.service.listener`) and a drain on stop.
See ``docs/fleet.rst``.
"""

from __future__ import annotations

from ironic_fsm.service.core import (
    DEFAULT_WORKERS,
    EXIT_FORCED,
    EXIT_OK,
    FlowExecutor,
    Service,
    ServiceOptions,
)
from ironic_fsm.service.listener import CHANNEL, conninfo

__all__ = [
    "CHANNEL", "DEFAULT_WORKERS", "EXIT_FORCED", "EXIT_OK", "FlowExecutor", "Service",
    "ServiceOptions", "conninfo",
]  # fmt: skip
