"""What the API shows that the conductor answers in its own terms: interface names, validate.

Ironic names each interface implementation (``ipmitool``, ``fake``) and
reports on interfaces ironic_fsm does not have; the conductor's public
methods (:meth:`Conductor.validate`, :meth:`Conductor.hardware_type_for`)
give the facts, this module puts them in Ironic's words.
"""

from __future__ import annotations

import weakref
from typing import Any, Final

from ironic_fsm.conductor import Conductor
from ironic_fsm.exceptions import IronicFSMError

__all__ = ["VALIDATED_INTERFACES", "interface_names", "validate_node"]

#: Interfaces Ironic reports on in ``validate``; those we do not have report "not supported".
VALIDATED_INTERFACES: Final = (
    "boot", "deploy", "management", "network", "power", "bios", "console", "firmware",
    "inspect", "raid", "rescue", "storage",
)  # fmt: skip


_NAMES: weakref.WeakKeyDictionary[Conductor, dict[str, dict[str, str | None]]] = (
    weakref.WeakKeyDictionary()
)


def interface_names(conductor: Conductor, driver: str) -> dict[str, str | None]:
    """The name of each interface ``driver`` uses by default (Ironic shows them, never null).

    See :meth:`Conductor.default_interfaces`; cached per conductor and
    driver: the configuration does not change.
    """
    known = _NAMES.setdefault(conductor, {})
    names = known.get(driver)
    if names is None:
        try:
            names = known[driver] = conductor.default_interfaces(driver)
        except IronicFSMError:
            return {}
    return names


def validate_node(conductor: Conductor, ident: str) -> dict[str, dict[str, Any]]:
    """:meth:`Conductor.validate` as Ironic reports it, for every interface Ironic has."""
    found = conductor.validate(ident)
    result: dict[str, dict[str, Any]] = {}
    for kind in VALIDATED_INTERFACES:
        if kind not in found:
            result[kind] = {"result": None, "reason": "not supported"}
        else:
            reason = found[kind]
            result[kind] = {"result": reason is None, "reason": reason}
    return result
