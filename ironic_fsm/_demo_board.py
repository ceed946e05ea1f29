"""The demo's live view: one row per node, a table redrawn in place, or a log.

Conductor threads report events to :class:`Board` (``listen``); the demo's
main thread redraws it (``draw``). On a terminal the table is redrawn in
place, in colour; elsewhere each change is one log line, and every event
goes to the journal (``events.jsonl``) when one is given.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import TextIO

import attrs

from ironic_fsm import states as s
from ironic_fsm.events import Event

STAGES = ("manage", "inspect", "provide", "deploy", "retire", "undeploy")


@attrs.define
class Row:
    """What the display knows about one node."""

    name: str
    driver: str
    bmc: str
    retire: bool
    state: str = s.ENROLL
    target: str | None = None
    step: str = ""
    stage: str = ""
    done: list[str] = attrs.field(factory=list)
    transitions: int = 0
    steps: int = 0
    started: float = 0.0
    finished: float = 0.0
    error: str | None = None
    crash: Exception | None = None


class Board:
    """The live view: a table redrawn in place on a terminal, a log otherwise."""

    def __init__(
        self, rows: Sequence[Row], out: TextIO, live: bool, journal: TextIO | None = None
    ) -> None:
        self.rows = {row.name: row for row in rows}
        self.by_uuid: dict[str, Row] = {}
        self.out = out
        self.live = live
        self.journal = journal
        self.detached = False
        self.lock = threading.Lock()
        self._drawn = 0
        self.color = live
        encoding = (getattr(out, "encoding", None) or "").lower()
        self.unicode = live and encoding.replace("-", "") == "utf8"

    # -- updates (from conductor threads) --------------------------------------------------

    def listen(self, event: Event) -> None:
        with self.lock:
            row = self.by_uuid.get(event.node)
            if row is None or self.detached:
                return
            self._record(row, event)
            if event.step is not None:
                if event.name == "step.start":
                    row.step = f"{event.step['interface']}.{event.step['step']}"
                    row.steps += 1
                elif event.name == "step.fail":
                    row.error = event.error
                else:
                    row.step = ""
            else:
                row.state, row.target = event.state, event.target
                row.transitions += 1
                if event.error:
                    row.error = event.error
            if not self.live:
                self._log(row, event)

    def detach(self) -> None:
        """Hear nothing more: the demo is stopping and its output is closing."""
        with self.lock:
            self.detached = True

    def stage(self, row: Row, stage: str, done: bool = False) -> None:
        with self.lock:
            if self.detached:
                return
            if done:
                row.done.append(stage)
                row.stage = ""
            else:
                row.stage = stage
                if not self.live:
                    print(f"  {row.name:<10} {stage} ...", file=self.out, flush=True)

    def _record(self, row: Row, event: Event) -> None:
        """One JSON line per event: what each node went through, for people and tests."""
        if self.journal is None:
            return
        step = event.step
        entry = {
            "node": row.name,
            "driver": row.driver,
            "event": event.name,
            "from": event.previous_state,
            "via": event.event,
            "to": event.state,
            "step": f"{step['interface']}.{step['step']}" if step is not None else None,
            "error": event.error,
            "time": event.timestamp.isoformat() if event.timestamp else None,
        }
        self.journal.write(json.dumps(entry) + "\n")
        self.journal.flush()

    def _log(self, row: Row, event: Event) -> None:
        if event.step is not None:
            what = f"{event.name:<10} {event.step['interface']}.{event.step['step']}"
        else:
            what = f"{event.previous_state} --{event.event}--> {event.state}"
        print(f"  {row.name:<10} {what}", file=self.out, flush=True)

    # -- drawing (main thread) ---------------------------------------------------------------

    def _paint(self, text: str, state: str) -> str:
        if not self.color:
            return text
        if state in s.FAILURE_STATES or state == s.ERROR:
            code = "31"
        elif state in s.STABLE_STATES:
            code = "32"
        elif state in s.WAIT_STATES or state in s.HOLD_STATES:
            code = "36"
        else:
            code = "33"
        return f"\x1b[{code}m{text}\x1b[0m"

    def _stages(self, row: Row) -> list[str]:
        return [
            st
            for st in STAGES
            if (st != "retire" or row.retire) and (st != "inspect" or row.driver == "redfish")
        ]

    def draw(self, elapsed: float) -> None:
        if not self.live:
            return
        full, empty = ("\u2588", "\u2591") if self.unicode else ("#", ".")
        with self.lock:
            finished = sum(1 for row in self.rows.values() if row.finished)
            transitions = sum(row.transitions for row in self.rows.values())
            steps = sum(row.steps for row in self.rows.values())
            lines = [
                f"ironic_fsm demo - {len(self.rows)} nodes - {elapsed:5.1f} s - "
                f"{finished} finished, {transitions} transitions, {steps} steps",
                "",
                f"  {'node':<10} {'driver':<8} {'progress':<21} {'state':<16} doing",
            ]
            for row in self.rows.values():
                stages = self._stages(row)
                width = 12
                filled = round(width * len(row.done) / len(stages))
                bar = full * filled + empty * (width - filled)
                if row.finished:
                    label = "failed" if row.error else ("retired" if row.retire else "done")
                else:
                    label = row.stage
                doing = row.step or (f"{row.stage} ..." if row.stage else "")
                if row.error and row.finished:
                    doing = row.error
                lines.append(
                    f"  {row.name:<10} {row.driver:<8} {bar} {label:<8} "
                    f"{self._paint(f'{row.state:<16}', row.state)} {doing[:44]}"
                )
        if self._drawn:
            self.out.write(f"\x1b[{self._drawn}F")
        self.out.write("\n".join(f"{line}\x1b[K" for line in lines) + "\n")
        self.out.flush()
        self._drawn = len(lines)


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    rule = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join([line, rule, *body])
