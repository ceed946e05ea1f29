"""The ramdisk agent's two calls: lookup (which node am I?) and heartbeat (I am here).

An agent booted on a machine knows only its MAC addresses. Its lookup finds
the node those belong to, when the node is in a state that expects an agent,
and hands out the agent token, once (:mod:`ironic_fsm.agent.token`). Each
heartbeat then proves with that token that it comes from the agent that
looked up, and records where the agent listens (``agent_url``, pinned: a
heartbeat naming another URL is refused, so a second agent cannot take the
node over), its version, its certificate (pinned too) and the time.

The checks and their texts are Ironic's, in Ironic's order, so that the API
answers what Ironic answers and the library raises the same for the same
call (:class:`~ironic_fsm.exceptions.InvalidParameterValue`, ``400`` in the
API). A refused heartbeat changes nothing on the node.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Final
from urllib.parse import urlsplit

from ironic_fsm import states as s
from ironic_fsm.agent import token as tokens
from ironic_fsm.agent.inventory import check_inventory
from ironic_fsm.agent.macs import normalize_mac
from ironic_fsm.conductor.common import check_ident, scrub_node
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.engine import PHASE_BY_STATE, StepEngine
from ironic_fsm.conductor.jobs import Job
from ironic_fsm.conductor.ports import Ports
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.events import STEP_FAIL
from ironic_fsm.exceptions import (
    AgentError,
    InvalidParameterValue,
    InvalidState,
    NodeLocked,
    NodeNotFound,
    StepFailed,
    StoreUnsupported,
)
from ironic_fsm.node import Node, is_uuid_like

__all__ = ["LOOKUP_ALLOWED_STATES", "AgentLookup", "Ramdisk", "normalize_mac"]

LOG = logging.getLogger("ironic_fsm.conductor")

#: The states in which a node expects its agent (Ironic's ``LOOKUP_ALLOWED_STATES``).
LOOKUP_ALLOWED_STATES: Final = frozenset(
    {
        s.DEPLOYING, s.DEPLOYWAIT, s.CLEANING, s.CLEANWAIT, s.INSPECTING, s.INSPECTWAIT,
        s.RESCUING, s.RESCUEWAIT, s.SERVICEWAIT,
    }
)  # fmt: skip

#: Ironic's texts, which agents and operators' tools know.
INCOMPLETE_LOOKUP: Final = "At least one of 'addresses' and 'node_uuid' parameters is required"
BAD_CALLBACK_URL: Final = 'An issue with the supplied "callback_url" has been detected.'
CHANGED_CALLBACK_URL: Final = 'Detected change in ramdisk provided "callback_url"'
CHANGED_CERTIFICATE: Final = 'Detected change in ramdisk provided "agent_verify_ca"'
TOKEN_REQUIRED: Final = "Agent token is required for heartbeat processing."
TOKEN_INVALID: Final = "Invalid or missing agent token received."
NO_VERSION: Final = (
    "Agent did not transmit a version, and a version is required. "
    "Please update the agent being used."
)


class AgentLookup:
    """A lookup's answer: the node, and its token (or ``******`` after the first lookup)."""

    __slots__ = ("node", "token")

    def __init__(self, node: Node, token: str) -> None:
        self.node = node
        self.token = token

    def __repr__(self) -> str:
        return f"AgentLookup(node={self.node.uuid!r}, token=******)"


class Ramdisk:
    """Answers agents: finds their node, gives out and checks tokens, records heartbeats."""

    def __init__(
        self, ctx: Context, reservations: Reservations, engine: StepEngine, ports: Ports
    ) -> None:
        self._ctx = ctx
        self._reservations = reservations
        self._engine = engine
        self._ports = ports

    # -- lookup ----------------------------------------------------------------------------

    def lookup(
        self, addresses: Iterable[str], node_uuid: str | None, with_token: bool
    ) -> AgentLookup:
        """The node a booted agent with these MAC addresses (or this node UUID) belongs to,
        and its token (given out once, then ``******``); the facade's
        :meth:`~ironic_fsm.conductor.Conductor.agent_lookup` gives the defaults.

        ``with_token`` (agents speaking API 1.62 and later): the first
        allowed lookup makes the node's token and returns it; every later
        one returns ``******`` until the token is wiped.

        Raises:
            InvalidParameterValue: neither a valid MAC address nor a node UUID.
            NodeNotFound: no such node, or not in a state that expects an agent
                (one error for both, as Ironic: a caller learns nothing more).
            NodeLocked: the node is busy; the agent tries again.
        """
        macs = [mac for mac in map(normalize_mac, addresses) if mac is not None]
        if node_uuid is not None and not is_uuid_like(node_uuid):
            raise InvalidParameterValue(
                f"Expected a UUID for node_uuid, got {node_uuid!r}", node=None
            )
        if not macs and not node_uuid:
            raise InvalidParameterValue(INCOMPLETE_LOOKUP, node=None)
        node = self._find(macs, node_uuid)
        if self._ctx.config.restrict_lookup and node.provision_state not in LOOKUP_ALLOWED_STATES:
            LOG.warning(
                "Node %s: an agent looked it up in provision state %r, which expects none",
                node.uuid,
                node.provision_state,
            )
            raise self._not_found(macs, node_uuid)
        if not with_token:
            return AgentLookup(node, tokens.MASK)
        if tokens.has_token(node.driver_internal_info):
            LOG.warning("Node %s: a token was already given out; this lookup gets none", node.uuid)
            return AgentLookup(node, tokens.MASK)
        with self._reservations.reserved(node.uuid, checked=True) as job:
            token = tokens.issue(job.node.driver_internal_info)
            return AgentLookup(job.node, token)

    def inspection_node(self, inventory: object, node_uuid: str | None = None) -> Node:
        """The node an agent's inventory belongs to: found by ``node_uuid`` or by the
        inventory's MAC addresses, and waiting in ``inspect wait`` (Ironic's lookup).

        Raises:
            InvalidParameterValue: no valid inventory, or nothing to find the node by.
            NodeNotFound: no such node, or not waiting for inspection (one error for both).
        """
        checked = check_inventory(node_uuid, inventory)
        addresses = (str(iface["mac_address"]) for iface in checked["interfaces"])
        macs = [mac for mac in map(normalize_mac, addresses) if mac is not None]
        if node_uuid is not None and not is_uuid_like(node_uuid):
            raise InvalidParameterValue(
                f"Expected a UUID for node_uuid, got {node_uuid!r}", node=None
            )
        if not macs and not node_uuid:
            raise InvalidParameterValue("No lookup information provided", node=None)
        node = self._find(macs, node_uuid)
        if node.provision_state != s.INSPECTWAIT:
            LOG.error("Node %s: an inventory was posted in provision state %r",
                      node.uuid, node.provision_state)  # fmt: skip
            raise self._not_found(macs, node_uuid)
        return node

    def _find(self, macs: list[str], node_uuid: str | None) -> Node:
        """By ``node_uuid`` when given (as Ironic), else by the ports with these addresses."""
        try:
            if node_uuid:
                return self._ctx.caps.store.get(check_ident(node_uuid))
            return self._ports.node_by_addresses(macs)
        except (NodeNotFound, InvalidState, StoreUnsupported) as exc:
            # Several nodes, or a store without ports: no node, as far as an agent is told.
            LOG.warning("An agent's lookup found no single node: %s", exc)
            raise self._not_found(macs, node_uuid) from None

    @staticmethod
    def _not_found(macs: list[str], node_uuid: str | None) -> NodeNotFound:
        wanted = f"node {node_uuid}" if node_uuid else f"MAC addresses {', '.join(macs)}"
        return NodeNotFound(f"No node waiting for an agent was found for {wanted}", node=node_uuid)

    # -- heartbeat ---------------------------------------------------------------------------

    def heartbeat(
        self,
        ident: str,
        callback_url: str,
        agent_token: str | None,
        agent_version: str | None,
        agent_verify_ca: str | None,
    ) -> Node:
        """Accept an agent's heartbeat: check it, and record where and what the agent is
        (the facade's :meth:`~ironic_fsm.conductor.Conductor.agent_heartbeat` names the
        agent's words and gives their defaults).

        Raises:
            InvalidParameterValue: a malformed or changed ``callback_url``, no
                or a wrong token, no version, a changed certificate; nothing
                changes on the node.
            NodeNotFound: no such node.
            NodeLocked: busy, and no agent URL is known yet (the agent retries soon).
        """
        url = _checked_url(callback_url)
        node = self._ctx.caps.store.get(check_ident(ident))
        self._check(node, url, agent_token, agent_version, agent_verify_ca)
        try:
            with self._reservations.reserved(node.uuid, checked=True) as job:
                # Checked again on the reserved copy: the token may have been wiped meanwhile.
                self._check(job.node, url, agent_token, agent_version, agent_verify_ca)
                tokens.record_heartbeat(
                    job.node.driver_internal_info,
                    self._ctx.clock(),
                    url,
                    str(agent_version),
                    agent_verify_ca,
                )
                if job.node.provision_state == s.RESCUEWAIT:
                    self._rescue_heartbeat(job)
                go_on = self._ask_driver(job)
                node = job.node
        except NodeLocked:
            if not node.driver_internal_info.get(tokens.URL_KEY):
                raise  # 409: the agent tries again soon, and its URL gets recorded
            LOG.debug("Node %s is busy; its heartbeat is noted next time", node.uuid)
            return node
        phase = PHASE_BY_STATE.get(node.provision_state)
        if go_on and phase is not None:
            continue_phase = getattr(self._engine, f"continue_node_{phase.name}")
            try:
                node = continue_phase(node.uuid)
            except (NodeLocked, InvalidState) as exc:
                # Someone else moved the node meanwhile (an abort, a timeout): the
                # heartbeat was accepted all the same; the next one sees the new state.
                LOG.info("Node %s: not continued after its agent's heartbeat: %s", node.uuid, exc)
        return node

    def _rescue_heartbeat(self, job: Job) -> None:
        """In ``rescue wait``: the rescue interface finalizes the rescue through the agent."""
        hook = getattr(job.driver.rescue, "heartbeat", None)
        if hook is None:
            return
        try:
            if hook(job.task):
                job.fire(s.RESUME_EVENT)
                job.fire(s.DONE_EVENT)
        except StepFailed as exc:
            job.fire(s.FAIL_EVENT, last_error=scrub_node(job.node, str(exc)))
        except AgentError as exc:
            LOG.warning("Node %s: the agent could not be asked, until its next heartbeat: %s",
                        job.node.uuid, exc)  # fmt: skip

    def _ask_driver(self, job: Job) -> bool:
        """What the deploy interface makes of the heartbeat in a wait state: go on or not.

        A step the agent reports failed fails the phase here; an agent that
        cannot be asked now (busy, unreachable) is asked again at its next
        heartbeat.
        """
        node = job.node
        phase = PHASE_BY_STATE.get(node.provision_state)
        hook = getattr(job.driver.deploy, "heartbeat", None)
        if phase is None or node.provision_state != phase.wait or hook is None:
            return False
        step = getattr(node, phase.step_field) or None
        try:
            return bool(hook(job.task))
        except StepFailed as exc:
            # The driver words an agent's failure as Ironic does: recorded as it is.
            message = scrub_node(node, str(exc))
            LOG.warning("%s", message)
            if step:
                job.step_event(STEP_FAIL, step, error=message)
            self._engine.phase_failed(job, phase, message, step=step)
        except AgentError as exc:
            LOG.warning("Node %s: the agent could not be asked, until its next heartbeat: %s",
                        node.uuid, exc)  # fmt: skip
        return False

    @staticmethod
    def _check(
        node: Node,
        url: str,
        token: str | None,
        version: str | None,
        certificate: str | None,
    ) -> None:
        """Ironic's checks of a heartbeat, in Ironic's order; each refusal a 400 in the API."""
        info = node.driver_internal_info
        known_url = info.get(tokens.URL_KEY)
        if known_url is not None and known_url != url:
            LOG.error("Node %s: a heartbeat named another callback URL %s", node.uuid, url)
            raise InvalidParameterValue(CHANGED_CALLBACK_URL, node=node.uuid)
        if token is None:
            LOG.error("Node %s: a heartbeat without an agent token", node.uuid)
            raise InvalidParameterValue(TOKEN_REQUIRED, node=node.uuid)
        if not version:
            raise InvalidParameterValue(NO_VERSION, node=node.uuid)
        if not tokens.token_matches(info, token):
            LOG.error("Node %s: a heartbeat with an invalid or missing agent token", node.uuid)
            raise InvalidParameterValue(TOKEN_INVALID, node=node.uuid)
        known_ca = info.get(tokens.CA_KEY)
        if certificate and known_ca and str(known_ca).strip() != certificate.strip():
            LOG.error("Node %s: a heartbeat sent another certificate", node.uuid)
            raise InvalidParameterValue(CHANGED_CERTIFICATE, node=node.uuid)


def _checked_url(callback_url: object) -> str:
    """An ``http``/``https`` URL with a host, as Ironic takes it; else InvalidParameterValue."""
    if not isinstance(callback_url, str):
        raise InvalidParameterValue(BAD_CALLBACK_URL, node=None)
    try:
        parts = urlsplit(callback_url)
    except ValueError:
        raise InvalidParameterValue(BAD_CALLBACK_URL, node=None) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidParameterValue(BAD_CALLBACK_URL, node=None)
    return callback_url
