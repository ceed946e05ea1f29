"""Applying: records first, then one reconcile per node per round, never sleeping."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, Final

import attrs

from ironic_fsm import states as s
from ironic_fsm.exceptions import IronicFSMError, NodeLocked
from ironic_fsm.fleetfile._model import FleetFile, NodeSpec
from ironic_fsm.fleetfile.planning import changes, node_index
from ironic_fsm.node import Node

if TYPE_CHECKING:
    from ironic_fsm.conductor import Conductor

# Results of a node in an apply (NodeStatus.result).
THERE: Final = "there"
UNDERWAY: Final = "under way"
BUSY: Final = "busy"
FAILED: Final = "failed"
BLOCKED: Final = "blocked"
ERROR: Final = "error"
RECORDED: Final = "recorded"
#: Results after which a node is not reconciled again in this apply.
FINAL_RESULTS: Final = frozenset({THERE, FAILED, BLOCKED, ERROR, RECORDED})
#: Results that make an apply fail (exit status 1).
BAD_RESULTS: Final = frozenset({FAILED, BLOCKED, ERROR})


@attrs.define
class NodeStatus:
    """Where one node of the file stands in an apply."""

    name: str
    wanted: str | None
    uuid: str | None = None
    state: str | None = None
    last_error: str | None = None
    #: One of ``there``, ``under way``, ``busy``, ``failed``, ``blocked``,
    #: ``error`` (its record could not be written) and ``recorded`` (no wanted state).
    result: str = UNDERWAY
    #: Why it is blocked or in error (our words, scrubbed), or what is pending.
    note: str | None = None

    @property
    def final(self) -> bool:
        return self.result in FINAL_RESULTS


@attrs.frozen
class RoundReport:
    """One round of reconciling: its number, how many verbs it issued, the results."""

    number: int
    verbs: int
    counts: Mapping[str, int]
    total: int

    def line(self) -> str:
        there = self.counts.get(THERE, 0) + self.counts.get(RECORDED, 0)
        rest = ", ".join(
            f"{count} {result}"
            for result, count in sorted(self.counts.items())
            if result not in (THERE, RECORDED) and count
        )
        return (
            f"round {self.number}: {there}/{self.total} settled as wanted"
            + (f", {rest}" if rest else "")
            + f" ({self.verbs} verb(s) issued)"
        )


class FleetApply:
    """Apply a checked fleet file: records first, then one verb per node per round.

    ``workers`` nodes are reconciled at a time (threads; the conductor and
    its store are thread-safe). Nothing here sleeps or loops on its own.
    """

    def __init__(self, conductor: Conductor, fleet: FleetFile, *, workers: int = 8) -> None:
        self.conductor = conductor
        self.fleet = fleet
        self.workers = max(1, workers)
        self.status = {spec.name: NodeStatus(spec.name, spec.wanted) for spec in fleet.nodes}
        self._specs = {spec.name: spec for spec in fleet.nodes}
        self._pending_records: dict[str, dict[str, Any]] = {}
        self._pending_retire: dict[str, dict[str, Any]] = {}
        self.rounds = 0
        self.created: list[str] = []
        self.updated: list[str] = []
        self.untouched: tuple[str, ...] = ()

    # -- records ----------------------------------------------------------------------

    def enroll(self) -> None:
        """Create the missing nodes and update the fields that differ."""
        by_name = node_index(self.conductor)
        for spec in self.fleet.nodes:
            node = by_name.pop(spec.name, None)
            if node is None:
                fields = {**spec.fields, **spec.retirement}
                self._write(spec, partial(self._create, spec.name, fields))
                continue
            changed = changes(node, spec.fields)
            retire = changes(node, spec.retirement)
            if retire.get("retired") is True and node.provision_state == s.AVAILABLE:
                # Ironic refuses to retire an available node: retire it once
                # reconcile has moved it on (toward manageable, say).
                if spec.wanted in (None, s.AVAILABLE):
                    self._fail(spec, ERROR, "cannot retire a node in 'available'; want manageable")
                    continue
                self._pending_retire[spec.name] = retire
                retire = {}
            changed.update(retire)
            self._record(spec, node)
            if changed:
                self._pending_records[spec.name] = changed
                self._write(spec, partial(self._update, spec.name, changed))
        self.untouched = tuple(sorted(by_name))

    def _create(self, name: str, fields: Mapping[str, Any]) -> Node:
        node = self.conductor.create_node(name=name, **fields)
        self.created.append(name)
        return node

    def _update(self, name: str, fields: Mapping[str, Any]) -> Node:
        node = self.conductor.update_node(name, **fields)
        self._pending_records.pop(name, None)
        self.updated.append(name)
        return node

    def _write(self, spec: NodeSpec, write: Callable[[], Node]) -> None:
        try:
            node = write()
        except NodeLocked as exc:
            self._fail(spec, BUSY, str(exc))
        except IronicFSMError as exc:
            self._fail(spec, ERROR, f"{type(exc).__name__}: {exc}")
        else:
            self._record(spec, node)

    def _record(self, spec: NodeSpec, node: Node) -> None:
        status = self.status[spec.name]
        status.uuid = node.uuid
        status.state = node.provision_state
        status.last_error = self.fleet.scrub(node.last_error) if node.last_error else None
        if status.result == BUSY:
            status.result, status.note = UNDERWAY, None
        if spec.wanted is None and spec.name not in self._pending_records:
            status.result = RECORDED

    def _fail(self, spec: NodeSpec, result: str, note: str) -> None:
        status = self.status[spec.name]
        status.result = result
        status.note = self.fleet.scrub(note)

    # -- rounds -----------------------------------------------------------------------

    @property
    def settled(self) -> bool:
        """Every node there, failed, blocked or in error: more rounds would change nothing."""
        return all(status.final for status in self.status.values())

    @property
    def failed(self) -> bool:
        """Whether any node ended failed, blocked or in error."""
        return any(status.result in BAD_RESULTS for status in self.status.values())

    def round(self) -> RoundReport:
        """Retry pending record writes, then issue at most one verb per node, in parallel."""
        self.rounds += 1
        for name, changed in list(self._pending_records.items()):
            spec = self._specs[name]
            if self.status[name].result == BUSY:
                self._write(spec, partial(self._update, name, changed))
        todo = [
            self._specs[name]
            for name, status in self.status.items()
            if not status.final and name not in self._pending_records
        ]
        verbs = 0
        if todo:
            with ThreadPoolExecutor(max_workers=min(self.workers, len(todo))) as pool:
                for issued in pool.map(self._reconcile, todo):
                    verbs += issued
        for name, retire in list(self._pending_retire.items()):
            status = self.status[name]
            if status.state not in (None, s.AVAILABLE) and status.result != BUSY:
                del self._pending_retire[name]
                self._write(self._specs[name], partial(self._update, name, retire))
        counts: dict[str, int] = {}
        for status in self.status.values():
            counts[status.result] = counts.get(status.result, 0) + 1
        return RoundReport(self.rounds, verbs, counts, len(self.status))

    def _reconcile(self, spec: NodeSpec) -> int:
        """One reconcile call; 1 if it issued a verb."""
        status = self.status[spec.name]
        assert spec.wanted is not None  # nodes without one are RECORDED
        try:
            before = self.conductor.get_node(spec.name)
            node = self.conductor.reconcile(spec.name, spec.wanted, **spec.verb_args)
        except NodeLocked as exc:
            status.result, status.note = BUSY, self.fleet.scrub(str(exc))
            return 0
        except IronicFSMError as exc:
            self._fail(spec, BLOCKED, f"not reconciled ({type(exc).__name__}): {exc}")
            return 0
        issued = int(node.version != before.version)
        self._record(spec, node)
        state = node.provision_state
        if state == spec.wanted and node.target_provision_state is None:
            status.result, status.note = THERE, None
        elif state in s.FAILURE_STATES or state == s.ERROR:
            status.result = FAILED
        elif issued and state == s.ENROLL and node.last_error:
            status.result = FAILED  # manage could not verify the BMC
        elif not issued:
            status.result = BUSY
        else:
            status.result = UNDERWAY
        return issued

    def summary(self) -> list[NodeStatus]:
        """Every node of the file, in file order."""
        return [self.status[spec.name] for spec in self.fleet.nodes]
