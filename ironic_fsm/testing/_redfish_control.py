"""Fault injection and state inspection in front of the emulator, outside authentication.

A WSGI middleware (child process): ``/_peer/faults`` (GET, POST, DELETE),
``/_peer/state``, ``/_peer/requests`` (GET, DELETE), ``/_peer/quirks``
and ``/_peer/sensors`` (POST) are answered here; every other request is logged, matched against
the fault rules (see :mod:`ironic_fsm.testing.redfish_fake_driver`), and
passed on unless a rule answers for it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from sushy_tools import error

from ironic_fsm.testing._redfish_sensors import SensorTable
from ironic_fsm.testing._redfish_tasks import TASK_LOCK, TASKS, settle_tasks


class PeerControl:
    """Fault injection and state inspection in front of the emulator's WSGI app."""

    def __init__(self, wsgi_app: Any, flask_app: Any, sensors: SensorTable | None = None) -> None:
        self.wsgi_app = wsgi_app
        self.flask_app = flask_app
        self.sensors = sensors
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
        handler = self._routes().get((method, path))
        if handler is None:
            return self._reply(start_response, 404, {"error": f"no peer route {method} {path}"})
        status, payload = handler(environ)
        return self._reply(start_response, status, payload)

    # -- the peer routes: (method, path) -> handler(environ) -> (status, payload) -----------

    def _routes(self) -> dict[tuple[str, str], Callable[[dict[str, Any]], tuple[int, Any]]]:
        return {
            ("GET", "/_peer/faults"): self._get_faults,
            ("POST", "/_peer/faults"): self._set_faults,
            ("DELETE", "/_peer/faults"): self._clear_faults,
            ("GET", "/_peer/requests"): self._get_requests,
            ("DELETE", "/_peer/requests"): self._clear_requests,
            ("GET", "/_peer/state"): lambda environ: (200, self._state()),
            ("POST", "/_peer/quirks"): self._set_quirks,
            ("POST", "/_peer/sensors"): self._set_sensors,
        }

    def _set_sensors(self, environ: dict[str, Any]) -> tuple[int, Any]:
        body = self._body(environ)
        if self.sensors is None or not isinstance(body, dict):
            return 400, {"error": "sensors must be an object"}
        self.sensors.set(body)
        return 200, {"sensors": self.sensors.get()}

    def _get_faults(self, environ: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            return 200, {"faults": [dict(rule) for rule in self.rules]}

    def _set_faults(self, environ: dict[str, Any]) -> tuple[int, Any]:
        body = self._body(environ)
        rules = body.get("faults", body) if isinstance(body, dict) else body
        if isinstance(rules, dict):
            rules = [rules]
        if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
            return 400, {"error": "faults must be a list"}
        with self.lock:
            self.rules = [dict(r, hits=0, seen=0) for r in rules]
            return 200, {"faults": [dict(rule) for rule in self.rules]}

    def _clear_faults(self, environ: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            self.rules = []
        return 200, {"faults": []}

    def _get_requests(self, environ: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            return 200, {"total": self.total, "requests": [dict(e) for e in self.log]}

    def _clear_requests(self, environ: dict[str, Any]) -> tuple[int, Any]:
        with self.lock:
            self.log.clear()
            self.total = 0
        return 200, {"requests": []}

    def _set_quirks(self, environ: dict[str, Any]) -> tuple[int, Any]:
        body = self._body(environ)
        if not isinstance(body, dict) or not isinstance(body.get("quirks"), dict):
            return 400, {"error": "quirks must be an object"}
        with self.flask_app.app_context():
            systems = self.flask_app.systems
            identity = body.get("system") or systems.systems[0]
            try:
                quirks = systems.set_quirks(
                    identity, body["quirks"], replace=bool(body.get("replace"))
                )
            except error.FishyError as exc:
                return 400, {"error": str(exc)}
        return 200, {"quirks": quirks}

    def _state(self) -> dict[str, Any]:
        app = self.flask_app
        with app.app_context():
            settle_tasks(app)
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
            with TASK_LOCK:
                tasks = {k: dict(v) for k, v in TASKS.items()}
        return {"systems": systems, "volumes": volumes, "tasks": tasks}
