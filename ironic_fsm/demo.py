"""``ironic-fsm demo``: a small fleet of emulated BMCs through the whole lifecycle.

The demo starts IPMI BMCs (the project's pyghmi peer) and Redfish BMCs (the
project's sushy-tools emulator) as child processes on 127.0.0.1, enrolls a
node for each in a SQLite store, and drives every node, in parallel:

* Redfish nodes: manage -> inspect (inventory read from the BMC) -> provide
  (automated cleaning by runbook: BIOS settings, then a RAID 1 root volume)
  -> deploy (one network boot, powered on, disk as boot device) -> undeploy
  (cleaned again) -> available.
* IPMI nodes: manage (credentials and power checked) -> provide -> deploy
  (boot device set to disk, powered on) -> undeploy (powered off) ->
  available. IPMI has no out-of-band inspection and no out-of-band clean
  steps (Ironic cleans such nodes from its ramdisk agent, which the demo does
  not run), so they skip inspection and clean with no steps.
* The first node of each kind is retired while deployed and ends manageable.

It shows each node's progress live, records every event in
``events.jsonl``, ends with a summary table, writes the state diagram next to
the database, and stops every process it started, also when interrupted.
The demo is an application of the library, so unlike the library's core it
uses threads and sleeps.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, TextIO

import ironic_fsm
from ironic_fsm import states as s
from ironic_fsm._demo_board import STAGES, Board, Row, format_table

__all__ = ["main", "run_demo"]

#: What the demo needs beyond the core: the ``demo`` extra's importable modules.
DEMO_MODULES = ("pyghmi", "sushy", "sushy_tools", "bcrypt")

RUNBOOK = "CUSTOM_DEMO_CLEAN"
REDFISH_CLASS = "demo.redfish"
IPMI_CLASS = "demo.ipmi"

#: The BIOS settings and RAID layout the Redfish nodes get while cleaning.
BIOS_SETTINGS = [
    {"name": "BootMode", "value": "Uefi"},
    {"name": "ProcTurboMode", "value": "Disabled"},
]
TARGET_RAID = {"logical_disks": [{"size_gb": 100, "raid_level": "1", "is_root_volume": True}]}


def missing_modules() -> list[str]:
    """The ``demo`` extra's modules that cannot be imported here."""
    return [name for name in DEMO_MODULES if importlib.util.find_spec(name) is None]


#: Seconds the BMC processes get to exit on SIGTERM before they are killed.
STOP_GRACE = 1.0


def _process_of(bmc: Any) -> subprocess.Popen[Any] | None:
    """The child process behind an IPMI (``.process.proc``) or Redfish (``.process``) BMC."""
    process = getattr(bmc, "process", None)
    process = getattr(process, "proc", process)
    return process if isinstance(process, subprocess.Popen) else None


def _stop_all(bmcs: Sequence[Any]) -> None:
    """Stop every BMC at once, within about :data:`STOP_GRACE` seconds.

    All get SIGTERM together, and SIGKILL after the grace: a peer whose
    interpreter got the terminal's Ctrl-C too can hang in its own shutdown,
    and the handles' own ``stop()`` would wait five seconds for each. Then
    ``stop()`` only closes what the handle holds.
    """
    processes = [p for p in map(_process_of, bmcs) if p is not None]
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
    deadline = time.monotonic() + STOP_GRACE
    for process in processes:
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
    for bmc in bmcs:
        with contextlib.suppress(Exception):
            bmc.stop()


@contextlib.contextmanager
def _fleet(
    workdir: Path, ipmi: int, redfish: int, pace: float, out: TextIO
) -> Iterator[list[tuple[str, Any]]]:
    """Start the emulated BMCs; stop every one of them on the way out."""
    try:
        from ironic_fsm.testing.ipmi_bmc import start_bmcs
        from ironic_fsm.testing.redfish_emulator import start_emulator
    except ImportError as exc:
        raise ironic_fsm.exceptions.MissingDependency(
            f"The demo needs the BMC emulators ({exc.name} is missing): "
            "pip install 'ironic_fsm[demo]'",
            extra="demo",
        ) from exc
    started: list[Any] = []
    interrupted = False
    begun = time.monotonic()

    def up(what: str, where: str) -> None:
        """Say each BMC as it comes up: starting them takes seconds on a busy machine."""
        print(
            f"  {what} up at {where} after {time.monotonic() - begun:.1f} s", file=out, flush=True
        )

    try:
        fleet: list[tuple[str, Any]] = []
        if ipmi:
            bmcs = start_bmcs(workdir, ipmi)
            started += bmcs
            ports = ", ".join(f":{bmc.port}" for bmc in bmcs)
            up(f"{ipmi} IPMI BMC{'s' if ipmi > 1 else ''} (pyghmi)", f"127.0.0.1{ports}")
            for bmc in bmcs:
                if pace:  # power changes take a moment, as on real machines
                    bmc.set_faults({"power_delay": pace})
            fleet += [("ipmi", bmc) for bmc in bmcs]
        if redfish:
            print(f"  starting {redfish} Redfish emulators ...", file=out, flush=True)
        pool = ThreadPoolExecutor(max_workers=4)
        futures = [
            pool.submit(start_emulator, workdir / f"redfish-{i}", power_delay=pace)
            for i in range(redfish)
        ]
        try:
            for future in as_completed(futures):
                number = futures.index(future) + 1
                up(f"Redfish BMC {number} of {redfish} (sushy-tools)", future.result().url)
            fleet += [("redfish", future.result()) for future in futures]
        finally:
            # Interrupted while starting: the ones not begun never start, and
            # the ones that did start are stopped below with the others.
            pool.shutdown(wait=True, cancel_futures=True)
            for future in futures:
                if future.done() and not future.cancelled() and future.exception() is None:
                    started.append(future.result())
        yield fleet
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if interrupted:
            print(f"\nInterrupted: stopping {len(started)} BMC emulators ...", file=out, flush=True)
        stopping = time.monotonic()
        _stop_all(started)
        if interrupted:
            print(
                f"Stopped {len(started)} BMC emulators in {time.monotonic() - stopping:.1f} s.",
                file=out,
                flush=True,
            )


def _enroll(conductor: ironic_fsm.Conductor, fleet: list[tuple[str, Any]]) -> list[Row]:
    rows = []
    counts = {"ipmi": 0, "redfish": 0}
    for kind, bmc in fleet:
        counts[kind] += 1
        name = f"{kind}-{counts[kind]}"
        if kind == "ipmi":
            info: dict[str, Any] = {
                "ipmi_address": bmc.address, "ipmi_port": bmc.port,
                "ipmi_username": bmc.user, "ipmi_password": bmc.password,
                "ipmi_timeout": 5,
            }  # fmt: skip
            extra: dict[str, Any] = {"resource_class": IPMI_CLASS}
            where = f"ipmi://{bmc.address}:{bmc.port}"
        else:
            info = bmc.driver_info()
            extra = {
                "resource_class": REDFISH_CLASS,
                "traits": [RUNBOOK],
                "target_raid_config": TARGET_RAID,
            }
            where = bmc.url
        node = conductor.create_node(name=name, driver=kind, driver_info=info, **extra)
        row = Row(name=name, driver=kind, bmc=where, retire=False)
        rows.append(row)
        row.state = node.provision_state
    # Retire the first node of each kind (two in all, when both kinds are there).
    seen: set[str] = set()
    for row in rows:
        if row.driver not in seen:
            seen.add(row.driver)
            row.retire = True
    return rows


def _drive(
    conductor: ironic_fsm.Conductor,
    board: Board,
    row: Row,
    uuid: str,
    pace: float,
    stopping: threading.Event,
) -> None:
    """One node's whole story; failures end it and are shown, not raised."""
    row.started = time.monotonic()
    try:
        for stage in STAGES:
            if stopping.wait(pace):  # presentation only: let a person follow along
                return
            if stage == "inspect" and row.driver != "redfish":
                continue
            if stage == "retire":
                if not row.retire:
                    continue
                board.stage(row, stage)
                conductor.update_node(uuid, retired=True, retired_reason="demo: end of life")
                board.stage(row, stage, done=True)
                continue
            board.stage(row, stage)
            node = conductor.do_provisioning_action(uuid, stage)
            if node.provision_state in s.FAILURE_STATES or node.provision_state in (
                s.ERROR,
                s.ENROLL,
            ):
                row.error = node.last_error
                return
            board.stage(row, stage, done=True)
    except ironic_fsm.exceptions.IronicFSMError as exc:
        row.error = str(exc)
    except Exception as exc:  # a bug: shown on the board and raised again by run_demo
        row.error = f"{type(exc).__name__}: {exc}"
        row.crash = exc
    finally:
        row.finished = time.monotonic()


def _diagram(workdir: Path) -> Path:
    lifecycle = ironic_fsm.LIFECYCLE
    dot = shutil.which("dot")
    if dot is not None:
        target = workdir / "lifecycle.svg"
        done = subprocess.run(
            [dot, "-Tsvg", "-o", str(target)],
            input=lifecycle.to_dot(),
            text=True,
            capture_output=True,
            timeout=60,
        )
        if done.returncode == 0:
            return target
    target = workdir / "lifecycle.mmd"
    target.write_text(lifecycle.to_mermaid(), encoding="utf-8")
    return target


def run_demo(
    *,
    ipmi: int = 2,
    redfish: int = 3,
    output: Path | None = None,
    live: bool | None = None,
    out: TextIO = sys.stdout,
    pace: float = 0.0,
) -> list[ironic_fsm.Node]:
    """Run the demo; returns the nodes as they ended. Used by ``ironic-fsm demo``.

    Raises:
        MissingDependency: the ``demo`` extra is not installed (checked before
            anything is started or written).
    """
    missing = missing_modules()
    if missing:
        raise ironic_fsm.exceptions.MissingDependency(
            f"the demo needs the 'demo' extra ({', '.join(missing)} not installed): "
            "pip install 'ironic_fsm[demo]'",
            extra="demo",
        )
    from ironic_fsm.stores import SQLStore

    started = time.monotonic()
    live = out.isatty() if live is None else live
    workdir = (
        Path(output).resolve()
        if output is not None
        else Path(tempfile.mkdtemp(prefix="ironic-fsm-"))
    )
    workdir.mkdir(parents=True, exist_ok=True)
    database = workdir / "demo.sqlite"
    for stale in workdir.glob("demo.sqlite*"):
        stale.unlink()
    # The BMCs' own files (configs, state, logs) live here only while they run,
    # so that the output directory holds the same files after every run.
    bmc_dir = workdir / "bmcs"
    shutil.rmtree(bmc_dir, ignore_errors=True)
    keep_bmc_files = False
    print(f"Starting {ipmi} IPMI and {redfish} Redfish BMCs on 127.0.0.1 ...", file=out, flush=True)
    try:
        with (
            (workdir / "events.jsonl").open("w", encoding="utf-8") as journal,
            _fleet(bmc_dir, ipmi, redfish, pace, out) as fleet,
        ):
            store = SQLStore(f"sqlite:///{database}")
            config = ironic_fsm.Config(
                automated_cleaning_step_source="hybrid",
                automated_cleaning_runbook_by_resource_class={REDFISH_CLASS: RUNBOOK},
            )
            conductor = ironic_fsm.Conductor(store=store, config=config)
            conductor.add_runbook(
                RUNBOOK,
                [
                    {
                        "interface": "bios",
                        "step": "apply_configuration",
                        "args": {"settings": BIOS_SETTINGS},
                    },
                    {"interface": "raid", "step": "delete_configuration", "args": {}},
                    {"interface": "raid", "step": "create_configuration", "args": {}},
                ],
                traits=[RUNBOOK],
            )
            rows = _enroll(conductor, fleet)
            print(
                f"Enrolled {len(rows)} nodes in {database} "
                f"(BMCs up in {time.monotonic() - started:.1f} s)",
                file=out,
                flush=True,
            )
            board = Board(rows, out, live, journal)
            nodes = conductor.list_nodes()
            for node, row in zip(nodes, rows, strict=True):
                board.by_uuid[node.uuid] = row
            conductor.add_listener(board.listen)
            flow_started = time.monotonic()
            _drive_all(conductor, board, nodes, rows, pace, flow_started)
            board.draw(time.monotonic() - flow_started)
            flow_seconds = time.monotonic() - flow_started
            final = conductor.list_nodes()
            store.close()
            keep_bmc_files = any(row.error for row in rows)
    finally:
        if not keep_bmc_files:
            shutil.rmtree(bmc_dir, ignore_errors=True)
    print(file=out)
    table = []
    for node, row in zip(final, rows, strict=True):
        table.append(
            [
                node.name or node.uuid,
                row.driver,
                row.bmc,
                node.provision_state,
                "yes" if node.retired else "",
                node.power_state or "",
                str(row.transitions),
                str(row.steps),
                f"{row.finished - row.started:.1f}",
                (node.last_error or row.error or "")[:60],
            ]
        )
    header = ["node", "driver", "BMC", "state", "retired", "power", "transitions", "steps",
              "seconds", "last error"]  # fmt: skip
    print(format_table(header, table), file=out)
    diagram = _diagram(workdir)
    print(
        f"\n{len(final)} nodes in {flow_seconds:.1f} s "
        f"(whole demo {time.monotonic() - started:.1f} s); "
        f"database {database}; events {workdir / 'events.jsonl'}; state diagram {diagram}",
        file=out,
    )
    if keep_bmc_files:
        print(f"Some nodes failed: the BMCs' logs are kept in {bmc_dir}", file=out)
    return final


def _drive_all(
    conductor: ironic_fsm.Conductor,
    board: Board,
    nodes: Sequence[ironic_fsm.Node],
    rows: Sequence[Row],
    pace: float,
    flow_started: float,
) -> None:
    """Drive every node in its own thread; on Ctrl-C, stop waiting for them at once.

    The threads are daemons: one blocked on a BMC that is going away (an
    IPMI request waits out its timeout) must not hold up the exit; the
    demo's database is rewritten on the next run anyway.
    """
    stopping = threading.Event()
    threads = [
        threading.Thread(
            target=_drive,
            args=(conductor, board, row, node.uuid, pace, stopping),
            name=f"demo-{row.name}",
            daemon=True,
        )
        for node, row in zip(nodes, rows, strict=True)
    ]
    try:
        for thread in threads:
            thread.start()
        while any(thread.is_alive() for thread in threads):
            board.draw(time.monotonic() - flow_started)
            time.sleep(0.1)
    except BaseException:
        stopping.set()  # the threads stop at their next stage
        board.detach()  # and what they still do is not shown
        raise
    for row in rows:
        if row.crash is not None:
            raise row.crash


def main(argv: Sequence[str] | None = None) -> int:
    """``ironic-fsm demo``: see the module docstring."""
    parser = argparse.ArgumentParser(prog="ironic-fsm demo", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The demo's options (shared with the ``ironic-fsm`` command line)."""
    parser.add_argument("--ipmi", type=int, default=2, help="IPMI BMCs to start (default 2)")
    parser.add_argument("--redfish", type=int, default=3, help="Redfish BMCs (default 3)")
    parser.add_argument(
        "--output", type=Path, default=Path("ironic-fsm-demo"),
        help="directory for the database, the diagram and the BMCs' files "
        "(default ./ironic-fsm-demo)",
    )  # fmt: skip
    parser.add_argument("--plain", action="store_true", help="log lines instead of the live table")
    parser.add_argument(
        "--pace",
        type=float,
        default=None,
        metavar="SECONDS",
        help="pause between stages, and time the BMCs take to change power, so that a "
        "person can follow (default 0.4 with the live table, 0 with --plain)",
    )


def run(args: argparse.Namespace) -> int:
    """Run with parsed arguments; 0 when every node ended where the demo expects."""
    if args.ipmi < 0 or args.redfish < 0 or args.ipmi + args.redfish == 0:
        print("error: give at least one BMC (--ipmi / --redfish)", file=sys.stderr)
        return 2
    live = False if args.plain else sys.stdout.isatty()
    pace = args.pace if args.pace is not None else (0.4 if live else 0.0)
    if pace < 0:
        print("error: --pace must be >= 0", file=sys.stderr)
        return 2
    try:
        nodes = run_demo(
            ipmi=args.ipmi, redfish=args.redfish, output=args.output, live=live, pace=pace
        )
    except ironic_fsm.exceptions.MissingDependency as exc:
        print(f"error: {exc}", file=sys.stderr)  # one line: what to install, no traceback
        return 1
    except KeyboardInterrupt:
        return 130  # the BMCs are stopped already (and it said so)
    expected = [s.MANAGEABLE if n.retired else s.AVAILABLE for n in nodes]
    return 0 if [n.provision_state for n in nodes] == expected else 1


if __name__ == "__main__":
    sys.exit(main())
