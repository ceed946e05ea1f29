"""Crash recovery: a conductor process dies in the middle of a step; another resumes its work.

Run it with ``python examples/crash_recovery.py``. Everything happens in a
temporary directory:

1. The script starts a copy of itself as a *worker* process that runs a
   manual clean of four steps (``a``, ``b``, ``c``, ``d``) on a node kept in
   a SQLite file. The worker dies abruptly inside step ``c``, as if it had
   been killed; it leaves the node reserved, in ``cleaning``, at step ``c``.
2. A new conductor on the same file calls ``recover()``. The reservation
   names the worker's host and process id; the process is gone, so the node
   is taken over at once, and the clean resumes at step ``c``: ``a`` and
   ``b`` do not run again.
3. A holder on another host is judged by its heartbeats instead: its nodes
   are taken over only once it has been silent for ``heartbeat_timeout``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import ironic_fsm
from ironic_fsm.drivers import fake
from ironic_fsm.interfaces import VendorInterface
from ironic_fsm.stores import SQLStore
from ironic_fsm.task import Task


class JournalVendor(VendorInterface):
    """Four clean steps that write to a journal file what they do.

    Steps must be idempotent: after a crash, the interrupted step runs again
    from its start.
    """

    def _run(self, task: Task, name: str) -> None:
        journal = Path(task.node.driver_info["journal"])
        with journal.open("a") as out:
            out.write(f"start {name}\n")
        if name == "c" and Path(task.node.driver_info["crash_flag"]).exists():
            os._exit(70)  # the process dies here: no clean-up, no release
        with journal.open("a") as out:
            out.write(f"end {name}\n")

    @ironic_fsm.clean_step(priority=0, requires_ramdisk=False)
    def a(self, task: Task) -> None:
        self._run(task, "a")

    @ironic_fsm.clean_step(priority=0, requires_ramdisk=False)
    def b(self, task: Task) -> None:
        self._run(task, "b")

    @ironic_fsm.clean_step(priority=0, requires_ramdisk=False)
    def c(self, task: Task) -> None:
        self._run(task, "c")

    @ironic_fsm.clean_step(priority=0, requires_ramdisk=False)
    def d(self, task: Task) -> None:
        self._run(task, "d")


def conductor(
    url: str,
    config: ironic_fsm.Config | None = None,
    clock: Callable[[], datetime] | None = None,
) -> ironic_fsm.Conductor:
    """A conductor on the shared SQLite file, with the journal hardware type."""
    result = ironic_fsm.Conductor(store=SQLStore(url), config=config, clock=clock)
    result.register_hardware_type(
        "journal-hardware",
        ironic_fsm.HardwareType(power=fake.FakePower(), vendor=JournalVendor()),
    )
    return result


def worker(url: str, uuid: str) -> None:
    """The process that crashes: run the manual clean a, b, c, d."""
    steps = [{"interface": "vendor", "step": name} for name in "abcd"]
    conductor(url).do_provisioning_action(uuid, "clean", clean_steps=steps)  # never returns


def crash_and_recover(tmp: Path) -> None:
    """Parts 1 and 2: a real crash on this host, then recover()."""
    url = f"sqlite:///{tmp / 'nodes.sqlite'}"
    journal, crash_flag = tmp / "journal.txt", tmp / "crash"
    crash_flag.touch()
    setup = conductor(url)
    node = setup.create_node(
        name="victim",
        driver="journal-hardware",
        provision_state="manageable",
        driver_info={"journal": str(journal), "crash_flag": str(crash_flag)},
    )
    setup.store.close()

    print("1. A worker process runs a manual clean and dies inside step c:")
    done = subprocess.run([sys.executable, __file__, "--worker", url, node.uuid], check=False)
    print(f"   worker exited with code {done.returncode}")
    with SQLStore(url) as store:
        node = store.get(node.uuid)
    print(f"   node: {node.provision_state!r}, step {node.clean_step['step']!r}")
    print(f"   reserved by {node.reservation!r}  (host:pid:instance)")
    print("   journal:", " | ".join(journal.read_text().splitlines()))

    print("2. A new conductor on the same database recovers the node:")
    crash_flag.unlink()  # the cause of the crash is gone
    survivor = conductor(url)
    print(f"   recover() took over: {survivor.recover() == [node.uuid]}")
    node = survivor.get_node(node.uuid)
    print(f"   node: {node.provision_state!r}, reservation={node.reservation!r}")
    print("   journal:", " | ".join(journal.read_text().splitlines()))
    print("   (a and b ran once; c ran again from its start; then d)")
    survivor.store.close()


def remote_holder(tmp: Path) -> None:
    """Part 3: a holder on another host, judged by its heartbeats."""
    url = f"sqlite:///{tmp / 'fleet.sqlite'}"
    now = [datetime(2025, 1, 1, tzinfo=timezone.utc)]

    def clock() -> datetime:
        return now[0]

    config = ironic_fsm.Config(host="rack-a", heartbeat_timeout=60)
    here = conductor(url, config=config, clock=clock)
    there = conductor(url, config=ironic_fsm.Config(host="rack-b"), clock=clock)
    node = here.create_node(name="shared", provision_state="manageable")

    print("3. A conductor on another host holds a node, then stops heartbeating:")
    there.heartbeat()
    there.store.reserve(node.uuid, there.holder)  # as while it works on the node
    print(f"   holder: {there.holder!r}")
    for seconds in (30, 59, 61):
        now[0] = datetime(2025, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=seconds)
        taken = here.recover()
        print(f"   {seconds:>2} s after its last heartbeat, recover() takes over: {len(taken)}")
    node = here.get_node(node.uuid)
    print(f"   node: {node.provision_state!r}, reservation={node.reservation!r}")
    here.store.close()
    there.store.close()


def main() -> None:
    """Run the three parts in a temporary directory."""
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
        return
    with tempfile.TemporaryDirectory() as tmp:
        crash_and_recover(Path(tmp))
        remote_holder(Path(tmp))


if __name__ == "__main__":
    main()
