"""The hardware-type registry: which hardware type drives a node.

Hardware types come from :meth:`Conductor.register_hardware_type` or, on
first use, from the stevedore entry points that :mod:`ironic_fsm.hardware`
loads. Either way a type is checked once, when it arrives, so that a bad
clean-step table is an operator error at start-up and not a surprise in
the middle of a flow.
"""

from __future__ import annotations

from operator import attrgetter

from ironic_fsm.config import Config
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.hardware import HardwareType, load_hardware_type
from ironic_fsm.interfaces import INTERFACE_KINDS
from ironic_fsm.node import Node
from ironic_fsm.planner import check_priority_conflicts

__all__ = ["HardwareRegistry"]


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
