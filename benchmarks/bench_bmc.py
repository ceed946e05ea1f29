"""The BMC drivers against real peers: per-operation latency, failure deadlines, the demo fleet.

Three measurements, all on 127.0.0.1 against real peers in child processes:
two IPMI BMCs (:mod:`ironic_fsm.testing.ipmi_bmc`, the project's pyghmi
server, and :mod:`ironic_fsm.testing.ipmi_sim`, OpenIPMI's ``ipmi_sim``) and
:mod:`ironic_fsm.testing.redfish_emulator` (sushy-tools with the project's
fake driver):

1. **Per operation**: each interface method called directly through a
   :class:`~ironic_fsm.task.Task`, as the conductor calls it: IPMI power
   status, power on / off waiting until the BMC reports it, boot device set,
   a warm BMC reset on the pyghmi BMC (``ipmi_sim`` refuses both kinds
   with 0xC1: the time to that refusal instead); Redfish the same plus a BIOS change
   (``apply_configuration`` of one attribute, which re-reads the BIOS to
   confirm it). The operations of one round are interleaved (status, on,
   off, boot device, ...), so power really changes on every call; the
   peer's own state is checked after each one (untimed). p50, p90, p99 and
   max of 200 calls per operation (20 with ``--quick``; resets 20 and 2)
   after 2 warm-up rounds, and the count of calls over 100 ms. Beside them,
   pyghmi alone (``Command.get_power`` on one open session), which shows the
   library's own 0.5-1 s stalls. Goals: p99 < 50 ms and max < 100 ms for
   the single-request IPMI operations (power status, boot device set), and
   no call over 100 ms for the power changes (a change plus its
   confirmation: 4-5 requests).
2. **Failure deadlines**: how long the driver takes to raise against a dead
   BMC (closed port) and a silent one (IPMI: the peer told to drop every
   packet; Redfish: a TCP listener that accepts and never answers, and the
   emulator told to answer later than the read timeout), set beside the
   deadline the driver is configured with (``ipmi_timeout``;
   ``redfish_read_timeout`` x attempts + the pauses between attempts), and
   beside what pyghmi or sushy do alone with their own defaults. The bounded
   library defaults (pyghmi's ~5 s login timeout, sushy's falsy-zero retries)
   are measured in a child process while the driver's cases run (both only
   wait on sockets); sushy's refused-connection default (27 s) is measured in
   the full run only, and its silent-BMC default (~10 minutes) is quoted from
   ``reference/bmc-peers.md``.
3. **The demo**: :func:`ironic_fsm.demo.run_demo` with its default fleet
   (2 IPMI + 3 Redfish BMCs, started and stopped by the demo), ``live=False``,
   output to a temporary directory: wall time, nodes per second, and whether
   every node ended ``available`` (retired ones: ``manageable``).

Every peer started here is stopped by PID, also on failure.

Run alone: ``python benchmarks/bench_bmc.py [--quick]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _harness import Section, SummaryRow, Table, fmt_ratio

SAMPLES = 200
QUICK_SAMPLES = 20
#: A BMC reset waits until the BMC answers again, so it gets fewer samples.
RESET_SAMPLES = 20
QUICK_RESET_SAMPLES = 2
#: The IPMI latency goal (local BMC, per call): p99 and max.
IPMI_P99_GOAL = 0.050
IPMI_MAX_GOAL = 0.100
#: A call slower than this is counted as a stall.
STALL = 0.100
WARMUP_ROUNDS = 2
#: Samples per failure case: each one waits out a whole deadline.
FAULT_SAMPLES = 30
QUICK_FAULT_SAMPLES = 3
DEMO_RUNS = 3
QUICK_DEMO_RUNS = 1

#: The deadlines configured for the failure cases (short, so that 30 samples stay affordable).
IPMI_TIMEOUT = 1.0
REDFISH_READ_TIMEOUT = 0.5
REDFISH_ATTEMPTS = 2
REDFISH_RETRY_DELAY = 0.05
REDFISH_CONNECT_TIMEOUT = 2.0
#: The emulator's injected delay for the "slow BMC" case: longer than the read timeout.
REDFISH_FAULT_DELAY = 2.0
#: The redfish driver's defaults (drivers/redfish.py), used for the refused-connection case.
REDFISH_DEFAULT_ATTEMPTS = 2
REDFISH_DEFAULT_RETRY_DELAY = 0.5

#: A measured failure time "equals" its deadline within these bounds (median and p90).
DEADLINE_LOW = 0.95
DEADLINE_HIGH = 1.15

#: What the client libraries do alone, from reference/bmc-peers.md (this machine kind).
PEERS_MD = "bmc-peers.md"
PYGHMI_DEAD_DOC = "4.2-5.4 s"
PYGHMI_SILENT_LOGIN_DOC = "4.5-4.8 s"
PYGHMI_SILENT_SESSION_DOC = "27.8-31 s"
SUSHY_REFUSED_DEFAULT_DOC = 27.0
SUSHY_BLACKHOLE_DEFAULT_DOC = "~627 s (60 s read timeout x 10 tries + 9 x 3 s)"

#: How long a single library-default attempt may take before the child gives up on it.
CHILD_ATTEMPT_BOUND = 40.0


# -- small helpers ------------------------------------------------------------------------------


def _p90(values: list[float]) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=10, method="inclusive")[8]


def _p99(values: list[float]) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def _fmt_s(seconds: float) -> str:
    """``0.85 ms``, ``12.3 ms``, ``1.05 s``."""
    if seconds < 0.01:
        return f"{seconds * 1e3:.2f} ms"
    if seconds < 1.0:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def _free_port(kind: int) -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextlib.contextmanager
def _quiet_libraries() -> Iterator[None]:
    """sushy logs a WARNING per retried request and per basic-auth fallback; mute it here."""
    logger = logging.getLogger("sushy")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


class _Seconds:
    """The quantiles of a list of timings, in seconds."""

    seconds: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def p90(self) -> float:
        return _p90(self.seconds)


@dataclass
class Samples(_Seconds):
    """Seconds per call of one operation."""

    driver: str
    operation: str
    call: str
    seconds: list[float] = field(default_factory=list)

    @property
    def p99(self) -> float:
        return _p99(self.seconds)

    @property
    def stalls(self) -> int:
        """Calls slower than STALL (pyghmi's missed wake-ups cost 0.5-1 s)."""
        return sum(1 for s in self.seconds if s > STALL)


@dataclass
class Op:
    """One operation of a round: ``run(i)`` is timed, ``check(i)`` (untimed) verifies it."""

    operation: str
    call: str
    run: Callable[[int], object]
    check: Callable[[int], None]


def _rounds(driver: str, ops: list[Op], samples: int, warmup: int = WARMUP_ROUNDS) -> list[Samples]:
    """Warm-up rounds, then ``samples`` rounds of every op in order, each timed alone."""
    results = [Samples(driver, op.operation, op.call) for op in ops]
    for i in range(warmup + samples):
        for op, result in zip(ops, results, strict=True):
            started = time.perf_counter()
            op.run(i)
            elapsed = time.perf_counter() - started
            op.check(i)
            if i >= warmup:
                result.seconds.append(elapsed)
    return results


def _expect(what: str, got: object, wanted: object) -> None:
    if got != wanted:
        raise AssertionError(f"{what}: the peer reports {got!r}, expected {wanted!r}")


# -- 1. per operation ---------------------------------------------------------------------------


@dataclass
class _IPMIPeer:
    """One running IPMI peer as the benchmark sees it: its name, where, and its state."""

    name: str
    address: str
    port: int
    user: str
    password: str
    power: Callable[[], str]
    boot_device: Callable[[], str]
    boot_names: dict[str, str]
    resets: bool
    stop: Callable[[], None]


def _start_ipmi_peer(kind: str, tmp: Path) -> _IPMIPeer:
    if kind == "pyghmi BMC":
        from ironic_fsm.testing.ipmi_bmc import start_bmc

        bmc = start_bmc(tmp)
        bmc.set_faults({"reset_downtime": 0.2})
        return _IPMIPeer(
            kind, bmc.address, bmc.port, bmc.user, bmc.password,
            power=lambda: str(bmc.state()["power"]),
            boot_device=lambda: str(bmc.state()["boot_device"]),
            boot_names={"pxe": "network", "disk": "hd"},
            resets=True,
            stop=bmc.stop,
        )  # fmt: skip
    from ironic_fsm.testing.ipmi_sim import start_sim

    sim = start_sim(tmp)
    return _IPMIPeer(
        kind, sim.address, sim.port, sim.user, sim.password,
        power=lambda: str(sim.state()["power"]),
        boot_device=lambda: str(sim.state()["boot_device"]),
        # ipmi_sim hands a disk request to its chassis as "default".
        boot_names={"pxe": "pxe", "disk": "default"},
        resets=False,  # refuses warm and cold resets alike (0xC1)
        stop=sim.stop,
    )  # fmt: skip


def _ipmi_ops(kind: str, tmp: Path, samples: int, reset_samples: int) -> list[Samples]:
    """The driver's IPMI operations against one peer, then pyghmi alone against it."""
    from ironic_fsm import Config, Node, states
    from ironic_fsm.drivers.ipmi import ipmi_hardware
    from ironic_fsm.exceptions import BMCRequestFailed
    from ironic_fsm.task import Task

    peer = _start_ipmi_peer(kind, tmp)
    driver = f"ipmi ({kind})"
    try:
        info = {
            "ipmi_address": peer.address,
            "ipmi_port": peer.port,
            "ipmi_username": peer.user,
            "ipmi_password": peer.password,
            "ipmi_timeout": 5,
            "ipmi_reset_wait": 10,
        }
        task = Task(node=Node(driver="ipmi", driver_info=info), driver=ipmi_hardware(),
                    config=Config())  # fmt: skip
        power, management, vendor = task.driver.power, task.driver.management, task.driver.vendor
        devices = ("pxe", "disk")

        def status(i: int) -> None:
            _expect("power status", power.get_power_state(task), states.POWER_OFF)

        ops = [
            Op("power status", "power.get_power_state", status, lambda i: None),
            Op(
                "power on + wait",
                "power.set_power_state(POWER_ON)",
                lambda i: power.set_power_state(task, states.POWER_ON),
                lambda i: _expect("power", peer.power(), "on"),
            ),
            Op(
                "power off + wait",
                "power.set_power_state(POWER_OFF)",
                lambda i: power.set_power_state(task, states.POWER_OFF),
                lambda i: _expect("power", peer.power(), "off"),
            ),
            Op(
                "boot device set",
                "management.set_boot_device(pxe|disk)",
                lambda i: management.set_boot_device(task, devices[i % 2]),
                lambda i: _expect(
                    "boot device", peer.boot_device(), peer.boot_names[devices[i % 2]]
                ),
            ),
        ]
        results = _rounds(driver, ops, samples)
        if peer.resets:
            reset = Op(
                "warm BMC reset + wait",
                "vendor.bmc_reset(warm=True)",
                lambda i: vendor.bmc_reset(task, warm=True),
                lambda i: None,
            )
        else:

            def refused(i: int) -> None:
                try:
                    vendor.bmc_reset(task, warm=False)
                except BMCRequestFailed as error:
                    _expect("completion code", error.code, 0xC1)
                else:
                    raise AssertionError("ipmi_sim accepted a cold reset")

            reset = Op("cold BMC reset (refused)", "vendor.bmc_reset(warm=False)", refused,
                       lambda i: None)  # fmt: skip
        results += _rounds(driver, [reset], reset_samples, warmup=0)
        results.append(_pyghmi_alone(peer, samples))
        return results
    finally:
        peer.stop()


def _pyghmi_alone(peer: _IPMIPeer, samples: int) -> Samples:
    """pyghmi's own ``get_power`` on one long-lived session: the library without the driver."""
    import pyghmi.ipmi.command as pyghmi_command

    result = Samples(f"pyghmi alone ({peer.name})", "power status", "Command.get_power")
    cmd = pyghmi_command.Command(
        bmc=peer.address, userid=peer.user.encode(), password=peer.password.encode(),
        port=peer.port,
    )  # fmt: skip
    try:
        for i in range(WARMUP_ROUNDS + samples):
            started = time.perf_counter()
            reply = cmd.get_power()
            elapsed = time.perf_counter() - started
            _expect("pyghmi power", reply.get("powerstate"), "off")
            if i >= WARMUP_ROUNDS:
                result.seconds.append(elapsed)
    finally:
        cmd.ipmi_session.logout()
    return result


def _redfish_ops(tmp: Path, samples: int) -> list[Samples]:
    from ironic_fsm import Config, Node, states
    from ironic_fsm.drivers.redfish import redfish_hardware
    from ironic_fsm.task import Task
    from ironic_fsm.testing.redfish_emulator import start_emulator

    emulator = start_emulator(tmp)
    try:
        task = Task(node=Node(driver="redfish", driver_info=emulator.driver_info()),
                    driver=redfish_hardware(), config=Config())  # fmt: skip
        power, management, bios = task.driver.power, task.driver.management, task.driver.bios
        devices = (("pxe", "Pxe"), ("disk", "Hdd"))
        turbo = ("Disabled", "Enabled")

        def system() -> dict[str, Any]:
            return emulator.system_state()

        def status(i: int) -> None:
            _expect("power status", power.get_power_state(task), states.POWER_OFF)

        def boot_check(i: int) -> None:
            doc = emulator.get(emulator.system_id)
            _expect("boot target", doc["Boot"]["BootSourceOverrideTarget"], devices[i % 2][1])

        ops = [
            Op("power status", "power.get_power_state", status, lambda i: None),
            Op(
                "power on + wait",
                "power.set_power_state(POWER_ON)",
                lambda i: power.set_power_state(task, states.POWER_ON),
                lambda i: _expect("power", system()["power_state"], "On"),
            ),
            Op(
                "power off + wait",
                "power.set_power_state(POWER_OFF)",
                lambda i: power.set_power_state(task, states.POWER_OFF),
                lambda i: _expect("power", system()["power_state"], "Off"),
            ),
            Op(
                "boot device set",
                "management.set_boot_device(pxe|disk)",
                lambda i: management.set_boot_device(task, devices[i % 2][0]),
                boot_check,
            ),
            Op(
                "BIOS apply (1 attribute)",
                "bios.apply_configuration(ProcTurboMode)",
                lambda i: bios.apply_configuration(
                    task, [{"name": "ProcTurboMode", "value": turbo[i % 2]}]
                ),
                lambda i: _expect("ProcTurboMode", system()["bios"]["ProcTurboMode"], turbo[i % 2]),
            ),
        ]
        return _rounds("redfish", ops, samples)
    finally:
        emulator.stop()


# -- 2. failure deadlines -----------------------------------------------------------------------


class _Blackhole:
    """A TCP listener on 127.0.0.1 that accepts connections and never answers."""

    def __init__(self) -> None:
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self._server.settimeout(0.1)
        self.port: int = self._server.getsockname()[1]
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="blackhole", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(conn)  # read nothing, answer nothing

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._server.close()
        for conn in self._held:
            conn.close()


@dataclass
class Fault(_Seconds):
    """One failure case: the driver's time to raise against its configured deadline."""

    case: str
    setting: str
    deadline: float
    deadline_text: str
    expected_error: str
    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def within(self) -> bool:
        return (
            self.median / self.deadline >= DEADLINE_LOW
            and min(self.seconds) / self.deadline >= DEADLINE_LOW
            and self.p90 / self.deadline <= DEADLINE_HIGH
        )

    @property
    def right_errors(self) -> bool:
        return all(name == self.expected_error for name in self.errors)


def _sample_fault(fault: Fault, call: Callable[[], object], samples: int) -> None:
    for _ in range(samples):
        started = time.perf_counter()
        try:
            call()
        except Exception as exc:
            fault.seconds.append(time.perf_counter() - started)
            fault.errors.append(type(exc).__name__)
        else:
            raise AssertionError(f"{fault.case}: the call succeeded; expected a failure")


def _ipmi_task(port: int, password: str, timeout: float) -> Any:
    from ironic_fsm import Config, Node
    from ironic_fsm.drivers.ipmi import ipmi_hardware
    from ironic_fsm.task import Task

    info = {
        "ipmi_address": "127.0.0.1",
        "ipmi_port": port,
        "ipmi_username": "admin",
        "ipmi_password": password,
        "ipmi_timeout": timeout,
    }
    return Task(node=Node(driver="ipmi", driver_info=info), driver=ipmi_hardware(),
                config=Config())  # fmt: skip


def _redfish_task(address: str, system_id: str, password: str, **timeouts: float) -> Any:
    from ironic_fsm import Config, Node
    from ironic_fsm.drivers.redfish import redfish_hardware
    from ironic_fsm.task import Task

    info: dict[str, Any] = {
        "redfish_address": address,
        "redfish_system_id": system_id,
        "redfish_username": "admin",
        "redfish_password": password,
        "redfish_verify_ca": False,
    }
    info.update(timeouts)
    return Task(node=Node(driver="redfish", driver_info=info), driver=redfish_hardware(),
                config=Config())  # fmt: skip


def _faults(tmp: Path, samples: int, full: bool) -> tuple[list[Fault], dict[str, Any]]:
    """The driver's failure cases, with the library-default child running alongside."""
    from ironic_fsm.testing.ipmi_bmc import start_bmc
    from ironic_fsm.testing.redfish_emulator import start_emulator

    stack = contextlib.ExitStack()
    child: subprocess.Popen[str] | None = None
    with stack:
        silent = start_bmc(tmp)
        stack.callback(silent.stop)
        silent.set_faults({"silent": True})
        emulator = start_emulator(tmp)
        stack.callback(emulator.stop)
        blackhole = _Blackhole()
        stack.callback(blackhole.stop)

        child_args = json.dumps({"silent_port": silent.port, "full": full})
        child = subprocess.Popen(
            [sys.executable, __file__, "--library-defaults", child_args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

        def stop_child() -> None:
            if child is not None and child.poll() is None:
                child.kill()
                child.wait(timeout=10)

        stack.callback(stop_child)

        attempts_text = (
            f"{REDFISH_READ_TIMEOUT:g} s x {REDFISH_ATTEMPTS} + {REDFISH_RETRY_DELAY:g} s pause"
        )
        silent_deadline = REDFISH_READ_TIMEOUT * REDFISH_ATTEMPTS + REDFISH_RETRY_DELAY * (
            REDFISH_ATTEMPTS - 1
        )
        short_redfish = {
            "redfish_read_timeout": REDFISH_READ_TIMEOUT,
            "redfish_connect_timeout": REDFISH_CONNECT_TIMEOUT,
            "redfish_server_side_retries": REDFISH_ATTEMPTS,
            "redfish_server_side_retries_delay": REDFISH_RETRY_DELAY,
        }
        setting_text = (
            f"read_timeout={REDFISH_READ_TIMEOUT:g}, retries={REDFISH_ATTEMPTS}, "
            f"delay={REDFISH_RETRY_DELAY:g}"
        )
        faults: list[Fault] = []

        # IPMI, nothing listening on the UDP port.
        dead = Fault(
            "IPMI dead BMC (closed UDP port)", f"ipmi_timeout={IPMI_TIMEOUT:g}", IPMI_TIMEOUT,
            "ipmi_timeout", "BMCUnreachable",
        )  # fmt: skip
        dead_task = _ipmi_task(_free_port(socket.SOCK_DGRAM), "pw-dead", IPMI_TIMEOUT)
        _sample_fault(dead, lambda: dead_task.driver.power.get_power_state(dead_task), samples)
        faults.append(dead)

        # IPMI, the peer drops every packet.
        quiet = Fault(
            "IPMI silent BMC (peer silent: true)", f"ipmi_timeout={IPMI_TIMEOUT:g}",
            IPMI_TIMEOUT, "ipmi_timeout", "BMCUnreachable",
        )  # fmt: skip
        quiet_task = _ipmi_task(silent.port, silent.password, IPMI_TIMEOUT)
        _sample_fault(quiet, lambda: quiet_task.driver.power.get_power_state(quiet_task), samples)
        faults.append(quiet)

        with _quiet_libraries():
            # Redfish, connection refused, with the driver's default settings.
            refused_deadline = REDFISH_DEFAULT_RETRY_DELAY * (REDFISH_DEFAULT_ATTEMPTS - 1)
            refused = Fault(
                "Redfish dead BMC (closed TCP port: refused)",
                f"driver defaults (retries={REDFISH_DEFAULT_ATTEMPTS}, "
                f"delay={REDFISH_DEFAULT_RETRY_DELAY:g})",
                refused_deadline,
                f"{REDFISH_DEFAULT_RETRY_DELAY:g} s pause x {REDFISH_DEFAULT_ATTEMPTS - 1}",
                "BMCUnreachable",
            )
            refused_task = _redfish_task(
                f"http://127.0.0.1:{_free_port(socket.SOCK_STREAM)}", "/redfish/v1/Systems/1",
                "pw-refused",
            )  # fmt: skip
            _sample_fault(
                refused, lambda: refused_task.driver.power.get_power_state(refused_task), samples
            )
            faults.append(refused)

            # Redfish, a listener that accepts and never answers.
            hole = Fault(
                "Redfish silent BMC (accepts, never answers)", setting_text, silent_deadline,
                attempts_text, "BMCTimeout",
            )  # fmt: skip
            hole_task = _redfish_task(
                f"http://127.0.0.1:{blackhole.port}", "/redfish/v1/Systems/1", "pw-hole",
                **short_redfish,
            )  # fmt: skip
            _sample_fault(hole, lambda: hole_task.driver.power.get_power_state(hole_task), samples)
            faults.append(hole)

            # Redfish, the emulator answers the system later than the read timeout.
            slow = Fault(
                f"Redfish slow BMC (emulator delay {REDFISH_FAULT_DELAY:g} s)", setting_text,
                silent_deadline, attempts_text, "BMCTimeout",
            )  # fmt: skip
            slow_task = _redfish_task(
                emulator.url, emulator.system_id, emulator.password, **short_redfish
            )
            slow_task.driver.power.get_power_state(slow_task)  # connected before the fault
            emulator.set_faults({"path_prefix": emulator.system_id, "delay": REDFISH_FAULT_DELAY})
            _sample_fault(slow, lambda: slow_task.driver.power.get_power_state(slow_task), samples)
            emulator.clear_faults()
            faults.append(slow)

        # The library defaults, measured alongside in the child.
        bound = 60.0 + (70.0 if full else 0.0)
        try:
            stdout, stderr = child.communicate(timeout=bound)
        except subprocess.TimeoutExpired:
            stop_child()
            defaults: dict[str, Any] = {"error": f"did not finish within {bound:g} s"}
        else:
            if child.returncode != 0 or not stdout.strip():
                defaults = {"error": f"exit {child.returncode}: {stderr.strip()[-300:]}"}
            else:
                defaults = json.loads(stdout.strip().splitlines()[-1])
    return faults, defaults


# -- what the libraries do alone (child process) ------------------------------------------------


class _RefusingConnector:
    """sushy's public connector, never used: registries are never fetched from the Internet."""

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise ConnectionRefusedError("no Internet from a benchmark")

    get = request = post = _refuse


def _bounded(call: Callable[[], object]) -> tuple[float | None, str]:
    """Seconds until ``call`` raises (None if it has not after CHILD_ATTEMPT_BOUND), and what."""
    outcome: dict[str, Any] = {}

    def attempt() -> None:
        started = time.perf_counter()
        try:
            call()
            outcome["error"] = "no error"
        except Exception as exc:
            outcome["error"] = f"{type(exc).__name__}({str(exc)[:60]!r})"
        outcome["seconds"] = time.perf_counter() - started

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(CHILD_ATTEMPT_BOUND)
    if "seconds" not in outcome:
        return None, f"still blocked after {CHILD_ATTEMPT_BOUND:g} s"
    return outcome["seconds"], outcome["error"]


def library_defaults(silent_port: int, full: bool) -> dict[str, Any]:
    """pyghmi and sushy alone, with their own defaults, against the same kinds of failure."""
    import pyghmi.ipmi.command as pyghmi_command
    import sushy

    logging.getLogger("sushy").setLevel(logging.CRITICAL)
    samples = 3 if full else 1
    out: dict[str, Any] = {}

    def pyghmi_login(port: int) -> Callable[[], object]:
        # A unique password per attempt: pyghmi caches sessions by credentials.
        password = f"pw-{secrets.token_hex(4)}".encode()
        return lambda: pyghmi_command.Command(
            bmc="127.0.0.1", userid=b"admin", password=password, port=port
        )

    dead_port = _free_port(socket.SOCK_DGRAM)
    out["pyghmi_dead"] = [_bounded(pyghmi_login(dead_port)) for _ in range(samples)]
    out["pyghmi_silent"] = [_bounded(pyghmi_login(silent_port)) for _ in range(samples)]

    refused_url = f"http://127.0.0.1:{_free_port(socket.SOCK_STREAM)}"

    def sushy_root(**kwargs: Any) -> Callable[[], object]:
        return lambda: sushy.Sushy(
            refused_url, username="admin", password="pw", public_connector=_RefusingConnector(),
            **kwargs,
        )  # fmt: skip

    out["sushy_zero_refused"] = [
        _bounded(sushy_root(server_side_retries=0, server_side_retries_delay=0))
    ]
    out["sushy_default_refused"] = [_bounded(sushy_root())] if full else []
    return out


# -- 3. the demo --------------------------------------------------------------------------------


@dataclass
class DemoRun:
    wall: float
    flow: float | None
    nodes: int
    ok: int
    states: list[str]


def _demo() -> DemoRun:
    from ironic_fsm import states
    from ironic_fsm.demo import run_demo

    out = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as tmp:
        started = time.perf_counter()
        nodes = run_demo(ipmi=2, redfish=3, output=Path(tmp), live=False, out=out)
        wall = time.perf_counter() - started
    match = re.search(r"(\d+) nodes in ([\d.]+) s \(whole demo", out.getvalue())
    ok = sum(
        1
        for node in nodes
        if node.provision_state == (states.MANAGEABLE if node.retired else states.AVAILABLE)
        and node.last_error is None
    )
    return DemoRun(
        wall=wall,
        flow=float(match.group(2)) if match else None,
        nodes=len(nodes),
        ok=ok,
        states=[
            f"{node.name}={node.provision_state}{' (retired)' if node.retired else ''}"
            for node in nodes
        ],
    )


# -- report -------------------------------------------------------------------------------------


def _ops_table(results: list[Samples], samples: int) -> Table:
    table = Table(
        f"Driver operations through a Task, {samples} calls each (BMC resets fewer), "
        f"after {WARMUP_ROUNDS} warm-up rounds",
        ["driver (peer)", "operation", "interface call", "calls", "p50", "p90", "p99", "max",
         f"> {STALL * 1e3:.0f} ms"],
    )  # fmt: skip
    for r in results:
        table.add(
            r.driver, r.operation, r.call, len(r.seconds), _fmt_s(r.median), _fmt_s(r.p90),
            _fmt_s(r.p99), _fmt_s(max(r.seconds)), r.stalls,
        )  # fmt: skip
    table.notes += [
        "IPMI peers: the project's pyghmi BMC (ironic_fsm.testing.ipmi_bmc) and OpenIPMI's "
        "ipmi_sim (ironic_fsm.testing.ipmi_sim, whose chassis is a shell script: one fork "
        "per power or boot request)",
        "IPMI: every operation logs in (RMCP+), makes its calls, logs out; a power change "
        "is a chassis control, then power reads until the BMC reports the new state; a BMC "
        "reset waits for the reset's reply, then until the BMC accepts a login again "
        "(the pyghmi BMC is told to stay deaf 0.2 s after a reset)",
        "pyghmi alone: one session kept open, Command.get_power in a loop, pyghmi's own "
        "session loop (which misses replies that arrive before it starts waiting: 0.5-1 s "
        "stalls, see docs/drivers/ipmi.rst)",
        "Redfish: one cached sushy connection per BMC; a power change is a Reset action, "
        "then system GETs until the BMC reports it; a BIOS change is a PATCH of the "
        "settings, then a forced re-read of the Bios resource",
    ]
    return table


def _library_cells(defaults: dict[str, Any], key: str) -> str:
    runs = defaults.get(key) or []
    times = [s for s, _ in runs if s is not None]
    if not runs:
        return ""
    if not times:
        return str(runs[0][1])
    shown = _fmt_s(statistics.median(times))
    return f"{shown} measured" + (f" (median of {len(times)})" if len(times) > 1 else "")


def _faults_table(faults: list[Fault], defaults: dict[str, Any], samples: int, full: bool) -> Table:
    table = Table(
        f"Failures: time until the driver raises vs its configured deadline, {samples} "
        "samples each",
        ["case", "driver setting", "deadline", "median", "p90", "max", "median / deadline",
         "p90 / deadline", "raised", "library alone, its defaults"],
    )  # fmt: skip
    pyghmi_dead = _library_cells(defaults, "pyghmi_dead")
    pyghmi_silent = _library_cells(defaults, "pyghmi_silent")
    sushy_default = _library_cells(defaults, "sushy_default_refused")
    sushy_zero = _library_cells(defaults, "sushy_zero_refused")
    contrast = {
        "IPMI dead": f"pyghmi: {pyghmi_dead or 'not measured'} ({PEERS_MD}: {PYGHMI_DEAD_DOC})",
        "IPMI silent": f"pyghmi login: {pyghmi_silent or 'not measured'} "
        f"({PEERS_MD}: {PYGHMI_SILENT_LOGIN_DOC})",
        "Redfish dead": f"sushy: {sushy_default or 'not measured'} ({PEERS_MD}: "
        f"{SUSHY_REFUSED_DEFAULT_DOC:g} s, 10 tries x 3 s)",
        "Redfish silent": f"sushy: {SUSHY_BLACKHOLE_DEFAULT_DOC} ({PEERS_MD})",
        "Redfish slow": "sushy: answers after the delay (read timeout 60 s); a BMC slower "
        "than 60 s: as silent",
    }
    for fault in faults:
        key = next(k for k in contrast if fault.case.startswith(k))
        errors = sorted(set(fault.errors))
        raised = ", ".join(errors) + (
            "" if fault.right_errors else f" (expected {fault.expected_error})"
        )
        table.add(
            fault.case, fault.setting, f"{fault.deadline:.2f} s ({fault.deadline_text})",
            _fmt_s(fault.median), _fmt_s(fault.p90), _fmt_s(max(fault.seconds)),
            f"{fault.median / fault.deadline:.3f}", f"{fault.p90 / fault.deadline:.3f}",
            raised, contrast[key],
        )  # fmt: skip
    table.notes += [
        "deadline: ipmi_timeout bounds every pyghmi call, login included; Redfish: "
        "redfish_read_timeout x attempts (redfish_server_side_retries) plus the pauses "
        "between attempts; a refused connection fails at once, so only the pauses remain",
        f"sushy with retries=0, delay=0 (both falsy: 3 tries, 2 s pauses) on a refused "
        f"port: {sushy_zero or 'not measured'} ({PEERS_MD}: 4.0 s); the driver maps 0 "
        "to 1 try and 1 ms",
        f"pyghmi alone, BMC silent in the middle of a session: {PYGHMI_SILENT_SESSION_DOC}; "
        f"BMC answering Open Session but never RAKP2: never returns ({PEERS_MD})",
        "with the driver's default ipmi_timeout (10 s), a dead BMC fails at pyghmi's own "
        "~5 s login timeout, which then comes first (BMCUnreachable either way)",
    ]
    if not full:
        table.notes.append(
            "quick run: sushy's 27 s refused-connection default is quoted, not measured"
        )
    if "error" in defaults:
        table.notes.append(f"library-default child failed: {defaults['error']}")
    return table


def _demo_table(runs: list[DemoRun]) -> Table:
    table = Table(
        "Demo fleet: run_demo(ipmi=2, redfish=3, live=False), BMC start-up included",
        ["run", "whole demo", "nodes/s", "lifecycle flow", "nodes/s (flow)", "nodes ok"],
    )
    for i, run in enumerate(runs, 1):
        table.add(
            i, f"{run.wall:.2f} s", f"{run.nodes / run.wall:.2f}",
            "" if run.flow is None else f"{run.flow:.1f} s",
            "" if not run.flow else f"{run.nodes / run.flow:.2f}",
            f"{run.ok}/{run.nodes}",
        )  # fmt: skip
    table.notes += [
        "whole demo: run_demo's wall time (5 BMC processes started and stopped, SQLite "
        "store, diagram); lifecycle flow: the demo's own figure for driving the nodes "
        "in parallel (manage, inspect, provide with cleaning, deploy, retire, undeploy)",
        "nodes ok: ended available, or manageable when retired, with no last_error; last "
        "run: " + ", ".join(runs[-1].states),
    ]
    return table


def run(quick: bool = False) -> Section:
    started = time.perf_counter()
    samples = QUICK_SAMPLES if quick else SAMPLES
    fault_samples = QUICK_FAULT_SAMPLES if quick else FAULT_SAMPLES
    with tempfile.TemporaryDirectory(prefix="bench-bmc-") as tmp_name:
        tmp = Path(tmp_name)
        reset_samples = QUICK_RESET_SAMPLES if quick else RESET_SAMPLES
        with _quiet_libraries():
            ops = (
                _ipmi_ops("pyghmi BMC", tmp, samples, reset_samples)
                + _ipmi_ops("ipmi_sim", tmp, samples, reset_samples)
                + _redfish_ops(tmp, samples)
            )
        demos = [_demo() for _ in range(QUICK_DEMO_RUNS if quick else DEMO_RUNS)]
        faults, defaults = _faults(tmp, fault_samples, full=not quick)

    section = Section(
        "6. BMC drivers",
        [
            _ops_table(ops, samples),
            _faults_table(faults, defaults, fault_samples, full=not quick),
            _demo_table(demos),
        ],
    )
    for r in ops:
        single_call = r.operation in ("power status", "boot device set")
        if r.driver.startswith("ipmi (") and single_call:
            section.summary.append(
                SummaryRow(
                    f"{r.driver} {r.operation}: p99, max ({len(r.seconds)} calls)",
                    f"{_fmt_s(r.p99)}, {_fmt_s(max(r.seconds))}",
                    f"< {IPMI_P99_GOAL * 1e3:.0f} ms, < {IPMI_MAX_GOAL * 1e3:.0f} ms",
                    r.p99 < IPMI_P99_GOAL and max(r.seconds) < IPMI_MAX_GOAL,
                )
            )
        elif r.driver.startswith("ipmi (") and "reset" not in r.operation:
            # A change and its confirmation: 4-5 requests, on ipmi_sim each a fork.
            section.summary.append(
                SummaryRow(
                    f"{r.driver} {r.operation}: calls over {STALL * 1e3:.0f} ms (p99, max)",
                    f"{r.stalls} ({_fmt_s(r.p99)}, {_fmt_s(max(r.seconds))})",
                    "0",
                    r.stalls == 0,
                )
            )
        elif r.driver.startswith("pyghmi alone") or (
            r.driver == "redfish" and r.operation in ("power on + wait", "BIOS apply (1 attribute)")
        ):
            section.summary.append(
                SummaryRow(
                    f"{r.driver} {r.operation}: p50 (p99, max; calls > {STALL * 1e3:.0f} ms)",
                    f"{_fmt_s(r.median)} ({_fmt_s(r.p99)}, {_fmt_s(max(r.seconds))}; {r.stalls})",
                    "-",
                    None,
                )
            )
    for fault in faults:
        section.summary.append(
            SummaryRow(
                f"{fault.case}: error after / deadline {fault.deadline:.2f} s (median, p90)",
                f"{fault.median / fault.deadline:.2f}, {fault.p90 / fault.deadline:.2f}",
                f"{DEADLINE_LOW:g}-{DEADLINE_HIGH:g}x, {fault.expected_error}",
                fault.within and fault.right_errors,
            )
        )
    pyghmi_dead = [s for s, _ in defaults.get("pyghmi_dead") or [] if s is not None]
    if pyghmi_dead:
        section.summary.append(
            SummaryRow(
                "IPMI dead BMC: pyghmi's own login timeout / the driver's",
                fmt_ratio(statistics.median(pyghmi_dead) / faults[0].median),
                "-",
                None,
            )
        )
    walls = [d.wall for d in demos]
    section.summary += [
        SummaryRow(
            "demo fleet (2 IPMI + 3 Redfish): nodes/s, whole demo (median)",
            f"{demos[0].nodes / statistics.median(walls):.2f}",
            "-",
            None,
        ),
        SummaryRow(
            "demo fleet: nodes ending available (retired: manageable)",
            f"{sum(d.ok for d in demos)}/{sum(d.nodes for d in demos)}",
            "all",
            all(d.ok == d.nodes for d in demos),
        ),
    ]
    section.seconds = time.perf_counter() - started
    return section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--library-defaults", metavar="JSON", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.library_defaults:
        options = json.loads(args.library_defaults)
        result = library_defaults(int(options["silent_port"]), bool(options["full"]))
        print(json.dumps(result), flush=True)
        os._exit(0)  # pyghmi's IO thread and any attempt still blocked: do not wait for them
    print(run(args.quick).render())


if __name__ == "__main__":
    main()
