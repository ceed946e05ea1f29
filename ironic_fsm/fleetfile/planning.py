"""Planning: what applying a fleet file would do to the store, which it only reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ironic_fsm import states as s
from ironic_fsm.exceptions import IronicFSMError
from ironic_fsm.fleetfile._model import FleetFile, NodeSpec
from ironic_fsm.node import Node

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor


def changes(node: Node, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The stated fields whose value differs from the node's."""
    changed: dict[str, Any] = {}
    for key, value in fields.items():
        current = getattr(node, key)
        if key == "traits":
            if set(current) != set(value):
                changed[key] = value
        elif current != value:
            changed[key] = value
    return changed


def _describe(node: Node | None, changed: Mapping[str, Any]) -> list[str]:
    """Field names (and changed dict keys) of a change; never a value."""
    names = []
    for key, value in changed.items():
        if isinstance(value, dict):
            old = getattr(node, key) if node is not None else {}
            keys = sorted(k for k in {*old, *value} if old.get(k) != value.get(k))
            names.append(f"{key}({', '.join(keys)})" if keys else key)
        else:
            names.append(key)
    return names


@attrs.frozen
class PlannedNode:
    """What applying the file would do to one node."""

    spec: NodeSpec
    #: ``create``, ``update`` or ``unchanged``.
    action: str
    #: Field names that would be set (dict keys in parentheses); never values.
    fields: tuple[str, ...]
    state: str
    #: The verbs toward ``wanted``; ``None`` when there is no path now.
    verbs: tuple[str, ...] | None
    #: Why there are no verbs, or what will stop them.
    note: str | None = None


@attrs.frozen
class Plan:
    """The whole plan: one entry per node of the file, and the nodes left alone."""

    nodes: tuple[PlannedNode, ...]
    untouched: tuple[str, ...]

    def lines(self, scrub_text: Callable[[str], str] = str) -> list[str]:
        """The plan, one line per node and one for the nodes left alone."""
        out = []
        for item in self.nodes:
            spec = item.spec
            head = f"{item.action} {spec.name}"
            if item.fields:
                head += ": " + ", ".join(item.fields)
            if spec.wanted is None:
                tail = f"in {item.state!r}, no wanted state"
            elif item.verbs is None:
                tail = f"{item.state!r} -> {spec.wanted!r}: {item.note}"
            elif not item.verbs:
                tail = f"already {spec.wanted!r}"
            else:
                tail = f"{item.state!r} -> {spec.wanted!r} via {', '.join(item.verbs)}"
                if item.note:
                    tail += f" ({item.note})"
            out.append(scrub_text(f"{head}; {tail}"))
        if self.untouched:
            shown = ", ".join(self.untouched[:10])
            more = f" and {len(self.untouched) - 10} more" if len(self.untouched) > 10 else ""
            out.append(
                f"left alone: {len(self.untouched)} node(s) in the store are not in the file "
                f"({shown}{more})"
            )
        return out


def node_index(conductor: Conductor) -> dict[str, Node]:
    return {node.name: node for node in conductor.list_nodes() if node.name is not None}


def plan_fleet(conductor: Conductor, fleet: FleetFile) -> Plan:
    """What applying ``fleet`` would do; reads the store once and writes nothing."""
    by_name = node_index(conductor)
    lifecycle = conductor.lifecycle
    planned = []
    for spec in fleet.nodes:
        node = by_name.pop(spec.name, None)
        if node is None:
            state = s.ENROLL
            changed: dict[str, Any] = dict(spec.fields)
            changed.update({k: v for k, v in spec.retirement.items() if v not in (None, False)})
            action = "create"
        else:
            state = node.provision_state
            changed = changes(node, {**spec.fields, **spec.retirement})
            action = "update" if changed else "unchanged"
        verbs: tuple[str, ...] | None = ()
        note = None
        if spec.wanted is not None:
            if node is not None and (
                node.reservation is not None or state not in lifecycle.resting_states
            ):
                verbs, note = None, "busy now; its path is known once it rests"
            else:
                try:
                    verbs = tuple(lifecycle.path(state, spec.wanted))
                except IronicFSMError as exc:
                    verbs, note = None, f"no path: {exc}"
            maintenance = spec.fields.get("maintenance", node.maintenance if node else False)
            retired = spec.retirement.get("retired", node.retired if node else False)
            if verbs and maintenance:
                note = "in maintenance: reconcile will not act on it"
            elif verbs and retired and "provide" in verbs:
                note = "retired: a retired node is never provided"
        planned.append(
            PlannedNode(
                spec=spec,
                action=action,
                fields=tuple(_describe(node, changed)),
                state=state,
                verbs=verbs,
                note=note,
            )
        )
    return Plan(nodes=tuple(planned), untouched=tuple(sorted(by_name)))


def plan_lines(plan: Plan, fleet: FleetFile) -> list[str]:
    """The plan as text, substituted values scrubbed."""
    return plan.lines(fleet.scrub)
