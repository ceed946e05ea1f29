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
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Final, NamedTuple

import transitions as _transitions

from ironic_fsm import states as s
from ironic_fsm.exceptions import InvalidDefinition, InvalidState

__all__ = ["FLOW_EVENTS", "LIFECYCLE", "Lifecycle", "StateSpec", "Transition"]

#: Events that continue a flow; an explicit flow target survives them.
FLOW_EVENTS: Final = frozenset(
    {s.WAIT_EVENT, s.HOLD_EVENT, s.UNHOLD_EVENT, s.RESUME_EVENT, s.ABORT_EVENT, s.FAIL_EVENT}
)


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
        specs = tuple(StateSpec(*spec) for spec in states)
        edges = tuple(Transition(*edge) for edge in transitions)
        self._specs: dict[str, StateSpec] = {}
        for spec in specs:
            if spec.name in self._specs:
                raise InvalidDefinition(f"State {spec.name!r} is declared twice", state=spec.name)
            self._specs[spec.name] = spec
        self.initial = initial
        self.verbs: Mapping[str, str] = dict(verbs)
        # The declaration goes through transitions, whose event/transition
        # model we then read back; it also backs the Mermaid output.
        declared = _transitions.Machine(
            model=None,
            states=list(self._specs),
            transitions=[{"trigger": e.event, "source": e.source, "dest": e.dest} for e in edges],
            initial=initial if initial in self._specs else None,
            auto_transitions=False,
        )
        # dict.fromkeys: an edge declared twice is one edge, not two.
        self._edges = tuple(
            dict.fromkeys(
                Transition(source, event_name, str(tr.dest))
                for event_name, event in declared.events.items()
                for source, trs in event.transitions.items()
                for tr in trs
            )
        )
        self._validate()
        self._next: dict[tuple[str, str], str] = {(e.source, e.event): e.dest for e in self._edges}
        allowed: dict[str, set[str]] = {name: set() for name in self._specs}
        for e in self._edges:
            allowed[e.source].add(e.event)
        self._allowed = {name: tuple(sorted(evs)) for name, evs in allowed.items()}
        self._stable = frozenset(n for n, spec in self._specs.items() if spec.stable)
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

    def to_dot(self) -> str:
        """Graphviz DOT source of the lifecycle (stable states drawn bold)."""
        lines = [
            "digraph lifecycle {",
            "  rankdir=LR;",
            '  node [shape=box, style=rounded, fontname="Helvetica"];',
        ]
        for name, spec in self._specs.items():
            style = ', style="rounded,bold", penwidth=2' if spec.stable else ""
            lines.append(f'  "{name}" [label="{name}"{style}];')
        lines.append(f'  "__start__" [shape=point]; "__start__" -> "{self.initial}";')
        for e in self._edges:
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


_STATES: Final = (
    StateSpec(s.ENROLL, True),
    StateSpec(s.VERIFYING, False, s.MANAGEABLE),
    StateSpec(s.MANAGEABLE, True),
    StateSpec(s.INSPECTING, False, s.MANAGEABLE),
    StateSpec(s.INSPECTWAIT, False, s.MANAGEABLE),
    StateSpec(s.INSPECTFAIL, False, s.MANAGEABLE),
    StateSpec(s.CLEANING, False, s.AVAILABLE),
    StateSpec(s.CLEANWAIT, False, s.AVAILABLE),
    StateSpec(s.CLEANFAIL, False, s.AVAILABLE),
    StateSpec(s.CLEANHOLD, False, s.AVAILABLE),
    StateSpec(s.AVAILABLE, True),
    StateSpec(s.DEPLOYING, False, s.ACTIVE),
    StateSpec(s.DEPLOYWAIT, False, s.ACTIVE),
    StateSpec(s.DEPLOYFAIL, False, s.ACTIVE),
    StateSpec(s.DEPLOYHOLD, False, s.ACTIVE),
    StateSpec(s.ACTIVE, True),
    StateSpec(s.DELETING, False, s.AVAILABLE),
    StateSpec(s.ERROR, True),
    StateSpec(s.ADOPTING, False, s.ACTIVE),
    StateSpec(s.ADOPTFAIL, False, s.ACTIVE),
    StateSpec(s.RESCUING, False, s.RESCUE),
    StateSpec(s.RESCUEWAIT, False, s.RESCUE),
    StateSpec(s.RESCUEFAIL, False, s.RESCUE),
    StateSpec(s.RESCUE, True),
    StateSpec(s.UNRESCUING, False, s.ACTIVE),
    StateSpec(s.UNRESCUEFAIL, False, s.ACTIVE),
    StateSpec(s.SERVICING, False, s.ACTIVE),
    StateSpec(s.SERVICEWAIT, False, s.ACTIVE),
    StateSpec(s.SERVICEFAIL, False, s.ACTIVE),
    StateSpec(s.SERVICEHOLD, False, s.ACTIVE),
)

# Grouped by flow, in the order a node meets them.
_TRANSITIONS: Final = (
    # verification
    (s.ENROLL, "manage", s.VERIFYING),
    (s.VERIFYING, "done", s.MANAGEABLE),
    (s.VERIFYING, "fail", s.ENROLL),
    # inspection
    (s.MANAGEABLE, "inspect", s.INSPECTING),
    (s.INSPECTING, "done", s.MANAGEABLE),
    (s.INSPECTING, "wait", s.INSPECTWAIT),
    (s.INSPECTING, "fail", s.INSPECTFAIL),
    (s.INSPECTWAIT, "done", s.MANAGEABLE),
    (s.INSPECTWAIT, "resume", s.INSPECTING),
    (s.INSPECTWAIT, "fail", s.INSPECTFAIL),
    (s.INSPECTWAIT, "abort", s.INSPECTFAIL),
    (s.INSPECTFAIL, "inspect", s.INSPECTING),
    (s.INSPECTFAIL, "manage", s.MANAGEABLE),
    # cleaning
    (s.MANAGEABLE, "provide", s.CLEANING),
    (s.MANAGEABLE, "clean", s.CLEANING),
    (s.CLEANING, "done", s.AVAILABLE),
    (s.CLEANING, "manage", s.MANAGEABLE),
    (s.CLEANING, "wait", s.CLEANWAIT),
    (s.CLEANING, "hold", s.CLEANHOLD),
    (s.CLEANING, "fail", s.CLEANFAIL),
    (s.CLEANWAIT, "resume", s.CLEANING),
    (s.CLEANWAIT, "hold", s.CLEANHOLD),
    (s.CLEANWAIT, "fail", s.CLEANFAIL),
    (s.CLEANWAIT, "abort", s.CLEANFAIL),
    (s.CLEANHOLD, "unhold", s.CLEANWAIT),
    (s.CLEANHOLD, "abort", s.CLEANFAIL),
    (s.CLEANFAIL, "manage", s.MANAGEABLE),
    (s.AVAILABLE, "manage", s.MANAGEABLE),
    # deployment
    (s.AVAILABLE, "deploy", s.DEPLOYING),
    (s.ACTIVE, "rebuild", s.DEPLOYING),
    (s.ERROR, "rebuild", s.DEPLOYING),
    (s.DEPLOYING, "done", s.ACTIVE),
    (s.DEPLOYING, "wait", s.DEPLOYWAIT),
    (s.DEPLOYING, "hold", s.DEPLOYHOLD),
    (s.DEPLOYING, "fail", s.DEPLOYFAIL),
    (s.DEPLOYWAIT, "resume", s.DEPLOYING),
    (s.DEPLOYWAIT, "hold", s.DEPLOYHOLD),
    (s.DEPLOYWAIT, "fail", s.DEPLOYFAIL),
    (s.DEPLOYWAIT, "abort", s.DEPLOYFAIL),
    (s.DEPLOYHOLD, "unhold", s.DEPLOYWAIT),
    (s.DEPLOYHOLD, "abort", s.DEPLOYFAIL),
    (s.DEPLOYFAIL, "deploy", s.DEPLOYING),
    (s.DEPLOYFAIL, "rebuild", s.DEPLOYING),
    # tear-down
    (s.ACTIVE, "delete", s.DELETING),
    (s.ERROR, "delete", s.DELETING),
    (s.RESCUE, "delete", s.DELETING),
    (s.RESCUEWAIT, "delete", s.DELETING),
    (s.RESCUEFAIL, "delete", s.DELETING),
    (s.UNRESCUEFAIL, "delete", s.DELETING),
    (s.DEPLOYWAIT, "delete", s.DELETING),
    (s.DEPLOYFAIL, "delete", s.DELETING),
    (s.SERVICEWAIT, "delete", s.DELETING),
    (s.SERVICEFAIL, "delete", s.DELETING),
    (s.DELETING, "clean", s.CLEANING),
    (s.DELETING, "fail", s.ERROR),
    # adoption
    (s.MANAGEABLE, "adopt", s.ADOPTING),
    (s.ADOPTING, "done", s.ACTIVE),
    (s.ADOPTING, "fail", s.ADOPTFAIL),
    (s.ADOPTFAIL, "adopt", s.ADOPTING),
    (s.ADOPTFAIL, "manage", s.MANAGEABLE),
    # rescue
    (s.ACTIVE, "rescue", s.RESCUING),
    (s.RESCUE, "rescue", s.RESCUING),
    (s.RESCUEFAIL, "rescue", s.RESCUING),
    (s.UNRESCUEFAIL, "rescue", s.RESCUING),
    (s.SERVICEFAIL, "rescue", s.RESCUING),
    (s.RESCUING, "done", s.RESCUE),
    (s.RESCUING, "wait", s.RESCUEWAIT),
    (s.RESCUING, "fail", s.RESCUEFAIL),
    (s.RESCUEWAIT, "resume", s.RESCUING),
    (s.RESCUEWAIT, "fail", s.RESCUEFAIL),
    (s.RESCUEWAIT, "abort", s.RESCUEFAIL),
    (s.RESCUE, "unrescue", s.UNRESCUING),
    (s.RESCUEFAIL, "unrescue", s.UNRESCUING),
    (s.UNRESCUEFAIL, "unrescue", s.UNRESCUING),
    (s.UNRESCUING, "done", s.ACTIVE),
    (s.UNRESCUING, "fail", s.UNRESCUEFAIL),
    # servicing
    (s.ACTIVE, "service", s.SERVICING),
    (s.SERVICEHOLD, "service", s.SERVICING),
    (s.SERVICEFAIL, "service", s.SERVICING),
    (s.SERVICING, "done", s.ACTIVE),
    (s.SERVICING, "wait", s.SERVICEWAIT),
    (s.SERVICING, "hold", s.SERVICEHOLD),
    (s.SERVICING, "fail", s.SERVICEFAIL),
    (s.SERVICEWAIT, "resume", s.SERVICING),
    (s.SERVICEWAIT, "hold", s.SERVICEHOLD),
    (s.SERVICEWAIT, "fail", s.SERVICEFAIL),
    (s.SERVICEWAIT, "abort", s.SERVICEFAIL),
    (s.SERVICEHOLD, "unhold", s.SERVICEWAIT),
    (s.SERVICEHOLD, "fail", s.SERVICEFAIL),
    (s.SERVICEHOLD, "abort", s.SERVICEFAIL),
    (s.SERVICEFAIL, "wait", s.SERVICEWAIT),
    (s.SERVICEFAIL, "hold", s.SERVICEHOLD),
    (s.SERVICEFAIL, "abort", s.ACTIVE),
)

#: Ironic's lifecycle: 30 states, 18 events, 93 transitions. Built once.
LIFECYCLE: Final = Lifecycle(_STATES, _TRANSITIONS)
