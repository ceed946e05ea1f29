"""Declarative fleet files: the nodes an operator wants, applied to a store.

A fleet file (YAML or JSON) lists nodes by name with the fields the
operator cares about and the stable state each should be in. Applying it
has three parts, each usable without the CLI:

* :func:`load_fleet` parses the text, substitutes ``${VAR}`` from the
  environment, checks it against the shipped JSON Schema
  (``fleetfile.schema.json``) and then semantically (drivers, interfaces,
  ``driver_info``, duplicate names, contradictions). Every problem is
  collected with its path in the file, so that one run shows them all and
  nothing is touched until the whole file is good.
* :func:`plan_fleet` compares the file with the store: what would be
  enrolled, which fields would change, and the verbs
  (:meth:`~ironic_fsm.machine.Lifecycle.path`) each node would go through.
  It writes nothing.
* :class:`FleetApply` enrolls and updates the records, then reconciles
  each node one verb per round through
  :meth:`~ironic_fsm.Conductor.reconcile`, nodes in parallel. It never
  sleeps: the caller decides how often to call :meth:`FleetApply.round`.

A field the file gives is the node's whole value (a dict is replaced, not
merged); a field it leaves out is left as the store has it. Nodes in the
store that the file does not name are left alone.

Substituted values are secrets by construction (that is why they are not in
the file): :meth:`FleetFile.scrub` replaces them in any text shown, and
secret keys (:mod:`ironic_fsm.masking`) never show their values.

The parts live in :mod:`.loading`, :mod:`.planning` and :mod:`.applying`;
this module is the one import path for all of them.
"""

from __future__ import annotations

from ironic_fsm.fleetfile._model import FleetFile, FleetFileError, NodeSpec
from ironic_fsm.fleetfile._schema import SCHEMA_FILE, schema
from ironic_fsm.fleetfile.applying import (
    BAD_RESULTS,
    FINAL_RESULTS,
    FleetApply,
    NodeStatus,
    RoundReport,
)
from ironic_fsm.fleetfile.loading import load_fleet, parse_fleet
from ironic_fsm.fleetfile.planning import Plan, PlannedNode, plan_fleet, plan_lines

__all__ = [
    "BAD_RESULTS",
    "FINAL_RESULTS",
    "SCHEMA_FILE",
    "FleetApply",
    "FleetFile",
    "FleetFileError",
    "NodeSpec",
    "NodeStatus",
    "Plan",
    "PlannedNode",
    "RoundReport",
    "load_fleet",
    "parse_fleet",
    "plan_lines",
    "plan_fleet",
    "schema",
]
