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
from ironic_fsm.exceptions import InterfaceNotFound, InvalidParameterValue
from ironic_fsm.hardware import HardwareType, interface_namespace, load_hardware_type
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


#: Most (hardware type, interface names) drivers kept; beyond, the cache starts again.
_DRIVERS_KEPT: Final = 1024


class HardwareRegistry:
    """Hardware types by name, and each node's driver (its per-node interface choices).

    ``config`` is read when a type arrives: the operator's priority
    overrides decide whether two clean steps collide. It also says which
    interface implementations are enabled and which are the defaults
    (``enabled_<kind>_interfaces``, ``default_<kind>_interface``).
    """

    def __init__(self, config: Config) -> None:
        self.config = config
        self._types: dict[str, HardwareType] = {}
        self._defaults: dict[str, tuple[str | None, ...]] = {}
        #: Each node's driver, by hardware type and the names the node chose: built
        #: (checked, plugins loaded) once per combination, as every reserve asks.
        self._drivers: dict[tuple[str, tuple[str | None, ...]], HardwareType] = {}

    def register(self, name: str, hardware_type: HardwareType) -> None:
        """Make ``hardware_type`` the one for nodes whose ``driver`` is ``name``."""
        if not isinstance(hardware_type, HardwareType):
            raise InvalidParameterValue(
                f"register_hardware_type({name!r}, ...) needs a HardwareType, "
                f"got {type(hardware_type).__name__}"
            )
        self._check(name, hardware_type)
        self._types[name] = hardware_type
        self._defaults.pop(name, None)
        self._drivers.clear()

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
        """The node's hardware type with the node's own interface choices applied.

        A kind the node leaves unset (``None``) gets the default (:meth:`defaults`).

        Raises:
            DriverNotFound: no hardware type of that name.
            InterfaceNotFound: a chosen implementation is not enabled or not installed.
            IncompatibleInterface: the hardware type does not support a chosen one.
            MissingDependency: a chosen one needs an extra that is not installed.
        """
        chosen = _CHOSEN(node)  # every X_interface field at once: this runs on each reserve
        key = (node.driver, chosen)
        driver = self._drivers.get(key)
        if driver is None:
            driver = self._build(node.driver, chosen)
            if len(self._drivers) >= _DRIVERS_KEPT:
                self._drivers.clear()
            self._drivers[key] = driver
        return driver

    def _build(self, name: str, chosen: tuple[str | None, ...]) -> HardwareType:
        hardware_type = self.get(name)
        defaults = self.defaults(name)
        names: dict[str, str | None] = {}
        for kind, choice, default in zip(INTERFACE_KINDS, chosen, defaults, strict=True):
            if choice is not None:
                self._check_enabled(kind, choice)
            names[kind] = default if choice is None else choice
        driver = hardware_type.select(names)
        if driver is not hardware_type:  # other implementations: their steps checked too
            self._check(name, driver)
        return driver

    def _check_enabled(self, kind: str, name: str) -> None:
        enabled = self.config.enabled_interfaces(kind)
        if enabled is not None and name not in enabled:
            raise InterfaceNotFound(
                f"Could not find the following interface in the "
                f"'{interface_namespace(kind)}' entrypoint: {name}. Valid interfaces are "
                f"{list(enabled)}.",
                kind=kind,
                name=name,
                valid=list(enabled),
            )

    def defaults(self, name: str) -> tuple[str | None, ...]:
        """The default implementation name of each kind for hardware type ``name``.

        In ``INTERFACE_KINDS`` order. Ironic's rule: ``default_<kind>_interface``
        if the type supports it and it is enabled, else the type's first
        supported implementation that is enabled. ``None`` for an unnamed
        implementation registered in code (it is always enabled).

        Raises:
            InvalidParameterValue: no supported implementation of a kind is enabled.
        """
        found = self._defaults.get(name)
        if found is None:
            hardware_type = self.get(name)
            found = self._defaults[name] = tuple(
                self._default(name, hardware_type, kind) for kind in INTERFACE_KINDS
            )
        return found

    def _default(self, name: str, hardware_type: HardwareType, kind: str) -> str | None:
        own = hardware_type.name_of(kind)
        if own is None:
            return None
        supported = hardware_type.supported_interfaces(kind)
        enabled = self.config.enabled_interfaces(kind)
        wanted = self.config.default_interface(kind)
        usable = [n for n in supported if enabled is None or n in enabled]
        if wanted is not None and (
            wanted in usable
            or (hardware_type.any_interface and (enabled is None or wanted in enabled))
        ):
            return wanted
        if usable:
            return usable[0]
        raise InvalidParameterValue(
            f"For hardware type '{name}', no default value found for {kind} interface could "
            f"be determined. Please ensure the interfaces are enabled "
            f"(enabled_{kind}_interfaces; supported: {', '.join(supported)}).",
            kind=kind,
            driver=name,
        )

    def enabled_interfaces(self, name: str, kind: str) -> list[str]:
        """The ``kind`` implementations hardware type ``name`` supports that are enabled here.

        In the type's order of preference (what Ironic lists for the type).
        """
        enabled = self.config.enabled_interfaces(kind)
        supported = self.get(name).supported_interfaces(kind)
        return [n for n in supported if enabled is None or n in enabled]

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
