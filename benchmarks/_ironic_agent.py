"""Real Ironic 39.0.0 driving the real IPA 13.0.0 in the tests' sandbox: ``bench_agent.py``'s rival.

Ironic runs as its single-process service (``ironic``: API and conductor,
``rpc_transport = none``) from a venv of its own (``ironic==39.0.0`` with
the pins of ``shared/bench/ironic_baseline/requirements-lock.txt``, made
once per cache by ``tests/venvs.py``), on SQLite, without auth, set up as
``reference/ipa-peer.md`` records it was run against this IPA:
``manual-management`` with ``fake`` power, ``noop`` management, ``pxe``
boot (dummy kernel and ramdisk served over HTTP), ``direct`` deploy,
``noop`` network, BIOS boot mode, ``[deploy]fast_track``, no DHCP,
``[api]ramdisk_heartbeat_timeout = 30``. One option more:
``[agent]post_deploy_get_power_state_retries = 0``, since ``fake`` power
never reads "off" after the agent's own power-off (Ironic would wait 6 x 5 s
for it, then power off anyway); ours reads the sandbox's power every 0.5 s.

Fake power starts no ramdisk, so :class:`Harness` plays the machine, as the
reference's harness did: it reads the nodes through Ironic's API
(openstacksdk) and boots a fresh agent in a node's sandbox whenever the
node waits for one (``clean wait``, ``wait call-back``) with none running,
and ends the agent when the node is powered off.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from venvs import cached_venv  # noqa: E402

IRONIC_VERSION = "39.0.0"
_LOCK = Path(os.environ.get("IRONIC_BASELINE_DIR", "/work/shared/bench/ironic_baseline"))
#: The states in which Ironic waits for an agent to heartbeat.
WAITING = frozenset({"clean wait", "wait call-back"})

_CONF = """[DEFAULT]
host = bench-agent
my_ip = 127.0.0.1
auth_strategy = noauth
rpc_transport = none
use_stderr = false
log_file = {work}/ironic.log
enabled_hardware_types = manual-management
enabled_power_interfaces = fake
enabled_management_interfaces = noop
enabled_boot_interfaces = pxe
enabled_deploy_interfaces = direct
enabled_network_interfaces = noop
enabled_inspect_interfaces = no-inspect
enabled_vendor_interfaces = no-vendor
enabled_raid_interfaces = no-raid
enabled_bios_interfaces = no-bios
enabled_console_interfaces = no-console
enabled_rescue_interfaces = no-rescue
enabled_firmware_interfaces = no-firmware
enabled_storage_interfaces = noop
[api]
host_ip = 0.0.0.0
port = {port}
ramdisk_heartbeat_timeout = 30
[conductor]
automated_clean = true
[deploy]
fast_track = true
default_boot_mode = bios
http_root = {work}/http
http_url = http://127.0.0.1:1/
[dhcp]
dhcp_provider = none
[service_catalog]
endpoint_override = http://127.0.0.1:{port}
[agent]
certificates_path = {work}/certificates
post_deploy_get_power_state_retries = 0
[pxe]
tftp_root = {work}/tftp
tftp_master_path = {work}/tftp/master
images_path = {work}/images
instance_master_path = {work}/images/master
[database]
connection = sqlite:///{work}/ironic.sqlite
"""


def ironic_venv() -> Path:
    """Ironic 39.0.0's venv (its pinned dependencies), made once per cache."""
    pins = ["-r", str(_LOCK / "requirements-lock.txt")]
    if not (_LOCK / "requirements-lock.txt").exists():
        pins = [f"ironic=={IRONIC_VERSION}"]
    return cached_venv("ironic", pins, version=IRONIC_VERSION)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        return int(sock.getsockname()[1])


class IronicService:
    """``ironic`` (API and conductor in one process) in ``work``, until :meth:`stop`."""

    def __init__(self, venv: Path, work: Path) -> None:
        self.work = work
        self.port = _free_port()
        for folder in ("http", "certificates", "tftp/master", "images/master"):
            (work / folder).mkdir(parents=True, exist_ok=True)
        conf = work / "ironic.conf"
        conf.write_text(_CONF.format(work=work, port=self.port))
        bindir = venv / "bin"
        subprocess.run([str(bindir / "ironic-dbsync"), "--config-file", str(conf),
                        "create_schema"], check=True, capture_output=True)  # fmt: skip
        with (work / "ironic.err").open("wb") as errors:
            self.proc = subprocess.Popen(
                [str(bindir / "ironic"), "--config-file", str(conf)],
                stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True,
            )  # fmt: skip
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"Ironic did not start: {self.log()[-3000:]}") from None
                time.sleep(0.2)

    def cpu_seconds(self) -> float:
        """User + system CPU so far of the service's processes (its launcher forks the
        service into a child): every process of its group, from ``/proc``."""
        ticks = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:  # gone meanwhile
                continue
            if int(fields[2]) == self.proc.pid:
                ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def log(self) -> str:
        texts = [(self.work / name) for name in ("ironic.log", "ironic.err")]
        return "\n".join(p.read_text(errors="replace") for p in texts if p.exists())

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait(timeout=30)


class Harness:
    """The machines behind Ironic's fake power: each node's sandbox, booted when it waits.

    A thread reads every node through the API every ``interval`` seconds:
    a node waiting for an agent with none running gets a fresh one (the
    ramdisk Ironic's reboot would have booted); a node powered off loses
    its agent. ``seen`` keeps, per node, when each provision state was
    first read.
    """

    def __init__(self, connection: Any, machines: dict[str, tuple[Any, str]], python: Path,
                 interval: float = 0.05) -> None:  # fmt: skip
        self.connection = connection
        self.machines = machines  # node uuid -> (Sandbox, the API's URL on its link)
        self.python = python
        self.interval = interval
        self.boots: dict[str, int] = dict.fromkeys(machines, 0)
        #: node uuid -> (when the listing that read it began, the node read).
        self.nodes: dict[str, tuple[float, Any]] = {}
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                began = time.perf_counter()
                for node in self.connection.baremetal.nodes(details=True):
                    self.nodes[node.id] = (began, node)
                    self._play(node)
                self._stop.wait(self.interval)
        except BaseException as error:  # reported by wait_for
            self.error = error

    def _play(self, node: Any) -> None:
        if node.id not in self.machines:
            return
        sandbox, api_url = self.machines[node.id]
        if node.power_state == "power off" and sandbox.running():
            sandbox.stop()
        elif (
            node.provision_state in WAITING
            and not sandbox.running()
            and (node.driver_internal_info or {}).get("agent_url") is None
        ):
            self.boots[node.id] += 1
            sandbox.start(api_url, self.python)

    def wait_for(self, uuids: list[str], done: str, since: float, timeout: float = 600) -> float:
        """When every node in ``uuids`` was first read ``done`` by a listing begun after
        ``since`` (``perf_counter``); a failed state raises at once."""
        deadline = time.monotonic() + timeout
        while True:
            if self.error is not None:
                raise RuntimeError(f"the harness failed: {self.error!r}")
            read = [self.nodes.get(uuid) for uuid in uuids]
            fresh = [(at, node) for at, node in filter(None, read) if at >= since]
            failed = [node for _, node in fresh if node.provision_state.endswith("failed")]
            if failed:
                raise RuntimeError(f"{failed[0].provision_state}: {failed[0].last_error}")
            if len(fresh) == len(uuids) and all(n.provision_state == done for _, n in fresh):
                return max(at for at, _ in fresh)
            if time.monotonic() > deadline:
                states = [node.provision_state for _, node in fresh]
                raise RuntimeError(f"not {done} after {timeout} s: {states}")
            time.sleep(self.interval / 2)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def _node_fields(images_url: str, index: int) -> dict[str, Any]:
    return {
        "driver": "manual-management",
        "boot_interface": "pxe", "deploy_interface": "direct", "power_interface": "fake",
        "management_interface": "noop", "network_interface": "noop",
        "driver_info": {"deploy_kernel": f"{images_url}/kernel",
                        "deploy_ramdisk": f"{images_url}/ramdisk"},
        "properties": {"capabilities": "boot_mode:bios"},
        "name": f"ipa-{index}",
    }  # fmt: skip


def clean_and_deploy(
    service: IronicService, python: Path, sandboxes: list[Any], image: Path, images_port: int,
    checksum: str,
) -> dict[str, float]:  # fmt: skip
    """Each sandbox's node through Ironic: created, managed, cleaned (``provide``), powered
    off, deployed with ``image`` (served on every sandbox's link at ``images_port``); the
    disks checked after each. The figures: wall times from the requests to the last node's
    end, and Ironic's CPU over each."""
    import openstack

    connection = openstack.connection.Connection(
        auth_type="none", baremetal_endpoint_override=service.url
    )
    baremetal = connection.baremetal
    machines: dict[str, tuple[Any, str]] = {}
    sources: dict[str, str] = {}
    for index, sandbox in enumerate(sandboxes):
        images_url = f"http://{sandbox.host_ip}:{images_port}"
        node = baremetal.create_node(**_node_fields(images_url, index))
        baremetal.create_port(node_id=node.id, address=sandbox.mac)
        baremetal.set_node_provision_state(node.id, "manage", wait=True, timeout=120)
        machines[node.id] = (sandbox, f"http://{sandbox.host_ip}:{service.port}")
        sources[node.id] = f"{images_url}/{image.name}"
    uuids = list(machines)
    harness = Harness(connection, machines, python)
    try:
        figures: dict[str, float] = {}
        cpu, started = service.cpu_seconds(), time.perf_counter()
        for uuid in uuids:
            baremetal.set_node_provision_state(uuid, "provide")
        figures["clean"] = harness.wait_for(uuids, "available", started) - started
        figures["clean_cpu"] = service.cpu_seconds() - cpu
        for sandbox in sandboxes:
            with open(sandbox.disk, "rb") as disk:
                if disk.read().strip(b"\0"):
                    raise RuntimeError(f"Ironic's clean left data on {sandbox.disk}")
        for uuid in uuids:  # the agents fast track kept up end: the deploy boots afresh
            baremetal.set_node_power_state(uuid, "power off")
            baremetal.update_node(uuid, instance_info={
                "image_source": sources[uuid], "image_os_hash_algo": "sha256",
                "image_os_hash_value": checksum, "image_disk_format": "raw",
            })  # fmt: skip
        for sandbox, _ in machines.values():
            deadline = time.monotonic() + 60
            while sandbox.running() and time.monotonic() < deadline:
                time.sleep(0.05)
        cpu, started = service.cpu_seconds(), time.perf_counter()
        for uuid in uuids:
            baremetal.set_node_provision_state(uuid, "active")
        figures["deploy"] = harness.wait_for(uuids, "active", started) - started
        figures["deploy_cpu"] = service.cpu_seconds() - cpu
        figures["boots"] = sum(harness.boots.values())
        raw = image.read_bytes()
        for sandbox in sandboxes:
            with open(sandbox.disk, "rb") as disk:
                if disk.read(len(raw)) != raw:
                    raise RuntimeError(f"Ironic's deploy did not write the image to {sandbox.disk}")
        return figures
    finally:
        harness.stop()
        connection.close()
