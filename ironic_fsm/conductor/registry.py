"""The hardware-type registry: which hardware type drives a node, and its declared steps.

Hardware types come from :meth:`Conductor.register_hardware_type` or, on
first use, from the stevedore entry points that :mod:`ironic_fsm.hardware`
loads. Either way a type is checked once, when it arrives, so that a bad
clean-step table is an operator error at start-up and not a surprise in
the middle of a flow. The steps its interfaces declare are gathered once
too (:func:`declared_steps_of`): every plan starts from them.
"""

from __future__ import annotations

import weakref
from itertools import chain
from operator import attrgetter
from typing import Any, Final

from ironic_fsm.config import Config
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.hardware import HardwareType, load_hardware_type
from ironic_fsm.interfaces import INTERFACE_KINDS
from ironic_fsm.node import Node
from ironic_fsm.planner import check_priority_conflicts
from ironic_fsm.steps import INTERFACE_ORDER, Phase

__all__ = ["HardwareRegistry", "declared_steps_of"]

Step = dict[str, Any]
#: What :func:`declared_steps_of` answers: the interfaces' classes and their steps, or None.
Declared = tuple[tuple[type, ...], tuple[Step, ...]] | None


#: The node's interface choices, in ``INTERFACE_KINDS`` order.
_CHOSEN = attrgetter(*(f"{kind}_interface" for kind in INTERFACE_KINDS))


class HardwareRegistry:
    """Hardware types by name, and each node's driver (its per-node interface choices).

    ``config`` is read when a type arrives: the operator's priority
    overrides decide whether two clean steps collide.
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        self._types: dict[str, HardwareType] = {}

    def register(self, name: str, hardware_type: HardwareType) -> None:
        """Make ``hardware_type`` the one for nodes whose ``driver`` is ``name``."""
        if not isinstance(hardware_type, HardwareType):
            raise InvalidParameterValue(
                f"register_hardware_type({name!r}, ...) needs a HardwareType, "
                f"got {type(hardware_type).__name__}"
            )
        self._check(name, hardware_type)
        self._types[name] = hardware_type

    def names(self) -> set[str]:
        """The hardware types registered or loaded so far in this conductor."""
        return set(self._types)

    def get(self, name: str) -> HardwareType:
        """The registered type, else the installed one (loaded and checked once)."""
        hardware_type = self._types.get(name)
        if hardware_type is None:
            hardware_type = load_hardware_type(name)
            self._check(name, hardware_type)
            self._types[name] = hardware_type
        return hardware_type

    def driver_for(self, node: Node) -> HardwareType:
        """The node's hardware type with the node's own interface choices applied."""
        hardware_type = self._types.get(node.driver) or self.get(node.driver)
        chosen = _CHOSEN(node)  # every X_interface field at once: this runs on each reserve
        if not any(chosen):
            return hardware_type
        return hardware_type.select(dict(zip(INTERFACE_KINDS, chosen, strict=True)))

    def _check(self, name: str, hardware_type: HardwareType) -> None:
        for kind, iface in hardware_type.interfaces():
            # Only declared steps can be checked before a node exists.
            declared = [info.as_dict(kind) for info in iface.step_definitions["clean"]]
            check_priority_conflicts(
                "clean",
                declared,
                overrides=self.config.clean_step_priority_override,
                owner=f"Hardware type {name!r}",
            )


def declared_steps_of(phase: Phase, driver: HardwareType) -> Declared:
    """The driver's declared ``phase`` steps, shared, and the classes they depend on.

    Declared steps are settled when an interface class is made, so they
    are found once per set of classes (a hardware type registered later
    has its own), and kept with each hardware type (frozen: its interfaces
    never change). ``None`` when an interface learns its steps from the
    node, or the driver lacks an interface kind: ask the interfaces then.
    """
    entry = _BY_TYPE.get(id(driver))
    if entry is not None and entry[0]() is driver:
        answers = entry[1]
    else:
        answers = {}
        if isinstance(driver, HardwareType):
            key = id(driver)  # the entry goes with the type, before its id can be reused
            _BY_TYPE[key] = (weakref.ref(driver, lambda _: _BY_TYPE.pop(key, None)), answers)
    if phase not in answers:
        answers[phase] = _by_classes(phase, driver)
    return answers[phase]


#: :func:`declared_steps_of`'s answers by hardware type, weakly held.
_BY_TYPE: dict[int, tuple[weakref.ref[HardwareType], dict[Phase, Declared]]] = {}
#: Each phase's interfaces of a hardware type, read all at once, in the phase's table order.
_INTERFACES_OF: Final = {phase: attrgetter(*order) for phase, order in INTERFACE_ORDER.items()}
#: The declared steps of a phase's interfaces, by the interfaces' classes (None: some
#: interface's steps depend on the node).
_BY_CLASSES: dict[tuple[Phase, tuple[type, ...]], tuple[Step, ...] | None] = {}
_CACHE_SIZE: Final = 256


def _by_classes(phase: Phase, driver: HardwareType) -> Declared:
    try:
        interfaces = _INTERFACES_OF[phase](driver)
    except AttributeError:
        return None
    classes = tuple(map(type, interfaces))
    key = (phase, classes)
    try:
        steps = _BY_CLASSES[key]
    except KeyError:
        found = [iface.declared_steps(phase) for iface in interfaces if iface is not None]
        steps = None if any(d is None for d in found) else tuple(chain.from_iterable(found))
        if len(_BY_CLASSES) >= _CACHE_SIZE:
            _BY_CLASSES.clear()
        _BY_CLASSES[key] = steps
    return None if steps is None else (classes, steps)
