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

The parts: :mod:`._redfish_system` (the systems driver and :data:`QUIRKS`),
:mod:`._redfish_shapes` (what quirks refuse and reshape),
:mod:`._redfish_tasks` (the UpdateService) and :mod:`._redfish_control`
(fault injection and state); this module wires them into the Flask app.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Any

import flask
from sushy_tools import error
from sushy_tools.emulator.resources.systems import fakedriver

from ironic_fsm.testing._redfish_control import PeerControl
from ironic_fsm.testing._redfish_sensors import install_sensors
from ironic_fsm.testing._redfish_shapes import install_shapes
from ironic_fsm.testing._redfish_system import QUIRKS, PeerFakeDriver
from ironic_fsm.testing._redfish_tasks import install_update_service

__all__ = ["QUIRKS", "PeerControl", "PeerFakeDriver", "install", "main"]


def _json_response(doc: Any) -> Any:
    return flask.Response(json.dumps(doc), status=200, content_type="application/json")


def install(app: Any) -> PeerControl:
    """Add the peer's routes and hooks to the emulator's ``app`` (before it serves)."""

    def quirks_of(identity: str | None) -> dict[str, Any]:
        try:
            return dict(app.systems.quirks(identity)) if identity else {}
        except error.FishyError:
            return {}

    install_shapes(app, quirks_of)
    install_update_service(app, quirks_of)
    _install_storage(app)
    _install_manager(app, quirks_of)
    sensors = install_sensors(app)
    control = PeerControl(app.wsgi_app, app, sensors)
    app.wsgi_app = control
    return control


def _install_storage(app: Any) -> None:
    """Volume delete (stock has no route), and an empty storage collection, not a 500."""

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

    stock_storage_collection = app.view_functions["storage_collection"]

    def storage_collection(identity: str) -> Any:
        # Stock answers 500 for a system without configured storage; a BMC
        # without storage answers an empty collection.
        system_uuid = app.systems.uuid(identity)
        if system_uuid not in (app.config.get("SUSHY_EMULATOR_STORAGE") or {}):
            return _json_response(
                {
                    "@odata.type": "#StorageCollection.StorageCollection",
                    "@odata.id": f"/redfish/v1/Systems/{identity}/Storage",
                    "Name": "Storage Collection",
                    "Members@odata.count": 0,
                    "Members": [],
                }
            )
        return stock_storage_collection(identity=identity)

    app.view_functions["storage_collection"] = storage_collection


def _install_manager(app: Any, quirks_of: Any) -> None:
    """Manager.Reset, and the host interface of the ``host_interface`` quirk."""

    def host_interface_nic(identity: str) -> str:
        """The path of the system NIC behind this manager's host interface (404 if none)."""
        system_uuid = app.systems.uuid(identity)
        mac = quirks_of(system_uuid).get("host_interface")
        for nic in app.systems.get_nics(system_uuid) if mac else []:
            if nic["mac"] == mac:
                return f"/redfish/v1/Systems/{system_uuid}/EthernetInterfaces/{nic['id']}"
        raise error.NotFound("This manager has no host interface")

    def collection(path: str, name: str, members: list[str]) -> Any:
        return _json_response(
            {
                "@odata.id": path,
                "Name": name,
                "Members@odata.count": len(members),
                "Members": [{"@odata.id": m} for m in members],
            }
        )

    @app.route("/redfish/v1/Managers/<identity>/HostInterfaces", methods=["GET"])
    def peer_host_interfaces(identity: str) -> Any:
        host_interface_nic(identity)
        path = f"/redfish/v1/Managers/{identity}/HostInterfaces"
        return collection(path, "Host Interface Collection", [f"{path}/1"])

    @app.route("/redfish/v1/Managers/<identity>/HostInterfaces/1", methods=["GET"])
    def peer_host_interface(identity: str) -> Any:
        host_interface_nic(identity)
        path = f"/redfish/v1/Managers/{identity}/HostInterfaces/1"
        return _json_response(
            {
                "@odata.type": "#HostInterface.v1_3_0.HostInterface",
                "@odata.id": path,
                "Id": "1",
                "Name": "Host Interface",
                "HostInterfaceType": "NetworkHostInterface",
                "InterfaceEnabled": True,
                "HostEthernetInterfaces": {"@odata.id": f"{path}/HostEthernetInterfaces"},
            }
        )

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
