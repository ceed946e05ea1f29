"""``/v1/inspection_rules`` (1.96): rules run on what inspection found.

A sensitive rule's conditions and actions are shown as ``null``, as Ironic
shows them; the rest is the conductor's
(:mod:`ironic_fsm.conductor.inspection_rules`).
"""

from __future__ import annotations

from typing import Any, Final

import falcon

from ironic_fsm.api.records import Collection, Item, ListQuery, Shape, shown_as
from ironic_fsm.conductor import Conductor
from ironic_fsm.records import InspectionRule, Record

__all__ = ["RULE_FIELDS", "routes"]

_SINCE: Final = (1, 96)
RULE_FIELDS: Final = {
    name: _SINCE
    for name in ("uuid", "description", "phase", "priority", "sensitive", "conditions",
                 "actions", "created_at", "updated_at")
}  # fmt: skip
_STEPS: Final = {"type": ["array", "null"], "items": {"type": "object"}}
_SETTABLE: Final[dict[str, dict[str, Any]]] = {
    "uuid": {"type": ["string", "null"]},
    "description": {"type": ["string", "null"], "maxLength": 255},
    "phase": {"type": ["string", "null"], "maxLength": 16},
    "priority": {"type": "integer"},
    "sensitive": {"type": ["boolean", "null"]},
    "conditions": _STEPS,
    "actions": {"type": "array", "items": {"type": "object"}},
}
_show_all: Final = shown_as(RULE_FIELDS)


def _show(record: Record) -> dict[str, Any]:
    out = _show_all(record)
    if out["sensitive"]:  # never shown again once a rule is sensitive
        out.update(conditions=None, actions=None)
    return out


def _create(conductor: Conductor, body: dict[str, Any]) -> Record:
    given = {name: value for name, value in body.items() if value is not None or name != "uuid"}
    return conductor.create_inspection_rule(**given)


def _listing(conductor: Conductor, req: falcon.Request, query: ListQuery) -> list[Record]:
    rules = conductor.list_inspection_rules(phase=req.get_param("phase"), **query.paging())
    return list(rules)


def _update(conductor: Conductor, record: Record, changed: dict[str, Any]) -> Record:
    if not isinstance(record, InspectionRule):
        raise TypeError(record)
    if record.sensitive:  # shown as null: what was not patched is left as it is
        changed = {k: v for k, v in changed.items() if k not in ("conditions", "actions")
                   or v is not None}  # fmt: skip
    return conductor.update_inspection_rule(record.uuid, **changed)


SHAPE: Final = Shape(
    kind="inspection_rules", word="Inspection rule", since=_SINCE, fields=RULE_FIELDS,
    summary=("uuid", "priority", "phase", "description"), settable=_SETTABLE,
    patchable=frozenset({"description", "phase", "priority", "sensitive", "conditions",
                         "actions"}),
    unsortable=frozenset({"conditions", "actions"}), show=_show,
    fetch=lambda c, ident: c.get_inspection_rule(ident), listing=_listing, create=_create,
    update=_update, delete=lambda c, r: c.delete_inspection_rule(r.uuid),
    detail_since=_SINCE,
)  # fmt: skip


def routes(conductor: Conductor) -> list[tuple[str, Any, dict[str, str]]]:
    return [
        ("/v1/inspection_rules", Collection(conductor, SHAPE), {}),
        ("/v1/inspection_rules/detail", Collection(conductor, SHAPE, detail=True), {}),
        ("/v1/inspection_rules/{ident}", Item(conductor, SHAPE), {}),
    ]
