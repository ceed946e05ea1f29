"""The node record: everything ironic_fsm knows about one bare-metal machine.

Field names are Ironic's, so that data moves between the two without a
mapping. The record is plain data: the lifecycle keeps no state of its own
on it, and a node converts losslessly to and from a JSON-safe dict (what
the stores persist). Secrets in ``driver_info`` and ``instance_info`` are
masked in ``repr`` and in :meth:`Node.to_dict` when asked.
"""

from __future__ import annotations

import json
import uuid as _uuid
from datetime import datetime
from typing import Any, Final

import attrs

from ironic_fsm import states
from ironic_fsm.exceptions import InvalidParameterValue
from ironic_fsm.masking import mask_secrets

__all__ = ["INTERFACE_KINDS", "NODE_FIELDS", "Node"]

#: The interface kinds a hardware type provides, in Ironic's order.
INTERFACE_KINDS: Final = (
    "power",
    "management",
    "deploy",
    "boot",
    "bios",
    "raid",
    "inspect",
    "rescue",
    "vendor",
    "firmware",
)


def _masked_repr(value: Any) -> str:
    return repr(mask_secrets(value))


def _new_uuid() -> str:
    return str(_uuid.uuid4())


_DATETIME_FIELDS: Final = frozenset({"provision_updated_at", "created_at", "updated_at"})


@attrs.define(eq=True)
class Node:
    """One bare-metal node.

    ``provision_state`` starts at ``enroll``. ``version`` is bumped by the
    store on every save and guards against lost updates. Timestamps are
    timezone-aware UTC datetimes.
    """

    uuid: str = attrs.field(factory=_new_uuid)
    name: str | None = None
    driver: str = "fake-hardware"
    driver_info: dict[str, Any] = attrs.field(factory=dict, repr=_masked_repr)
    driver_internal_info: dict[str, Any] = attrs.field(factory=dict, repr=_masked_repr)
    properties: dict[str, Any] = attrs.field(factory=dict, repr=_masked_repr)
    instance_info: dict[str, Any] = attrs.field(factory=dict, repr=_masked_repr)
    extra: dict[str, Any] = attrs.field(factory=dict, repr=_masked_repr)
    traits: list[str] = attrs.field(factory=list)
    resource_class: str | None = None
    provision_state: str = states.ENROLL
    target_provision_state: str | None = None
    power_state: str | None = None
    target_power_state: str | None = None
    maintenance: bool = False
    maintenance_reason: str | None = None
    fault: str | None = None
    last_error: str | None = None
    retired: bool = False
    retired_reason: str | None = None
    protected: bool = False
    protected_reason: str | None = None
    automated_clean: bool | None = None
    clean_step: dict[str, Any] | None = attrs.field(default=None, repr=_masked_repr)
    deploy_step: dict[str, Any] | None = attrs.field(default=None, repr=_masked_repr)
    service_step: dict[str, Any] | None = attrs.field(default=None, repr=_masked_repr)
    reservation: str | None = None
    provision_updated_at: datetime | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    version: int = 0
    target_raid_config: dict[str, Any] = attrs.field(factory=dict, repr=_masked_repr)
    raid_config: dict[str, Any] = attrs.field(factory=dict, repr=_masked_repr)
    power_interface: str | None = None
    management_interface: str | None = None
    deploy_interface: str | None = None
    boot_interface: str | None = None
    bios_interface: str | None = None
    raid_interface: str | None = None
    inspect_interface: str | None = None
    rescue_interface: str | None = None
    vendor_interface: str | None = None
    firmware_interface: str | None = None

    def to_dict(self, *, mask: bool = False, copy: bool = True) -> dict[str, Any]:
        """A JSON-safe dict of every field (datetimes as ISO 8601 strings).

        Containers are copied, so changing the result never changes the
        node; ``copy=False`` shares them, for callers that only serialise
        the result at once (the stores). With ``mask=True`` secrets are
        replaced, for display.
        """
        out: dict[str, Any] = {}
        for name in NODE_FIELDS:
            value = getattr(self, name)
            if name in _DATETIME_FIELDS:
                value = None if value is None else value.isoformat()
            elif copy and isinstance(value, (dict, list)):
                value = _copy_json(value)
            out[name] = value
        return mask_secrets(out) if mask else out

    def to_json(self) -> str:
        """The node as JSON text: what stores persist."""
        return json.dumps(self.to_dict(copy=False), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, copy: bool = True) -> Node:
        """The node that :meth:`to_dict` described; unknown keys are an error.

        ``copy=False`` adopts the containers of ``data`` (for freshly decoded
        JSON that nobody else holds).
        """
        unknown = data.keys() - _FIELD_SET
        if unknown:
            raise InvalidParameterValue(
                f"Unknown node field(s): {', '.join(sorted(unknown))}", fields=sorted(unknown)
            )
        kwargs = {}
        for name, value in data.items():
            if name in _DATETIME_FIELDS and isinstance(value, str):
                value = datetime.fromisoformat(value)
            elif copy and isinstance(value, (dict, list)):
                value = _copy_json(value)
            kwargs[name] = value
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str | bytes) -> Node:
        """The node that :meth:`to_json` wrote."""
        return cls.from_dict(json.loads(text), copy=False)

    def interface_name(self, kind: str) -> str | None:
        """The interface implementation this node chose for ``kind``, if any."""
        return getattr(self, f"{kind}_interface")  # type: ignore[no-any-return]


def _copy_json(value: Any) -> Any:
    # Deep copy limited to JSON containers: much cheaper than copy.deepcopy.
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


#: The names of every node field, in declaration order.
NODE_FIELDS: Final = tuple(f.name for f in attrs.fields(Node))
_FIELD_SET: Final = frozenset(NODE_FIELDS)
