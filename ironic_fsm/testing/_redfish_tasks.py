"""The UpdateService of the emulator: SimpleUpdate, its tasks and task monitors (child process).

A SimpleUpdate answers 202 with a task monitor that stays "Running" for
``SUSHY_EMULATOR_FAKE_UPDATE_DELAY`` seconds, then bumps ``BiosVersion``
(or the manager's firmware); an image URI containing ``fail`` ends the
task in ``Exception``. The ``update`` quirk makes it synchronous instead.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import flask
from sushy_tools import error

TASKS: dict[str, dict[str, Any]] = {}
TASK_LOCK = threading.Lock()
_NEXT_TASK = [1000]


def settle_tasks(app: Any) -> None:
    """Finish the update tasks whose time has come (applies the version bump)."""
    now = time.time()
    with TASK_LOCK:
        due = [t for t in TASKS.values() if t["state"] == "Running" and now >= t["ready_at"]]
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


def _task_doc(task_id: str) -> dict[str, Any]:
    """The task's document, or a Redfish 404."""
    with TASK_LOCK:
        task = TASKS.get(task_id)
        doc = _task_json(task) if task else None
    if doc is None:
        raise error.NotFound(f"Task {task_id} not found")
    return doc


def install_update_service(app: Any, quirks_of: Callable[[str | None], dict[str, Any]]) -> None:
    """SimpleUpdate with tasks in place of the stock handler, and the task routes."""

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
        with TASK_LOCK:
            task_id = str(_NEXT_TASK[0])
            _NEXT_TASK[0] += 1
            TASKS[task_id] = {
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
        doc = _task_doc(task_id)
        status = 202 if doc["TaskState"] == "Running" else 200
        return flask.Response(json.dumps(doc), status=status, content_type="application/json")

    @app.route("/redfish/v1/TaskService/Tasks/<task_id>", methods=["GET"])
    def peer_task(task_id: str) -> Any:
        doc = _task_doc(task_id)
        return flask.Response(json.dumps(doc), status=200, content_type="application/json")
