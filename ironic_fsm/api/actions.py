"""What a node is asked to do: provision, power, boot device, maintenance, traits, validate.

Provisioning answers 202 only once the conductor has saved the first
transition (``target_provision_state`` set): ironicclient's ``--wait``
gives up on a stable node with no target, so an early answer would
strand it.
"""

from __future__ import annotations

import string
from typing import Any, Final

import falcon

from ironic_fsm import states as s
from ironic_fsm.api import _glue
from ironic_fsm.api.common import (
    Resource,
    compile_schema,
    one_field,
    read_json,
    require_version,
    send,
    version_of,
)
from ironic_fsm.api.errors import ApiError
from ironic_fsm.api.views import console_enabled, older_state_names, stamp
from ironic_fsm.conductor import Conductor

__all__ = [
    "BOOT_DEVICE_SCHEMA",
    "BOOT_MODE_SCHEMA",
    "POWER_SCHEMA",
    "PROVISION_SCHEMA",
    "SECURE_BOOT_SCHEMA",
    "BootDevice",
    "BootSetting",
    "Maintenance",
    "NodeStates",
    "PowerState",
    "ProvisionState",
    "Validate",
]

#: Each provisioning target, the version that introduced it and the library verb.
_TARGETS: Final[dict[str, tuple[tuple[int, int], str]]] = {
    "active": ((1, 1), "active"),
    "rebuild": ((1, 1), "rebuild"),
    "deleted": ((1, 1), "deleted"),
    "undeploy": ((1, 1), "undeploy"),  # Ironic 39 accepts it at any version
    "manage": ((1, 4), "manage"),
    "provide": ((1, 4), "provide"),
    "inspect": ((1, 6), "inspect"),
    "abort": ((1, 13), "abort"),
    "clean": ((1, 15), "clean"),
    "adopt": ((1, 17), "adopt"),
    "rescue": ((1, 38), "rescue"),
    "unrescue": ((1, 38), "unrescue"),
    "deploy": ((1, 73), "deploy"),
    "unhold": ((1, 85), "unhold"),
    "service": ((1, 87), "service"),
}
_STEP: Final = {
    "type": "object",
    "properties": {
        "interface": {"enum": ["power", "management", "deploy", "bios", "raid", "firmware",
                               "vendor", "boot", "inspect", "rescue"]},
        "step": {"type": "string", "minLength": 1},
        "args": {"type": "object"},
        "order": {"type": "integer", "minimum": 0},
        "priority": {"type": ["integer", "string"]},
    },
    "required": ["interface", "step"],
    "additionalProperties": False,
}  # fmt: skip
PROVISION_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "target": {"enum": sorted(_TARGETS)},
        "configdrive": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "meta_data": {"type": "object"},
                        "network_data": {"type": "object"},
                        "user_data": {"type": ["object", "array", "string", "null"]},
                        "vendor_data": {"type": "object"},
                    },
                    "additionalProperties": False,
                },
                {"type": ["string", "null"]},
            ]
        },
        "clean_steps": {"type": "array", "items": _STEP},
        "deploy_steps": {"type": "array", "items": _STEP},
        "service_steps": {"type": "array", "items": _STEP},
        "rescue_password": {"type": "string", "minLength": 1},
        "disable_ramdisk": {"type": "boolean"},
        "runbook": {"type": "string", "minLength": 1},
    },
    "required": ["target"],
    "additionalProperties": False,
}
_POWER_TARGETS: Final = {
    s.POWER_ON: (1, 1), s.POWER_OFF: (1, 1), s.REBOOT: (1, 1),
    s.SOFT_POWER_OFF: (1, 27), s.SOFT_REBOOT: (1, 27),
}  # fmt: skip
POWER_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "target": {"enum": sorted(_POWER_TARGETS)},
        "timeout": {"type": "integer", "minimum": 1},
    },
    "required": ["target"],
    "additionalProperties": False,
}
BOOT_DEVICE_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "boot_device": {"type": "string", "minLength": 1},
        "persistent": {"type": "boolean"},
    },
    "required": ["boot_device"],
    "additionalProperties": False,
}


BOOT_MODE_SCHEMA: Final = one_field("target", {"enum": ["uefi", "bios"]})
SECURE_BOOT_SCHEMA: Final = one_field("target", {"type": "boolean"})
_check_provision = compile_schema(PROVISION_SCHEMA)
_check_power = compile_schema(POWER_SCHEMA)
_check_boot_device = compile_schema(BOOT_DEVICE_SCHEMA)
_check_boot_mode = compile_schema(BOOT_MODE_SCHEMA)
_check_secure_boot = compile_schema(SECURE_BOOT_SCHEMA)
_check_maintenance = compile_schema(
    {
        "type": ["object", "null"],
        "properties": {"reason": {"type": ["string", "null"], "maxLength": 255}},
        "additionalProperties": False,
    }
)


#: What a config drive given as a string may hold when it is not a URL (Ironic's test: base64,
#: with the white space such values often carry).
_B64_ALPHABET: Final = frozenset(string.ascii_letters + string.digits + "+/=\n\r\t ")


def _configdrive(target: str, drive: Any, req: falcon.Request) -> Any:
    """A config drive as Ironic accepts one: with ``active`` (``rebuild`` from 1.35), a JSON
    object from 1.56 (its ``vendor_data`` from 1.59), else a URL or base64 text."""
    version = version_of(req)
    allowed = ["active", "rebuild"] if version >= (1, 35) else ["active"]
    if target not in allowed:
        raise ApiError(
            400,
            "Adding a config drive is only supported when setting provision state to "
            + ", ".join(allowed),
        )
    if isinstance(drive, dict):
        for key, since in (("configdrive", (1, 56)), ("vendor_data", (1, 59))):
            if (key == "configdrive" or key in drive) and version < since:
                what = "a JSON object for configdrive" if key == "configdrive" else (
                    "vendor_data in configdrive")  # fmt: skip
                raise ApiError(
                    400,
                    f"Providing {what} is only supported starting with API version "
                    f"{since[0]}.{since[1]}",
                )
    elif "://" not in drive and set(drive) - _B64_ALPHABET:
        raise ApiError(
            400, "Invalid configdrive format: it is neither a JSON, nor a URL, nor a base64 string"
        )
    return drive


def _provision_arguments(target: str, body: dict[str, Any], req: falcon.Request) -> dict[str, Any]:
    """The library's keyword arguments for one request, refusing what does not fit the target."""
    args: dict[str, Any] = {}
    if body.get("configdrive"):  # Ironic takes an empty one as none
        args["configdrive"] = _configdrive(target, body["configdrive"], req)
    if "rescue_password" in body:
        if target != "rescue":
            raise ApiError(400, "rescue_password is only valid with the rescue target")
        args["rescue_password"] = body["rescue_password"]
    elif target == "rescue":
        raise ApiError(400, "A non-empty rescue_password is required to rescue a node")
    for key, wanted, since in (
        ("clean_steps", ("clean",), (1, 15)),
        ("deploy_steps", ("active", "deploy", "rebuild"), (1, 69)),
        ("service_steps", ("service",), (1, 87)),
        ("runbook", ("clean", "service"), (1, 92)),
    ):
        if key in body:
            require_version(req, since, key)
            if target not in wanted:
                raise ApiError(400, f"{key} is only valid with the {' or '.join(wanted)} target")
            args[key] = body[key]
    if "disable_ramdisk" in body:
        if target not in ("clean", "service"):
            raise ApiError(400, "disable_ramdisk is only valid with the clean or service target")
        require_version(req, (1, 70) if target == "clean" else (1, 108), "disable_ramdisk")
        args["disable_ramdisk"] = body["disable_ramdisk"]
    if "runbook" in args and (args.get("clean_steps") or args.get("service_steps")):
        raise ApiError(400, "A runbook cannot be given together with steps")
    steps_key = {"clean": "clean_steps", "service": "service_steps"}.get(target)
    if steps_key and steps_key not in args and "runbook" not in args:
        raise ApiError(400, f"{steps_key} (or a runbook) is required for the {target} target")
    return args


class ProvisionState(Resource):
    """``PUT /v1/nodes/{ident}/states/provision``."""

    def on_put(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        body = _check_provision(read_json(req))
        target = body["target"]
        since, verb = _TARGETS[target]
        require_version(req, since, f"The provisioning target {target!r}")
        if target == "abort" and self._conductor.get_node(ident).provision_state == s.DEPLOYWAIT:
            require_version(req, (1, 110), "Aborting a deploy in 'wait call-back'")
        args = _provision_arguments(target, body, req)
        self._check_steps(ident, args)
        node = self._conductor.do_provisioning_action(ident, verb, **args)
        resp.status = 202
        resp.location = f"{req.prefix}/v1/nodes/{node.uuid}/states"

    def _check_steps(self, ident: str, args: dict[str, Any]) -> None:
        """Refuse unknown or disallowed steps now, as Ironic does, not in the background."""
        ramdisk = args.get("disable_ramdisk", False)
        if args.get("clean_steps") is not None:
            self._conductor.validate_clean_steps(ident, args["clean_steps"], ramdisk)
        if args.get("service_steps") is not None:
            self._conductor.validate_service_steps(ident, args["service_steps"], ramdisk)
        if args.get("deploy_steps") is not None:
            self._conductor.validate_deploy_steps(ident, args["deploy_steps"])


class PowerState(Resource):
    """``PUT /v1/nodes/{ident}/states/power``: soft targets and ``timeout`` from 1.27."""

    def on_put(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        body = _check_power(read_json(req))
        require_version(req, _POWER_TARGETS[body["target"]], f"The power target {body['target']!r}")
        if "timeout" in body:
            require_version(req, (1, 27), "The power timeout")
        node = self._conductor.set_power_state(ident, body["target"], timeout=body.get("timeout"))
        resp.status = 202
        resp.location = f"{req.prefix}/v1/nodes/{node.uuid}/states"


class NodeStates(Resource):
    """``GET /v1/nodes/{ident}/states``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        node = self._conductor.get_node(ident)
        body: dict[str, Any] = {
            "console_enabled": console_enabled(node),
            "last_error": node.last_error,
            "power_state": node.power_state,
            "provision_state": node.provision_state,
            "provision_updated_at": stamp(node.provision_updated_at),
            "target_power_state": node.target_power_state,
            "target_provision_state": node.target_provision_state,
        }
        version = version_of(req)
        if version >= (1, 12):
            body.update(raid_config=node.raid_config, target_raid_config=node.target_raid_config)
        if version >= (1, 75):
            body.update(boot_mode=node.boot_mode, secure_boot=node.secure_boot)
        older_state_names(body, version)
        send(resp, body)


class BootSetting:
    """``PUT /v1/nodes/{ident}/states/boot_mode`` and ``.../states/secure_boot`` (1.76+).

    202 once the BMC has taken the change (the conductor works synchronously
    here); a node in a transient state is a 409, an invalid target a 400.
    """

    def __init__(self, conductor: Conductor, *, secure_boot: bool = False) -> None:
        self._conductor = conductor
        self._secure_boot = secure_boot

    def on_put(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        what = "secure_boot" if self._secure_boot else "boot_mode"
        require_version(req, (1, 76), f"/v1/nodes/{ident}/states/{what}", status=404)
        if self._secure_boot:
            target = _check_secure_boot(read_json(req))["target"]
            node = self._conductor.set_secure_boot_state(ident, target)
        else:
            node = self._conductor.set_boot_mode(ident, _check_boot_mode(read_json(req))["target"])
        resp.status = 202
        resp.location = f"{req.prefix}/v1/nodes/{node.uuid}/states"


class BootDevice:
    """``/v1/nodes/{ident}/management/boot_device`` and its ``supported`` list."""

    def __init__(self, conductor: Conductor, *, supported: bool = False) -> None:
        self._conductor = conductor
        self._supported = supported

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        if self._supported:
            devices = self._conductor.get_supported_boot_devices(ident)
            send(resp, {"supported_boot_devices": devices})
            return
        found = self._conductor.get_boot_device(ident)
        send(resp, {"boot_device": found.get("boot_device"), "persistent": found.get("persistent")})

    def on_put(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        if self._supported:
            raise falcon.HTTPMethodNotAllowed(["GET"])
        body = _check_boot_device(read_json(req))
        self._conductor.set_boot_device(ident, body["boot_device"], body.get("persistent", False))
        resp.status = 204


class Maintenance(Resource):
    """``PUT`` and ``DELETE /v1/nodes/{ident}/maintenance``: 202 with no body, as Ironic."""

    def on_put(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        body = _check_maintenance(read_json(req, optional=True)) or {}
        self._conductor.update_node(ident, maintenance=True, maintenance_reason=body.get("reason"))
        resp.status = 202

    def on_delete(self, req: falcon.Request, resp: falcon.Response, ident: str) -> None:
        self._conductor.update_node(ident, maintenance=False)
        resp.status = 202


class Validate(Resource):
    """``GET /v1/nodes/{ident}/validate`` and the legacy ``/v1/nodes/validate?node=``."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, ident: str | None = None) -> None:
        ident = ident or req.get_param("node")
        if not ident:
            raise ApiError(400, "Say which node to validate: ?node=<uuid or name>")
        send(resp, _glue.validate_node(self._conductor, ident))
