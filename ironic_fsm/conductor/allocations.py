"""Allocations: Ironic's way of handing out nodes, one at a time, never one twice.

An allocation asks for a node by ``resource_class``, ``traits``,
``candidate_nodes`` and ``owner``. The conductor picks among the
``available`` nodes that match (in random order, a node named like the
allocation first, as Ironic does), reserves one, checks it again under the
reservation, and records the allocation (``state`` ``active``,
``node_uuid``) and the node (``instance_uuid`` and ``allocation_uuid`` the
allocation's UUID, ``instance_info['traits']`` its traits) before it
releases the node. Two conductors allocating at once cannot give one node
twice: the node's reservation is exclusive, the check under it sees the
other's ``instance_uuid``, and the store keeps an allocation's node unique.
A request no node can meet ends in ``state`` ``error`` with ``last_error``
saying why. Backfilling (Ironic 1.58) records an allocation for a node
already deployed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from typing import Any, Final

import attrs

from ironic_fsm import states as s
from ironic_fsm.conductor.common import check_ident, shown
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.records import (
    Shelf,
    check_dict,
    check_text,
    check_traits,
    new_uuid,
)
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.exceptions import (
    InvalidParameterValue,
    InvalidState,
    IronicFSMError,
    NodeLocked,
    NodeNotFound,
    ResourceExists,
    ResourceNotFound,
)
from ironic_fsm.node import Node, is_uuid_like
from ironic_fsm.records import Allocation
from ironic_fsm.stores.base import RecordQuery

__all__ = ["ALLOCATING", "Allocations"]

ALLOCATING: Final = "allocating"
ACTIVE: Final = "active"
ERROR: Final = "error"
#: Ironic's ``[conductor]node_locked_retry_attempts``: passes over the nodes that were busy.
LOCKED_RETRY_ATTEMPTS: Final = 3
#: The states in which a node's allocation may go while the node has a target (Ironic's
#: ``UPDATE_ALLOWED_STATES``).
_UPDATE_ALLOWED: Final = frozenset(
    {
        s.DEPLOYFAIL, s.INSPECTING, s.INSPECTFAIL, s.INSPECTWAIT, s.CLEANFAIL, s.ERROR,
        s.VERIFYING, s.ADOPTFAIL, s.RESCUEFAIL, s.UNRESCUEFAIL, s.SERVICEFAIL,
    }
)  # fmt: skip
_NAME_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


class _Unsuitable(Exception):
    """The node reserved no longer meets the request: release it unchanged."""


class AllocationFailed(InvalidParameterValue):
    """No node could be given to the allocation (why is in the message)."""


def _failed(allocation: Allocation, why: str) -> AllocationFailed:
    return AllocationFailed(
        f"Failed to process allocation {allocation.uuid}: {why}.", allocation=allocation.uuid
    )


def _suits(node: Node, allocation: Allocation) -> bool:
    """Whether ``node`` may be given to ``allocation`` (Ironic's checks, under the lock)."""
    owner = allocation.owner
    return (
        not node.maintenance
        and node.instance_uuid is None
        and node.allocation_uuid is None
        and node.provision_state == s.AVAILABLE
        and node.power_state is not None
        and node.resource_class == allocation.resource_class
        and set(allocation.traits) <= set(node.traits)
        and (not allocation.candidate_nodes or node.uuid in allocation.candidate_nodes)
        and (owner is None or owner in (node.owner, node.lessee))
    )


class Allocations:
    """Create (and so allocate), read, rename and delete allocations."""

    def __init__(self, ctx: Context, reservations: Reservations) -> None:
        self._ctx = ctx
        self._reservations = reservations
        self._allocations = Shelf(ctx, Allocation)

    # -- reading ---------------------------------------------------------------------

    def get_allocation(self, ident: str) -> Allocation:
        """The allocation with this UUID or name; ``ResourceNotFound`` if none."""
        return self._allocations.find(ident)

    def node_allocation(self, node: str) -> Allocation:
        """The allocation that holds ``node``; ``ResourceNotFound`` if none does."""
        uuid = self._ctx.caps.store.get(check_ident(node)).uuid
        found = self._allocations.records.find_record(Allocation, "node_uuid", uuid)
        if found is None:
            raise _no_allocation(node)
        return found

    def list_allocations(
        self, *, node: str | None = None, resource_class: str | None = None,
        state: str | None = None, owner: str | None = None, **page: Any,
    ) -> list[Allocation]:  # fmt: skip
        """One page of allocations, filtered on node, resource class, state and owner."""
        filters: dict[str, Any] = {}
        if node is not None:
            filters["node_uuid"] = self._ctx.caps.store.get(check_ident(node)).uuid
        if state is not None:
            if state not in (ALLOCATING, ACTIVE, ERROR):
                raise InvalidParameterValue(
                    f"Invalid allocation state {shown(state)}: allocating, active or error"
                )
            filters["state"] = state
        for name, value in (("resource_class", resource_class), ("owner", owner)):
            if value is not None:
                filters[name] = value
        return self._allocations.page(RecordQuery(filters, **page))

    # -- writing ---------------------------------------------------------------------

    def create_allocation(
        self, *, resource_class: str | None = None, traits: Iterable[str] = (),
        candidate_nodes: Iterable[str] = (), name: str | None = None, uuid: str | None = None,
        extra: dict[str, Any] | None = None, owner: str | None = None, node: str | None = None,
        on_created: Callable[[Allocation], None] | None = None,
    ) -> Allocation:  # fmt: skip
        """Record an allocation and give it a node at once (or, with ``node``, backfill).

        Returns the allocation as it ended: ``active`` with its node, or
        ``error`` with ``last_error``, which is not an exception (as in
        Ironic, where the outcome is read from the allocation). A backfill
        that does not fit its node raises :class:`AllocationFailed`.
        ``on_created`` is handed the allocation as first recorded, before a
        node is looked for (what Ironic's API answers: ``allocating``).

        Raises:
            InvalidParameterValue: a field is wrong; ``resource_class`` is
                missing and no ``node`` is backfilled.
            NodeNotFound: a candidate (or the backfilled node) does not exist.
            ResourceExists: another allocation has this name or UUID.
        """
        target = None if node is None else self._ctx.caps.store.get(check_ident(node))
        if resource_class is None and target is not None:
            resource_class = target.resource_class
        if resource_class is None:
            raise InvalidParameterValue(
                "The resource_class field is mandatory when not backfilling"
            )
        if uuid is None and target is not None and target.instance_uuid is not None:
            uuid = target.instance_uuid  # Ironic's: the instance names the allocation
        allocation = Allocation(
            uuid=new_uuid(Allocation, uuid),
            resource_class=check_text(resource_class, "resource_class", "Allocation", most=80),
            name=_checked_name(name),
            traits=check_traits(traits, "Allocation"),
            candidate_nodes=self._candidates(candidate_nodes),
            extra=check_dict(extra, "extra", "Allocation"),
            owner=check_text(owner, "owner", "Allocation"),
        )
        records = self._allocations.records
        allocation = records.add_record(allocation)
        if on_created is not None:
            on_created(allocation)
        if target is not None:
            return self._backfill(allocation, target)
        return self._allocate(allocation)

    def update_allocation(self, ident: str, **fields: Any) -> Allocation:
        """Change ``name`` and ``extra`` (all Ironic lets change)."""
        allocation = self.get_allocation(ident)
        unknown = set(fields) - {"name", "extra"}
        if unknown:
            raise InvalidParameterValue(
                f"Allocation fields that cannot be changed: {', '.join(sorted(unknown))}"
            )
        changes: dict[str, Any] = {}
        if "name" in fields:
            changes["name"] = _checked_name(fields["name"])
        if "extra" in fields:
            changes["extra"] = check_dict(fields["extra"], "extra", "Allocation")
        return self._allocations.replace(attrs.evolve(allocation, **changes))

    def delete_allocation(self, ident: str) -> None:
        """Delete the allocation and free its node (``instance_uuid`` cleared).

        Raises:
            InvalidState: the node is active or busy, and not in maintenance.
            NodeLocked: the node is reserved.
        """
        allocation = self.get_allocation(ident)
        if allocation.node_uuid is None:
            self._allocations.delete(allocation)
            return
        with self._reservations.reserved(allocation.node_uuid, checked=True) as job:
            node = job.node
            _check_deallocation(node, allocation)
            self._allocations.delete(allocation)
            if node.allocation_uuid == allocation.uuid:
                node.allocation_uuid = None
                node.instance_uuid = None

    # -- the allocation process ------------------------------------------------------

    def _candidates(self, idents: Iterable[str]) -> list[str]:
        """The candidates' UUIDs, in the order given (each must exist)."""
        if isinstance(idents, str):
            raise InvalidParameterValue("candidate_nodes must be a list of node UUIDs or names")
        found, missing = [], []
        for ident in idents:
            try:
                found.append(self._ctx.caps.store.get(check_ident(ident)).uuid)
            except NodeNotFound:
                missing.append(ident)
        if missing:  # Ironic's words, which clients match (the API answers 400)
            raise NodeNotFound(f"Nodes cannot be found: {', '.join(missing)}", node=missing[0])
        return found

    def _matching(self, allocation: Allocation) -> list[str]:
        """The UUIDs of the nodes that may suit, or why none can."""
        query: dict[str, Any] = dict(
            provision_state=s.AVAILABLE, maintenance=False, associated=False,
            resource_class=allocation.resource_class,
        )  # fmt: skip
        if allocation.candidate_nodes:
            query["uuid"] = list(allocation.candidate_nodes)
        owner = allocation.owner
        wanted = set(allocation.traits)
        # Only the fields the choice reads: columns, so a store lists them without decoding
        # a record (traits are not one: read only when the request names some).
        fields = (
            "uuid",
            "name",
            "power_state",
            "owner",
            "lessee",
            *(("traits",) if wanted else ()),
        )
        nodes = [
            n for n in self._ctx.caps.list_fields(fields, **query)
            if n["power_state"] is not None
            and (owner is None or owner in (n["owner"], n["lessee"]))
        ]  # fmt: skip
        if not nodes:
            what = (
                "none of the requested nodes are available and match"
                if allocation.candidate_nodes
                else "no available nodes match"
            )
            raise _failed(allocation, f"{what} the resource class {allocation.resource_class}")
        nodes = [n for n in nodes if wanted <= set(n.get("traits", ()))]
        if not nodes:
            traits = ", ".join(sorted(wanted))
            raise _failed(allocation, f"no suitable nodes have the requested traits {traits}")
        random.shuffle(nodes)
        nodes.sort(key=lambda n: n["name"] != allocation.name or allocation.name is None)
        return [n["uuid"] for n in nodes]

    def _allocate(self, allocation: Allocation) -> Allocation:
        # Imported only when allocating: tenacity brings asyncio, and `import ironic_fsm`
        # stays free of it (tests/core/test_public_api.py).
        import tenacity

        try:
            uuids = self._matching(allocation)
            retrying = tenacity.Retrying(
                retry=tenacity.retry_if_exception_type(_AllBusy),
                stop=tenacity.stop_after_attempt(LOCKED_RETRY_ATTEMPTS),
                wait=tenacity.wait_random(0.05, 0.5),
                reraise=True,
            )
            return retrying(self._take_one, allocation, uuids)
        except (AllocationFailed, _AllBusy) as error:
            failed = attrs.evolve(allocation, state=ERROR, node_uuid=None, last_error=str(error))
            return self._allocations.replace(failed)

    def _take_one(self, allocation: Allocation, uuids: list[str]) -> Allocation:
        """Give ``allocation`` the first of ``uuids`` that suits; busy ones stay for later."""
        busy: list[str] = []
        for uuid in uuids:
            try:
                return self._give(allocation, uuid)
            except NodeLocked:
                busy.append(uuid)
            except (_Unsuitable, ResourceExists):
                continue
        uuids[:] = busy
        if busy:
            raise _AllBusy(_failed(allocation, f"could not reserve any of {len(busy)} "
                                               "suitable nodes"))  # fmt: skip
        raise _failed(allocation, "all nodes were filtered out during reservation")

    def _give(self, allocation: Allocation, uuid: str) -> Allocation:
        """Reserve the node, check it, record both sides; the node's save releases it."""
        records = self._allocations.records
        active = attrs.evolve(allocation, state=ACTIVE, node_uuid=uuid, last_error=None)
        try:
            with self._reservations.reserved(uuid, checked=True) as job:
                node = job.node
                if not _suits(node, allocation):
                    raise _Unsuitable(uuid)
                kept = records.replace_record(active)  # the store refuses a node given twice
                node.instance_uuid = node.allocation_uuid = allocation.uuid
                node.instance_info = {**node.instance_info, "traits": list(allocation.traits)}
        except (_Unsuitable, ResourceExists, NodeLocked):
            raise
        except IronicFSMError:
            # The node was not saved: the allocation does not have it.
            records.replace_record(allocation)
            raise _Unsuitable(uuid) from None
        return kept

    def _backfill(self, allocation: Allocation, node: Node) -> Allocation:
        """Record ``allocation`` for the deployed ``node`` (Ironic's backfilling)."""
        records = self._allocations.records
        try:
            with self._reservations.reserved(node.uuid, checked=True) as job:
                _check_backfill(job.node, allocation)
                kept = records.replace_record(
                    attrs.evolve(allocation, state=ACTIVE, node_uuid=node.uuid)
                )
                job.node.instance_uuid = job.node.allocation_uuid = allocation.uuid
        except IronicFSMError as error:
            records.replace_record(attrs.evolve(allocation, state=ERROR, last_error=str(error)))
            raise
        return kept


class _AllBusy(Exception):
    """Every suitable node was reserved by someone else: try them again shortly."""

    def __init__(self, failure: AllocationFailed) -> None:
        super().__init__(str(failure))


def _no_allocation(node: str) -> IronicFSMError:
    return ResourceNotFound(f"Allocation for node {node} was not found", node=node)


def _checked_name(name: object) -> str | None:
    text = check_text(name, "name", "Allocation")
    if text is not None and (is_uuid_like(text) or not set(text) <= _NAME_CHARS):
        raise InvalidParameterValue(
            f"Cannot create allocation with invalid name {shown(text)}", field="name"
        )
    return text


def _check_deallocation(node: Node, allocation: Allocation) -> None:
    """Ironic's rule: an active or busy node keeps its allocation, unless in maintenance."""
    if node.maintenance:
        return
    if node.target_provision_state and node.provision_state not in _UPDATE_ALLOWED:
        raise InvalidState(
            f"Cannot remove allocation {allocation.uuid} for node {node.uuid}, because the "
            f"node is in state {node.provision_state} where updates are not allowed (and "
            "maintenance mode is off)",
            node=node.uuid,
        )
    if node.provision_state == s.ACTIVE:
        raise InvalidState(
            f"Cannot remove allocation {allocation.uuid} for node {node.uuid}, because the "
            "node is active (and maintenance mode is off)",
            node=node.uuid,
        )


def _check_backfill(node: Node, allocation: Allocation) -> None:
    errors: list[str] = []
    if node.provision_state != s.ACTIVE:
        errors.append(
            f'Node must be in the "active" state, but the current state is "{node.provision_state}"'
        )
    if allocation.resource_class and node.resource_class != allocation.resource_class:
        errors.append(
            f"Resource class {node.resource_class} does not match the requested resource "
            f"class {allocation.resource_class}"
        )
    if allocation.traits and not set(allocation.traits) <= set(node.traits):
        errors.append(
            f"List of traits {node.traits} does not match the requested traits {allocation.traits}"
        )
    if allocation.candidate_nodes and node.uuid not in allocation.candidate_nodes:
        errors.append(
            "Candidate nodes must be empty or contain the target node, but got "
            f"{allocation.candidate_nodes}"
        )
    if node.allocation_uuid is not None or node.instance_uuid not in (None, allocation.uuid):
        errors.append(f"Node {node.uuid} is already associated with an instance or allocation")
    if errors:
        raise _failed(
            allocation, f"Cannot backfill an allocation for node {node.uuid}: {'; '.join(errors)}"
        )
