"""Ironic's versioned notifications, built from the conductor's events and the node's record.

Ironic 39 sends ``baremetal.node.<action>.<status>`` with a priority (its
level: ``info``, ``error``), a publisher (``ironic-conductor.<host>``) and a
payload that is an oslo versioned object's primitive: the payload class's
name, namespace ``ironic``, its version, and its fields (the node's public
fields, ``NodePayload`` 1.17, plus each action's own). The same shapes
here, so that consumers of Ironic's notifications read ours:

* ``provision_set.{start,end,success,error}``: ``NodeSetProvisionStatePayload``
  1.18 (``event``, ``previous_provision_state``,
  ``previous_target_provision_state``, ``instance_info``,
  ``driver_internal_info``), the status by Ironic's rule
  (:func:`provision_status`);
* ``power_set.{start,end,error}``: ``NodeSetPowerStatePayload`` 1.17 (``to_power``);
* ``power_state_corrected.success``: ``NodeCorrectedPowerStatePayload``
  1.17 (``from_power``);
* ``create``, ``update``, ``delete``, each ``.{start,end,error}``:
  ``NodeCRUDPayload`` 1.15 (``chassis_uuid``, ``instance_info``, ``driver_info``);
* ``maintenance_set.{start,end,error}``: ``NodePayload`` 1.17;
* ``hardware.<driver>.metrics.update``: the sensor readings, as Ironic's
  ``send_sensor_data`` sends them (a plain message, not versioned).

``driver_info`` only in the CRUD payloads, as Ironic; it, ``instance_info``
and ``driver_internal_info`` have their secrets masked, and ``last_error``
and ``maintenance_reason`` are scrubbed before any save.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

import attrs

from ironic_fsm import states as s
from ironic_fsm.conductor.notices import record_event_name
from ironic_fsm.conductor.power_sync import (
    POWER_SET_END,
    POWER_SET_ERROR,
    POWER_SET_START,
    POWER_STATE_CORRECTED,
    PowerEvent,
)
from ironic_fsm.conductor.sensors import SensorEvent
from ironic_fsm.events import (
    PROVISION_END,
    PROVISION_ERROR,
    PROVISION_START,
    Event,
)
from ironic_fsm.masking import mask_secrets
from ironic_fsm.node import Node

__all__ = ["NODE_FIELDS", "Notification", "notification_for"]

#: NodePayload 1.17's fields that a node record here has (the others are ``None``).
NODE_FIELDS: Final = (
    "clean_step", "conductor_group", "console_enabled", "created_at", "deploy_step",
    "description", "disable_power_off", "driver", "extra", "boot_mode", "secure_boot",
    "inspection_finished_at", "inspection_started_at", "instance_uuid", "last_error",
    "maintenance", "maintenance_reason", "fault", "name", "bios_interface", "boot_interface",
    "console_interface", "deploy_interface", "inspect_interface", "management_interface",
    "network_interface", "power_interface", "raid_interface", "rescue_interface",
    "storage_interface", "vendor_interface", "owner", "lessee", "power_state", "properties",
    "protected", "protected_reason", "provision_state", "provision_updated_at",
    "resource_class", "retired", "retired_reason", "target_power_state",
    "target_provision_state", "updated_at", "uuid", "traits",
)  # fmt: skip
#: What each event becomes: (action, status, payload class, its version).
_PROVISION: Final = ("provision_set", "NodeSetProvisionStatePayload", "1.18")
_POWER_SET: Final = ("power_set", "NodeSetPowerStatePayload", "1.17")
_CRUD: Final = ("NodeCRUDPayload", "1.15")
_KINDS: Final = {
    **{name: (_PROVISION[0], "", *_PROVISION[1:])
       for name in (PROVISION_START, PROVISION_END, PROVISION_ERROR)},
    POWER_SET_START: (_POWER_SET[0], "start", *_POWER_SET[1:]),
    POWER_SET_END: (_POWER_SET[0], "end", *_POWER_SET[1:]),
    POWER_SET_ERROR: (_POWER_SET[0], "error", *_POWER_SET[1:]),
    POWER_STATE_CORRECTED: (
        "power_state_corrected", "success", "NodeCorrectedPowerStatePayload", "1.17"
    ),
    **{record_event_name(action, status): (action, status, *_CRUD)
       for action in ("create", "update", "delete") for status in ("start", "end", "error")},
    **{record_event_name("maintenance_set", status): ("maintenance_set", status, "NodePayload",
                                                      "1.17")
       for status in ("start", "end", "error")},
}  # fmt: skip


def provision_status(event: Event) -> str:
    """Ironic's status of a provision-state change: ``error`` for a ``fail`` or
    ``error`` event, ``start`` from a stable state into work, ``end`` from work
    into a resting state, ``success`` for any other move (work to work)."""
    if event.event in ("fail", "error"):
        return "error"
    was_working = event.previous_state in s.UNSTABLE_STATES
    working = event.state in s.UNSTABLE_STATES
    if working and not was_working:
        return "start"
    if was_working and not working:
        return "end"
    return "success"


@attrs.frozen
class Notification:
    """One versioned notification, as Ironic's notifier sends it.

    Attributes:
        event_type: ``baremetal.node.<action>.<status>``.
        priority: Ironic's level: ``error`` for an ``error`` status, else ``info``.
        publisher_id: ``ironic-conductor.<host>``.
        payload: The versioned object's primitive (``ironic_object.name``,
            ``.namespace``, ``.version``, ``.data``), JSON-safe.
        timestamp: When the event happened (the conductor's clock), ISO 8601.
        message_id: A UUID of its own: a receiver drops a copy it has seen.
        node: The node's UUID (the CloudEvent's subject).
    """

    event_type: str
    priority: str
    publisher_id: str
    payload: Mapping[str, Any]
    timestamp: str
    message_id: str
    node: str

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _node_data(event: Event, node: Node | None) -> dict[str, Any]:
    data: dict[str, Any] = {field: None for field in NODE_FIELDS}
    if node is not None:
        for field in NODE_FIELDS:
            data[field] = _plain(getattr(node, field, None))
        data["traits"] = sorted(node.traits or ())
    data.update(uuid=event.node, name=event.node_name if node is None else node.name)
    # The event's own states: those it tells of, not the record's later ones.
    data["provision_state"] = event.state
    data["target_provision_state"] = event.target
    return data


def notification_for(event: Event, node: Node | None, host: str) -> Notification | None:
    """The notification of ``event`` (``None`` for events Ironic sends none for).

    ``node`` is the node's record as read after the event (``None``: gone).
    """
    if isinstance(event, SensorEvent):
        return _sensors_notification(event, node, host)
    kind = _KINDS.get(event.name)
    if kind is None:
        return None
    action, status, name, version = kind
    if action == "provision_set":
        status = provision_status(event)
    data = _node_data(event, node)
    if name == "NodeSetProvisionStatePayload":
        data.update(
            event=event.event,
            previous_provision_state=event.previous_state,
            previous_target_provision_state=None,
            instance_info=_plain(mask_secrets(node.instance_info)) if node else None,
            driver_internal_info=_plain(mask_secrets(node.driver_internal_info)) if node else None,
        )
        if status == "error" and event.error is not None:
            data["last_error"] = event.error
    elif name == "NodeCRUDPayload":
        data.update(
            chassis_uuid=None,
            instance_info=_plain(mask_secrets(node.instance_info)) if node else None,
            driver_info=_plain(mask_secrets(node.driver_info)) if node else None,
        )
    elif isinstance(event, PowerEvent):
        if name == "NodeSetPowerStatePayload":
            data["to_power"] = event.power_state
        else:
            data["from_power"] = event.previous_power_state
            data["power_state"] = event.power_state
    return Notification(
        event_type=f"baremetal.node.{action}.{status}",
        priority="error" if status == "error" else "info",
        publisher_id=f"ironic-conductor.{host}",
        payload={
            "ironic_object.name": name,
            "ironic_object.namespace": "ironic",
            "ironic_object.version": version,
            "ironic_object.data": data,
        },
        timestamp=(event.timestamp.isoformat() if event.timestamp else ""),
        message_id=str(uuid.uuid4()),
        node=event.node,
    )


def _sensors_notification(event: SensorEvent, node: Node | None, host: str) -> Notification:
    """Ironic's ``hardware.<driver>.metrics.update``: not a versioned object, a plain
    message whose ``payload`` is the readings as the driver gave them."""
    timestamp = event.timestamp.isoformat() if event.timestamp else ""
    message_id = str(uuid.uuid4())
    return Notification(
        event_type=event.name,
        priority="info",
        publisher_id=f"ironic-conductor.{host}",
        payload={
            "message_id": message_id,
            "instance_uuid": node.instance_uuid if node is not None else None,
            "node_uuid": event.node,
            "node_name": event.node_name,
            "timestamp": timestamp,
            "event_type": f"hardware.{event.driver}.metrics",
            "payload": _plain(event.sensors),
        },
        timestamp=timestamp,
        message_id=message_id,
        node=event.node,
    )
