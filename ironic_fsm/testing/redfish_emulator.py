"""Start the project's Redfish emulator as a child process, for tests.

``start_emulator(tmp_path)`` writes a sushy-tools config file, an htpasswd
file (bcrypt cost 4: cost 12 costs ~320 ms per request) and a private
state directory under ``tmp_path``, starts
:mod:`redfish_fake_driver` with them on 127.0.0.1 (port picked by the
kernel), waits until the Redfish root answers (bounded, ~15 s), and returns
an :class:`Emulator`: its ``url``, ``system_id`` and credentials, helpers
to read the emulator's own state (``state()``, ``system_state()``,
``get(path)``, ``requests_log()``), to inject faults (``set_faults``,
``clear_faults``), to give the system shapes real BMCs have
(``set_quirks``, or ``quirks=`` at start), and ``stop()`` (SIGTERM, then
SIGKILL, by PID).

One emulator per process: the sushy-tools Flask app is a per-process
singleton, and each emulator gets its own state directory so that nothing
leaks between emulators or test runs. The child's output goes to
``<dir>/emulator.log`` (it logs every request).

:class:`FileServer` serves files from a directory on 127.0.0.1, for
virtual media: the emulator downloads the image it is asked to insert.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import secrets
import subprocess
import sys
import threading
import time
import uuid as uuid_mod
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import bcrypt
import requests

from ironic_fsm.testing._child import stop_child
from ironic_fsm.testing._redfish_sensors import SENSORS_KEY

__all__ = ["DEFAULT_DRIVES", "Emulator", "FileServer", "start_emulator"]

_CHILD = Path(__file__).with_name("redfish_fake_driver.py")
#: Where the child finds ironic_fsm (its parts are modules of this package).
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
READY_TIMEOUT = 15.0
STORAGE_ID = "RAID"

#: Four 100 GiB drives and one 200 GiB drive behind one RAID controller.
DEFAULT_DRIVES: tuple[dict[str, Any], ...] = (
    {"Id": "disk0", "Name": "Drive 0", "CapacityBytes": 100 * 1024**3, "Protocol": "SAS"},
    {"Id": "disk1", "Name": "Drive 1", "CapacityBytes": 100 * 1024**3, "Protocol": "SAS"},
    {"Id": "disk2", "Name": "Drive 2", "CapacityBytes": 100 * 1024**3, "Protocol": "SAS"},
    {"Id": "disk3", "Name": "Drive 3", "CapacityBytes": 100 * 1024**3, "Protocol": "SAS"},
    {"Id": "disk4", "Name": "Drive 4", "CapacityBytes": 200 * 1024**3, "Protocol": "SATA"},
)


class Emulator:
    """One running emulator process and what tests need to talk to it."""

    def __init__(
        self,
        *,
        url: str,
        system_uuid: str,
        name: str,
        user: str,
        password: str,
        process: subprocess.Popen[bytes],
        directory: Path,
        macs: list[str],
    ) -> None:
        self.url = url
        self.system_uuid = system_uuid
        self.system_id = f"/redfish/v1/Systems/{system_uuid}"
        self.name = name
        self.user = user
        self.password = password
        self.process = process
        self.pid = process.pid
        self.directory = directory
        self.log_path = directory / "emulator.log"
        self.macs = macs
        self._http = requests.Session()
        self._http.auth = (user, password)

    def __repr__(self) -> str:
        return f"<Emulator {self.url} pid={self.pid}>"

    # -- what the driver is given ------------------------------------------------------

    def driver_info(self, **overrides: Any) -> dict[str, Any]:
        """``driver_info`` for a node on this emulator, with test-friendly timeouts."""
        info: dict[str, Any] = {
            "redfish_address": self.url,
            "redfish_system_id": self.system_id,
            "redfish_username": self.user,
            "redfish_password": self.password,
            "redfish_verify_ca": False,
            "redfish_connect_timeout": 2,
            "redfish_read_timeout": 5,
            "redfish_server_side_retries": 1,
            "redfish_server_side_retries_delay": 0.01,
        }
        info.update(overrides)
        return {k: v for k, v in info.items() if v is not None}

    # -- the emulator's own view -----------------------------------------------------

    def _peer(self, method: str, path: str, json: Any = None) -> Any:
        response = requests.request(method, self.url + path, json=json, timeout=10)
        response.raise_for_status()
        return response.json()

    def state(self) -> dict[str, Any]:
        """Everything the emulator holds: systems, volumes, update tasks."""
        return dict(self._peer("GET", "/_peer/state"))

    def system_state(self) -> dict[str, Any]:
        """The fake driver's record of this emulator's system (power, boot, BIOS, ...)."""
        return dict(self.state()["systems"][self.system_uuid])

    def volumes(self) -> list[dict[str, Any]]:
        """The volumes of this system's RAID controller, as the emulator stores them."""
        return list(self.state()["volumes"].get(f"{self.system_uuid}/{STORAGE_ID}") or [])

    def get(self, path: str) -> dict[str, Any]:
        """An authenticated Redfish GET (e.g. ``emu.get(emu.system_id + '/BIOS')``)."""
        response = self._http.get(self.url + path, timeout=10)
        response.raise_for_status()
        return dict(response.json())

    def set_quirks(self, **quirks: Any) -> dict[str, Any]:
        """Change this system's quirks (``None`` removes one); returns them all.

        The quirks (``redfish_fake_driver.QUIRKS``) make the emulator serve
        shapes real BMCs have: BIOS settings rejected after the PATCH, a
        virtual CD without actions, a synchronous firmware update, disabled
        NICs, a narrower boot target list, and so on.
        """
        reply = self._peer("POST", "/_peer/quirks", {"system": self.system_uuid, "quirks": quirks})
        return dict(reply["quirks"])

    def set_sensors(self, sensors: Mapping[str, Any]) -> None:
        """Serve these readings from now on (the format of ``start_emulator(sensors=...)``)."""
        self._peer("POST", "/_peer/sensors", json=dict(sensors))

    def clear_quirks(self) -> None:
        """Back to the stock shapes: no quirk at all."""
        self._peer(
            "POST", "/_peer/quirks", {"system": self.system_uuid, "quirks": {}, "replace": True}
        )

    def set_faults(self, *rules: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Replace the fault rules (see :mod:`redfish_fake_driver`); returns them."""
        return list(
            self._peer("POST", "/_peer/faults", {"faults": [dict(r) for r in rules]})["faults"]
        )

    def faults(self) -> list[dict[str, Any]]:
        """The fault rules with their ``hits`` counters."""
        return list(self._peer("GET", "/_peer/faults")["faults"])

    def clear_faults(self) -> None:
        self._peer("DELETE", "/_peer/faults")

    def requests_log(self) -> list[dict[str, Any]]:
        """The last requests the emulator saw (method, path, status), oldest first."""
        return list(self._peer("GET", "/_peer/requests")["requests"])

    def clear_requests_log(self) -> None:
        self._peer("DELETE", "/_peer/requests")

    # -- lifecycle ------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; by PID, never by name."""
        stop_child(self.process, timeout)
        self._http.close()


def _htpasswd(user: str, password: str) -> str:
    digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    return f"{user}:{digest}\n"


def _mac(seed: int) -> str:
    raw = seed.to_bytes(3, "big")
    return "52:54:00:" + ":".join(f"{b:02x}" for b in raw)


def start_emulator(
    tmp_path: Path,
    *,
    user: str = "admin",
    password: str | None = None,
    power_delay: float = 0.0,
    update_delay: float = 0.3,
    bios_apply: str = "immediate",
    memory_gb: int | None = 32,
    cpus: int | None = 8,
    nics: int = 2,
    drives: Iterable[Mapping[str, Any]] | None = DEFAULT_DRIVES,
    power_state: str = "Off",
    extra_systems: int = 0,
    extra_config: Mapping[str, Any] | None = None,
    quirks: Mapping[str, Any] | None = None,
    sensors: Mapping[str, Any] | None = None,
) -> Emulator:
    """Start one emulator under ``tmp_path`` and wait until it answers.

    Args:
        tmp_path: Where the emulator's directory (config, htpasswd, state,
            log) is created; a fresh subdirectory per call.
        user, password: The only credentials the emulator accepts; a random
            password when none is given.
        power_delay: Seconds before a power change shows (0: at once).
        update_delay: Seconds a firmware update task stays "Running".
        bios_apply: ``'immediate'``, or ``'reboot'`` for pending BIOS changes
            that apply at the next power-on.
        memory_gb, cpus: Inventory; ``None`` leaves it out.
        nics: Number of NICs (MACs in ``Emulator.macs``).
        drives: Drives of the RAID controller; ``None`` for no storage at all.
        power_state: Initial power state, ``'On'`` or ``'Off'``.
        extra_systems: More systems on the same BMC (makes the system id
            mandatory for clients).
        extra_config: More ``SUSHY_EMULATOR_*`` settings.
        quirks: The system's quirks from the start (see :meth:`Emulator.set_quirks`).
        sensors: Temperatures, fans and power supplies the chassis reports in its
            ``Thermal`` and ``Power`` (:mod:`._redfish_sensors`); ``None``: the stock ones.

    Raises:
        RuntimeError: the emulator did not answer within ~15 s (its log is
            quoted).
    """
    password = password if password is not None else secrets.token_urlsafe(12)
    directory = Path(tmp_path).resolve() / f"redfish-{uuid_mod.uuid4().hex[:8]}"
    (directory / "state").mkdir(parents=True)
    (directory / "tmp").mkdir()
    systems = _systems(nics, memory_gb, cpus, power_state, quirks, extra_systems)
    system = systems[0]
    config: dict[str, Any] = {
        "SUSHY_EMULATOR_LISTEN_IP": "127.0.0.1",
        "SUSHY_EMULATOR_LISTEN_PORT": 0,
        "SUSHY_EMULATOR_FAKE_DRIVER": True,
        "SUSHY_EMULATOR_STATE_DIR": str(directory / "state"),
        "SUSHY_EMULATOR_AUTH_FILE": str(directory / "htpasswd"),
        "SUSHY_EMULATOR_FAKE_SYSTEMS": systems,
        "SUSHY_EMULATOR_FAKE_POWER_DELAY": power_delay,
        "SUSHY_EMULATOR_FAKE_UPDATE_DELAY": update_delay,
        "SUSHY_EMULATOR_FAKE_BIOS_APPLY": bios_apply,
        "EXTERNAL_NOTIFICATION_URL": "http://127.0.0.1:9",
        **_storage(system["uuid"], drives),
        **({SENSORS_KEY: dict(sensors)} if sensors is not None else {}),
        **(extra_config or {}),
    }
    config_path = directory / "emulator.conf"
    config_path.write_text(
        "# Written by ironic_fsm.testing.redfish_emulator\n"
        + "".join(f"{key} = {value!r}\n" for key, value in config.items()),
        encoding="utf-8",
    )
    (directory / "htpasswd").write_text(_htpasswd(user, password), encoding="utf-8")
    process = _spawn(directory, config_path)
    emulator = Emulator(
        url="",  # known once the child has bound its port
        system_uuid=system["uuid"],
        name=system["name"],
        user=user,
        password=password,
        process=process,
        directory=directory,
        macs=[nic["mac"] for nic in system["nics"]],
    )
    try:
        _wait_ready(emulator, directory / "port")
    except BaseException:
        emulator.stop()
        raise
    return emulator


def _systems(
    nics: int,
    memory_gb: int | None,
    cpus: int | None,
    power_state: str,
    quirks: Mapping[str, Any] | None,
    extra_systems: int,
) -> list[dict[str, Any]]:
    """The emulated systems: the one tests drive first, then ``extra_systems`` plain ones."""
    system_uuid = str(uuid_mod.uuid4())
    name = f"node-{system_uuid[:8]}"
    seed = int(system_uuid[:6], 16)
    macs = [_mac((seed + i) % (1 << 24)) for i in range(nics)]
    system: dict[str, Any] = {
        "uuid": system_uuid,
        "name": name,
        "power_state": power_state,
        "external_notifier": False,
        "nics": [{"mac": mac, "ip": f"192.0.2.{10 + i}"} for i, mac in enumerate(macs)],
    }
    optional = {"memory_gb": memory_gb, "cpus": cpus, "quirks": dict(quirks or {}) or None}
    system.update({key: value for key, value in optional.items() if value is not None})
    others = [
        {
            "uuid": str(uuid_mod.uuid4()),
            "name": f"{name}-{n}",
            "power_state": "Off",
            "external_notifier": False,
            "nics": [{"mac": _mac(seed + 100 + n)}],
        }
        for n in range(extra_systems)
    ]
    return [system, *others]


def _storage(system_uuid: str, drives: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    """The settings of one RAID controller with ``drives`` (none at all for ``None``)."""
    if drives is None:
        return {}
    drive_list = [dict(d) for d in drives]
    return {
        "SUSHY_EMULATOR_STORAGE": {
            system_uuid: [
                {
                    "Id": STORAGE_ID,
                    "Name": "RAID Controller",
                    "StorageControllers": [
                        {"MemberId": "0", "Name": "Contoso Integrated RAID", "SpeedGbps": 12}
                    ],
                    "Drives": [d["Id"] for d in drive_list],
                }
            ]
        },
        "SUSHY_EMULATOR_DRIVES": {(system_uuid, STORAGE_ID): drive_list},
        "SUSHY_EMULATOR_VOLUMES": {(system_uuid, STORAGE_ID): []},
    }


def _spawn(directory: Path, config_path: Path) -> subprocess.Popen[bytes]:
    """The child, logging to ``<directory>/emulator.log``; it imports ironic_fsm from here."""
    env = dict(os.environ, TMPDIR=str(directory / "tmp"), PYTHONUNBUFFERED="1")
    env.pop("SUSHY_EMULATOR_CONFIG", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [_PACKAGE_ROOT, env.get("PYTHONPATH")]))
    with open(directory / "emulator.log", "wb") as log:  # the child has its own descriptor
        return subprocess.Popen(
            [sys.executable, str(_CHILD), "--config", str(config_path),
             "--port-file", str(directory / "port")],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=directory,
        )  # fmt: skip


def _wait_ready(emulator: Emulator, port_file: Path) -> None:
    """Until the child has written its port and its Redfish root answers (bounded)."""
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if not emulator.alive():
            raise RuntimeError(
                f"Redfish emulator exited with {emulator.process.returncode}:\n"
                + emulator.log_path.read_text(errors="replace")[-3000:]
            )
        if not emulator.url and port_file.exists():
            emulator.url = f"http://127.0.0.1:{int(port_file.read_text())}"
        with contextlib.suppress(requests.RequestException):
            if emulator.url and requests.get(emulator.url + "/redfish/v1/", timeout=1).ok:
                return
        time.sleep(0.02)
    raise RuntimeError(
        f"Redfish emulator did not answer within {READY_TIMEOUT:.0f} s:\n"
        + emulator.log_path.read_text(errors="replace")[-3000:]
    )


class FileServer:
    """Serves ``directory`` over HTTP on 127.0.0.1 from a thread (for virtual media images)."""

    def __init__(self, directory: Path) -> None:
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.requests: list[str] = []
        self._server.requests_seen = self.requests  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        self.server.requests_seen.append(self.path)  # type: ignore[attr-defined]
