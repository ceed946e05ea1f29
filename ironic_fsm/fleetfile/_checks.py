"""The semantic checks of one node that the schema cannot make."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ironic_fsm import states as s
from ironic_fsm.exceptions import InvalidParameterValue, IronicFSMError
from ironic_fsm.fleetfile._model import PLAIN_FIELDS, VERB_ARGS, NodeSpec
from ironic_fsm.interfaces import INTERFACE_KINDS
from ironic_fsm.node import Node

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor


#: A rule looks at a whole node of the file (and the wanted states the
#: lifecycle allows) and returns the problem with its key, or ``None``.
Rule = Callable[[Mapping[str, Any], frozenset[str]], "str | None"]


def _wanted_is_stable(item: Mapping[str, Any], wanted_states: frozenset[str]) -> str | None:
    wanted = item.get("wanted")
    if wanted is None or wanted in wanted_states:
        return None
    return (
        f"{wanted!r} is not a stable state of this lifecycle ({', '.join(sorted(wanted_states))})"
    )


def _reason_needs(flag: str) -> Rule:
    """``<flag>_reason`` says why the flag is set, so it needs the flag set."""

    def rule(item: Mapping[str, Any], wanted_states: frozenset[str]) -> str | None:
        if (item.get(f"{flag}_reason") or None) is None or item.get(flag) is True:
            return None
        return f"needs {flag}: true"

    return rule


def _retired_not_available(item: Mapping[str, Any], wanted_states: frozenset[str]) -> str | None:
    if item.get("retired") is True and item.get("wanted") == s.AVAILABLE:
        return (
            "a retired node is never provided, so it cannot be wanted 'available' "
            "(want 'manageable')"
        )
    return None


def _rescue_password(item: Mapping[str, Any], wanted_states: frozenset[str]) -> str | None:
    """Rescue takes a password, and nothing else does."""
    given, rescue = "rescue_password" in item, item.get("wanted") == s.RESCUE
    if given and not rescue:
        return "is only used with wanted: rescue"
    if rescue and not given:
        return "is required with wanted: rescue"
    return None


#: The per-key checks of a node, in the order their errors are listed.
RULES: Final[tuple[tuple[str, Rule], ...]] = (
    ("wanted", _wanted_is_stable),
    ("retired_reason", _reason_needs("retired")),
    ("maintenance_reason", _reason_needs("maintenance")),
    ("retired", _retired_not_available),
    ("rescue_password", _rescue_password),
)


class Checker:
    """The semantic checks the schema cannot make; drivers come from ``conductor``."""

    def __init__(self, conductor: Conductor | None, errors: list[str]) -> None:
        self.conductor = conductor
        self.errors = errors
        self._drivers: dict[tuple[str, tuple[tuple[str, Any], ...]], Any] = {}

    def add(self, where: str, message: str) -> None:
        self.errors.append(f"{where}: {message}")

    def spec(self, index: int, item: Mapping[str, Any], wanted_states: frozenset[str]) -> NodeSpec:
        """The node's spec; every rule of :data:`RULES` that fails adds an error at its key."""
        where = f"nodes[{index}]"
        fields = {key: item[key] for key in PLAIN_FIELDS if key in item}
        for kind, name in (item.get("interfaces") or {}).items():
            fields[f"{kind}_interface"] = name
        if "traits" in fields:
            fields["traits"] = list(fields["traits"])
        if isinstance(fields.get("conductor_group"), str):  # as stored: else never "unchanged"
            fields["conductor_group"] = fields["conductor_group"].lower()
        for key, rule in RULES:
            message = rule(item, wanted_states)
            if message is not None:
                self.add(f"{where}.{key}", message)
        self._node(where, item["name"], fields)
        return NodeSpec(
            index=index,
            name=item["name"],
            fields=fields,
            wanted=item.get("wanted"),
            retirement={k: item[k] for k in ("retired", "retired_reason") if k in item},
            verb_args={key: item[key] for key in VERB_ARGS if key in item},
        )

    def _node(self, where: str, name: str, fields: dict[str, Any]) -> None:
        try:
            node = Node(name=name, **fields)
        except InvalidParameterValue as exc:
            field = exc.details.get("field")
            at = f"{where}.{field}" if isinstance(field, str) and field.isidentifier() else where
            self.add(at, str(exc))
            return
        if self.conductor is None:
            return
        choices = tuple((kind, node.interface_name(kind)) for kind in INTERFACE_KINDS)
        key = (node.driver, choices)
        try:
            driver = self._drivers.get(key)
            if driver is None:
                # The conductor's own registry: types registered on it count too.
                driver = self._drivers[key] = self.conductor.hardware_type_for(node)
        except IronicFSMError as exc:
            kind = exc.details.get("kind")
            at = f"{where}.interfaces.{kind}" if isinstance(kind, str) else f"{where}.driver"
            self.add(at, str(exc))
            return
        if "driver_info" in fields:
            self._driver_info(where, node, driver)

    def _driver_info(self, where: str, node: Node, driver: Any) -> None:
        """The driver's own ``driver_info`` checks, for drivers that say they are cheap."""
        from ironic_fsm.drivers.common import DriverInfoValidation

        for _, iface in driver.interfaces():
            if not isinstance(iface, DriverInfoValidation):
                continue
            try:
                iface.check_driver_info(node)
            except InvalidParameterValue as exc:
                missing = list(exc.details.get("missing") or [])
                invalid = list(exc.details.get("invalid") or [])
                for key in missing:
                    self.add(f"{where}.driver_info.{key}", f"is required by driver {node.driver!r}")
                _, _, detail = str(exc).partition("driver_info: ")
                for part in detail.split("; "):
                    key = next((k for k in invalid if part.startswith(f"{k} ")), None)
                    if key is not None:
                        self.add(f"{where}.driver_info.{key}", part[len(key) + 1 :])
                if not missing and not invalid:
                    self.add(f"{where}.driver_info", str(exc))
            except IronicFSMError as exc:  # e.g. the driver's library is not installed
                self.add(f"{where}.driver", str(exc))
            return
