"""What the conductor has no public method for yet: boot device, validate, served
types, deploy templates.

They reach into the conductor's reservation and driver lookup; this module
is the one place that does, so that it shrinks to nothing once the
conductor offers ``validate``, ``get_boot_device`` and ``set_boot_device``.
"""

from __future__ import annotations

import weakref
from importlib.metadata import entry_points
from typing import Any, Final

from ironic_fsm.conductor import Conductor
from ironic_fsm.conductor.common import describe_exc, scrub_node
from ironic_fsm.conductor.runtime import driver_call
from ironic_fsm.exceptions import IronicFSMError
from ironic_fsm.hardware import interface_namespace
from ironic_fsm.task import Task

__all__ = [
    "VALIDATED_INTERFACES",
    "deploy_templates",
    "interface_names",
    "management_call",
    "served_drivers",
    "validate_node",
]

#: Interfaces Ironic reports on in ``validate``; those we do not have report "not supported".
VALIDATED_INTERFACES: Final = (
    "boot", "deploy", "management", "network", "power", "bios", "console", "firmware",
    "inspect", "raid", "rescue", "storage",
)  # fmt: skip
_ABSENT: Final = frozenset({"network", "console", "storage"})


def management_call(conductor: Conductor, ident: str, method: str, *args: Any) -> Any:
    """``driver.management.<method>(task, *args)`` with the node reserved (NodeLocked if busy)."""
    with conductor._reserved(ident) as job:
        return driver_call(job, "management", method, *args)


def served_drivers(conductor: Conductor) -> tuple[str, ...]:
    """The hardware types this conductor serves (enabled or installed, and registered)."""
    return conductor._served_types()


def deploy_templates(conductor: Conductor) -> dict[str, list[dict[str, Any]]]:
    """The conductor's deploy templates by name (from its settings file), as copies."""
    return {name: [dict(step) for step in steps] for name, steps in conductor._templates.items()}


_NAMES: weakref.WeakKeyDictionary[Conductor, dict[str, dict[str, str | None]]] = (
    weakref.WeakKeyDictionary()
)


def interface_names(conductor: Conductor, driver: str) -> dict[str, str | None]:
    """The name of each interface ``driver`` uses by default (Ironic shows them, never null).

    Found from the entry point that provides each interface's class, or
    ``no-<kind>`` for the no-op ones; ``None`` where no name is known.
    Cached per conductor and driver: the registry does not change names.
    """
    known = _NAMES.setdefault(conductor, {})
    names = known.get(driver)
    if names is None:
        try:
            hardware_type = conductor._registry.get(driver)
        except IronicFSMError:
            return {}
        names = {kind: _name_of(kind, iface) for kind, iface in hardware_type.interfaces()}
        known[driver] = names
    return names


def _name_of(kind: str, iface: object) -> str | None:
    cls = type(iface)
    if cls.__name__.startswith("Noop"):
        return f"no-{kind}"
    for ep in entry_points(group=interface_namespace(kind)):
        try:
            if ep.load() is cls:  # the entry may name a re-export of the class
                return str(ep.name)
        except Exception:  # a broken plugin just has no name to offer
            continue
    return None


def validate_node(conductor: Conductor, ident: str) -> dict[str, dict[str, Any]]:
    """Each interface's ``validate`` on a plain read: nothing is reserved or written."""
    node = conductor.get_node(ident)
    task = Task(node=node, driver=conductor._driver_for(node), config=conductor.config)
    result: dict[str, dict[str, Any]] = {}
    for kind in VALIDATED_INTERFACES:
        if kind in _ABSENT:
            result[kind] = {"result": None, "reason": "not supported"}
            continue
        try:
            getattr(task.driver, kind).validate(task)
        except Exception as error:
            result[kind] = {"result": False, "reason": scrub_node(node, describe_exc(error))}
        else:
            result[kind] = {"result": True, "reason": None}
    return result
