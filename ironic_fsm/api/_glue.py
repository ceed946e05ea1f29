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
from ironic_fsm.hardware import interface_names as hardware_interface_names
from ironic_fsm.node import Node

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

    See :func:`ironic_fsm.hardware.interface_names`; cached per conductor and
    driver: the registry does not change names.
    """
    known = _NAMES.setdefault(conductor, {})
    names = known.get(driver)
    if names is None:
        try:
            hardware_type = conductor.hardware_type_for(Node(driver=driver))
        except IronicFSMError:
            return {}
        names = known[driver] = hardware_interface_names(hardware_type)
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
