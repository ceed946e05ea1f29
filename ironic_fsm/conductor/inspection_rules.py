"""Inspection rules (1.96): kept in the store, checked as Ironic checks them, run on inventory.

A rule is named by its UUID only. Its ``phase`` is ``main`` (the only
phase Ironic has), its ``priority`` 0 to 9999 (rules run highest first),
and a ``sensitive`` rule stays sensitive: its conditions and actions are
not shown, and the flag cannot be taken back. What the conditions and
actions may say is :func:`~ironic_fsm.inspection_rules.check_rule_steps`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from ironic_fsm.conductor.common import shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.records import check_flag, described_changes, new_uuid, records_of
from ironic_fsm.exceptions import InvalidParameterValue, ResourceNotFound
from ironic_fsm.inspection_rules import RuleOutcome, apply_rules, check_rule_steps
from ironic_fsm.node import Node, check_json, is_uuid_like
from ironic_fsm.records import InspectionRule
from ironic_fsm.stores.base import RecordQuery, RecordStore

__all__ = ["RULE_FIELDS", "InspectionRules"]

#: What a caller may set on a rule.
RULE_FIELDS: Final = frozenset(
    {"description", "phase", "priority", "sensitive", "conditions", "actions"}
)
#: The phases rules run in (Ironic's, all one of them).
PHASES: Final = ("main",)
_MOST_PRIORITY: Final = 9999


class InspectionRules:
    """Create, read, change and delete inspection rules; run them on what inspection found."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def _records(self) -> RecordStore:
        return records_of(self._ctx, InspectionRule)

    def get_rule(self, uuid: str) -> InspectionRule:
        """The rule with this UUID; ``ResourceNotFound`` if none."""
        if not is_uuid_like(uuid):
            raise ResourceNotFound(f"Inspection rule {uuid} could not be found.", ident=uuid)
        return self._records().get_record(InspectionRule, uuid.lower())

    def list_rules(self, *, phase: str | None = None, **page: Any) -> list[InspectionRule]:
        """One page of rules (``limit``, ``marker``, ``sort_key``, ``sort_dir``), of a phase."""
        filters = {} if phase is None else {"phase": phase}
        return self._records().list_records(InspectionRule, RecordQuery(filters=filters, **page))

    def create_rule(self, *, uuid: str | None = None, **fields: Any) -> InspectionRule:
        if "actions" not in fields:
            raise InvalidParameterValue(
                "Validation failed for inspection rule: 'actions' is a required property",
                field="actions",
            )
        rule = self._apply(InspectionRule(uuid=new_uuid(InspectionRule, uuid)), fields)
        return self._records().add_record(rule)

    def update_rule(self, uuid: str, **fields: Any) -> InspectionRule:
        rule = self.get_rule(uuid)
        if rule.sensitive and "sensitive" in fields and fields["sensitive"] is not True:
            raise InvalidParameterValue("Inspection rules cannot have the sensitive flag unset.")
        return self._records().replace_record(self._apply(rule, fields))

    def delete_rule(self, uuid: str) -> None:
        self._records().delete_record(InspectionRule, self.get_rule(uuid).uuid)

    def run_rules(
        self,
        node: Node,
        inventory: Mapping[str, Any],
        plugin_data: dict[str, Any] | None = None,
        phase: str = "main",
    ) -> RuleOutcome:
        """Every rule of ``phase`` run on ``node`` (a changed copy in the outcome)."""
        rules = self.list_rules(phase=phase)
        return apply_rules(rules, node, inventory, {} if plugin_data is None else plugin_data)

    def _apply(self, rule: InspectionRule, fields: dict[str, Any]) -> InspectionRule:
        changes = described_changes(fields, RULE_FIELDS, "Inspection rule")
        if "phase" in fields:
            phase = "main" if fields["phase"] is None else fields["phase"]
            if phase not in PHASES:
                raise InvalidParameterValue(
                    f"Invalid phase: {shown(phase)}. Valid phases are: {', '.join(PHASES)}",
                    field="phase",
                )
            changes["phase"] = phase
        if "priority" in fields:
            changes["priority"] = _priority(fields["priority"])
        if "sensitive" in fields:
            sensitive = fields["sensitive"]
            changes["sensitive"] = False if sensitive is None else check_flag(
                sensitive, "sensitive", "Inspection rule"
            )  # fmt: skip
        steps = {
            "conditions": fields.get("conditions", rule.conditions),
            "actions": fields.get("actions", rule.actions),
        }
        if "conditions" in fields or "actions" in fields:
            conditions, actions = check_rule_steps(steps["conditions"], steps["actions"])
            check_json(conditions, "Inspection rule conditions")
            check_json(actions, "Inspection rule actions")
            changes.update(conditions=conditions, actions=actions)
        return attrs.evolve(rule, **changes)


def _priority(value: object) -> int:
    if value is None:  # unset: Ironic's default
        return 0
    if type(value) is not int:
        raise InvalidParameterValue(
            f"Inspection rule priority must be an integer, not {shown(value)}", field="priority"
        )
    if value < 0:
        raise InvalidParameterValue(
            "Priority cannot be negative for user-defined rules.", field="priority"
        )
    if value > _MOST_PRIORITY:
        raise InvalidParameterValue(
            "Priority must be between 0 and 9999 for user-defined rules.", field="priority"
        )
    return value
