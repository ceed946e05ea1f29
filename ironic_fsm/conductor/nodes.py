"""The node records: create, read, list, update and delete nodes, and set their power.

These requests change a record, not the provision state. Each is checked
on a plain read first, so that a refusal never locks the node, and again
under the reservation, where the change is made.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Final, NamedTuple

import attrs

from ironic_fsm import history as h
from ironic_fsm import states as s
from ironic_fsm.conductor.common import check_ident, describe_exc, scrub_node, shown, wrong_state
from ironic_fsm.conductor.context import Context
from ironic_fsm.conductor.jobs import Job, emit
from ironic_fsm.conductor.power_events import (
    POWER_SET_END,
    POWER_SET_ERROR,
    POWER_SET_START,
    power_event,
)
from ironic_fsm.conductor.reservations import Reservations
from ironic_fsm.events import Event
from ironic_fsm.exceptions import (
    ConcurrentUpdate,
    HardwareError,
    InvalidParameterValue,
    InvalidState,
    IronicFSMError,
    NodeNotFound,
    NodeProtected,
    UnsupportedOperation,
)
from ironic_fsm.hardware import HardwareType
from ironic_fsm.interfaces import INTERFACE_KINDS
from ironic_fsm.node import NODE_FIELDS, Node, check_field
from ironic_fsm.stores.base import (
    ASSOCIATED,
    RESERVED,
    SHARDED,
    NodeFields,
    check_fields,
)

__all__ = ["BOOT_MODE_SET", "SECURE_BOOT_SET", "Nodes"]

LOG = logging.getLogger(__name__)

#: The paging keywords of :meth:`~ironic_fsm.Conductor.list_nodes` and their defaults,
#: the store's (:meth:`~ironic_fsm.stores.base.ScanningStore.list`): any other is a filter.
PAGING: Final = (("limit", None), ("marker", None), ("sort_key", "created_at"), ("sort_dir", "asc"))

# Fields users may not set through update_node: the lifecycle owns them.
_READ_ONLY_FIELDS: Final = frozenset(
    {
        "uuid", "provision_state", "target_provision_state", "reservation", "version",
        "created_at", "updated_at", "provision_updated_at", "clean_step", "deploy_step",
        "service_step", "power_state", "target_power_state", "driver_internal_info", "fault",
        "boot_mode", "secure_boot", "inspection_started_at", "inspection_finished_at",
        "allocation_uuid",
    }
)  # fmt: skip

# States in which the node is busy with a flow: no power changes, no verbs
# beyond those of the matrix.
_BUSY_STATES: Final = s.UNSTABLE_STATES | s.HOLD_STATES


def _check_flag(node: Node, fields: dict[str, Any], flag: str, refusal: str | None) -> None:
    """Ironic's rules for ``retired`` and ``protected`` and their reasons.

    ``refusal`` is why the node's state does not allow setting the flag
    (None: it does). Clearing a flag clears its reason; a reason needs
    the flag.
    """
    reason = f"{flag}_reason"
    if flag in fields:
        value = fields[flag]
        if not isinstance(value, bool):
            raise InvalidParameterValue(f"Node {node.uuid}: {flag} must be True or False")
        if value and refusal is not None:
            raise InvalidState(refusal, node=node.uuid, state=node.provision_state)
        if not value:
            fields.setdefault(reason, None)
    if fields.get(reason) is not None and not fields.get(flag, getattr(node, flag)):
        raise InvalidParameterValue(
            f"Node {node.uuid}: {reason} can only be set when {flag} is True", node=node.uuid
        )


def _flag_text(node: Node, flag: str, set_text: str, unset_text: str) -> str:
    """The history text of a flag now set (with its reason, or that none was given) or unset."""
    if not getattr(node, flag):
        return unset_text
    return f"{set_text}: {getattr(node, f'{flag}_reason') or 'no reason given'}"


def _retire_refusal(node: Node) -> str | None:
    if not node.retired and node.provision_state == s.AVAILABLE:
        return (
            f"Node {node.uuid} can not have 'retired' set in provision state "
            f"'available'; move it to manageable first"
        )
    return None


#: Where Ironic lets a node be protected: holding an instance, deployed or rescued.
_PROTECTABLE: Final = frozenset({s.ACTIVE, s.RESCUE})


def _protect_refusal(node: Node) -> str | None:
    if node.provision_state not in _PROTECTABLE:
        return (
            f"Node {node.uuid}: protected can only be set in provision states 'active' or "
            f"'rescue', not {node.provision_state!r}"
        )
    return None


#: The events of a boot mode or secure boot change, emitted once it is saved.
BOOT_MODE_SET: Final = "baremetal.node.boot_mode_set.end"
SECURE_BOOT_SET: Final = "baremetal.node.secure_boot_set.end"


def _check_expected(node: Node, expected_version: int | None) -> None:
    """Refuse an update computed from another version of the node than the stored one."""
    if expected_version is not None and node.version != expected_version:
        raise ConcurrentUpdate(
            f"Node {node.uuid} changed since it was read (version {expected_version}, now "
            f"{node.version}); read it again and retry",
            node=node.uuid,
        )


class _BootSetting(NamedTuple):
    """A boot setting the node caches: what users call it, its values, its calls, its event."""

    what: str
    values: tuple[Any, ...]
    getter: str
    setter: str
    event: str


#: The boot settings, by node field.
_BOOT_SETTINGS: Final = {
    "boot_mode": _BootSetting(
        "boot mode", ("uefi", "bios"), "get_boot_mode", "set_boot_mode", BOOT_MODE_SET
    ),
    "secure_boot": _BootSetting(
        "secure boot state",
        (True, False),
        "get_secure_boot_state",
        "set_secure_boot_state",
        SECURE_BOOT_SET,
    ),
}


def _require_supported(job: Job, what: str, value: str, lister: str) -> None:
    """Refuse a value the management interface does not list, before the BMC is asked."""
    supported = list(job.call("management", lister))
    if value not in supported:
        raise InvalidParameterValue(
            f"Node {job.node.uuid}: {what} {value!r} is not supported; "
            f"supported: {', '.join(supported) or 'none'}",
            node=job.node.uuid,
        )


def _check_boot_settings(node: Node, what: str) -> None:
    """InvalidState (a conflict: 409 over the API, as Ironic's), not a refused request."""
    if node.provision_state in s.UNSTABLE_STATES:
        raise InvalidState(
            f"Node {node.uuid}: the {what} cannot be changed while the node is in the "
            f"transient provision state {node.provision_state!r}",
            node=node.uuid,
            state=node.provision_state,
        )


class Nodes:
    """Node records and power: everything that is not a provisioning verb."""

    def __init__(self, ctx: Context, reservations: Reservations) -> None:
        self._ctx, self._reservations = ctx, reservations

    # -- management and validation, as Ironic's API offers them beside the verbs -------

    def get_boot_device(self, ident: str) -> dict[str, Any]:
        """``{'boot_device', 'persistent'}`` as the node's management interface reads them.

        The node is reserved for the read (NodeLocked if busy), as Ironic's
        conductor does: a BMC is asked one thing at a time.
        """
        with self._reservations.reserved(ident) as job:
            found = job.call("management", "get_boot_device")
        return dict(found or {})

    def get_supported_boot_devices(self, ident: str) -> list[str]:
        """The boot devices the node's management interface can set."""
        with self._reservations.reserved(ident) as job:
            return list(job.call("management", "get_supported_boot_devices"))

    def set_boot_device(self, ident: str, device: str, persistent: bool = False) -> None:
        """Set the next (or every, ``persistent``) boot device; one the interface does not
        support is refused (InvalidParameterValue) before the BMC is asked to set it."""
        if type(device) is not str or type(persistent) is not bool:
            raise InvalidParameterValue(
                f"Node {ident}: a boot device is a name and persistent True or False, not "
                f"{shown(device)} and {shown(persistent)}",
                node=ident,
            )
        with self._reservations.reserved(ident) as job:
            _require_supported(job, "boot device", device, "get_supported_boot_devices")
            job.call("management", "set_boot_device", device, persistent)

    def set_boot_mode(self, ident: str, mode: str) -> Node:
        """Set the node's boot mode (``uefi``/``bios``) on its BMC and cache it on the node.

        As Ironic: an unknown mode is refused before anything is reserved,
        a node in a transient state is refused (InvalidState), and a driver
        without boot modes raises UnsupportedOperation. The change is made
        before this returns (Ironic's is asynchronous): a failure raises and
        leaves the node as it was, instead of setting ``last_error``.
        """
        return self._set_boot_setting(ident, "boot_mode", mode)

    def set_secure_boot_state(self, ident: str, state: bool) -> Node:
        """Turn UEFI secure boot on or off on the node's BMC and cache it on the node."""
        return self._set_boot_setting(ident, "secure_boot", state)

    def _set_boot_setting(self, ident: str, field: str, value: Any) -> Node:
        """A value of one of the setting's values and type, set on a node that may change it."""
        ident = check_ident(ident)
        setting = _BOOT_SETTINGS[field]
        if not any(type(value) is type(v) and value == v for v in setting.values):
            raise InvalidParameterValue(
                f"Node {ident}: the {setting.what} must be "
                f"{' or '.join(map(repr, setting.values))}, not {shown(value)}",
                node=ident,
            )
        with self._boot_settings(ident, setting.what) as job:
            self._change_boot_setting(job, field, value)
            return job.node

    @contextmanager
    def _boot_settings(self, ident: str, what: str) -> Iterator[Job]:
        """Reserve a node whose boot settings may change: checked before and after reserving."""
        current = self._ctx.caps.store.get(ident)
        if current.reservation is None:  # held: busy (NodeLocked), checked once free
            _check_boot_settings(current, what)
        with self._reservations.reserved(ident) as job:
            _check_boot_settings(job.node, what)
            job.call("management", "validate")
            yield job

    def _change_boot_setting(self, job: Job, field: str, value: Any) -> None:
        """Ask the BMC for ``value`` unless it already reports it; cache it; an event.

        As Ironic: a BMC that cannot tell the current value is asked anyway,
        and the node caches the value asked for, since some BMCs apply it
        only at the next boot.
        """
        setting = _BOOT_SETTINGS[field]
        try:
            current = job.call("management", setting.getter)
        except (UnsupportedOperation, HardwareError) as exc:
            LOG.debug("Node %s: could not read %s: %s", job.node.uuid, field, describe_exc(exc))
            current = None
        if current is None or current != value:
            job.call("management", setting.setter, value)
        node = job.node
        setattr(node, field, value)
        if self._ctx.listeners:
            job.events.append(
                Event(
                    name=setting.event, node=node.uuid, node_name=node.name,
                    previous_state=node.provision_state,
                    event=None, state=node.provision_state, target=node.target_provision_state,
                    timestamp=self._ctx.clock(),
                )
            )  # fmt: skip

    def validate(self, ident: str) -> dict[str, str | None]:
        """Each interface's ``validate`` on a plain read: ``None`` where it passes, else why.

        Nothing is reserved or written, so a busy node can be checked too;
        reasons are scrubbed of the node's secrets.
        """
        node = self._ctx.caps.store.get(check_ident(ident))
        task = self._ctx.task_for(node)
        result: dict[str, str | None] = {}
        for kind, iface in task.driver.interfaces():
            try:
                iface.validate(task)
            except Exception as error:  # any interface's failure is its answer, not ours
                result[kind] = scrub_node(node, describe_exc(error))
            else:
                result[kind] = None
        return result

    def create_node(self, **fields: Any) -> Node:
        """Enroll a node; any :class:`~ironic_fsm.Node` field may be given.

        ``provision_state`` may be given to import an existing record; it
        defaults to ``enroll``.

        Raises:
            InvalidParameterValue: an unknown field, an unknown state, a
                duplicate UUID or name.
            DriverNotFound: the driver is neither registered nor installed.
        """
        unknown = sorted(set(fields) - set(NODE_FIELDS))
        if unknown:
            raise InvalidParameterValue(
                f"Unknown node field(s): {', '.join(unknown)}", fields=unknown
            )
        node = Node(**fields)  # checks every field's type and shape
        for field in ("provision_state", "target_provision_state"):
            value = getattr(node, field)
            if value is not None and value not in self._ctx.lifecycle.states:
                raise InvalidParameterValue(
                    f"Node {node.uuid}: unknown {field.replace('_', ' ')} {value!r}",
                    node=node.uuid,
                    state=value,
                )
        self._ctx.registry.driver_for(node)
        now = self._ctx.clock()
        node.created_at = node.created_at or now
        node.updated_at = now
        node.provision_updated_at = node.provision_updated_at or now
        node.reservation = None
        self._ctx.caps.store.create(node)
        return node

    def get_node(self, ident: str) -> Node:
        """The node with this UUID or name."""
        return self._ctx.caps.store.get(check_ident(ident))

    def list_nodes(
        self, fields: Iterable[str] | None, query: dict[str, Any]
    ) -> list[Node] | list[NodeFields]:
        """:meth:`~ironic_fsm.Conductor.list_nodes`: ``query`` holds its paging keywords
        (:data:`PAGING`) and filters, and is the caller's to consume (its ``**query``)."""
        page = {key: query.pop(key, default) for key, default in PAGING}
        filters = query
        wanted = None if fields is None else check_fields(fields)
        checked: dict[str, Any] = {}
        for key, value in filters.items():
            if key in (RESERVED, ASSOCIATED, SHARDED):  # "held", "has an instance", "in a shard"
                if type(value) is not bool:
                    raise InvalidParameterValue(
                        f"The {key} filter must be True or False, not {shown(value)}",
                        fields=[key],
                    )
                checked[key] = value
                continue
            if key not in NODE_FIELDS:
                raise InvalidParameterValue(
                    f"Cannot filter nodes on unknown field {key!r}", fields=[key]
                )
            if key in ("shard", "uuid") and isinstance(value, (list, tuple, set, frozenset)):
                # Ironic's shard filter takes several values (any of); so does uuid, for a
                # chassis' nodes
                checked[key] = frozenset(check_field(key, item) for item in value)
                continue
            checked[key] = check_field(key, value)
        for key in ("provision_state", "target_provision_state"):
            value = checked.get(key)
            if value is not None and value not in self._ctx.lifecycle.states:
                raise InvalidParameterValue(
                    f"Cannot filter nodes on {key} {value!r}: not a state of this lifecycle",
                    fields=[key],
                )
        if wanted is not None:
            return self._ctx.caps.list_fields(wanted, **page, **checked)
        return self._ctx.caps.list_page(**page, **checked)

    def update_node(
        self,
        ident: str,
        fields: dict[str, Any],
        expected_version: int | None,
        reset_interfaces: bool | None,
    ) -> Node:
        """Change user-settable fields (``fields``, by name; the caller's dict is left as
        it is), with Ironic's rules for retirement and protection.

        A new ``driver`` resets the ``<kind>_interface`` fields the update
        does not give to the new type's defaults (``None``), unless
        ``reset_interfaces`` is False; ``reset_interfaces=True`` without a
        new driver is refused, as Ironic does.

        ``expected_version`` makes the update a compare-and-set: it is made
        only if the node is still the version the caller computed it from
        (a read-modify-write such as a PATCH), else :class:`ConcurrentUpdate`
        (retry from a new read), across any number of processes.

        Raises:
            InvalidParameterValue: unknown or lifecycle-owned fields;
                ``retired_reason`` without ``retired``; ``protected_reason``
                without ``protected``.
            InvalidState: ``retired`` set on an ``available`` node, or
                ``protected`` set outside ``active``.
            NodeLocked: the node is busy.
            ConcurrentUpdate: the node is no longer ``expected_version``.
        """
        ident = check_ident(ident)
        fields = dict(fields)
        if reset_interfaces and "driver" not in fields:
            raise InvalidParameterValue(
                "The reset_interfaces parameter can only be used when changing the node's driver.",
                node=ident,
            )
        if "driver" in fields and reset_interfaces is not False:
            # A new hardware type: every interface the update does not name goes back
            # to the new type's default (Ironic resets them too, on request).
            for kind in INTERFACE_KINDS:
                fields.setdefault(f"{kind}_interface", None)
        bad = sorted(set(fields) - set(NODE_FIELDS))
        if bad:
            raise InvalidParameterValue(f"Unknown node field(s): {', '.join(bad)}", fields=bad)
        owned = sorted(set(fields) & _READ_ONLY_FIELDS)
        if owned:
            raise InvalidParameterValue(
                f"Node {ident}: field(s) {', '.join(owned)} are managed by the lifecycle "
                "and cannot be updated",
                node=ident,
                fields=owned,
            )
        fields = {key: check_field(key, value) for key, value in fields.items()}
        # Every refusal is found on a plain read first, so that a refused
        # update never locks the node; the checks run again under the lock.
        # A node someone holds may be passing through a state that refuses
        # the update: reserving says it is busy (NodeLocked, retryable).
        current = self._ctx.caps.store.get(ident)
        _check_expected(current, expected_version)
        if current.reservation is None:
            self._check_update(current, dict(fields))
        if fields.get("name") is not None and fields["name"] != current.name:
            try:
                holder = self._ctx.caps.store.get(fields["name"])
            except NodeNotFound:
                pass
            else:
                raise InvalidParameterValue(
                    f"Node {current.uuid}: the name {fields['name']!r} is taken by node "
                    f"{holder.uuid}",
                    node=current.uuid,
                )
        with self._reservations.reserved(current.uuid) as job:
            _check_expected(job.node, expected_version)
            self._apply_update(job, fields)
            return job.node

    def _check_update(self, node: Node, fields: dict[str, Any]) -> HardwareType | None:
        """Refuse what Ironic refuses; return the node's new hardware if it changes.

        ``fields`` gains the reasons that an update clears implicitly.
        """
        _check_flag(node, fields, "retired", _retire_refusal(node))
        _check_flag(node, fields, "protected", _protect_refusal(node))
        if "maintenance" in fields and fields["maintenance"] is False:
            fields.setdefault("maintenance_reason", None)
        if "driver" in fields or any(f"{kind}_interface" in fields for kind in INTERFACE_KINDS):
            return self._ctx.registry.driver_for(attrs.evolve(node, **fields))
        return None

    def _apply_update(self, job: Job, fields: dict[str, Any]) -> None:
        node = job.node
        driver = self._check_update(node, fields)
        if driver is not None:
            job.task.driver = driver
        was_maintenance, was_retired, fault = node.maintenance, node.retired, node.fault
        if fields.get("maintenance") is False:
            node.fault = None
        for key, value in fields.items():
            setattr(node, key, value)
        self._record_flags(job, was_maintenance, was_retired, fault)

    def _record_flags(
        self, job: Job, was_maintenance: bool, was_retired: bool, fault: str | None
    ) -> None:
        """History of an update: maintenance set or unset and why, retirement."""
        node, uuid = job.node, job.node.uuid
        if node.maintenance != was_maintenance:
            cleared = "" if fault is None else f" (fault {fault!r} cleared)"
            unset = f"Maintenance mode unset on node {uuid}{cleared}"
            text = _flag_text(node, "maintenance", f"Maintenance mode set on node {uuid}", unset)
            job.record(h.INFO, h.MAINTENANCE, text)
        if node.retired != was_retired:
            unset = f"Node {uuid} is no longer retired"
            text = _flag_text(node, "retired", f"Node {uuid} retired", unset)
            job.record(h.INFO, h.PROVISIONING, text)

    def delete_node(self, ident: str) -> None:
        """Remove a node record; allowed in manageable, enroll, adopt failed (and available).

        Raises:
            InvalidStateRequested: the node is in another state.
            InvalidState: the node has an ``instance_uuid``.
            NodeProtected: the node is protected.
        """
        ident = check_ident(ident)
        current = self._ctx.caps.store.get(ident)
        if current.reservation is None:  # held: busy (NodeLocked), checked once free
            self._check_delete(current)
        with self._reservations.reserved(ident) as job:
            self._check_delete(job.node)
            self._ctx.caps.store.delete(job.node.uuid)
            job.detached = True  # nothing left to release

    def _check_delete(self, node: Node) -> None:
        allowed = set(s.DELETE_ALLOWED_STATES)
        if self._ctx.config.allow_deleting_available_nodes:
            allowed.add(s.AVAILABLE)
        if node.protected:
            raise NodeProtected(
                f"Node {node.uuid} is protected and cannot be deleted", node=node.uuid
            )
        if node.instance_uuid is not None:  # Ironic's NodeAssociated: remove the instance first
            raise InvalidState(
                f"Node {node.uuid} is associated with instance {node.instance_uuid} and "
                "cannot be deleted",
                node=node.uuid,
                state=node.provision_state,
            )
        if node.provision_state not in allowed:
            raise wrong_state(
                node,
                f"Node {node.uuid} cannot be deleted in provision state "
                f"{node.provision_state!r}; allowed in: {', '.join(sorted(allowed))}",
            )

    # -- power -------------------------------------------------------------------------------

    def set_power_state(self, ident: str, power_state: str, timeout: float | None = None) -> Node:
        """Power the node on or off, or reboot it, through its power interface.

        Refused while a flow is running (cleaning, deploying, waiting,
        holding, ...); allowed in stable and failure states, so that an
        operator can act on a node in ``clean failed``.
        """
        ident = check_ident(ident)
        if not isinstance(power_state, str) or power_state not in s.POWER_STATES:
            name = power_state if isinstance(power_state, str) else type(power_state).__name__
            raise InvalidParameterValue(
                f"Node {ident}: unknown power state {name!r}; expected one of "
                f"{', '.join(sorted(s.POWER_STATES))}",
                node=ident,
            )
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise InvalidParameterValue(
                f"Node {ident}: the power timeout must be a positive number of seconds, "
                f"not {shown(timeout)}",
                node=ident,
            )
        current = self._ctx.caps.store.get(ident)
        if current.reservation is None:  # held: busy (NodeLocked), checked once free
            self._check_power(current)
        with self._reservations.reserved(ident) as job:
            self._check_power(job.node)
            self._told_power(job, power_state, timeout)
            return job.node

    def _told_power(self, job: Job, power_state: str, timeout: float | None) -> None:
        """:meth:`Job.power`, told as Ironic does: ``power_set.start`` now, ``.error`` if it
        fails, ``.end`` after the save that records it."""
        ctx, node = self._ctx, job.node
        if not ctx.listeners:
            job.power(power_state, timeout)
            return
        previous = node.power_state
        emit(ctx, power_event(node, POWER_SET_START, previous, power_state, ctx.clock()))
        try:
            job.power(power_state, timeout)
        except IronicFSMError as exc:
            why = scrub_node(node, describe_exc(exc))
            emit(ctx, power_event(node, POWER_SET_ERROR, previous, power_state, ctx.clock(), why))
            raise
        job.events.append(power_event(node, POWER_SET_END, previous, power_state, ctx.clock()))

    def _check_power(self, node: Node) -> None:
        if node.provision_state in _BUSY_STATES:
            raise wrong_state(
                node,
                f"Node {node.uuid}: power state cannot be changed while the node is in "
                f"provision state {node.provision_state!r}",
            )
