"""The shapes real BMCs serve, laid over the stock emulator's answers (child process).

Before a request, what a system's quirks say its BMC lacks is refused as
that BMC refuses it (a virtual CD without actions, a narrower list of
boot targets or reset types). After a GET, the stock document gets what
real BMCs add or leave out: one function per endpoint, in
:data:`_GET_SHAPES`. The quirks are listed in
:data:`ironic_fsm.testing._redfish_system.QUIRKS`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

import flask
from sushy_tools import error
from werkzeug import exceptions as http_errors

from ironic_fsm.testing._redfish_system import _merge
from ironic_fsm.testing._redfish_tasks import settle_tasks

#: The quirks of the system a request names (``{}`` for none, or no system).
QuirksOf = Callable[[Any], dict[str, Any]]


def install_shapes(app: Any, quirks_of: QuirksOf) -> None:
    """Hook the refusals in before every request and the shapes after every answer."""

    @app.before_request
    def _settle() -> Any:
        settle_tasks(app)
        request = flask.request
        quirks = quirks_of((request.view_args or {}).get("identity"))
        for refuse in (_refuse_vmedia, _refuse_reset_type, _refuse_boot_override):
            answer = refuse(app, request, quirks)
            if answer is not None:
                return answer
        return None

    @app.after_request
    def _augment(response: Any) -> Any:
        return _shape(app, quirks_of, response)


# -- before: what the BMC does not offer --------------------------------------------------


def _refuse_vmedia(app: Any, request: Any, quirks: dict[str, Any]) -> Any:
    """A virtual CD driven by PATCH only ('patch'), or not at all ('none')."""
    endpoint = request.endpoint or ""
    mode = quirks.get("vmedia", "actions")
    if not endpoint.startswith("VirtualMedia.") or mode == "actions":
        return None
    if endpoint in ("VirtualMedia.virtual_media_insert", "VirtualMedia.virtual_media_eject"):
        raise error.NotFound("No such action on this virtual media device")
    if endpoint == "VirtualMedia.virtual_media_patch":
        if mode != "patch":
            raise http_errors.MethodNotAllowed(["GET"])
        return _vmedia_patch(app, request)
    return None


def _refuse_reset_type(app: Any, request: Any, quirks: dict[str, Any]) -> Any:
    allowed = quirks.get("reset_types")
    if request.endpoint == "system_reset_action" and isinstance(allowed, list):
        reset_type = (request.get_json(silent=True) or {}).get("ResetType")
        if reset_type not in allowed:
            raise error.BadRequest(f"ResetType {reset_type!r} is not allowed")
    return None


def _refuse_boot_override(app: Any, request: Any, quirks: dict[str, Any]) -> Any:
    if request.endpoint != "system_resource" or request.method != "PATCH":
        return None
    boot = (request.get_json(silent=True) or {}).get("Boot") or {}
    for key, quirk in (
        ("BootSourceOverrideTarget", "boot_targets"),
        ("BootSourceOverrideMode", "boot_modes"),
        ("BootSourceOverrideEnabled", "boot_enabled"),
    ):
        allowed = quirks.get(quirk)
        if key in boot and isinstance(allowed, list) and boot[key] not in allowed:
            raise error.BadRequest(
                f"{key} {boot[key]!r} is not one of {', '.join(allowed) or 'nothing'}"
            )
    return None


def _vmedia_patch(app: Any, request: Any) -> Any:
    """Insert or eject by PATCH, as BMCs without the actions do."""
    args = request.view_args or {}
    body = request.get_json(silent=True) or {}
    if "Image" not in body and "Inserted" not in body:
        return None  # the stock handler (VerifyCertificate)
    identity, device = args["identity"], args["device"]
    image = body.get("Image")
    if image and body.get("Inserted", True):
        path = app.vmedia.insert_image(
            identity, device, image, True, body.get("WriteProtected", True)
        )
        with contextlib.suppress(error.NotSupportedError):
            app.systems.set_boot_image(
                app.systems.uuid(identity),
                device,
                boot_image=path,
                write_protected=body.get("WriteProtected", True),
            )
    else:
        app.vmedia.eject_image(identity, device)
        with contextlib.suppress(error.NotSupportedError):
            app.systems.set_boot_image(app.systems.uuid(identity), device)
    return flask.Response(status=204)


# -- after: the documents as real BMCs serve them -----------------------------------------


def _shape(app: Any, quirks_of: QuirksOf, response: Any) -> Any:
    request = flask.request
    endpoint = request.endpoint or ""
    args = request.view_args or {}
    if request.method == "PATCH" and endpoint == "system_resource":
        _keep_boot_enabled(app, request, args, response)
        return response
    if request.method == "POST" and endpoint == "volumes_collection":
        _volume_create_reply(quirks_of(args.get("identity")), response)
        return response
    shape = _GET_SHAPES.get(endpoint)
    if request.method != "GET" or response.status_code != 200 or shape is None:
        return response
    doc = _json_of(response)
    if doc is not None and shape(app, doc, quirks_of(args.get("identity")), args, response):
        response.set_data(json.dumps(doc, indent=2))
    return response


def _keep_boot_enabled(app: Any, request: Any, args: Any, response: Any) -> None:
    """Stock ignores BootSourceOverrideEnabled; a one-time override must be used up."""
    boot = (request.get_json(silent=True) or {}).get("Boot") or {}
    enabled = boot.get("BootSourceOverrideEnabled")
    if enabled and response.status_code < 300:
        app.systems.set_boot_enabled(args["identity"], enabled)


def _volume_create_reply(quirks: dict[str, Any], response: Any) -> None:
    """The ``volume_create`` quirk: 204 or 202 without Location, the volume made either way."""
    mode = quirks.get("volume_create")
    if response.status_code == 201 and mode in ("sync", "accepted"):
        response.status_code = 204 if mode == "sync" else 202
        response.headers.pop("Location", None)


def _json_of(response: Any) -> Any:
    try:
        return json.loads(response.get_data())
    except ValueError:
        return None


def _system(
    app: Any, doc: dict[str, Any], quirks: dict[str, Any], args: Any, response: Any
) -> bool:
    boot = doc.setdefault("Boot", {})
    boot["BootSourceOverrideEnabled"] = app.systems.get_boot_enabled(doc["UUID"])
    targets_key = "BootSourceOverrideTarget@Redfish.AllowableValues"
    allowed = boot.get(targets_key)
    if isinstance(allowed, list) and "BiosSetup" not in allowed:
        allowed.append("BiosSetup")
    if isinstance(quirks.get("boot_targets"), list):
        boot[targets_key] = list(quirks["boot_targets"])
        if not boot[targets_key]:
            del boot[targets_key]
    reset = (doc.get("Actions") or {}).get("#ComputerSystem.Reset")
    if isinstance(quirks.get("reset_types"), list) and isinstance(reset, dict):
        reset["ResetType@Redfish.AllowableValues"] = list(quirks["reset_types"])
    for quirk, key in (("boot_enabled", "Enabled"), ("boot_modes", "Mode")):
        if isinstance(quirks.get(quirk), list):
            boot[f"BootSourceOverride{key}@Redfish.AllowableValues"] = list(quirks[quirk])
    return True


def _bios(app: Any, doc: dict[str, Any], quirks: dict[str, Any], args: Any, response: Any) -> bool:
    result = app.systems._get(args["identity"]).get("bios_result")
    if not result:
        return False
    settings = doc.setdefault("@Redfish.Settings", {})
    settings.update(result)
    if quirks.get("bios_untimed"):
        settings.pop("Time", None)
    return True


def _vmedia(
    app: Any, doc: dict[str, Any], quirks: dict[str, Any], args: Any, response: Any
) -> bool:
    mode = quirks.get("vmedia", "actions")
    if mode == "actions":
        return False
    actions = doc.get("Actions") or {}
    actions.pop("#VirtualMedia.InsertMedia", None)
    actions.pop("#VirtualMedia.EjectMedia", None)
    response.headers["Allow"] = "GET, PATCH" if mode == "patch" else "GET"
    return True


def _nic(app: Any, doc: dict[str, Any], quirks: dict[str, Any], args: Any, response: Any) -> bool:
    state = (quirks.get("nic_states") or {}).get(doc.get("MACAddress"))
    if state:
        doc.setdefault("Status", {})["State"] = state
    if doc.get("Id") == "ToManager":
        doc["Name"] = "Manager Network Interface"
        doc["Description"] = "Host side of the USB LAN link to the BMC"
    return True


def _processor(
    app: Any, doc: dict[str, Any], quirks: dict[str, Any], args: Any, response: Any
) -> bool:
    changes = (quirks.get("processor_overrides") or {}).get(doc.get("Id"))
    if not isinstance(changes, dict):
        return False
    _merge(doc, changes)
    return True


def _manager(
    app: Any, doc: dict[str, Any], quirks: dict[str, Any], args: Any, response: Any
) -> bool:
    manager_id = doc["Id"]
    if app.config.get("SUSHY_EMULATOR_PEER_MANAGER_RESET", True):
        doc["Actions"] = {
            "#Manager.Reset": {
                "target": f"/redfish/v1/Managers/{manager_id}/Actions/Manager.Reset",
                "ResetType@Redfish.AllowableValues": ["GracefulRestart", "ForceRestart"],
            }
        }
    versions = app.systems.get_versions(doc["UUID"])
    doc["FirmwareVersion"] = versions.get("BmcVersion", "1.00")
    try:
        host_interface = app.systems.quirks(doc["UUID"]).get("host_interface")
    except error.FishyError:
        host_interface = None
    if host_interface:
        doc["HostInterfaces"] = {"@odata.id": f"/redfish/v1/Managers/{manager_id}/HostInterfaces"}
    return True


def _volume(
    app: Any, doc: dict[str, Any], quirks: dict[str, Any], args: Any, response: Any
) -> bool:
    """Keep what the volume was created with (stock forgets its RAID type and drives)."""
    system_uuid = app.systems.uuid(args["identity"])
    for vol in app.volumes.get_volumes_col(system_uuid, args["stg_id"]) or []:
        if vol.get("Id") == doc.get("Id"):
            doc.update(
                {key: vol[key] for key in ("RAIDType", "Links", "Description") if key in vol}
            )
            return True
    return False


#: A GET's endpoint -> what changes in its document; each says whether it changed it.
_GET_SHAPES: dict[str, Callable[[Any, dict[str, Any], dict[str, Any], Any, Any], bool]] = {
    "system_resource": _system,
    "bios": _bios,
    "VirtualMedia.virtual_media_resource": _vmedia,
    "ethernet_interface": _nic,
    "processor": _processor,
    "manager_resource": _manager,
    "volume": _volume,
}
