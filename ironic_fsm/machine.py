"""The node lifecycle: Ironic's provisioning state machine as shared data.

The lifecycle is declared once, with :mod:`transitions`, and compiled into
plain lookup tables. Deciding a transition is then one dictionary lookup:
there is no machine object per node and nothing is attached to node
records; a node's whole machine state is its ``provision_state`` and
``target_provision_state``.

Target bookkeeping follows Ironic (entering a non-stable state sets that
state's default target; reaching a stable state clears it) with one fix: a
flow's explicit target, such as ``manageable`` for a manual clean, is kept
through the flow events ``wait``, ``hold``, ``unhold``, ``resume``,
``abort`` and ``fail`` instead of being reset to the default.

:meth:`Lifecycle.path` answers an operator loop's question "which verbs
take a node from here to there?" from the same tables, so a derived
lifecycle gets it without a table of verbs of its own.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple

import transitions as _transitions

from ironic_fsm import states as s
from ironic_fsm._ironic_lifecycle import STATES as _STATES
from ironic_fsm._ironic_lifecycle import TRANSITIONS as _TRANSITIONS
from ironic_fsm.exceptions import InvalidDefinition, InvalidState

__all__ = [
    "FLOW_EVENTS",
    "LIFECYCLE",
    "PATH_EXCLUDED_VERBS",
    "PATH_VERB_RANKS",
    "Lifecycle",
    "StateSpec",
    "Transition",
]

#: Events that continue a flow; an explicit flow target survives them.
FLOW_EVENTS: Final = frozenset(
    {s.WAIT_EVENT, s.HOLD_EVENT, s.UNHOLD_EVENT, s.RESUME_EVENT, s.ABORT_EVENT, s.FAIL_EVENT}
)


#: How reluctantly :meth:`Lifecycle.path` uses a verb. Rank 0 (every verb
#: not listed, including a derived lifecycle's own) is a normal flow. A
#: path uses as few verbs of the highest rank as it can, then of the next
#: rank, and so on, and only then is it as short as it can be: ``adopt``
#: imports an instance someone else deployed, so ``enroll -> active`` goes
#: through ``provide`` and ``deploy`` although adopting is shorter.
PATH_VERB_RANKS: Final[Mapping[str, int]] = MappingProxyType(
    {
        # re-images an instance that is already there
        "rebuild": 1,
        # a round trip to refresh data; an import, not a provisioning route
        "inspect": 2,
        "adopt": 2,
        # needs a rescue password and boots a rescue ramdisk: only to reach rescue
        "rescue": 3,
        # stops a flow; from ``service failed`` it is how the flow is settled
        "abort": 4,
    }
)

#: Verbs :meth:`Lifecycle.path` never uses: ``clean`` and ``service`` need
#: steps only the caller can choose (and the conductor, not the table, gives
#: a manual clean its target); ``unhold`` only continues a paused flow.
PATH_EXCLUDED_VERBS: Final = frozenset({"clean", "service", "unhold"})

# Tie-break between paths of equal cost: the earlier verb in this order wins
# (verbs not listed come after it, by name; the aliases ``active`` and
# ``deleted`` last, so ``deploy`` and ``undeploy`` are the names shown).
_PATH_PREFERENCE: Final = (
    "manage",
    "provide",
    "deploy",
    "undeploy",
    "unrescue",
    "rebuild",
    "inspect",
    "adopt",
    "rescue",
    "abort",
)
_PATH_ALIASES: Final = ("active", "deleted")

# A path's cost, compared as a tuple: verbs per rank (highest rank first),
# number of verbs, then the verbs' preference keys in order.
_PathKey = tuple[tuple[int, ...], int, tuple[tuple[int, str], ...]]


def _preference(verb: str) -> tuple[int, str]:
    if verb in _PATH_PREFERENCE:
        return _PATH_PREFERENCE.index(verb), ""
    if verb in _PATH_ALIASES:
        return len(_PATH_PREFERENCE) + 1, verb
    return len(_PATH_PREFERENCE), verb


class StateSpec(NamedTuple):
    """One state of a lifecycle: its name, whether it is stable, its default target."""

    name: str
    stable: bool = False
    target: str | None = None


class Transition(NamedTuple):
    """One edge of a lifecycle: ``source --event--> dest``."""

    source: str
    event: str
    dest: str


_Move = tuple[str, "str | None"]


def _index_states(
    states: Iterable[StateSpec | tuple[str, bool, str | None]],
) -> dict[str, StateSpec]:
    """The declared states by name; a name declared twice is refused."""
    specs: dict[str, StateSpec] = {}
    for spec in (StateSpec(*item) for item in states):
        if spec.name in specs:
            raise InvalidDefinition(f"State {spec.name!r} is declared twice", state=spec.name)
        specs[spec.name] = spec
    return specs


def _declare(
    specs: Mapping[str, StateSpec],
    transitions: Iterable[Transition | tuple[str, str, str]],
    initial: str,
) -> tuple[Transition, ...]:
    """The edges, as :mod:`transitions` reads the declaration back.

    The declaration goes through transitions, whose event/transition model
    we then read back; it also backs the Mermaid output.
    """
    edges = tuple(Transition(*edge) for edge in transitions)
    declared = _transitions.Machine(
        model=None,
        states=list(specs),
        transitions=[{"trigger": e.event, "source": e.source, "dest": e.dest} for e in edges],
        initial=initial if initial in specs else None,
        auto_transitions=False,
    )
    # dict.fromkeys: an edge declared twice is one edge, not two.
    return tuple(
        dict.fromkeys(
            Transition(source, event_name, str(tr.dest))
            for event_name, event in declared.events.items()
            for source, trs in event.transitions.items()
            for tr in trs
        )
    )


class Lifecycle:
    """A validated, immutable provisioning state machine.

    Build one from state and transition declarations, or derive one from
    :data:`LIFECYCLE` with :meth:`derive`. The instance is safe to share
    between threads: nothing in it changes after construction.

    Raises:
        InvalidDefinition: a default target is unknown or not stable, a
            transition names an unknown state, one ``(state, event)`` pair
            leads to two places, or a state cannot be reached from
            ``initial``.
    """

    def __init__(
        self,
        states: Iterable[StateSpec | tuple[str, bool, str | None]],
        transitions: Iterable[Transition | tuple[str, str, str]],
        *,
        initial: str = s.ENROLL,
        verbs: Mapping[str, str] = s.VERBS,
    ) -> None:
        self._specs: dict[str, StateSpec] = _index_states(states)
        self.initial = initial
        self.verbs: Mapping[str, str] = dict(verbs)
        self._edges = _declare(self._specs, transitions, initial)
        self._validate()
        self._compile()

    def _compile(self) -> None:
        """Build the lookup tables every query reads: decided once, at declaration."""
        self._next: dict[tuple[str, str], str] = {(e.source, e.event): e.dest for e in self._edges}
        allowed: dict[str, set[str]] = {name: set() for name in self._specs}
        for e in self._edges:
            allowed[e.source].add(e.event)
        self._allowed = {name: tuple(sorted(evs)) for name, evs in allowed.items()}
        self._stable = frozenset(n for n, spec in self._specs.items() if spec.stable)
        # Where a flow's ``fail`` lands, short of a stable state, a node rests
        # until someone acts: Ironic's ``* failed`` states, read off the table.
        self._failure = frozenset(
            e.dest for e in self._edges if e.event == s.FAIL_EVENT and e.dest not in self._stable
        )
        self._resting = self._stable | self._failure
        # path() answers, built on first use: {start: {wanted: verbs}}.
        self._path_table: dict[str, dict[str, tuple[str, ...]]] | None = None
        # Precompute every (state, target, event) decision: deciding a
        # transition at run time is then a single dict lookup.
        targets: list[str | None] = [None, *sorted(self._stable)]
        self._moves: dict[tuple[str, str | None, str], _Move] = {
            (e.source, target, e.event): self._decide(e, target)
            for e in self._edges
            for target in targets
        }

    # -- declaration checks --------------------------------------------------

    def _validate(self) -> None:
        specs = self._specs
        if self.initial not in specs:
            raise InvalidDefinition(f"Initial state {self.initial!r} is not declared")
        for spec in specs.values():
            if spec.target is None:
                continue
            target = specs.get(spec.target)
            if target is None or not target.stable:
                raise InvalidDefinition(
                    f"State {spec.name!r} has default target {spec.target!r}, "
                    "which is not a declared stable state",
                    state=spec.name,
                )
        seen: dict[tuple[str, str], str] = {}
        for e in self._edges:
            for name in (e.source, e.dest):
                if name not in specs:
                    raise InvalidDefinition(
                        f"Transition {e.source!r} --{e.event}--> {e.dest!r} names "
                        f"undeclared state {name!r}",
                        state=name,
                        event=e.event,
                    )
            previous = seen.setdefault((e.source, e.event), e.dest)
            if previous != e.dest:
                raise InvalidDefinition(
                    f"Event {e.event!r} from {e.source!r} leads both to {previous!r} and "
                    f"to {e.dest!r}",
                    state=e.source,
                    event=e.event,
                )
        events = {e.event for e in self._edges}
        for verb, event in self.verbs.items():
            if event not in events:
                raise InvalidDefinition(
                    f"Verb {verb!r} maps to event {event!r}, which no transition uses",
                    verb=verb,
                    event=event,
                )
        reached = {self.initial}
        queue = deque([self.initial])
        out: dict[str, list[str]] = {}
        for e in self._edges:
            out.setdefault(e.source, []).append(e.dest)
        while queue:
            for dest in out.get(queue.popleft(), ()):
                if dest not in reached:
                    reached.add(dest)
                    queue.append(dest)
        unreachable = sorted(set(specs) - reached)
        if unreachable:
            raise InvalidDefinition(
                f"States not reachable from {self.initial!r}: {', '.join(unreachable)}",
                states=unreachable,
            )

    def _decide(self, edge: Transition, target: str | None) -> _Move:
        dest = self._specs[edge.dest]
        if dest.stable:
            return edge.dest, None
        if target is not None and edge.event in FLOW_EVENTS:
            return edge.dest, target
        return edge.dest, dest.target

    # -- queries ---------------------------------------------------------------

    @property
    def states(self) -> tuple[str, ...]:
        """Every state, in declaration order."""
        return tuple(self._specs)

    @property
    def events(self) -> frozenset[str]:
        """Every event some transition uses."""
        return frozenset(e.event for e in self._edges)

    @property
    def transitions(self) -> tuple[Transition, ...]:
        """Every ``(source, event, dest)`` edge."""
        return self._edges

    @property
    def stable_states(self) -> frozenset[str]:
        """States a node rests in until a user acts."""
        return self._stable

    @property
    def failure_states(self) -> frozenset[str]:
        """Non-stable states a failed flow lands in (where ``fail`` leads)."""
        return self._failure

    @property
    def resting_states(self) -> frozenset[str]:
        """States a node stays in until someone acts: stable and failure states."""
        return self._resting

    def _spec(self, state: str) -> StateSpec:
        try:
            return self._specs[state]
        except KeyError:
            raise InvalidState(f"State {state!r} does not exist", state=state) from None

    def is_stable(self, state: str) -> bool:
        """Whether ``state`` is stable; raises :class:`InvalidState` if unknown."""
        return self._spec(state).stable

    def default_target(self, state: str) -> str | None:
        """The target a flow entering ``state`` aims at (``None`` for stable states)."""
        return self._spec(state).target

    def allowed_events(self, state: str) -> tuple[str, ...]:
        """The events ``state`` accepts, sorted."""
        self._spec(state)
        return self._allowed[state]

    def accepts(self, state: str, event: str) -> bool:
        """Whether ``state`` has a transition for ``event`` (``False`` for an unknown state)."""
        return (state, event) in self._next

    def next_state(self, state: str, event: str) -> str:
        """Where ``event`` leads from ``state``.

        Raises:
            InvalidState: the pair has no transition; the message names the
                state, the event and the events the state accepts.
        """
        try:
            return self._next[state, event]
        except KeyError:
            raise self._no_transition(state, event) from None

    def advance(
        self,
        state: str,
        target: str | None,
        event: str,
        target_state: str | None = None,
    ) -> tuple[str, str | None]:
        """Decide ``event`` for a node in ``state`` aiming at ``target``.

        Args:
            state: The node's ``provision_state``.
            target: The node's ``target_provision_state``.
            event: The machine event.
            target_state: An explicit flow target (a stable state), used when
                the new state is not stable; e.g. ``manageable`` for manual
                cleaning.

        Returns:
            The new ``(provision_state, target_provision_state)``.

        Raises:
            InvalidState: no transition for ``(state, event)``, or an
                explicit target that is not a stable state.
        """
        if target_state is None:
            move = self._moves.get((state, target, event))
            if move is not None:
                return move
        try:
            dest = self._next[state, event]
        except KeyError:
            raise self._no_transition(state, event) from None
        if target_state is not None:
            if target_state not in self._stable:
                raise InvalidState(
                    f"Target {target_state!r} is not a stable state", state=target_state
                )
            if not self._specs[dest].stable:
                return dest, target_state
        return self._decide(Transition(state, event, dest), target)

    def path(self, state: str, wanted: str) -> list[str]:
        """The verbs that take a node resting in ``state`` to the stable state ``wanted``.

        A verb counts for where its flow ends, not for the state it enters
        first: ``provide`` from ``manageable`` ends in ``available`` after
        cleaning, ``undeploy`` from ``active`` in ``available``. That end
        is the stable target the lifecycle gives the flow (the default
        target of the state the verb enters), or the state itself when a
        verb leads straight into a stable state. From a failure state, the
        verbs that settle the failed flow at its own target (``deploy``
        from ``deploy failed``, ``adopt`` from ``adopt failed``, ``abort``
        from ``service failed``) count as normal flows.

        The path is the cheapest by :data:`PATH_VERB_RANKS`, then the
        shortest; ties go to the verbs earlier in ``manage, provide, deploy,
        undeploy, unrescue, rebuild, inspect, adopt, rescue, abort``.
        :data:`PATH_EXCLUDED_VERBS` are never used. Every suffix of a path
        is itself the path from where it starts, so an operator's loop can
        issue the first verb and ask again once the node rests.

        Returns:
            The verbs in order (names from ``verbs``), ``[]`` when ``state``
            is ``wanted``. A fresh list the caller may change.

        Raises:
            InvalidState: ``state`` is unknown or not resting (stable or a
                failure state), ``wanted`` is unknown or not stable, or no
                verbs lead from ``state`` to ``wanted``.
        """
        if state == wanted and state in self._stable:
            return []
        table = self._path_table
        if table is None:
            table = self._path_table = self._build_paths()
        row = table.get(state)
        if row is not None:
            verbs = row.get(wanted)
            if verbs is not None:
                return list(verbs)
        if state not in self._resting:
            self._spec(state)
            raise InvalidState(
                f"State {state!r} is not a resting state (stable or failed); a node there is "
                "still in a flow and has no path until it settles",
                state=state,
            )
        if not self._spec(wanted).stable:
            raise InvalidState(
                f"Wanted state {wanted!r} is not a stable state "
                f"(stable states: {', '.join(sorted(self._stable))})",
                state=wanted,
            )
        raise InvalidState(
            f"No path from {state!r} to {wanted!r}: no sequence of verbs leads there",
            state=state,
            wanted=wanted,
        )

    def _verb_moves(self) -> dict[str, list[tuple[str, str, int]]]:
        """Per resting state, each usable verb as ``(verb, outcome, rank)``."""
        by_event: dict[str, list[str]] = {}
        for verb, event in self.verbs.items():
            if verb not in PATH_EXCLUDED_VERBS:
                by_event.setdefault(event, []).append(verb)
        moves: dict[str, list[tuple[str, str, int]]] = {}
        for state in self._resting:
            own_target = self._specs[state].target if state in self._failure else None
            out = moves[state] = []
            for event in self._allowed[state]:
                dest, target = self._moves[state, None, event]
                outcome = dest if self._specs[dest].stable else target
                if outcome is None:
                    continue  # a flow with no stable end: not a route anywhere
                for verb in by_event.get(event, ()):
                    rank = 0 if outcome == own_target else PATH_VERB_RANKS.get(verb, 0)
                    out.append((verb, outcome, rank))
        return moves

    def _build_paths(self) -> dict[str, dict[str, tuple[str, ...]]]:
        """Every resting state's cheapest paths, by Dijkstra on the outcome graph."""
        moves = self._verb_moves()
        ranks = max([0, *PATH_VERB_RANKS.values()])
        zero: tuple[int, ...] = (0,) * ranks
        table: dict[str, dict[str, tuple[str, ...]]] = {}
        for start in self._resting:
            settled: dict[str, tuple[str, ...]] = {}
            start_key: _PathKey = (zero, 0, ())
            heap: list[tuple[_PathKey, str, tuple[str, ...]]] = [(start_key, start, ())]
            while heap:
                (counts, length, prefs), state, verbs = heapq.heappop(heap)
                if state in settled:
                    continue
                settled[state] = verbs
                for verb, outcome, rank in moves[state]:
                    if outcome in settled:
                        continue
                    more = counts
                    if rank:
                        index = ranks - rank  # highest rank first
                        more = (*counts[:index], counts[index] + 1, *counts[index + 1 :])
                    key: _PathKey = (more, length + 1, (*prefs, _preference(verb)))
                    heapq.heappush(heap, (key, outcome, (*verbs, verb)))
            table[start] = {
                wanted: verbs for wanted, verbs in settled.items() if wanted in self._stable
            }
        return table

    def _no_transition(self, state: str, event: str) -> InvalidState:
        spec = self._spec(state)
        allowed = self._allowed[spec.name]
        return InvalidState(
            f"Can not transition from state {state!r} on event {event!r} "
            f"(allowed events: {', '.join(allowed) or 'none'})",
            state=state,
            event=event,
            allowed=allowed,
        )

    # -- derivation --------------------------------------------------------------

    def derive(
        self,
        *,
        add_states: Iterable[StateSpec | tuple[str, bool, str | None]] = (),
        add_transitions: Iterable[Transition | tuple[str, str, str]] = (),
        remove_transitions: Iterable[tuple[str, str]] = (),
        add_verbs: Mapping[str, str] | None = None,
    ) -> Lifecycle:
        """A new lifecycle: this one plus extra states, transitions and verbs.

        ``remove_transitions`` lists ``(source, event)`` pairs to drop. The
        result is validated like any lifecycle (stable default targets,
        every state reachable from the initial state, no edge to an
        undeclared state, no verb without a transition).
        """
        removed = {tuple(pair) for pair in remove_transitions}
        return type(self)(
            [*self._specs.values(), *add_states],
            [*(e for e in self._edges if (e.source, e.event) not in removed), *add_transitions],
            initial=self.initial,
            verbs={**self.verbs, **(add_verbs or {})},
        )

    # -- diagrams ------------------------------------------------------------------

    def to_dot(self, states: Iterable[str] | None = None) -> str:
        """Graphviz DOT source of the lifecycle (stable states drawn bold).

        ``states``: draw only these and the transitions between them (one
        flow, readable at a page's width); every state by default.
        """
        shown = list(self._specs) if states is None else list(dict.fromkeys(states))
        unknown = [name for name in shown if name not in self._specs]
        if unknown:
            raise InvalidState(f"Unknown state(s) {', '.join(map(repr, unknown))} to draw")
        lines = [
            "digraph lifecycle {",
            "  rankdir=LR;",
            '  node [shape=box, style=rounded, fontname="Helvetica"];',
        ]
        for name in shown:
            style = ', style="rounded,bold", penwidth=2' if self._specs[name].stable else ""
            lines.append(f'  "{name}" [label="{name}"{style}];')
        if self.initial in shown:
            lines.append(f'  "__start__" [shape=point]; "__start__" -> "{self.initial}";')
        drawn = set(shown)
        for e in self._edges:
            if e.source in drawn and e.dest in drawn:
                lines.append(f'  "{e.source}" -> "{e.dest}" [label="{e.event}"];')
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_mermaid(self) -> str:
        """Mermaid ``stateDiagram-v2`` text, drawn by transitions' diagram extension."""
        from transitions import State
        from transitions.extensions import GraphMachine

        class _LabelledState(State):
            # transitions' Mermaid renderer reads a state's ``label``;
            # Ironic's names have spaces, which Mermaid ids may not.
            def __init__(self, *args: Any, label: str = "", **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.label = label

        class _Diagram(GraphMachine):
            state_cls = _LabelledState

        def ident(name: str) -> str:
            return name.replace(" ", "_").replace("-", "_")

        class _Model:
            """A stand-in model: transitions draws a machine through one."""

        graph = _Diagram(
            model=_Model(),
            states=[{"name": ident(n), "label": n} for n in self._specs],
            transitions=[
                {"trigger": e.event, "source": ident(e.source), "dest": ident(e.dest)}
                for e in self._edges
            ],
            initial=ident(self.initial),
            auto_transitions=False,
            graph_engine="mermaid",
            title="ironic_fsm lifecycle",
        )
        return str(graph.get_graph().draw(None))

    def __repr__(self) -> str:
        return (
            f"<Lifecycle {len(self._specs)} states, {len(self.events)} events, "
            f"{len(self._edges)} transitions>"
        )


#: Ironic's lifecycle: 30 states, 18 events, 93 transitions. Built once.
LIFECYCLE: Final = Lifecycle(_STATES, _TRANSITIONS)
