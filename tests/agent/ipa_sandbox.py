"""The real ironic-python-agent as a test peer, in a sandbox that cannot reach the machine's disks.

Why this lives in tests/ and not in ``ironic_fsm.testing``: it needs root,
creates network namespaces and loop devices and installs IPA from PyPI into
a venv of its own; an application embedding ironic_fsm tests against its own
agents or hardware, and nothing here is a library API. The layers
(``docs/agent.rst``, "The tests' sandbox"), each required:

* a network namespace per agent whose only link is a veth pair to the
  host (a /30 of 169.254.0.0/16, no route beyond it): the agent reaches the
  API on the host's end of the link, and the conductor the agent's API on
  the other;
* a private mount and PID namespace (``unshare``), in which
  ``sandbox/launcher.py`` covers every block device but the allowed loop
  device with ``/dev/null``, makes everything read-only but the work folder
  and a tmpfs ``/run``, checks that this holds, and refuses to start IPA
  otherwise (exit 3, ``SANDBOX REFUSED: ...``);
* only the project's hardware manager (``sandbox/ifsm_sandbox_hwm.py``),
  registered through IPA's entry point group in IPA's venv;
* a command guard around ``subprocess`` and ``open``, and the shims
  (``poweroff``/``reboot`` end the agent; ``hwclock``/``udevadm`` do nothing).

IPA's venv is made once per cache (``$IRONIC_FSM_IPA_CACHE``, default
``~/.cache/ironic_fsm-tests``) from PyPI's ``ironic-python-agent==13.0.0``:
its dependencies are not ours, and it never shares our venv.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from venvs import cached_venv

from ironic_fsm import states
from ironic_fsm.interfaces import BootInterface, ManagementInterface, PowerInterface
from ironic_fsm.task import Task

IPA_VERSION = "13.0.0"
SANDBOX_DIR = Path(__file__).parent / "sandbox"
AGENT_PORT = 9999
#: The entry point name of the sandbox's hardware manager in IPA's group.
MANAGER_ENTRY_POINT = "ifsm_sandbox = ifsm_sandbox_hwm:SandboxHardwareManager"


def _cache_dir() -> Path:
    default = Path.home() / ".cache" / "ironic_fsm-tests"
    return Path(os.environ.get("IRONIC_FSM_IPA_CACHE", default))


def ipa_python() -> Path:
    """IPA's interpreter: a venv with ``ironic-python-agent==13.0.0`` and our hardware manager.

    Made on first use (from PyPI, through pip's cache), kept between runs;
    several test processes at once wait for one to make it.
    """
    venv = cached_venv(
        "ipa", [f"ironic-python-agent=={IPA_VERSION}"], version=IPA_VERSION, cache=_cache_dir(),
        on_use=_register_manager,
    )  # fmt: skip
    return venv / "bin" / "python"


def _register_manager(venv: Path) -> None:
    """Our hardware manager in IPA's entry point group, from this checkout's sandbox folder."""
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "ifsm_sandbox.pth").write_text(f"{SANDBOX_DIR}\n")
    dist = site / "ifsm_sandbox-1.0.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ifsm-sandbox\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[ironic_python_agent.hardware_managers]\n{MANAGER_ENTRY_POINT}\n"
    )


@contextmanager
def loop_device(directory: Path, size_mib: int = 64, *, seed: bool = False) -> Iterator[str]:
    """A loop device over a new file of ``size_mib`` MiB (random bytes when ``seed``)."""
    image = directory / f"disk-{secrets.token_hex(3)}.img"
    with image.open("wb") as out:
        if seed:
            for _ in range(size_mib):
                out.write(os.urandom(1024 * 1024))
        else:
            out.truncate(size_mib * 1024 * 1024)
    device = subprocess.run(
        ["losetup", "-f", "--show", "-P", str(image)], check=True, capture_output=True, text=True
    ).stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "-d", device], check=False)
        image.unlink(missing_ok=True)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class Sandbox:
    """One agent's sandbox: its network (made at once), and IPA started in it on request.

    ``host_ip`` is the host's end of the link (where the API listens for this
    agent), ``agent_ip`` the agent's (where its API listens, port 9999).
    """

    def __init__(self, work: Path, disk: str, mac: str, *, leave_visible: tuple[str, ...] = ()):
        self.work = work
        self.disk = disk
        self.mac = mac
        self.leave_visible = list(leave_visible)
        #: More NICs the agent reports (no address, no link): inspection makes ports of them.
        self.extra_macs: list[str] = []
        #: More of IPA's ``[DEFAULT]`` options (name -> value), written at each start.
        self.ipa_options: dict[str, str] = {}
        self.work.mkdir(parents=True, exist_ok=True)
        tag = secrets.token_hex(3)
        self.netns = f"ifsm-{tag}"
        self._veth = f"ifh{tag}"
        octet, quad = 1 + secrets.randbelow(254), secrets.randbelow(64) * 4
        self.host_ip = f"169.254.{octet}.{quad + 1}"
        self.agent_ip = f"169.254.{octet}.{quad + 2}"
        self.proc: subprocess.Popen[bytes] | None = None
        _ip("netns", "add", self.netns)
        try:
            _ip("netns", "exec", self.netns, "ip", "link", "set", "lo", "up")
            _ip("link", "add", self._veth, "type", "veth", "peer", "name", "eth0",
                "netns", self.netns)  # fmt: skip
            _ip("addr", "add", f"{self.host_ip}/30", "dev", self._veth)
            _ip("link", "set", self._veth, "up")
            _ip("netns", "exec", self.netns, "ip", "addr", "add", f"{self.agent_ip}/30",
                "dev", "eth0")  # fmt: skip
            _ip("netns", "exec", self.netns, "ip", "link", "set", "eth0", "up")
        except BaseException:
            self.close()
            raise

    @property
    def agent_url(self) -> str:
        """Where the agent's own API listens (``http``; ``https`` once it made its certificate)."""
        return f"{self.agent_ip}:{AGENT_PORT}"

    # -- IPA --------------------------------------------------------------------------------

    def start(
        self, api_url: str, python: Path, *, heartbeat_log: bool = True,
        kernel_params: Mapping[str, str] | None = None,
    ) -> None:  # fmt: skip
        """Start the launcher (and so IPA) in the sandbox, pointed at ``api_url``.

        ``kernel_params``: what the boot interface put on the ramdisk's command line;
        ``ipa-inspection-callback-url`` has IPA post its inventory there first.
        """
        callback = (kernel_params or {}).get("ipa-inspection-callback-url")
        inspection = (
            f"inspection_callback_url = {callback}\ninspection_collectors = default\n"
            if callback
            else ""
        )
        work = self.work
        (work / "tmp").mkdir(exist_ok=True)
        settings = {"work": str(work), "disk": self.disk, "leave_visible": self.leave_visible}
        (work / "sandbox.json").write_text(json.dumps(settings))
        (work / "ipa.conf").write_text(
            "[DEFAULT]\n"
            f"api_url = {api_url}\n"
            f"listen_host = {self.agent_ip}\nlisten_port = {AGENT_PORT}\n"
            f"advertise_host = {self.agent_ip}\nadvertise_port = {AGENT_PORT}\n"
            "lookup_timeout = 600\nlookup_interval = 1\n"
            "collect_lldp = false\ndisk_wait_attempts = 1\n"
            # One download: a wrong checksum fails at once (IPA's default retries 9 x 10 s).
            "image_download_connection_retries = 0\n"
            "image_download_connection_retry_interval = 1\n"
            f"debug = {str(heartbeat_log).lower()}\nlog_file = {work / 'ipa.log'}\n"
            f"{inspection}"
            + "".join(f"{name} = {value}\n" for name, value in self.ipa_options.items())
        )
        shims = work / "shims"
        shims.mkdir(exist_ok=True)
        # poweroff/reboot end the agent (SIGTERM to PID 1, the launcher); the clock and udev
        # are the machine's: left alone.
        ending = f'#!/bin/sh\necho "$(basename "$0") $*" >> {work}/power.log\nkill -TERM 1\n'
        nothing = "#!/bin/sh\nexit 0\n"
        scripts = {"poweroff": ending, "reboot": ending, "hwclock": nothing, "udevadm": nothing}
        for name, text in scripts.items():
            (shims / name).write_text(text)
            (shims / name).chmod(0o755)
        env = {
            "PATH": f"{shims}:{python.parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
            ":/sbin:/bin",
            "HOME": str(work), "TMPDIR": str(work / "tmp"), "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "IFSM_SANDBOX_DISK": self.disk, "IFSM_SANDBOX_MAC": self.mac,
            "IFSM_SANDBOX_IP": self.agent_ip,
            "IFSM_SANDBOX_EXTRA_MACS": ",".join(self.extra_macs),
        }  # fmt: skip
        with (work / "launcher.log").open("ab") as log:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", self.netns,
                 "unshare", "--mount", "--pid", "--fork", "--mount-proc", "--kill-child=SIGKILL",
                 str(python), str(SANDBOX_DIR / "launcher.py"), str(work)],
                stdout=log, stderr=log, env=env, start_new_session=True,
            )  # fmt: skip

    def launcher_log(self) -> str:
        path = self.work / "launcher.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def ipa_log(self) -> str:
        path = self.work / "ipa.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def wait_checked(self, timeout: float = 120) -> str:
        """``checked`` once the launcher passed its isolation check, ``refused`` if it failed."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.launcher_log()
            if "SANDBOX CHECKED" in text:
                return "checked"
            if "SANDBOX REFUSED" in text:
                return "refused"
            if self.proc is not None and self.proc.poll() is not None:
                return f"exited {self.proc.returncode}: {text[-2000:]}"
            time.sleep(0.1)
        raise AssertionError(f"no word from the sandbox within {timeout} s: {self.launcher_log()}")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ended(self, timeout: float = 60) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        """End the agent: SIGKILL (``unshare`` ignores SIGTERM; --kill-child takes PID 1 along)."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)

    def close(self) -> None:
        self.stop()
        subprocess.run(["ip", "link", "del", self._veth], check=False, capture_output=True)
        subprocess.run(["ip", "netns", "del", self.netns], check=False, capture_output=True)

    def describe(self) -> dict[str, Any]:
        return {"netns": self.netns, "disk": self.disk, "host_ip": self.host_ip}


class SandboxPower(PowerInterface):
    """The "BMC" of sandboxed machines: power on boots the ramdisk (starts IPA), off ends it.

    That is what a real BMC does to a ramdisk: a reboot or power-off ends the
    agent, and the next boot starts a fresh one that looks the node up again.
    ``attach`` names each node's sandbox and the API its agent should call.
    A machine whose boot device was set to ``disk`` (:class:`SandboxManagement`)
    boots its instance instead: it is on, and no agent runs.
    """

    def __init__(self) -> None:
        super().__init__()
        self._machines: dict[str, tuple[Sandbox, str, Path]] = {}
        #: Each node's ramdisk command line, as :class:`SandboxBoot` prepared it.
        self.kernel_params: dict[str, dict[str, str]] = {}
        self.boots: dict[str, int] = {}
        self.boot_device: dict[str, str] = {}
        self.instance_boots: dict[str, int] = {}
        self._instance_on: set[str] = set()

    def attach(self, node_uuid: str, sandbox: Sandbox, api_url: str, python: Path) -> None:
        self._machines[node_uuid] = (sandbox, api_url, python)

    def _machine(self, task: Task) -> tuple[Sandbox, str, Path]:
        return self._machines[task.node.uuid]

    def get_power_state(self, task: Task) -> str:
        sandbox, _, _ = self._machine(task)
        on = sandbox.running() or task.node.uuid in self._instance_on
        return states.POWER_ON if on else states.POWER_OFF

    def set_power_state(self, task: Task, power_state: str, timeout: float | None = None) -> None:
        sandbox, api_url, python = self._machine(task)
        uuid = task.node.uuid
        if power_state != states.POWER_ON:
            sandbox.stop()
            self._instance_on.discard(uuid)
        elif self.boot_device.get(uuid) == "disk":
            if uuid not in self._instance_on:
                self.instance_boots[uuid] = self.instance_boots.get(uuid, 0) + 1
                self._instance_on.add(uuid)
        elif not sandbox.running():
            self.boots[uuid] = self.boots.get(uuid, 0) + 1
            sandbox.start(api_url, python, kernel_params=self.kernel_params.get(uuid))

    def reboot(self, task: Task, timeout: float | None = None) -> None:
        self.set_power_state(task, states.POWER_OFF)
        self.set_power_state(task, states.POWER_ON)


class SandboxManagement(ManagementInterface):
    """The sandboxed machines' boot device, as :class:`SandboxPower` reads it at power on."""

    def __init__(self, power: SandboxPower) -> None:
        super().__init__()
        self._power = power

    def get_supported_boot_devices(self, task: Task) -> list[str]:
        return ["pxe", "disk"]

    def get_boot_device(self, task: Task) -> dict[str, Any]:
        return {"boot_device": self._power.boot_device.get(task.node.uuid), "persistent": True}

    def set_boot_device(self, task: Task, device: str, persistent: bool = False) -> None:
        self._power.boot_device[task.node.uuid] = device


class SandboxBoot(BootInterface):
    """The sandboxed machines' ramdisk command line, as :class:`SandboxPower` reads it at
    power on (what PXE or virtual media would hand a real ramdisk)."""

    def __init__(self, power: SandboxPower) -> None:
        super().__init__()
        self._power = power

    def prepare_ramdisk(self, task: Task, ramdisk_params: Mapping[str, Any]) -> None:
        self._power.kernel_params[task.node.uuid] = {
            str(key): str(value) for key, value in ramdisk_params.items()
        }

    def clean_up_ramdisk(self, task: Task) -> None:
        self._power.kernel_params.pop(task.node.uuid, None)
