"""Verbs report failure, and ``--wait`` follows a node that another conductor continues.

The hardware type used here is a real plugin: a module and its
``.dist-info`` (entry points) put on ``sys.path``, found through stevedore
exactly as an installed package is. Its firmware step starts a "job" and
returns ``clean wait``; a second conductor on the same SQLite file (in a
thread, as an embedding application's callback would) continues the node
while ``ironic-fsm ... --wait`` polls.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_harness import Run, isolate_cli_env, runner
from stevedore import ExtensionManager

from ironic_fsm.conductor import Conductor
from ironic_fsm.stores import SQLStore

PLUGIN = '''
"""A hardware type for the CLI's --wait tests."""

from ironic_fsm import HardwareType, clean_step, states
from ironic_fsm.drivers import fake
from ironic_fsm.exceptions import BMCUnreachable
from ironic_fsm.interfaces import FirmwareInterface


class JobFirmware(FirmwareInterface):
    """The BMC runs the update as a job; someone else reports its end."""

    @clean_step(priority=0, abortable=True, requires_ramdisk=False)
    def flash(self, task):
        task.node.driver_internal_info["flash_job"] = "started"
        return states.CLEANWAIT


class FlakyPower(fake.FakePower):
    """A BMC that does not answer when the node's driver_info says so."""

    def get_power_state(self, task):
        if task.node.driver_info.get("unreachable"):
            raise BMCUnreachable("no reply from 192.0.2.1:623")
        return super().get_power_state(task)


def hardware():
    return HardwareType(
        power=FlakyPower(), management=fake.FakeManagement(), deploy=fake.FakeDeploy(),
        firmware=JobFirmware(),
    )
'''

FLASH = json.dumps([{"interface": "firmware", "step": "flash"}])


@pytest.fixture(autouse=True)
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Install the plugin above the way a package is installed: module plus dist-info."""
    site = tmp_path / "site"
    info = site / "cli_wait_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "cli_wait_plugin.py").write_text(PLUGIN, encoding="utf-8")
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: cli-wait-plugin\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[ironic_fsm.hardware.types]\njob-hardware = cli_wait_plugin:hardware\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "cli_wait_plugin", raising=False)
    # stevedore remembers each namespace's entry points for the life of the process; a
    # fresh memory sees this plugin, and the old one comes back after the test.
    monkeypatch.setattr(ExtensionManager, "ENTRY_POINT_CACHE", {})
    isolate_cli_env(tmp_path, monkeypatch)
    monkeypatch.setattr("ironic_fsm.cli.verbs.POLL_INTERVAL", 0.02)


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'nodes.sqlite'}"


@pytest.fixture
def run(url: str, capsys: pytest.CaptureFixture[str]) -> Run:
    return runner(url, capsys)


@pytest.fixture
def other(url: str) -> Iterator[Conductor]:
    """Another conductor on the same database: the one that continues nodes."""
    store = SQLStore(url)
    try:
        yield Conductor(store=store)
    finally:
        store.close()


def managed(run: Run, *extra: str) -> str:
    created = run("node", "create", "--name", "n1", "--driver", "job-hardware", *extra,
                  "-f", "value", "-c", "uuid")  # fmt: skip
    assert created.code == 0, created.err
    manage = run("node", "manage", "n1")
    assert manage.code == 0, manage.err
    return created.out.strip()


def when_waiting(conductor: Conductor, uuid: str, then: Callable[[], Any]) -> threading.Thread:
    """In a thread: once the node is in 'clean wait', do ``then`` (continue it, abort it)."""
    errors: list[BaseException] = []

    def watch() -> None:
        try:
            deadline = time.monotonic() + 30
            while conductor.get_node(uuid).provision_state != "clean wait":
                assert time.monotonic() < deadline, "the node never reached clean wait"
                time.sleep(0.01)
            time.sleep(0.1)  # let the CLI poll the waiting node a few times
            then()
        except BaseException as exc:  # reported by the test, not lost in the thread
            errors.append(exc)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    thread.errors = errors  # type: ignore[attr-defined]
    return thread


def joined(thread: threading.Thread) -> None:
    thread.join(timeout=60)
    assert not thread.is_alive()
    errors: list[BaseException] = thread.errors  # type: ignore[attr-defined]
    assert not errors, errors


def test_without_wait_a_waiting_node_is_reported_as_waiting(run: Run) -> None:
    managed(run)
    result = run("node", "clean", "n1", "--clean-steps", FLASH)
    assert result.code == 0, result.err
    assert "'clean wait', waiting for an asynchronous step" in result.out


def test_wait_follows_the_node_until_another_conductor_finishes_it(
    run: Run, other: Conductor
) -> None:
    uuid = managed(run)
    thread = when_waiting(other, uuid, lambda: other.continue_node_clean(uuid))
    result = run("node", "clean", "n1", "--clean-steps", FLASH, "--wait", "30")
    joined(thread)
    assert result.code == 0, result.err
    assert result.out.strip().endswith("is now in provision state 'manageable'")
    node = other.get_node(uuid)
    assert node.provision_state == "manageable"
    assert node.driver_internal_info.get("flash_job") == "started"
    assert node.reservation is None


def test_wait_without_a_timeout(run: Run, other: Conductor) -> None:
    uuid = managed(run)
    thread = when_waiting(other, uuid, lambda: other.continue_node_clean(uuid))
    result = run("node", "clean", "n1", "--clean-steps", FLASH, "--wait")
    joined(thread)
    assert result.code == 0, result.err
    assert "'manageable'" in result.out


def test_wait_reports_a_failure_that_happens_meanwhile(run: Run, other: Conductor) -> None:
    uuid = managed(run)
    thread = when_waiting(other, uuid, lambda: other.do_provisioning_action(uuid, "abort"))
    result = run("node", "clean", "n1", "--clean-steps", FLASH, "--wait", "30")
    joined(thread)
    assert result.code == 1
    lines = result.err.splitlines()
    assert len(lines) == 1
    assert "'clean' ended in provision state 'clean failed'" in lines[0]
    last_error = other.get_node(uuid).last_error
    assert last_error
    assert last_error in lines[0]


def test_wait_times_out_with_one_line(run: Run, other: Conductor) -> None:
    uuid = managed(run)
    started = time.monotonic()
    result = run("node", "clean", "n1", "--clean-steps", FLASH, "--wait", "0.3")
    assert 0.3 <= time.monotonic() - started < 10
    assert result.code == 1
    lines = result.err.splitlines()
    assert len(lines) == 1
    assert "did not settle within 0.3 seconds" in lines[0]
    assert "'clean wait'" in lines[0]
    node = other.get_node(uuid)
    assert node.provision_state == "clean wait"  # still waiting; nothing else changed
    assert node.reservation is None


@pytest.mark.parametrize("bad", ["-1", "soon", "nan", "inf"])
def test_wait_needs_a_number_of_seconds(run: Run, bad: str) -> None:
    managed(run)
    result = run("node", "clean", "n1", "--clean-steps", FLASH, "--wait", bad)
    assert result.code == 2
    assert "--wait" in result.err


def test_wait_on_a_synchronous_verb_returns_at_once(run: Run) -> None:
    managed(run)
    result = run("node", "provide", "n1", "--wait", "5")
    assert result.code == 0, result.err
    assert "'available'" in result.out


def test_manage_that_fails_verification_exits_1_with_last_error(run: Run, other: Conductor) -> None:
    created = run("node", "create", "--name", "n1", "--driver", "job-hardware",
                  "--driver-info", "unreachable=yes", "-f", "value", "-c", "uuid")  # fmt: skip
    assert created.code == 0, created.err
    result = run("node", "manage", "n1", "--wait")
    assert result.code == 1
    lines = result.err.splitlines()
    assert len(lines) == 1
    assert "'manage' ended in provision state 'enroll'" in lines[0]
    assert "no reply from 192.0.2.1:623" in lines[0]
    node = other.get_node(created.out.strip())
    assert node.provision_state == "enroll"
    assert node.last_error
    assert node.last_error in lines[0]
