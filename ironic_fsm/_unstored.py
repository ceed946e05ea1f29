"""Ironic node fields ironic_fsm does not keep, and what Ironic shows for a node without them.

The REST API shows them so that clients find every field they expect, and
the command line lists them (``node list --long``) so that its columns are
the ones ``openstack baremetal`` prints. Nothing here can be set.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Final

__all__ = ["UNSTORED_FIELDS"]

#: Fields of the microversions the API serves (up to 1.92) with no store behind them.
UNSTORED_FIELDS: Final[MappingProxyType[str, Any]] = MappingProxyType(
    {
        "chassis_uuid": None,
        "console_enabled": False,
        "allocation_uuid": None,
    }
)
