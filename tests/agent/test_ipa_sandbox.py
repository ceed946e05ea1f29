"""The sandbox the real IPA runs in hides every block device but its own loop device.

The launcher checks that before IPA is imported and refuses to start it
otherwise; both outcomes are proved here, on real namespaces and mounts.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from ipa_sandbox import Sandbox

MAC = "52:54:00:aa:00:01"


def test_the_check_passes_when_only_the_loop_device_is_visible(
    make_sandbox: Callable[..., Sandbox], ipa: Path
) -> None:
    sandbox = make_sandbox(MAC)
    # No API is listening: IPA starts, then retries its lookup; that is all it does here.
    sandbox.start(f"http://{sandbox.host_ip}:9", ipa)
    try:
        assert sandbox.wait_checked() == "checked", sandbox.launcher_log()
        assert f"only {sandbox.disk} is visible" in sandbox.launcher_log()
    finally:
        sandbox.stop()


def test_the_check_refuses_to_start_ipa_when_another_disk_is_visible(
    make_sandbox: Callable[..., Sandbox], ipa: Path
) -> None:
    sandbox = make_sandbox(MAC, leave_visible=1)
    (stranger,) = sandbox.leave_visible
    sandbox.start(f"http://{sandbox.host_ip}:9", ipa)
    assert sandbox.wait_checked() == "refused"
    assert sandbox.wait_ended() == 3
    log = sandbox.launcher_log()
    assert f"block device {stranger} is visible" in log
    assert not (sandbox.work / "ipa.log").exists()  # IPA never started


def test_the_host_disks_are_hidden_and_the_system_read_only_inside(
    make_sandbox: Callable[..., Sandbox], ipa: Path
) -> None:
    """What the launcher's check relies on, seen by a separate probe in the same layers."""
    sandbox = make_sandbox(MAC)
    host_disks = subprocess.run(
        ["lsblk", "-dnpo", "NAME,TYPE"], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    disks = [line.split()[0] for line in host_disks if line.endswith("disk")]
    assert disks, "this machine shows no disk: the probe would prove nothing"
    # Inside: the launcher's mounts, then each host disk read through its own path.
    probe = (
        "import sys, json, pathlib;"
        "sys.path.insert(0, sys.argv[2]);"
        "import launcher;"
        "s = launcher._settings(pathlib.Path(sys.argv[1]));"
        "launcher.build_mounts(s);"
        "read = {d: len(open(d, 'rb').read(4096)) for d in sys.argv[3:]};"
        "print(json.dumps([launcher.isolation_problems(s['disk']), read]))"
    )
    (sandbox.work / "sandbox.json").write_text(
        f'{{"work": "{sandbox.work}", "disk": "{sandbox.disk}"}}'
    )
    result = subprocess.run(
        ["ip", "netns", "exec", sandbox.netns, "unshare", "--mount", "--pid", "--fork",
         "--mount-proc", str(ipa), "-c", probe, str(sandbox.work),
         str(Path(__file__).parent / "sandbox"), *disks],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    problems, read = json.loads(result.stdout)
    assert problems == []
    assert read == dict.fromkeys(disks, 0)  # each one is /dev/null in there
    # Outside, the disks are still there, untouched by the sandbox's mounts.
    for disk in disks:
        assert Path(disk).is_block_device()
