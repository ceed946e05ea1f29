"""Runs the real IPA inside the sandbox; started by ``ipa_sandbox.Sandbox`` with IPA's Python.

It runs as PID 1 of a fresh PID namespace, in a private mount namespace and
in the sandbox's network namespace (``ip netns exec NS unshare --mount --pid
--fork --mount-proc --kill-child=SIGKILL``), as root. Before IPA is imported:

1. the mounts: ``/run`` and ``/dev/shm`` fresh tmpfs, the work folder bound writable, every
   block device but the allowed loop device (and its partitions) covered by
   ``/dev/null``, ``/proc/sysrq-trigger`` too, and then every other mount
   read-only (``/``, ``/sys``, ``/proc/sys``, ``/dev``...); writable mounts
   are ``nodev``, so a device node made there opens nothing;
2. the check: no block device other than the allowed one is visible under
   ``/dev``, and ``/``, ``/sys`` and ``/proc/sys`` refuse writes. A failed
   check prints ``SANDBOX REFUSED: ...`` and exits 3, and IPA never starts;
3. the command guard around ``subprocess.Popen`` and ``open``: only the
   commands IPA's disk work needs, and no device path but the allowed ones;
4. IPA itself, with only the sandbox's hardware manager loaded.

The shims (``poweroff``, ``reboot``, ``hwclock``, ``udevadm``) are first on
PATH; the first two send SIGTERM to PID 1 (this process), which ends the
agent, and with it the namespace: that is what a power-off looks like to
the conductor.

Usage: ``launcher.py WORK`` (``WORK/sandbox.json`` holds the settings).
"""

from __future__ import annotations

import builtins
import io
import json
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

#: Device paths anyone may open: they touch no disk.
_HARMLESS = {"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full", "/dev/tty"}
#: Commands IPA's lookup, heartbeat, cleaning and image writing run here.
_ALLOWED_COMMANDS = {
    "lsblk", "blkid", "wipefs", "sgdisk", "parted", "partprobe", "dd", "qemu-img", "blockdev",
    "shred", "hdparm", "sync", "udevadm", "hwclock", "poweroff", "reboot", "findmnt", "sfdisk",
    "fuser", "ip", "hexdump", "test",
}  # fmt: skip
_DEVICE_ARG = re.compile(r"/dev/[\w./:-]+")


def _settings(work: Path) -> dict[str, Any]:
    return json.loads((work / "sandbox.json").read_text())


def _allowed_device(path: str, disk: str) -> bool:
    real = os.path.realpath(path)
    partition = re.fullmatch(re.escape(disk) + r"p\d+", real)
    return real in _HARMLESS or real == disk or partition is not None


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True)


# -- 1. the mounts ------------------------------------------------------------------------


def _mounts() -> list[str]:
    targets = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            targets.append(line.split()[4].replace("\\040", " "))
    return targets


def _hide_block_devices(disk: str, leave_visible: list[str]) -> None:
    for root, dirs, files in os.walk("/dev"):
        for name in dirs + files:
            path = os.path.join(root, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if not stat.S_ISBLK(mode) or _allowed_device(path, disk) or path in leave_visible:
                continue
            _run("mount", "--bind", "/dev/null", path)


def build_mounts(settings: dict[str, Any]) -> None:
    work, disk = settings["work"], settings["disk"]
    _run("mount", "--make-rprivate", "/")
    _run("mount", "-t", "tmpfs", "-o", "nodev,nosuid,mode=755", "tmpfs", "/run")
    # Python's multiprocessing (IPA's erase_devices) needs its semaphores' /dev/shm.
    _run("mount", "-t", "tmpfs", "-o", "nodev,nosuid,noexec,mode=1777", "tmpfs", "/dev/shm")
    _run("mount", "--bind", work, work)
    _run("mount", "-o", "remount,bind,nodev,nosuid", work)
    _hide_block_devices(disk, settings.get("leave_visible", []))
    if os.path.exists("/proc/sysrq-trigger"):
        _run("mount", "--bind", "/dev/null", "/proc/sysrq-trigger")
    _run("mount", "--bind", "/proc/sys", "/proc/sys")
    writable = {work, "/run", "/proc", "/dev/shm"}
    for target in _mounts():
        if target in writable:
            continue
        # A mount may be covered by a later one; remounting what cannot be reached fails.
        subprocess.run(["mount", "-o", "remount,bind,ro", target], check=False,
                       stderr=subprocess.DEVNULL)  # fmt: skip


# -- 2. the check ---------------------------------------------------------------------------


def isolation_problems(disk: str) -> list[str]:
    """What makes this sandbox unsafe for IPA: visible block devices, writable system paths."""
    problems = []
    for root, dirs, files in os.walk("/dev"):
        for name in dirs + files:
            path = os.path.join(root, name)
            try:
                mode = os.stat(path).st_mode  # through symlinks (/dev/disk/by-id/...)
            except OSError:
                continue
            if stat.S_ISBLK(mode) and not _allowed_device(path, disk):
                problems.append(f"block device {path} is visible")
    if not os.path.exists(disk) or not stat.S_ISBLK(os.stat(disk).st_mode):
        problems.append(f"the allowed device {disk} is not a block device here")
    for directory in ("/", "/etc", "/sys", "/proc/sys", "/dev"):
        probe = os.path.join(directory, ".ifsm-sandbox-probe")
        try:
            fd = os.open(probe, os.O_CREAT | os.O_WRONLY, 0o600)
        except OSError:
            continue  # refused: as it should be
        os.close(fd)
        os.unlink(probe)
        problems.append(f"{directory} is writable")
    return sorted(set(problems))


# -- 3. the command guard ---------------------------------------------------------------------


class Refused(PermissionError):
    pass


def _limited(words: list[str]) -> str:
    """The command run, also under IPA's own ``python -m oslo_concurrency.prlimit ... --``
    (how it runs ``qemu-img convert`` with a memory limit)."""
    if words[0] == sys.executable and words[1:3] == ["-m", "oslo_concurrency.prlimit"]:
        return words[words.index("--") + 1] if "--" in words[:-1] else words[0]
    return words[0]


def install_guard(disk: str, log: Path) -> None:
    def refuse(what: str) -> None:
        with log.open("a") as out:
            out.write(what + "\n")
        raise Refused(f"ironic_fsm sandbox: refused {what}")

    popen_init = subprocess.Popen.__init__

    def guarded_popen(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
        argv = [args] if isinstance(args, (str, bytes)) else list(args)
        words = [a.decode() if isinstance(a, bytes) else str(a) for a in argv]
        if kwargs.get("shell") or not words:
            refuse(f"shell command {words!r}")
        command = os.path.basename(_limited(words))
        if command not in _ALLOWED_COMMANDS:
            refuse(f"command {words!r}")
        for word in words[1:]:
            for device in _DEVICE_ARG.findall(word):
                if not _allowed_device(device, disk):
                    refuse(f"command {words!r} on {device}")
        popen_init(self, args, *rest, **kwargs)

    subprocess.Popen.__init__ = guarded_popen  # type: ignore[method-assign]

    def check_path(path: Any, writing: bool) -> None:
        if isinstance(path, int):
            return
        text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else ""
        real = os.path.realpath(text) if text else ""
        if real.startswith("/dev/") and not _allowed_device(real, disk):
            refuse(f"open {text}")
        if writing and (real.startswith("/proc/sys") or real == "/proc/sysrq-trigger"):
            refuse(f"write to {text}")

    real_open = builtins.open

    def guarded_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        check_path(file, any(c in mode for c in "wax+"))
        return real_open(file, mode, *args, **kwargs)

    real_os_open = os.open

    def guarded_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        check_path(path, bool(flags & (os.O_WRONLY | os.O_RDWR)))
        return real_os_open(path, flags, *args, **kwargs)

    builtins.open = guarded_open
    io.open = guarded_open
    os.open = guarded_os_open


# -- 4. IPA -----------------------------------------------------------------------------------


def _end(signum: int, frame: Any) -> None:
    os._exit(0)


def _stand_in_for_udev() -> None:
    """Answer the file system and partition UUIDs udev would have recorded.

    IPA reads a partition's UUIDs with ``lsblk``, which takes them from
    udev's database; the sandbox (and this machine) runs no udev, so they
    would read empty (a partition image's root UUID among them). Where
    ``lsblk`` has none, ``blkid -p`` probes the (allowed) device for them.
    """
    from ironic_python_agent import disk_utils

    lsblk_read = disk_utils.get_device_information
    tags = {"UUID": "UUID", "PARTUUID": "PART_ENTRY_UUID"}

    def with_probe(device: str, fields: Any = None) -> dict[str, str]:
        info: dict[str, str] = lsblk_read(device, fields=fields)
        for field, tag in tags.items():
            if (fields is None or field in fields) and not info.get(field):
                probed = subprocess.run(["blkid", "-p", "-s", tag, "-o", "value", device],
                                        capture_output=True, text=True)  # fmt: skip
                if probed.stdout.strip():
                    info[field] = probed.stdout.strip()
        return info

    disk_utils.get_device_information = with_probe


def run_agent(settings: dict[str, Any]) -> None:
    import stevedore

    # config first: importing it registers the options hardware's modules read at import.
    from ironic_python_agent import config, hardware, utils  # noqa: F401
    from ironic_python_agent.cmd import agent

    def only_ours() -> stevedore.NamedExtensionManager:
        return stevedore.NamedExtensionManager(
            namespace="ironic_python_agent.hardware_managers",
            names=["ifsm_sandbox"],
            invoke_on_load=True,
            name_order=True,
        )

    hardware._get_extensions = only_ours
    loaded = [type(m).__name__ for m in hardware.get_managers()]
    if loaded != ["SandboxHardwareManager"]:
        print(f"SANDBOX REFUSED: hardware managers {loaded}", file=sys.stderr, flush=True)
        os._exit(3)
    # No configuration from virtual media: that means probing the machine's devices.
    utils.copy_config_from_vmedia = lambda: None
    # A rescue's password hash goes to the work folder: /etc is the machine's (read-only here).
    from ironic_python_agent.extensions import rescue

    rescue.PASSWORD_FILE = str(Path(settings["work"]) / "ipa-rescue-password")
    _stand_in_for_udev()
    sys.argv = ["ironic-python-agent", "--config-file", str(Path(settings["work"]) / "ipa.conf")]
    agent.run()


def main() -> None:
    work = Path(sys.argv[1])
    settings = _settings(work)
    signal.signal(signal.SIGTERM, _end)
    build_mounts(settings)
    problems = isolation_problems(settings["disk"])
    if problems:
        print("SANDBOX REFUSED: " + "; ".join(problems), file=sys.stderr, flush=True)
        os._exit(3)
    print("SANDBOX CHECKED: only " + settings["disk"] + " is visible", file=sys.stderr, flush=True)
    install_guard(settings["disk"], work / "guard.log")
    run_agent(settings)


if __name__ == "__main__":
    main()
