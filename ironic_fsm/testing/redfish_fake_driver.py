"""The project's extension of the sushy-tools Redfish emulator (runs in the child process).

``python redfish_fake_driver.py --config FILE --port-file FILE`` starts one
emulator on 127.0.0.1 and writes the port the kernel picked to
``--port-file`` once the socket is bound. The launcher in
:mod:`redfish_emulator` does that for tests; nothing here is imported by
the test process, so Flask and sushy-tools stay out of it.

What the stock ``--fake`` driver lacks and this module adds:

* power changes applied at once, or after ``SUSHY_EMULATOR_FAKE_POWER_DELAY``
  seconds (stock: a random 1-11 s); ``Nmi`` is accepted and counted;
* a boot history: every power-on records the boot target, and a ``Once``
  override is consumed by it (stock ignores ``BootSourceOverrideEnabled``);
  ``BiosSetup`` is an allowed boot target;
* BIOS attributes (get / set / reset), with unknown names refused (400) and,
  with ``SUSHY_EMULATOR_FAKE_BIOS_APPLY = 'reboot'``, changes that stay
  pending until the next power-on, as on real machines;
* memory, CPU count and processors; storage with drives and volumes (an
  empty storage collection, not a 500, when none is configured), where
  volume create keeps ``RAIDType`` and the member drives, IDs are unique,
  and volumes can be deleted (stock has no route);
* ``Manager.Reset`` (counted; ``SUSHY_EMULATOR_PEER_MANAGER_RESET = False``
  leaves the action out, as on BMCs without it), and a manager firmware
  version that firmware updates bump;
* an UpdateService whose SimpleUpdate answers 202 with a task monitor that
  stays "Running" for ``SUSHY_EMULATOR_FAKE_UPDATE_DELAY`` seconds, then
  bumps ``BiosVersion`` (or the manager's firmware); an image URI
  containing ``fail`` ends the task in ``Exception``;
* fault injection and state inspection for tests, outside authentication:
  ``/_peer/faults`` (GET, POST, DELETE), ``/_peer/state``,
  ``/_peer/requests`` (GET, DELETE), ``/_peer/quirks`` (POST);
* per-system *quirks*: shapes real BMCs serve that the stock emulator never
  does (see :data:`QUIRKS`), set in the system's config (``quirks``) or at
  run time through ``/_peer/quirks``.

A BIOS change always records its outcome in the BIOS resource's
``@Redfish.Settings`` (``Time`` and ``Messages``), as real BMCs do:
``Base.1.0.Success``, or one ``Base.1.0.SettingsFailed`` per rejected
attribute.

A fault rule is a dict: ``path_prefix`` (default: every path), ``methods``
(default: all), ``delay`` (seconds to sleep first), ``status`` (HTTP status
to answer instead of the real handler), ``count`` (how many matching
requests it applies to; default unlimited), ``skip`` (matching requests to
let through before it applies). The first rule that matches applies.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime
import json
import os
import sys
import threading
import time
import uuid as uuid_mod
from collections import deque
from typing import Any

import flask
from sushy_tools import error
from sushy_tools.emulator.resources.systems import fakedriver
from werkzeug import exceptions as http_errors

DEFAULT_BIOS: dict[str, Any] = {
    "BootMode": "Uefi",
    "EmbeddedSata": "Raid",
    "NicBoot1": "NetworkBoot",
    "ProcTurboMode": "Enabled",
    "SecureBootStatus": "Disabled",
    "SerialNumber": "QPX12345",
}
DEFAULT_VERSIONS: dict[str, Any] = {"BiosVersion": "1.0.0"}
BOOT_HISTORY_LIMIT = 50

#: The quirks a system can be given (key in its ``quirks`` dict: meaning).
QUIRKS: dict[str, str] = {
    "bios_reject": "{attribute: message or None}: the BIOS accepts the PATCH of these "
    "attributes, then fails to apply them (at once, or at the next boot with "
    "SUSHY_EMULATOR_FAKE_BIOS_APPLY='reboot') and says so only in the BIOS resource's "
    "@Redfish.Settings Messages (Base.1.0.SettingsFailed naming the attribute).",
    "bios_untimed": "True: @Redfish.Settings carries Messages but no Time (some BMCs), "
    "which sushy's update_status reads as 'no updates'.",
    "vmedia": "'actions' (stock: InsertMedia/EjectMedia actions), 'patch' (no actions, "
    "'Allow: GET, PATCH', insert and eject by PATCH) or 'none' (no actions, 'Allow: GET': "
    "the slot cannot be driven at all).",
    "update": "'task' (stock: 202 and a task monitor), 'sync' (204 without Location, "
    "nothing changes) or 'sync-bump' (204 without Location, the version is bumped at once).",
    "nic_states": "{mac: State}: the NIC's Status.State (e.g. 'Disabled', 'StandbyOffline').",
    "host_interface": "mac: that NIC is the host side of the BMC's host interface: Id "
    "'ToManager' (Lenovo XCC) or host_interface_id, and listed in the manager's "
    "HostInterfaces/1/HostEthernetInterfaces.",
    "host_interface_id": "the Id of the host interface's NIC (default 'ToManager').",
    "boot_targets": "list: BootSourceOverrideTarget@Redfish.AllowableValues exactly; [] "
    "publishes none. PATCHes of another target are refused (400).",
    "boot_enabled": "list: BootSourceOverrideEnabled@Redfish.AllowableValues (e.g. "
    "['Once', 'Disabled'] on BMCs without persistent overrides); PATCHes of another value "
    "are refused (400).",
    "boot_modes": "list: BootSourceOverrideMode@Redfish.AllowableValues; PATCHes of another "
    "mode are refused (400).",
    "reset_types": "list: ResetType@Redfish.AllowableValues of ComputerSystem.Reset exactly; "
    "other reset types are refused (400).",
    "volume_create": "'created' (stock: 201 and Location), 'sync' (204, no Location) or "
    "'accepted' (202, no Location): the volume is created either way.",
    "extra_processors": "[{'id', 'cores', 'threads'}]: more Processors members.",
    "processor_overrides": "{Id: {field: value}}: merged into that processor's document "
    "(e.g. {'ProcessorType': 'GPU'} or {'Status': {'State': 'Disabled'}}).",
}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def _merge(doc: dict[str, Any], changes: dict[str, Any]) -> None:
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            _merge(doc[key], value)
        else:
            doc[key] = copy.deepcopy(value)


def _cfg(key: str, default: Any) -> Any:
    return PeerFakeDriver._config.get(key, default)


class PeerFakeDriver(fakedriver.FakeDriver):  # type: ignore[misc]
    """The stock fake systems driver with the behaviour real BMCs have and tests need."""

    _config: Any
    _logger: Any

    # -- power ------------------------------------------------------------------

    def _boot(self, system: dict[str, Any]) -> None:
        """What a power-on does: consume a one-time override, apply pending BIOS."""
        history = list(system.get("boot_history") or [])
        image = (system.get("boot_image") or {}).get("Cd")
        history.append(
            {
                "target": system.get("boot_device", "Hdd"),
                "enabled": system.get("boot_enabled", "Continuous"),
                "mode": system.get("boot_mode", "UEFI"),
                "cd_inserted": bool(image and image[2]),
                "at": time.time(),
            }
        )
        system["boot_history"] = history[-BOOT_HISTORY_LIMIT:]
        if system.get("boot_enabled") == "Once":
            system["boot_enabled"] = "Disabled"
        pending = system.get("bios_pending")
        if pending:
            self._apply_bios(system, pending)
            system["bios_pending"] = {}

    def _update_if_needed(self, system: dict[str, Any]) -> dict[str, Any]:
        pending = system.get("pending_power")
        if pending and time.time() >= pending["apply_time"]:
            was = system.get("power_state")
            system["power_state"] = pending["power_state"]
            system["pending_power"] = None
            if pending["power_state"] == "On" and (was != "On" or pending.get("restart")):
                self._boot(system)
            self._update(system)
        return system

    def set_power_state(self, identity: str, state: str) -> None:
        system = self._get(identity)
        if state == "Nmi":
            self._update(system, nmi_count=system.get("nmi_count", 0) + 1)
            return
        restart = False
        if state in ("On", "ForceOn", "PushPowerButton") or (
            state == "PowerCycle" and system["power_state"] == "Off"
        ):
            target = "On"
        elif state in ("ForceOff", "GracefulShutdown"):
            target = "Off"
        elif state in ("ForceRestart", "GracefulRestart", "PowerCycle"):
            target, restart = "On", True
        else:
            raise error.NotSupportedError(f"Power state {state} is not supported")
        if system["power_state"] == target and not restart:
            return
        delay = float(_cfg("SUSHY_EMULATOR_FAKE_POWER_DELAY", 0) or 0)
        if restart:
            system["power_state"] = "Off"
        system["pending_power"] = {
            "power_state": target,
            "apply_time": time.time() + delay,
            "restart": restart,
        }
        self._update(system)
        if delay <= 0:
            self._update_if_needed(system)

    # -- boot -------------------------------------------------------------------

    def set_boot_enabled(self, identity: str, enabled: str) -> None:
        self._update(identity, boot_enabled=enabled)

    def get_boot_enabled(self, identity: str) -> str:
        return str(self._get(identity).get("boot_enabled", "Continuous"))

    # -- quirks -------------------------------------------------------------------

    def quirks(self, identity: str) -> dict[str, Any]:
        return dict(self._get(identity).get("quirks") or {})

    def set_quirks(
        self, identity: str, changes: dict[str, Any], replace: bool = False
    ) -> dict[str, Any]:
        """Merge ``changes`` into the system's quirks (``None`` removes one), or replace them."""
        unknown = sorted(set(changes) - set(QUIRKS))
        if unknown:
            raise error.BadRequest(f"Unknown quirk(s): {', '.join(unknown)}")
        quirks = {} if replace else self.quirks(identity)
        for key, value in changes.items():
            if value is None:
                quirks.pop(key, None)
            else:
                quirks[key] = value
        self._update(identity, quirks=quirks)
        return quirks

    # -- inventory --------------------------------------------------------------

    def get_nics(self, identity: str) -> list[dict[str, Any]]:
        system = self._get(identity)
        quirks = system.get("quirks") or {}
        host = quirks.get("host_interface")
        host_id = quirks.get("host_interface_id") or "ToManager"
        return [
            {"id": host_id if nic.get("mac") == host else nic.get("mac"), "mac": nic.get("mac")}
            for nic in system.get("nics") or []
        ]

    def get_total_memory(self, identity: str) -> int:
        memory = self._get(identity).get("memory_gb")
        if memory is None:
            raise error.NotSupportedError("No memory data")
        return int(memory)

    def get_total_cpus(self, identity: str) -> int:
        cpus = self._get(identity).get("cpus")
        if cpus is None:
            raise error.NotSupportedError("No CPU data")
        return int(cpus)

    def get_processors(self, identity: str) -> list[dict[str, Any]]:
        system = self._get(identity)
        cpus = system.get("cpus")
        if cpus is None:
            raise error.NotSupportedError("No CPU data")
        sockets = int(system.get("cpu_sockets", 1))
        per_socket = max(1, int(cpus) // sockets)
        return [
            {
                "id": f"CPU{n}",
                "Id": f"CPU{n}",
                "socket": f"CPU {n}",
                "vendor": system.get("cpu_vendor", "Contoso"),
                "model": system.get("cpu_model", "Virtual CPU"),
                "cores": per_socket,
                "threads": per_socket,
            }
            for n in range(sockets)
        ] + [
            {
                "id": extra["id"],
                "Id": extra["id"],
                "socket": extra.get("socket", extra["id"]),
                "vendor": extra.get("vendor", "Contoso"),
                "model": extra.get("model", "Accelerator"),
                "cores": extra.get("cores", 1),
                "threads": extra.get("threads", 1),
            }
            for extra in (system.get("quirks") or {}).get("extra_processors") or []
        ]

    # -- BIOS and firmware versions -------------------------------------------------

    def _bios_defaults(self, system: dict[str, Any]) -> dict[str, Any]:
        return dict(system.get("bios_defaults") or DEFAULT_BIOS)

    def get_bios(self, identity: str) -> dict[str, Any]:
        system = self._get(identity)
        current = dict(system.get("bios") or self._bios_defaults(system))
        if flask.has_request_context() and flask.request.path.rstrip("/").endswith("/Settings"):
            current.update(system.get("bios_pending") or {})
        return current

    def set_bios(self, identity: str, attributes: dict[str, Any]) -> None:
        system = self._get(identity)
        if not isinstance(attributes, dict):
            raise error.BadRequest("Attributes must be an object")
        current = dict(system.get("bios") or self._bios_defaults(system))
        unknown = sorted(set(attributes) - set(current))
        if unknown:
            raise error.BadRequest(f"Unknown BIOS attribute(s): {', '.join(unknown)}")
        if _cfg("SUSHY_EMULATOR_FAKE_BIOS_APPLY", "immediate") == "reboot":
            pending = dict(system.get("bios_pending") or {})
            pending.update(attributes)
            self._update(system, bios_pending=pending)
        else:
            self._apply_bios(system, attributes)
            self._update(system)

    def _apply_bios(self, system: dict[str, Any], attributes: dict[str, Any]) -> None:
        """Apply what this BIOS accepts; record the outcome where real BMCs do.

        Real BMCs accept a PATCH of the settings object and only later,
        when they apply it, find a value they cannot take: the only trace
        is the ``@Redfish.Settings`` messages of the BIOS resource.
        """
        reject = (system.get("quirks") or {}).get("bios_reject") or {}
        current = dict(system.get("bios") or self._bios_defaults(system))
        messages = []
        for name, value in attributes.items():
            if name in reject:
                messages.append(
                    {
                        "MessageId": "Base.1.0.SettingsFailed",
                        "Message": reject[name]
                        or f"The value {value!r} for the attribute {name} could not be applied.",
                        "MessageArgs": [name],
                        "RelatedProperties": [f"#/Attributes/{name}"],
                        "Severity": "Critical",
                        "Resolution": "Check the attribute's allowed values and dependencies.",
                    }
                )
            else:
                current[name] = value
        system["bios"] = current
        system["bios_result"] = {
            "Time": _now(),
            "Messages": messages
            or [
                {
                    "MessageId": "Base.1.0.Success",
                    "Message": "Successfully Completed Request",
                    "Severity": "OK",
                }
            ],
        }

    def reset_bios(self, identity: str) -> None:
        system = self._get(identity)
        self._update(
            system,
            bios=self._bios_defaults(system),
            bios_pending={},
            bios_resets=system.get("bios_resets", 0) + 1,
        )

    def get_versions(self, identity: str) -> dict[str, Any]:
        return dict(self._get(identity).get("versions") or DEFAULT_VERSIONS)

    def set_versions(self, identity: str, firmware_versions: dict[str, Any]) -> None:
        versions = self.get_versions(identity)
        versions.update(firmware_versions)
        self._update(identity, versions=versions)

    def reset_versions(self, identity: str) -> None:
        self._update(identity, versions=dict(DEFAULT_VERSIONS))

    # -- storage ------------------------------------------------------------------

    def find_or_create_storage_volume(self, data: dict[str, Any]) -> str:
        """Give new volumes a unique ID and keep what the client asked for.

        The stock route builds the ID from the PID and the time in seconds,
        so two volumes created within a second collide; and it keeps only
        Name, VolumeType and CapacityBytes of the request.
        """
        if data.get("peer_volume"):
            return str(data["Id"])
        data["Id"] = uuid_mod.uuid4().hex[:12]
        data["libvirtVolName"] = data["Id"]
        data["peer_volume"] = True
        body = flask.request.get_json(silent=True) if flask.has_request_context() else None
        if isinstance(body, dict):
            for key in ("RAIDType", "Links", "Description"):
                if key in body:
                    data[key] = copy.deepcopy(body[key])
        return str(data["Id"])

    # -- managers -----------------------------------------------------------------

    def reset_manager(self, identity: str, reset_type: str) -> None:
        system = self._get(identity)
        self._update(
            system,
            manager_resets=system.get("manager_resets", 0) + 1,
            last_manager_reset=reset_type,
        )


# -- update service ------------------------------------------------------------------

_TASKS: dict[str, dict[str, Any]] = {}
_TASK_LOCK = threading.Lock()
_NEXT_TASK = [1000]


def _settle_tasks(app: Any) -> None:
    """Finish the update tasks whose time has come (applies the version bump)."""
    now = time.time()
    with _TASK_LOCK:
        due = [t for t in _TASKS.values() if t["state"] == "Running" and now >= t["ready_at"]]
        for task in due:
            task["state"] = "Exception" if "fail" in task["image"] else "Completed"
            if task["state"] == "Completed":
                _bump_versions(app, task["targets"])


def _bump_versions(app: Any, targets: list[tuple[str, str]]) -> None:
    """What a successful update does: the BIOS or BMC version goes up by one."""
    for kind, system_uuid in targets:
        versions = app.systems.get_versions(system_uuid)
        if kind == "system":
            major, minor, *rest = (versions.get("BiosVersion") or "1.0.0").split(".")
            bumped = ".".join([major, str(int(minor) + 1), *rest])
            app.systems.set_versions(system_uuid, {"BiosVersion": bumped})
        else:
            major, minor = versions.get("BmcVersion", "1.00").split(".")
            app.systems.set_versions(system_uuid, {"BmcVersion": f"{major}.{int(minor) + 1:02d}"})


def _task_json(task: dict[str, Any]) -> dict[str, Any]:
    state = task["state"]
    return {
        "@odata.type": "#Task.v1_4_3.Task",
        "@odata.id": f"/redfish/v1/TaskService/Tasks/{task['id']}",
        "Id": task["id"],
        "Name": f"Update task {task['id']}",
        "TaskState": state,
        "TaskStatus": {"Running": "OK", "Completed": "OK"}.get(state, "Critical"),
        "PercentComplete": 100 if state != "Running" else 50,
        "TaskMonitor": f"/redfish/v1/TaskService/TaskMonitors/{task['id']}",
        "Messages": (
            [{"MessageId": "Update.1.0.ApplyFailed", "Message": "Image could not be applied"}]
            if state == "Exception"
            else []
        ),
    }


# -- fault injection (WSGI middleware, outside authentication) -------------------------


class PeerControl:
    """Fault injection and state inspection in front of the emulator's WSGI app."""

    def __init__(self, wsgi_app: Any, flask_app: Any) -> None:
        self.wsgi_app = wsgi_app
        self.flask_app = flask_app
        self.lock = threading.Lock()
        self.rules: list[dict[str, Any]] = []
        self.log: deque[dict[str, Any]] = deque(maxlen=1000)
        self.total = 0

    # The rule that applies to this request, with its counters updated.
    def _match(self, method: str, path: str) -> dict[str, Any] | None:
        with self.lock:
            for rule in self.rules:
                if not path.startswith(rule.get("path_prefix") or ""):
                    continue
                methods = rule.get("methods")
                if methods and method not in methods:
                    continue
                rule["seen"] = rule.get("seen", 0) + 1
                if rule["seen"] <= int(rule.get("skip") or 0):
                    return None
                count = rule.get("count")
                if count is not None and rule.get("hits", 0) >= int(count):
                    continue
                rule["hits"] = rule.get("hits", 0) + 1
                return dict(rule)
        return None

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "GET")
        if path.startswith("/_peer/"):
            return self._control(environ, start_response, method, path)
        entry = {"method": method, "path": path, "at": time.time(), "status": None}
        with self.lock:
            self.total += 1
            self.log.append(entry)
        rule = self._match(method, path)
        if rule is not None:
            entry["fault"] = True
            if rule.get("delay"):
                time.sleep(float(rule["delay"]))
            status = rule.get("status")
            if status:
                entry["status"] = int(status)
                body = json.dumps(
                    {
                        "error": {
                            "code": "Base.1.0.GeneralError",
                            "message": f"Injected fault: HTTP {status}",
                            "@Message.ExtendedInfo": [
                                {
                                    "MessageId": "Base.1.0.GeneralError",
                                    "Severity": "Critical",
                                    "Message": f"Injected fault: HTTP {status}",
                                }
                            ],
                        }
                    }
                ).encode()
                start_response(
                    f"{int(status)} Injected",
                    [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
                )
                return [body]

        def recording_start_response(status: str, headers: Any, *args: Any) -> Any:
            entry["status"] = int(status.split()[0])
            return start_response(status, headers, *args)

        return self.wsgi_app(environ, recording_start_response)

    def _reply(self, start_response: Any, status: int, payload: Any) -> list[bytes]:
        body = json.dumps(payload, default=str, sort_keys=True).encode()
        start_response(
            f"{status} OK" if status < 400 else f"{status} Error",
            [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
        )
        return [body]

    def _body(self, environ: dict[str, Any]) -> Any:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        raw = environ["wsgi.input"].read(length) if length else b""
        return json.loads(raw) if raw else None

    def _control(
        self, environ: dict[str, Any], start_response: Any, method: str, path: str
    ) -> list[bytes]:
        if path == "/_peer/faults":
            if method == "GET":
                with self.lock:
                    return self._reply(start_response, 200, {"faults": self.rules})
            if method == "DELETE":
                with self.lock:
                    self.rules = []
                return self._reply(start_response, 200, {"faults": []})
            if method == "POST":
                body = self._body(environ)
                rules = body.get("faults", body) if isinstance(body, dict) else body
                if isinstance(rules, dict):
                    rules = [rules]
                if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
                    return self._reply(start_response, 400, {"error": "faults must be a list"})
                with self.lock:
                    self.rules = [dict(r, hits=0, seen=0) for r in rules]
                    return self._reply(start_response, 200, {"faults": self.rules})
        if path == "/_peer/requests":
            with self.lock:
                if method == "DELETE":
                    self.log.clear()
                    self.total = 0
                    return self._reply(start_response, 200, {"requests": []})
                return self._reply(
                    start_response, 200, {"total": self.total, "requests": list(self.log)}
                )
        if path == "/_peer/state" and method == "GET":
            return self._reply(start_response, 200, self._state())
        if path == "/_peer/quirks" and method == "POST":
            body = self._body(environ)
            if not isinstance(body, dict) or not isinstance(body.get("quirks"), dict):
                return self._reply(start_response, 400, {"error": "quirks must be an object"})
            with self.flask_app.app_context():
                systems = self.flask_app.systems
                identity = body.get("system") or systems.systems[0]
                try:
                    quirks = systems.set_quirks(
                        identity, body["quirks"], replace=bool(body.get("replace"))
                    )
                except error.FishyError as exc:
                    return self._reply(start_response, 400, {"error": str(exc)})
            return self._reply(start_response, 200, {"quirks": quirks})
        return self._reply(start_response, 404, {"error": f"no peer route {method} {path}"})

    def _state(self) -> dict[str, Any]:
        app = self.flask_app
        with app.app_context():
            _settle_tasks(app)
            systems = {}
            for system_uuid in app.systems.systems:
                record = dict(app.systems._get(system_uuid))
                record["vmedia"] = {}
                for device in ("Cd", "Floppy"):
                    try:
                        info = app.vmedia.get_device_image_info(system_uuid, device)
                    except Exception:  # the device may not exist in this configuration
                        continue
                    record["vmedia"][device] = {
                        "image_url": info.image_url,
                        "inserted": info.inserted,
                    }
                systems[system_uuid] = record
            volumes: dict[str, Any] = {}
            for key in list(app.volumes._volumes):
                volumes[f"{key[0]}/{key[1]}"] = app.volumes._volumes[key]
            with _TASK_LOCK:
                tasks = {k: dict(v) for k, v in _TASKS.items()}
        return {"systems": systems, "volumes": volumes, "tasks": tasks}


# -- wiring into the sushy-tools Flask app ---------------------------------------------------


def _json_of(response: Any) -> Any:
    try:
        return json.loads(response.get_data())
    except ValueError:
        return None


def _set_json(response: Any, doc: Any) -> None:
    response.set_data(json.dumps(doc, indent=2))


def install(app: Any) -> PeerControl:
    """Add this module's routes and hooks to the emulator's ``app`` (before it serves)."""

    def quirks_of(identity: str | None) -> dict[str, Any]:
        try:
            return dict(app.systems.quirks(identity)) if identity else {}
        except error.FishyError:
            return {}

    @app.before_request
    def _settle() -> Any:
        _settle_tasks(app)
        return _refuse_what_the_bmc_lacks()

    def _refuse_what_the_bmc_lacks() -> Any:
        """Answer as a real BMC does to what its quirks say it does not offer."""
        request = flask.request
        endpoint = request.endpoint or ""
        quirks = quirks_of((request.view_args or {}).get("identity"))
        if endpoint.startswith("VirtualMedia.") and quirks.get("vmedia", "actions") != "actions":
            mode = quirks["vmedia"]
            if endpoint in (
                "VirtualMedia.virtual_media_insert",
                "VirtualMedia.virtual_media_eject",
            ):
                raise error.NotFound("No such action on this virtual media device")
            if endpoint == "VirtualMedia.virtual_media_patch":
                if mode != "patch":
                    raise http_errors.MethodNotAllowed(["GET"])
                return _vmedia_patch(request)
        if endpoint == "system_reset_action" and isinstance(quirks.get("reset_types"), list):
            reset_type = (request.get_json(silent=True) or {}).get("ResetType")
            if reset_type not in quirks["reset_types"]:
                raise error.BadRequest(f"ResetType {reset_type!r} is not allowed")
        if endpoint == "system_resource" and request.method == "PATCH":
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

    def _vmedia_patch(request: Any) -> Any:
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

    @app.after_request
    def _augment(response: Any) -> Any:
        request = flask.request
        endpoint = request.endpoint or ""
        args = request.view_args or {}
        if (
            request.method == "PATCH"
            and endpoint == "system_resource"
            and response.status_code < 300
        ):
            boot = (request.get_json(silent=True) or {}).get("Boot") or {}
            enabled = boot.get("BootSourceOverrideEnabled")
            if enabled:
                app.systems.set_boot_enabled(args["identity"], enabled)
            return response
        if (
            request.method == "POST"
            and endpoint == "volumes_collection"
            and response.status_code == 201
            and quirks_of(args.get("identity")).get("volume_create") in ("sync", "accepted")
        ):
            response.status_code = (
                204 if quirks_of(args["identity"])["volume_create"] == "sync" else 202
            )
            response.headers.pop("Location", None)
            return response
        if request.method != "GET" or response.status_code != 200:
            return response
        quirks = quirks_of(args.get("identity"))
        if endpoint == "system_resource":
            doc = _json_of(response)
            if doc is not None:
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
                if isinstance(quirks.get("boot_enabled"), list):
                    boot["BootSourceOverrideEnabled@Redfish.AllowableValues"] = list(
                        quirks["boot_enabled"]
                    )
                if isinstance(quirks.get("boot_modes"), list):
                    boot["BootSourceOverrideMode@Redfish.AllowableValues"] = list(
                        quirks["boot_modes"]
                    )
                _set_json(response, doc)
        elif endpoint == "bios":
            doc = _json_of(response)
            result = app.systems._get(args["identity"]).get("bios_result")
            if doc is not None and result:
                settings = doc.setdefault("@Redfish.Settings", {})
                settings.update(result)
                if quirks.get("bios_untimed"):
                    settings.pop("Time", None)
                _set_json(response, doc)
        elif endpoint == "VirtualMedia.virtual_media_resource":
            mode = quirks.get("vmedia", "actions")
            doc = _json_of(response)
            if doc is not None and mode != "actions":
                actions = doc.get("Actions") or {}
                actions.pop("#VirtualMedia.InsertMedia", None)
                actions.pop("#VirtualMedia.EjectMedia", None)
                _set_json(response, doc)
                response.headers["Allow"] = "GET, PATCH" if mode == "patch" else "GET"
        elif endpoint == "ethernet_interface":
            doc = _json_of(response)
            if doc is not None:
                state = (quirks.get("nic_states") or {}).get(doc.get("MACAddress"))
                if state:
                    doc.setdefault("Status", {})["State"] = state
                if doc.get("Id") == "ToManager":
                    doc["Name"] = "Manager Network Interface"
                    doc["Description"] = "Host side of the USB LAN link to the BMC"
                _set_json(response, doc)
        elif endpoint == "processor":
            doc = _json_of(response)
            changes = (quirks.get("processor_overrides") or {}).get((doc or {}).get("Id"))
            if doc is not None and isinstance(changes, dict):
                _merge(doc, changes)
                _set_json(response, doc)
        elif endpoint == "manager_resource":
            doc = _json_of(response)
            if doc is not None:
                manager_id = doc["Id"]
                if app.config.get("SUSHY_EMULATOR_PEER_MANAGER_RESET", True):
                    doc["Actions"] = {
                        "#Manager.Reset": {
                            "target": f"/redfish/v1/Managers/{manager_id}/Actions/Manager.Reset",
                            "ResetType@Redfish.AllowableValues": [
                                "GracefulRestart",
                                "ForceRestart",
                            ],
                        }
                    }
                versions = app.systems.get_versions(doc["UUID"])
                doc["FirmwareVersion"] = versions.get("BmcVersion", "1.00")
                if quirks_of(doc["UUID"]).get("host_interface"):
                    doc["HostInterfaces"] = {
                        "@odata.id": f"/redfish/v1/Managers/{manager_id}/HostInterfaces"
                    }
                _set_json(response, doc)
        elif endpoint == "volume":
            doc = _json_of(response)
            system_uuid = app.systems.uuid(args["identity"])
            for vol in app.volumes.get_volumes_col(system_uuid, args["stg_id"]) or []:
                if doc is not None and vol.get("Id") == doc.get("Id"):
                    for key in ("RAIDType", "Links", "Description"):
                        if key in vol:
                            doc[key] = vol[key]
                    _set_json(response, doc)
        return response

    @app.route(
        "/redfish/v1/Systems/<identity>/Storage/<stg_id>/Volumes/<vol_id>", methods=["DELETE"]
    )
    def peer_volume_delete(identity: str, stg_id: str, vol_id: str) -> Any:
        system_uuid = app.systems.uuid(identity)
        for vol in app.volumes.get_volumes_col(system_uuid, stg_id) or []:
            if vol.get("Id") == vol_id:
                app.volumes.delete_volume(system_uuid, stg_id, vol)
                return flask.Response(status=204)
        raise error.NotFound(f"Volume {vol_id} not found")

    def host_interface_nic(identity: str) -> str:
        """The path of the system NIC behind this manager's host interface (404 if none)."""
        system_uuid = app.systems.uuid(identity)
        mac = quirks_of(system_uuid).get("host_interface")
        for nic in app.systems.get_nics(system_uuid) if mac else []:
            if nic["mac"] == mac:
                return f"/redfish/v1/Systems/{system_uuid}/EthernetInterfaces/{nic['id']}"
        raise error.NotFound("This manager has no host interface")

    def collection(path: str, name: str, members: list[str]) -> Any:
        doc = {
            "@odata.id": path,
            "Name": name,
            "Members@odata.count": len(members),
            "Members": [{"@odata.id": m} for m in members],
        }
        return flask.Response(json.dumps(doc), status=200, content_type="application/json")

    @app.route("/redfish/v1/Managers/<identity>/HostInterfaces", methods=["GET"])
    def peer_host_interfaces(identity: str) -> Any:
        host_interface_nic(identity)
        path = f"/redfish/v1/Managers/{identity}/HostInterfaces"
        return collection(path, "Host Interface Collection", [f"{path}/1"])

    @app.route("/redfish/v1/Managers/<identity>/HostInterfaces/1", methods=["GET"])
    def peer_host_interface(identity: str) -> Any:
        host_interface_nic(identity)
        path = f"/redfish/v1/Managers/{identity}/HostInterfaces/1"
        doc = {
            "@odata.type": "#HostInterface.v1_3_0.HostInterface",
            "@odata.id": path,
            "Id": "1",
            "Name": "Host Interface",
            "HostInterfaceType": "NetworkHostInterface",
            "InterfaceEnabled": True,
            "HostEthernetInterfaces": {"@odata.id": f"{path}/HostEthernetInterfaces"},
        }
        return flask.Response(json.dumps(doc), status=200, content_type="application/json")

    @app.route(
        "/redfish/v1/Managers/<identity>/HostInterfaces/1/HostEthernetInterfaces",
        methods=["GET"],
    )
    def peer_host_ethernet_interfaces(identity: str) -> Any:
        nic = host_interface_nic(identity)
        path = f"/redfish/v1/Managers/{identity}/HostInterfaces/1/HostEthernetInterfaces"
        return collection(path, "Host Ethernet Interface Collection", [nic])

    @app.route("/redfish/v1/Managers/<identity>/Actions/Manager.Reset", methods=["POST"])
    def peer_manager_reset(identity: str) -> Any:
        reset_type = (flask.request.get_json(silent=True) or {}).get("ResetType")
        if reset_type not in ("GracefulRestart", "ForceRestart"):
            raise error.BadRequest(f"Unsupported ResetType {reset_type!r}")
        app.systems.reset_manager(app.systems.uuid(identity), reset_type)
        return flask.Response(status=204)

    def simple_update() -> Any:
        body = flask.request.get_json(silent=True) or {}
        image = body.get("ImageURI")
        targets = body.get("Targets") or [f"/redfish/v1/Systems/{app.systems.systems[0]}"]
        if not image:
            raise error.BadRequest("Missing ImageURI")
        resolved = []
        for target in targets:
            kind = "manager" if "/Managers/" in target else "system"
            name = target.rstrip("/").rsplit("/", 1)[-1]
            resolved.append((kind, app.systems.uuid(name)))
        mode = quirks_of(resolved[0][1] if resolved else None).get("update", "task")
        if mode in ("sync", "sync-bump"):
            # Some BMCs flash small images within the request and answer 204,
            # with no task to follow.
            if mode == "sync-bump" and "fail" not in image:
                _bump_versions(app, resolved)
            return flask.Response(status=204)
        delay = float(app.config.get("SUSHY_EMULATOR_FAKE_UPDATE_DELAY", 0.3))
        with _TASK_LOCK:
            task_id = str(_NEXT_TASK[0])
            _NEXT_TASK[0] += 1
            _TASKS[task_id] = {
                "id": task_id,
                "image": image,
                "targets": resolved,
                "state": "Running",
                "ready_at": time.time() + delay,
            }
        monitor = f"/redfish/v1/TaskService/TaskMonitors/{task_id}"
        return flask.Response(status=202, headers={"Location": monitor})

    app.view_functions["UpdateService.update_service_simple_update"] = simple_update

    @app.route("/redfish/v1/TaskService/TaskMonitors/<task_id>", methods=["GET"])
    def peer_task_monitor(task_id: str) -> Any:
        with _TASK_LOCK:
            task = _TASKS.get(task_id)
            doc = _task_json(task) if task else None
        if doc is None:
            raise error.NotFound(f"Task {task_id} not found")
        status = 202 if doc["TaskState"] == "Running" else 200
        return flask.Response(json.dumps(doc), status=status, content_type="application/json")

    @app.route("/redfish/v1/TaskService/Tasks/<task_id>", methods=["GET"])
    def peer_task(task_id: str) -> Any:
        with _TASK_LOCK:
            task = _TASKS.get(task_id)
            doc = _task_json(task) if task else None
        if doc is None:
            raise error.NotFound(f"Task {task_id} not found")
        return flask.Response(json.dumps(doc), status=200, content_type="application/json")

    stock_storage_collection = app.view_functions["storage_collection"]

    def storage_collection(identity: str) -> Any:
        # Stock answers 500 for a system without configured storage; a BMC
        # without storage answers an empty collection.
        system_uuid = app.systems.uuid(identity)
        if system_uuid not in (app.config.get("SUSHY_EMULATOR_STORAGE") or {}):
            doc = {
                "@odata.type": "#StorageCollection.StorageCollection",
                "@odata.id": f"/redfish/v1/Systems/{identity}/Storage",
                "Name": "Storage Collection",
                "Members@odata.count": 0,
                "Members": [],
            }
            return flask.Response(json.dumps(doc), status=200, content_type="application/json")
        return stock_storage_collection(identity=identity)

    app.view_functions["storage_collection"] = storage_collection

    control = PeerControl(app.wsgi_app, app)
    app.wsgi_app = control
    return control


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args(argv)

    # The Flask app is a module-level singleton configured on import from
    # this variable (one emulator per process).
    os.environ["SUSHY_EMULATOR_CONFIG"] = os.path.abspath(args.config)
    # Volume create and the systems driver are looked up through this module
    # attribute at first use, so replacing it here is enough.
    fakedriver.FakeDriver = PeerFakeDriver
    from sushy_tools.emulator import main as emulator
    from werkzeug.serving import make_server

    app = emulator.app
    install(app)
    host = app.config.get("SUSHY_EMULATOR_LISTEN_IP", "127.0.0.1")
    port = int(app.config.get("SUSHY_EMULATOR_LISTEN_PORT", 0) or 0)
    server = make_server(host, port, app, threaded=True)
    bound = server.socket.getsockname()[1]
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="ascii") as handle:
        handle.write(str(bound))
    os.replace(tmp, args.port_file)
    print(f"PEER-READY http://{host}:{bound}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
