"""One node's automated clean and direct deploy with the real ironic-python-agent 13.0.0.

The same sandbox as the tests (``tests/agent/ipa_sandbox.py``: network,
mount and PID namespaces, a 64 MiB loop device seeded with random bytes as
the only disk, IPA's real ``erase_devices_metadata`` and ``erase_devices``),
our real API over HTTP on the host's end of the sandbox's link, the conductor
with a thread pool. Needs root. Not in ``run.py``: it builds namespaces and
loop devices, and IPA's venv on first use.

Measured per run: the wall time from ``provide`` to ``available`` (and
from ``deploy`` to ``active``, an 8 MiB image written and checked); the
time to the agent's first heartbeat (boot, lookup, TLS certificate); each
step's time on the agent; the conductor's CPU per heartbeat (the thread that
handles it: checks, record, the agent's last command, the decision), and
the latency from the heartbeat that reports a step's end to the next
command leaving for the agent. Ironic 39.0.0 cleaned the same way in
12.0-14.7 s on this kind of machine (``reference/ipa-peer.md``).

    sudo python benchmarks/bench_agent.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import http.server
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Final

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests" / "agent"))

# The harness is the tests' (tests/agent): the benchmark measures what they prove.
import bcrypt  # noqa: E402
from _harness import Section, SummaryRow, Table, print_summary  # noqa: E402
from _ironic_agent import IronicService, clean_and_deploy, ironic_venv  # noqa: E402
from ipa_sandbox import (  # noqa: E402
    Sandbox,
    SandboxManagement,
    SandboxPower,
    ipa_python,
    loop_device,
)

from ironic_fsm import Conductor, Config, HardwareType  # noqa: E402
from ironic_fsm.agent.client import AgentClient  # noqa: E402
from ironic_fsm.api import start_api  # noqa: E402
from ironic_fsm.drivers.agent import AgentDeploy  # noqa: E402
from ironic_fsm.drivers.generic import PXEBoot  # noqa: E402
from ironic_fsm.events import STEP_END, STEP_START, Event  # noqa: E402
from ironic_fsm.stores import SQLStore  # noqa: E402

MAC = "52:54:00:be:4c:01"
#: Ironic 39.0.0 with the same IPA, loop device and sandbox as reference/ipa-peer.md
#: recorded them (shown beside what :func:`ironic_side` measures in the same run).
IRONIC_SECONDS = (12.0, 14.7)
#: The same for a ``direct`` deploy of an 8 MiB raw image (qcow2: 8.4 s), with a harness
#: that boots an agent whenever the node waits without one; 6.8 s in the first reference run.
IRONIC_DEPLOY_SECONDS = (8.3, 8.9)
IMAGE_MIB = 8


class Probe:
    """Timestamps and thread CPU of the heartbeats, and when each command left."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.beats: list[tuple[float, float]] = []  # (arrived, handler thread CPU seconds)
        self.commands: list[tuple[float, str]] = []  # (sent, command)
        self.events: list[tuple[float, Event]] = []

    def wrap(self, conductor: Conductor, client: AgentClient) -> None:
        heartbeat, execute = conductor.agent_heartbeat, client.execute

        def timed_heartbeat(*args: Any, **kwargs: Any) -> Any:
            arrived, cpu = time.perf_counter(), time.thread_time()
            try:
                return heartbeat(*args, **kwargs)
            finally:
                with self.lock:
                    self.beats.append((arrived, time.thread_time() - cpu))

        def timed_execute(endpoint: Any, command: str, *args: Any, **kwargs: Any) -> Any:
            with self.lock:
                self.commands.append((time.perf_counter(), command))
            return execute(endpoint, command, *args, **kwargs)

        conductor.agent_heartbeat = timed_heartbeat  # type: ignore[method-assign]
        client.execute = timed_execute  # type: ignore[method-assign]

    def listen(self, event: Event) -> None:
        with self.lock:
            self.events.append((time.perf_counter(), event))


def _rig(
    stack: ExitStack, tmp: Path, python: Path, window: float, probe: Probe, *, state: str
) -> tuple[Conductor, str, Sandbox]:
    """One sandboxed machine, our conductor and API for it, and its node in ``state``."""
    disk = stack.enter_context(loop_device(tmp, seed=True))
    sandbox = Sandbox(tmp / "work", disk, MAC)
    stack.callback(sandbox.close)
    executor = stack.enter_context(ThreadPoolExecutor(4))
    store = SQLStore(f"sqlite:///{tmp / 'nodes.sqlite'}")
    stack.callback(store.close)
    power, client = SandboxPower(), AgentClient(60)
    # The sandbox's power shows "off" as soon as the agent's poweroff ended it: read it
    # every 0.5 s after asking (Ironic's default, 5 s, would wait for nothing here).
    config = Config(ramdisk_heartbeat_timeout=30, post_deploy_get_power_state_retry_interval=0.5)
    conductor = Conductor(store, config, listeners=[probe.listen], executor=executor)
    conductor.register_hardware_type(
        "agent-sandbox",
        HardwareType(power=power, management=SandboxManagement(power), boot=PXEBoot(),
                     deploy=AgentDeploy(client, step_poll_window=window)),
    )  # fmt: skip
    probe.wrap(conductor, client)
    users = tmp / "htpasswd"
    users.write_text(f"admin:{bcrypt.hashpw(b'pw', bcrypt.gensalt(rounds=4)).decode()}\n")
    server = start_api(conductor, host=sandbox.host_ip, port=0, auth="http_basic",
                       htpasswd=str(users))  # fmt: skip
    stack.callback(server.stop)
    node = conductor.create_node(
        driver="agent-sandbox", provision_state=state, power_state="power off"
    )
    conductor.create_port(MAC, node.uuid)
    power.attach(node.uuid, sandbox, f"http://{sandbox.host_ip}:{server.port}", python)
    return conductor, node.uuid, sandbox


def _drive(
    conductor: Conductor, uuid: str, sandbox: Sandbox, verb: str, done: str
) -> tuple[float, float, float]:
    """Send ``verb`` and wait for ``done``: (started, ended, process CPU seconds)."""
    started = time.perf_counter()
    cpu_started = time.process_time()
    conductor.do_provisioning_action(uuid, verb)
    while (node := conductor.get_node(uuid)).provision_state not in (done, "clean failed",
                                                                      "deploy failed"):  # fmt: skip
        if time.perf_counter() - started > 300:
            raise RuntimeError(f"no end after 300 s: {sandbox.ipa_log()[-2000:]}")
        time.sleep(0.02)
    if node.provision_state != done:
        raise RuntimeError(f"{verb} failed: {node.last_error}")
    return started, time.perf_counter(), time.process_time() - cpu_started


def one_clean(tmp: Path, python: Path, window: float) -> dict[str, Any]:
    """Clean one node once; the figures of that run."""
    probe = Probe()
    with ExitStack() as stack:
        conductor, uuid, sandbox = _rig(stack, tmp, python, window, probe, state="manageable")
        started, ended, cpu = _drive(conductor, uuid, sandbox, "provide", "available")
    return _figures(probe, started, ended, cpu, watched=window > 0)


def one_deploy(tmp: Path, python: Path, window: float, disk_format: str) -> dict[str, Any]:
    """Deploy an 8 MiB whole-disk image (``disk_format``) to one node once; its figures."""
    probe = Probe()
    with ExitStack() as stack:
        conductor, uuid, sandbox = _rig(stack, tmp, python, window, probe, state="available")
        served = tmp / "images"
        served.mkdir()
        image = _image(served, disk_format)
        handler = functools.partial(_Quiet, directory=str(served))
        images = http.server.ThreadingHTTPServer((sandbox.host_ip, 0), handler)
        threading.Thread(target=images.serve_forever, daemon=True).start()
        stack.callback(images.shutdown)
        conductor.update_node(uuid, instance_info={
            "image_source": f"http://{sandbox.host_ip}:{images.server_port}/{image.name}",
            "image_os_hash_algo": "sha256",
            "image_os_hash_value": hashlib.sha256(image.read_bytes()).hexdigest(),
            "image_disk_format": disk_format,
        })  # fmt: skip
        started, ended, cpu = _drive(conductor, uuid, sandbox, "deploy", "active")
        with open(sandbox.disk, "rb") as disk:
            written = disk.read(IMAGE_MIB << 20)
        if written != (served / "disk.raw").read_bytes():
            raise RuntimeError("the disk does not hold the image")
    return _figures(probe, started, ended, cpu, watched=window > 0)


def parallel_deploys(tmp: Path, python: Path, window: float, count: int) -> float:
    """Deploy ``count`` nodes at once, each its own agent and loop device; the wall time.

    One conductor (a pool of ``2 * count`` threads), one API and one image
    server listening on every sandbox's link; each disk checked afterwards.
    """
    probe = Probe()
    with ExitStack() as stack:
        served = tmp / "images"
        served.mkdir()
        image = _image(served, "raw")
        checksum = hashlib.sha256(image.read_bytes()).hexdigest()
        handler = functools.partial(_Quiet, directory=str(served))
        images = http.server.ThreadingHTTPServer(("0.0.0.0", 0), handler)
        threading.Thread(target=images.serve_forever, daemon=True).start()
        stack.callback(images.shutdown)
        executor = stack.enter_context(ThreadPoolExecutor(2 * count))
        store = SQLStore(f"sqlite:///{tmp / 'nodes.sqlite'}")
        stack.callback(store.close)
        power, client = SandboxPower(), AgentClient(60)
        config = Config(
            ramdisk_heartbeat_timeout=30, post_deploy_get_power_state_retry_interval=0.5
        )
        conductor = Conductor(store, config, listeners=[probe.listen], executor=executor)
        conductor.register_hardware_type(
            "agent-sandbox",
            HardwareType(power=power, management=SandboxManagement(power), boot=PXEBoot(),
                         deploy=AgentDeploy(client, step_poll_window=window)),
        )  # fmt: skip
        users = tmp / "htpasswd"
        users.write_text(f"admin:{bcrypt.hashpw(b'pw', bcrypt.gensalt(rounds=4)).decode()}\n")
        server = start_api(conductor, host="0.0.0.0", port=0, auth="http_basic",
                           htpasswd=str(users))  # fmt: skip
        stack.callback(server.stop)
        machines = []
        for index in range(count):
            disk = stack.enter_context(loop_device(tmp, seed=True))
            mac = f"52:54:00:be:4d:{index:02x}"
            sandbox = Sandbox(tmp / f"work-{index}", disk, mac)
            stack.callback(sandbox.close)
            node = conductor.create_node(driver="agent-sandbox", provision_state="available",
                                         power_state="power off", instance_info={
                "image_source": f"http://{sandbox.host_ip}:{images.server_port}/{image.name}",
                "image_os_hash_algo": "sha256", "image_os_hash_value": checksum,
                "image_disk_format": "raw",
            })  # fmt: skip
            conductor.create_port(mac, node.uuid)
            power.attach(node.uuid, sandbox, f"http://{sandbox.host_ip}:{server.port}", python)
            machines.append((node.uuid, sandbox))
        started = time.perf_counter()
        for uuid, _ in machines:
            conductor.do_provisioning_action(uuid, "deploy")
        waiting = {uuid for uuid, _ in machines}
        while waiting:
            for uuid in list(waiting):
                node = conductor.get_node(uuid)
                if node.provision_state == "deploy failed":
                    raise RuntimeError(f"deploy failed: {node.last_error}")
                if node.provision_state == "active":
                    waiting.discard(uuid)
            if time.perf_counter() - started > 600:
                raise RuntimeError(f"{len(waiting)} nodes not active after 600 s")
            time.sleep(0.05)
        wall = time.perf_counter() - started
        raw = image.read_bytes()
        for _, sandbox in machines:
            with open(sandbox.disk, "rb") as disk:
                if disk.read(len(raw)) != raw:
                    raise RuntimeError(f"{sandbox.disk} does not hold the image")
    return wall


def ironic_side(tmp: Path, python: Path, venv: Path, count: int) -> dict[str, float]:
    """Real Ironic 39.0.0 cleaning and deploying ``count`` nodes at once, each its own agent
    and loop device (seeded with random bytes), the same IPA and image as ours.

    Ironic's service (``_ironic_agent.py``) and an image server listening on
    every sandbox's link; the dummy kernel and ramdisk its PXE boot fetches
    are served there too.
    """
    with ExitStack() as stack:
        served = tmp / "images"
        served.mkdir()
        image = _image(served, "raw")
        for name in ("kernel", "ramdisk"):
            (served / name).write_bytes(b"not booted: the harness starts the agent\n")
        handler = functools.partial(_Quiet, directory=str(served))
        images = http.server.ThreadingHTTPServer(("0.0.0.0", 0), handler)
        threading.Thread(target=images.serve_forever, daemon=True).start()
        stack.callback(images.shutdown)
        service = IronicService(venv, tmp / "ironic")
        stack.callback(service.stop)
        sandboxes = []
        for index in range(count):
            disk = stack.enter_context(loop_device(tmp, seed=True))
            sandbox = Sandbox(tmp / f"work-{index}", disk, f"52:54:00:be:4e:{index:02x}")
            stack.callback(sandbox.close)
            sandboxes.append(sandbox)
        checksum = hashlib.sha256(image.read_bytes()).hexdigest()
        try:
            return clean_and_deploy(service, python, sandboxes, image, images.server_port,
                                    checksum)  # fmt: skip
        except Exception as error:
            raise RuntimeError(
                f"{error}\n--- Ironic's log (end):\n{service.log()[-4000:]}"
                f"\n--- IPA's log (end):\n{sandboxes[0].ipa_log()[-3000:]}"
            ) from error


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return None


def _image(folder: Path, disk_format: str) -> Path:
    """An 8 MiB whole-disk image (an MBR, random bytes), raw; converted when asked."""
    raw = folder / "disk.raw"
    raw.write_bytes(os.urandom(IMAGE_MIB << 20))
    subprocess.run(["parted", "-s", str(raw), "mklabel", "msdos", "mkpart", "primary", "1MiB",
                    "100%"], check=True)  # fmt: skip
    if disk_format == "raw":
        return raw
    converted = folder / f"disk.{disk_format}"
    subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", disk_format, str(raw),
                    str(converted)], check=True)  # fmt: skip
    return converted


#: The commands a heartbeat that reports a step's end sets off (cleaning; deployment).
_AFTER_HEARTBEAT: Final = frozenset({"clean.execute_clean_step", "standby.get_partition_uuids"})


def _figures(
    probe: Probe, started: float, ended: float, process_cpu: float, *, watched: bool
) -> dict[str, Any]:
    steps: dict[str, float] = {}
    opened: dict[str, float] = {}
    for at, event in probe.events:
        name = (event.step or {}).get("step")
        if event.name == STEP_START and name:
            opened[name] = at
        elif event.name == STEP_END and name in opened:
            steps[name] = at - opened[name]
    # Heartbeat to next command: each step command that followed a heartbeat, from it.
    latencies = []
    for sent, command in probe.commands:
        if watched or command not in _AFTER_HEARTBEAT:  # watched: no heartbeat led
            continue
        before = [arrived for arrived, _ in probe.beats if arrived <= sent]
        if before:
            latencies.append(sent - before[-1])
    return {
        "wall": ended - started,
        "first_heartbeat": probe.beats[0][0] - started if probe.beats else float("nan"),
        "steps": steps,
        "heartbeats": len(probe.beats),
        "cpu_per_heartbeat": statistics.mean(cpu for _, cpu in probe.beats),
        "cpu_max_heartbeat": max(cpu for _, cpu in probe.beats),
        "latencies": latencies,
        "process_cpu": process_cpu,
    }


#: The ways a step's end reaches the conductor: Ironic's (the agent's next heartbeat, at
#: least 5 s after its previous one), and the conductor watching the step for up to 5 s.
MODES = {"heartbeats": 0.0, "watched": 5.0}


def run(quick: bool = False, runs: int | None = None) -> Section:
    began = time.perf_counter()
    runs = runs or (1 if quick else 3)
    python, venv = ipa_python(), ironic_venv()
    cleans: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    deploys: dict[str, list[dict[str, Any]]] = {mode: [] for mode in DEPLOY_MODES}
    ironic: dict[int, list[dict[str, float]]] = {1: [], FLEET: []}
    for _ in range(runs):  # the modes and Ironic interleaved, run by run: a busy moment slows all
        for mode, window in MODES.items():
            with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp:
                cleans[mode].append(one_clean(Path(tmp), python, window))
        for mode, (window, disk_format) in DEPLOY_MODES.items():
            with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp:
                deploys[mode].append(one_deploy(Path(tmp), python, window, disk_format))
        with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp:
            ironic[1].append(ironic_side(Path(tmp), python, venv, 1))
    fleet = {(mode, count): [] for mode in ("heartbeats", "watched") for count in (1, FLEET)}
    for (mode, count), walls in fleet.items():
        with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp:
            walls.append(parallel_deploys(Path(tmp), python, MODES[mode], count))
    with tempfile.TemporaryDirectory(prefix="bench-agent-") as tmp:
        ironic[FLEET].append(ironic_side(Path(tmp), python, venv, FLEET))
    section = Section("Ramdisk agent: clean and deploy with the real IPA 13.0.0, ours and "
                      "Ironic 39.0.0's side by side")  # fmt: skip
    section.tables += [
        _clean_table(cleans, runs), _deploy_table(deploys, runs), _ironic_table(ironic),
        _fleet_table(fleet, ironic),
    ]  # fmt: skip
    section.summary += _summary(cleans, deploys, fleet, ironic)
    section.seconds = time.perf_counter() - began
    return section


def _summary(
    cleans: dict[str, list[dict[str, Any]]], deploys: dict[str, list[dict[str, Any]]],
    fleet: dict[tuple[str, int], list[float]], ironic: dict[int, list[dict[str, float]]],
) -> list[SummaryRow]:  # fmt: skip
    best = {mode: min(r["wall"] for r in rs) for mode, rs in cleans.items()}
    best_deploy = {mode: min(r["wall"] for r in rs) for mode, rs in deploys.items()}
    every = [r for rs in (*cleans.values(), *deploys.values()) for r in rs]
    cpu = statistics.mean(r["cpu_per_heartbeat"] for r in every)
    latencies = [x for r in [*cleans["heartbeats"], *deploys["raw, heartbeats"]]
                 for x in r["latencies"]]  # fmt: skip
    median = statistics.median(latencies) * 1000 if latencies else float("nan")
    their_clean = min(r["clean"] for r in ironic[1])
    their_deploy = min(r["deploy"] for r in ironic[1])
    their_fleet = ironic[FLEET][0]["deploy"] / their_deploy
    return [
        SummaryRow(
            "agent clean as Ironic does it (heartbeats), provide→available (best)",
            f"{best['heartbeats']:.2f} s", f"<= Ironic 39 here: {their_clean:.2f} s",
            best["heartbeats"] <= their_clean,
        ),
        SummaryRow(
            "agent clean, steps watched, provide→available (best)",
            f"{best['watched']:.2f} s", f"< Ironic 39 here: {their_clean:.2f} s",
            best["watched"] < their_clean,
        ),
        SummaryRow(
            "direct deploy of an 8 MiB raw image as Ironic does it, deploy→active (best)",
            f"{best_deploy['raw, heartbeats']:.2f} s", f"<= Ironic 39 here: {their_deploy:.2f} s",
            best_deploy["raw, heartbeats"] <= their_deploy,
        ),
        SummaryRow(
            "direct deploy, raw, steps watched, deploy→active (best)",
            f"{best_deploy['raw, watched']:.2f} s", f"< Ironic 39 here: {their_deploy:.2f} s",
            best_deploy["raw, watched"] < their_deploy,
        ),
        SummaryRow(
            "direct deploy, qcow2, steps watched, deploy→active (best)",
            f"{best_deploy['qcow2, watched']:.2f} s", "-", None,
        ),
        *(SummaryRow(
            f"{FLEET} nodes deployed at once, {mode}: wall time against one node's",
            f"{min(fleet[mode, FLEET]) / min(fleet[mode, 1]):.2f}x",
            f"Ironic 39 here: {their_fleet:.2f}x", None,
        ) for mode in ("heartbeats", "watched")),
        SummaryRow("conductor CPU per agent heartbeat", f"{cpu * 1000:.1f} ms", "-", None),
        SummaryRow("heartbeat → next agent command (median)", f"{median:.0f} ms", "-", None),
        SummaryRow(
            "service CPU over one clean, heartbeats (best; ours: the whole process)",
            f"{min(r['process_cpu'] for r in cleans['heartbeats']):.2f} s",
            f"Ironic 39 here: {min(r['clean_cpu'] for r in ironic[1]):.2f} s", None,
        ),
    ]  # fmt: skip


#: The deploys measured: the step window (0: Ironic's way) and the image's format.
DEPLOY_MODES = {
    "raw, heartbeats": (0.0, "raw"),
    "raw, watched": (5.0, "raw"),
    "qcow2, watched": (5.0, "qcow2"),
}


def _clean_table(results: dict[str, list[dict[str, Any]]], runs: int) -> Table:
    table = Table(
        f"Automated clean: {runs} run(s) per mode, 64 MiB loop device seeded with random bytes",
        ["mode", "provide→available", "first heartbeat", "erase_devices_metadata",
         "erase_devices", "heartbeats", "CPU/heartbeat", "heartbeat→command", "process CPU"],
    )  # fmt: skip
    for mode, mode_results in results.items():
        for r in mode_results:
            table.add(
                mode, f"{r['wall']:.2f} s", f"{r['first_heartbeat']:.2f} s",
                _step(r, "erase_devices_metadata"), _step(r, "erase_devices"), r["heartbeats"],
                f"{r['cpu_per_heartbeat'] * 1000:.1f} ms", _latencies(r),
                f"{r['process_cpu']:.2f} s",
            )  # fmt: skip
    table.notes += [
        "heartbeats: a step's end is read at the agent's next heartbeat (Ironic's way); IPA "
        "sends one when a command ends, at least 5 s after its previous one",
        "watched: the conductor reads the agent's command list every 0.2 s for up to 5 s "
        "after starting a step (AgentDeploy's step_poll_window), then leaves it to heartbeats",
        "CPU/heartbeat: thread CPU of the request's handler (checks, record, the agent's last "
        "command over HTTPS, the decision); heartbeat→command: from the heartbeat that "
        "reported a step's end to the next command leaving",
        "Ironic 39.0.0 with the same IPA, sandbox and disks: the table below",
    ]
    return table


def _deploy_table(results: dict[str, list[dict[str, Any]]], runs: int) -> Table:
    table = Table(
        f"Direct deploy: {runs} run(s) per mode, an 8 MiB whole-disk image over HTTP to a "
        "64 MiB loop device, checked byte for byte",
        ["mode", "deploy→active", "first heartbeat", "write_image", "prepare_instance_boot",
         "tear_down_agent", "heartbeats", "CPU/heartbeat", "heartbeat→command"],
    )  # fmt: skip
    for mode, mode_results in results.items():
        for r in mode_results:
            table.add(
                mode, f"{r['wall']:.2f} s", f"{r['first_heartbeat']:.2f} s",
                _step(r, "write_image"), _step(r, "prepare_instance_boot"),
                _step(r, "tear_down_agent"), r["heartbeats"],
                f"{r['cpu_per_heartbeat'] * 1000:.1f} ms", _latencies(r),
            )  # fmt: skip
    table.notes += [
        "deploy→active: from the request to active: machine off, ramdisk booted, the agent's "
        "lookup and first heartbeat, write_image, partition UUIDs, the agent's power off "
        "(read every 0.5 s), power on into the instance",
        "Ironic 39.0.0 with the same IPA, sandbox and image: the table below",
    ]
    return table


#: How many nodes deploy at once in the fleet measurement (the issue's eight).
FLEET = 8


def _fleet_table(
    fleet: dict[tuple[str, int], list[float]], ironic: dict[int, list[dict[str, float]]]
) -> Table:
    table = Table(
        f"{FLEET} nodes, {FLEET} agents, {FLEET} loop devices deployed at once, against one",
        ["side", "nodes", "deploy→all active", "against one node"],
    )
    for (mode, count), walls in fleet.items():
        one = min(fleet[mode, 1])
        table.add(f"ours, {mode}", count, f"{min(walls):.2f} s", f"{min(walls) / one:.2f}x")
    one = min(r["deploy"] for r in ironic[1])
    for count, results in ironic.items():
        wall = min(r["deploy"] for r in results)
        table.add("Ironic 39.0.0", count, f"{wall:.2f} s", f"{wall / one:.2f}x")
    table.notes += [
        "ours: one conductor (a pool of two threads per node), one API and one image server "
        "on every sandbox's link; every disk checked byte for byte afterwards",
        "Ironic: its single-process service, the same sandboxes and image server; its one "
        "node's time is the best of the runs above",
    ]
    return table


def _ironic_table(ironic: dict[int, list[dict[str, float]]]) -> Table:
    table = Table(
        "Real Ironic 39.0.0 (its `ironic` service, SQLite, through its API with openstacksdk) "
        "driving the same IPA build in the same sandbox: a clean, then a direct deploy",
        ["nodes", "provide→available", "Ironic CPU", "deploy→active", "Ironic CPU",
         "agents booted"],
    )  # fmt: skip
    for count, results in ironic.items():
        for r in results:
            table.add(
                count, f"{r['clean']:.2f} s", f"{r['clean_cpu']:.2f} s", f"{r['deploy']:.2f} s",
                f"{r['deploy_cpu']:.2f} s", int(r["boots"]),
            )  # fmt: skip
    table.notes += [
        "manual-management, fake power, noop management, pxe boot, direct deploy, fast track, "
        "BIOS, ramdisk_heartbeat_timeout 30 (reference/ipa-peer.md); fake power starts no "
        "ramdisk: the harness boots an agent when a node waits with none, reading the nodes "
        "through the API every 0.05 s, and ends it when the node is powered off",
        "post_deploy_get_power_state_retries = 0: fake power never reads off after the "
        "agent's own power-off (Ironic would wait 30 s, then power off anyway)",
        "Ironic CPU: user + system of its processes over the request; the same disks are "
        "checked after each (zeroed; byte-identical to the image)",
        f"the reference's figures, measured on 2026-11-28: clean {IRONIC_SECONDS[0]}-"
        f"{IRONIC_SECONDS[1]} s, deploy {IRONIC_DEPLOY_SECONDS[0]}-{IRONIC_DEPLOY_SECONDS[1]} s",
    ]
    return table


def _step(result: dict[str, Any], name: str) -> str:
    return f"{result['steps'].get(name, float('nan')):.2f} s"


def _latencies(result: dict[str, Any]) -> str:
    return ", ".join(f"{x * 1000:.0f} ms" for x in result["latencies"]) or "-"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run")
    parser.add_argument("--runs", type=int, help="runs (default 3, or 1 with --quick)")
    args = parser.parse_args()
    result = run(quick=args.quick, runs=args.runs)
    print(result.render())
    print_summary(result.summary)
