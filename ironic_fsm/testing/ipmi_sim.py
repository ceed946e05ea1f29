"""OpenIPMI's ``ipmi_sim`` as a second IPMI peer: a BMC that nobody here wrote.

The project's own peer (:mod:`ironic_fsm.testing.ipmi_bmc`) is built on
pyghmi, the same library as the driver's client, so it shares pyghmi's
ideas of what IPMI looks like. ``ipmi_sim`` is an independent C
implementation (Debian package ``openipmi``), with quirks of its own that
the driver must survive:

* it never answers Get Channel Cipher Suites (``ipmitool`` needs ``-C 3``;
  pyghmi does not ask, it proposes suite 17 and falls back to 3);
* it refuses a warm BMC reset with completion code 0xC1 (Invalid command),
  and sends no reply at all to a cold reset;
* Get System Boot Options always reports the boot flags as invalid, so a
  boot device cannot be read back (the driver reports "no override");
* it has no "safe" boot device (0xFF, Unspecified error), and a request
  for the disk reaches the chassis as ``default``.

``ipmi_sim`` keeps no power or boot state of its own: it runs a
``chassis_control`` program for that. :func:`start_sim` writes a small
POSIX shell script into the peer's directory which keeps the state in
files there (``power``, ``boot``, and ``actions.log``, one line per
change); :meth:`SimBMC.state` reads them, so tests assert on what the
"hardware" was told to do.

Each peer is one ``ipmi_sim`` child process on 127.0.0.1 with a
kernel-suggested free UDP port, its own LAN config, emulator command file
and state directory, and a unique password (pyghmi caches sessions per
host, user, password and port for the whole process). It is ready when it
answers an RMCP presence ping, and it is stopped by its PID.

If ``ipmi_sim`` is not installed, :func:`start_sim` raises
:class:`SimulatorMissing` naming the Debian package: tests that use it
fail, they never skip.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from ironic_fsm.testing._child import LocalPeer, stop_child
from ironic_fsm.testing._ipmi_sensors import emulator_commands

__all__ = ["DEBIAN_PACKAGE", "SimBMC", "SimulatorMissing", "start_sim"]

#: Where ``ipmi_sim`` comes from on Debian and Ubuntu.
DEBIAN_PACKAGE: Final = "openipmi"

READY_TIMEOUT: Final = 10.0
_START_ATTEMPTS: Final = 3

# RMCP/ASF presence ping (DMTF ASF 2.0, 3.2.4.1): RMCP header (version 6,
# sequence 0xff = no ack, class ASF), IANA 4542, type 0x80, tag, 0, length 0.
_ASF_PING: Final = bytes([6, 0, 0xFF, 6, 0, 0, 0x11, 0xBE, 0x80, 0x5A, 0, 0])
_ASF_PONG_TYPE: Final = 0x40

# The chassis of the simulated machine. ipmi_sim runs it as
# ``chassis.sh 0x20 get power boot`` (print ``power:0|1``, ``boot:<dev>``)
# or ``chassis.sh 0x20 set power 1 [boot pxe ...]``. A reset restarts the
# machine without changing whether it is powered; a soft shutdown turns it
# off at once.
_CHASSIS_SCRIPT: Final = r"""#!/bin/sh
dir=$(dirname "$0")
shift
op=$1
shift
case $op in
get)
  for p in "$@"; do
    case $p in
      power) echo "power:$(cat "$dir/power")" ;;
      boot) echo "boot:$(cat "$dir/boot")" ;;
    esac
  done
  ;;
set)
  while [ $# -ge 2 ]; do
    echo "$1 $2" >> "$dir/actions.log"
    case $1 in
      power) echo "$2" > "$dir/power.tmp" && mv "$dir/power.tmp" "$dir/power" ;;
      shutdown) echo 0 > "$dir/power.tmp" && mv "$dir/power.tmp" "$dir/power" ;;
      boot) echo "$2" > "$dir/boot.tmp" && mv "$dir/boot.tmp" "$dir/boot" ;;
    esac
    shift 2
  done
  ;;
*)
  exit 1
  ;;
esac
"""

_EMULATOR_COMMANDS: Final = """\
mc_setbmc 0x20
mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr
sel_enable 0x20 50 0x0a
"""


class SimulatorMissing(RuntimeError):
    """``ipmi_sim`` is not installed; the message names the Debian package."""


def _lan_config(port: int, user: str, password: str, chassis: Path) -> str:
    auths = "none md2 md5 straight"
    privs = "\n".join(
        f"    allowed_auths_{priv} {auths}" for priv in ("callback", "user", "operator", "admin")
    )
    return f"""\
name "ironic_fsm_sim"
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 {port}
    priv_limit admin
{privs}
    guid {secrets.token_hex(16)}
  endlan
  chassis_control "{chassis} 0x20"
  user 1 false "" "" user 10 {auths}
  user 2 true "{user}" "{password}" admin 10 {auths}
"""


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _answers_ping(port: int, timeout: float) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        sock.sendto(_ASF_PING, ("127.0.0.1", port))
        try:
            data, _ = sock.recvfrom(512)
        except OSError:  # timeout, or ICMP port unreachable reported as ECONNREFUSED
            return False
    return len(data) > 8 and data[8] == _ASF_PONG_TYPE


@attrs.define(eq=False, repr=False)
class SimBMC(LocalPeer):
    """A running ``ipmi_sim``: where it listens, what its chassis holds; stopped by PID."""

    proc: subprocess.Popen[bytes]
    directory: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def log(self) -> Path:
        """``ipmi_sim``'s own output."""
        return self.directory / "ipmi_sim.log"

    def state(self) -> dict[str, Any]:
        """What the chassis was told: ``power`` ('on'/'off'), ``boot_device``, ``actions``.

        ``actions`` lists every change in order, as ``ipmi_sim`` asked for
        it: ``'power 1'``, ``'power 0'``, ``'reset 1'``, ``'shutdown 1'``,
        ``'boot pxe'``, ...
        """
        power = (self.directory / "power").read_text().strip()
        log = self.directory / "actions.log"
        actions = log.read_text().splitlines() if log.exists() else []
        return {
            "power": "on" if power == "1" else "off",
            "boot_device": (self.directory / "boot").read_text().strip(),
            "actions": actions,
        }

    def set_power(self, on: bool) -> None:
        """Change the chassis power behind the BMC's back (as a person at the machine would)."""
        (self.directory / "power").write_text("1\n" if on else "0\n")

    def stop(self) -> None:
        """SIGTERM by PID, then SIGKILL if it has not exited within 5 s."""
        stop_child(self.proc)


def _spawn(directory: Path, binary: str, user: str, password: str) -> SimBMC:
    port = _free_udp_port()
    chassis = directory / "chassis.sh"
    config = directory / "lan.conf"
    config.touch(mode=0o600)
    config.write_text(_lan_config(port, user, password, chassis))
    with (directory / "ipmi_sim.log").open("wb") as log:
        proc = subprocess.Popen(
            [binary, "-c", str(directory / "lan.conf"), "-f", str(directory / "bmc.emu"),
             "-s", str(directory / "state"), "-n"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=directory,
        )  # fmt: skip
    sim = SimBMC(port, user, password, proc=proc, directory=directory)
    deadline = time.monotonic() + READY_TIMEOUT
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"ipmi_sim exited with {proc.returncode} before answering on port {port}: "
                    f"{sim.log.read_text(errors='replace')[-500:]}"
                )
            if _answers_ping(port, 0.1):
                return sim
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"ipmi_sim did not answer on 127.0.0.1:{port} within {READY_TIMEOUT:g} s"
                )
    except BaseException:
        sim.stop()
        raise


def start_sim(
    tmp_path: Path,
    *,
    user: str = "admin",
    password: str | None = None,
    sensors: Iterable[Mapping[str, Any]] = (),
) -> SimBMC:
    """Start one ``ipmi_sim`` on 127.0.0.1 under ``tmp_path``; stop it with ``.stop()``.

    The chassis starts powered off with no boot override. A unique
    password is made up unless one is given (at most 20 bytes). ``sensors``
    go into its SDR repository with their readings (:mod:`._ipmi_sensors`).

    Raises:
        SimulatorMissing: ``ipmi_sim`` is not on ``PATH``.
    """
    binary = shutil.which("ipmi_sim")
    if binary is None:
        raise SimulatorMissing(
            "ipmi_sim (OpenIPMI's BMC simulator) is not installed: "
            f"apt-get install {DEBIAN_PACKAGE} (Debian package {DEBIAN_PACKAGE!r})"
        )
    password = password if password is not None else f"sim-{secrets.token_hex(6)}"
    directory = Path(tmp_path).resolve() / f"ipmi-sim-{secrets.token_hex(3)}"
    (directory / "state").mkdir(parents=True)
    directory.chmod(0o700)  # the LAN config holds the password
    chassis = directory / "chassis.sh"
    chassis.write_text(_CHASSIS_SCRIPT)
    chassis.chmod(0o700)
    (directory / "power").write_text("0\n")
    (directory / "boot").write_text("default\n")
    commands = _EMULATOR_COMMANDS + emulator_commands(sensors) + "mc_enable 0x20\n"
    (directory / "bmc.emu").write_text(commands)
    # The port is only suggested free: another process may take it before
    # ipmi_sim binds it, so try again on a fresh one.
    for attempt in range(_START_ATTEMPTS):
        try:
            return _spawn(directory, binary, user, password)
        except (RuntimeError, TimeoutError):
            if attempt == _START_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")
