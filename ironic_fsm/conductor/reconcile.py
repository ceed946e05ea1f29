"""Reconcile: one step toward the state an operator wants a node in.

An operator's loop knows where each node should be, not which verbs get it
there. :meth:`Reconcile.reconcile` reads the node, asks the lifecycle for
the path (:meth:`~ironic_fsm.machine.Lifecycle.path`) and issues its first
verb through :meth:`~ironic_fsm.conductor.verbs.Verbs.do_provisioning_action`,
so every refusal, guard and event of a plain verb applies. A node already
there, or busy, is returned as it is: calling it again and again is the
whole protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ironic_fsm import states as s
from ironic_fsm.conductor.common import check_ident
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.verbs import Request, Verbs
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    InvalidState,
    InvalidStateRequested,
    NodeInMaintenance,
    NodeIsRetired,
    NodeLocked,
    NodeProtected,
)
from ironic_fsm.node import Node

__all__ = ["VERB_ARGS", "Reconcile"]

#: The keyword arguments ``reconcile`` accepts, and the events whose verbs
#: take each. ``clean_steps``, ``service_steps``, ``runbook`` and
#: ``disable_ramdisk`` are accepted (one set of arguments may serve a whole
#: fleet) but never passed on: a path uses neither ``clean`` nor
#: ``service``, and automated cleaning picks its own steps.
VERB_ARGS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "deploy_steps": frozenset({s.DEPLOY_EVENT, s.REBUILD_EVENT}),
        "rescue_password": frozenset({s.RESCUE_EVENT}),
        "clean_steps": frozenset(),
        "service_steps": frozenset(),
        "runbook": frozenset(),
        "disable_ramdisk": frozenset(),
    }
)

#: Events that destroy the instance: refused on a protected node.
_DESTRUCTIVE = frozenset({s.DELETE_EVENT, s.REBUILD_EVENT})


class Reconcile:
    """``reconcile``: the next verb toward a wanted state, or nothing."""

    def __init__(self, ctx: Context, verbs: Verbs) -> None:
        self._ctx, self._verbs = ctx, verbs

    def reconcile(self, ident: str, wanted: str, **verb_args: Any) -> Node:
        """Take one step toward the stable state ``wanted``.

        A node already in ``wanted`` (with no target) or busy (reserved, or
        in a state that is neither stable nor failed) is returned unchanged,
        with nothing written and no event. Otherwise the first verb of
        ``lifecycle.path(state, wanted)`` is issued, with those of
        ``verb_args`` it takes (``deploy_steps`` for ``deploy`` and
        ``rebuild``, ``rescue_password`` for ``rescue``), and the node is
        returned as the verb left it. Call it again until the node is there.

        Concurrent callers issue each verb once: a caller that finds the
        node reserved, or moved on under it, gets it back unchanged.

        Raises:
            InvalidParameterValue: an unknown keyword in ``verb_args``, or a
                value the verb refuses.
            InvalidState: ``wanted`` is unknown or not stable, or no verbs
                lead from the node's state to it.
            NodeInMaintenance: the node is in maintenance and not there yet;
                reconcile does not act on it, nor wait for it.
            NodeIsRetired: getting there would need ``provide``.
            NodeProtected: getting there would destroy a protected instance.
            TransitionRejected: a guard vetoed the verb.
            NodeNotFound: no such node.
        """
        ident = check_ident(ident)
        if verb_args:
            _check_verb_args(ident, verb_args)
        node = self._ctx.caps.store.get(ident)
        state = node.provision_state
        if (
            state == wanted
            and node.target_provision_state is None
            and wanted in self._ctx.lifecycle.stable_states
        ):
            return node  # the fast path: already there
        self._check_wanted(node, wanted)
        if node.maintenance:
            raise NodeInMaintenance(
                f"Node {node.uuid} is in maintenance mode: reconcile does not act on it "
                f"(it is {state!r}, wanted {wanted!r}); unset maintenance first",
                node=node.uuid,
                state=state,
                wanted=wanted,
            )
        if (
            node.reservation is not None
            or state not in self._ctx.lifecycle.resting_states
            or (
                node.target_provision_state is not None
                and state in self._ctx.lifecycle.stable_states
            )
        ):
            return node  # busy: a flow is under way; ask again once it rests
        try:
            verbs = self._ctx.lifecycle.path(state, wanted)
        except InvalidState as exc:
            raise InvalidState(
                f"Node {node.uuid} cannot be reconciled from {state!r} to {wanted!r}: no "
                "sequence of the lifecycle's verbs leads there",
                node=node.uuid,
                state=state,
                wanted=wanted,
            ) from exc
        self._check_path(node, verbs, wanted)
        verb = verbs[0]
        event = self._ctx.lifecycle.verbs[verb]
        passed = {key: value for key, value in verb_args.items() if event in VERB_ARGS[key]}
        try:
            return self._verbs.provision(
                node.uuid, verb, Request(verb, **passed), read_version=node.version
            )
        except NodeLocked:
            # Another caller holds it: that caller's verb is this step's.
            return self._ctx.caps.store.get(node.uuid)
        except InvalidStateRequested:
            # Another caller moved it on since it was read: that was this step.
            now = self._ctx.caps.store.get(node.uuid)
            if now.provision_state != state or now.version != node.version:
                return now
            raise

    def _check_wanted(self, node: Node, wanted: Any) -> None:
        """``wanted`` names a stable state of this lifecycle, whatever the node is doing."""
        if isinstance(wanted, str) and wanted in self._ctx.lifecycle.stable_states:
            return
        stable = ", ".join(sorted(self._ctx.lifecycle.stable_states))
        if not isinstance(wanted, str):
            raise InvalidParameterValue(
                f"Node {node.uuid}: the wanted state must be a state's name (a string), "
                f"not {type(wanted).__name__}",
                node=node.uuid,
            )
        what = "is not a stable state" if wanted in self._ctx.lifecycle.states else "does not exist"
        raise InvalidState(
            f"Node {node.uuid} cannot be reconciled toward {wanted!r}: that state {what} "
            f"(stable states: {stable})",
            node=node.uuid,
            state=node.provision_state,
            wanted=wanted,
        )

    def _check_path(self, node: Node, verbs: list[str], wanted: str) -> None:
        """Refuse a path that retirement or protection would stop part-way.

        Refusing before the first verb, not at the verb that is refused,
        keeps the loop from doing work it cannot finish (tearing down an
        instance, say, on the way to a state a retired node never reaches).
        """
        events = [self._ctx.lifecycle.verbs[verb] for verb in verbs]
        if node.protected:
            for verb, event in zip(verbs, events, strict=True):
                if event in _DESTRUCTIVE:
                    raise NodeProtected(
                        f"Node {node.uuid} is protected: reconciling it from "
                        f"{node.provision_state!r} to {wanted!r} needs {verb!r}, which would "
                        "destroy its instance; unset protected first",
                        node=node.uuid,
                        verb=verb,
                        wanted=wanted,
                    )
        if node.retired and self._needs_provide(events, wanted):
            raise NodeIsRetired(
                f"Node {node.uuid} is retired: reconciling it from {node.provision_state!r} to "
                f"{wanted!r} needs 'provide', and a retired node is never provided; unretire "
                "it first",
                node=node.uuid,
                verb="provide",
                wanted=wanted,
            )

    def _needs_provide(self, events: list[str], wanted: str) -> bool:
        """Whether a retired node's way to ``wanted`` goes through ``provide``.

        A retired node's tear-down ends in ``manageable``, not ``available``
        (Ironic's rule), so the rest of its way starts there.
        """
        for event in events:
            if event == s.PROVIDE_EVENT:
                return True
            if event == s.DELETE_EVENT:
                if wanted == s.MANAGEABLE:
                    return False
                try:
                    rest = self._ctx.lifecycle.path(s.MANAGEABLE, wanted)
                except InvalidState:
                    return False  # no way on from there either: the path check will say so
                return any(self._ctx.lifecycle.verbs[verb] == s.PROVIDE_EVENT for verb in rest)
        return False


def _check_verb_args(ident: str, verb_args: Mapping[str, Any]) -> None:
    unknown = sorted(key for key in verb_args if key not in VERB_ARGS)
    if unknown:
        raise InvalidParameterValue(
            f"Node {ident}: reconcile does not take {', '.join(unknown)}; it takes "
            f"{', '.join(sorted(VERB_ARGS))}",
            node=ident,
        )
