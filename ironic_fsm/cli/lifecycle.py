"""``states`` and ``diagram``: the state machine itself, no store needed."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from ironic_fsm.cli.errors import CLIError
from ironic_fsm.cli.output import Cell, emit_list
from ironic_fsm.machine import LIFECYCLE


def _cmd_states(args: argparse.Namespace) -> int:
    rows = []
    for state in LIFECYCLE.states:
        stable = LIFECYCLE.is_stable(state)
        events = list(LIFECYCLE.allowed_events(state))
        rows.append(
            [
                state,
                Cell("yes" if stable else "no", stable),
                LIFECYCLE.default_target(state),
                Cell(", ".join(events), events),
            ]
        )
    emit_list(args, ("state", "stable", "default_target", "accepted_events"), rows)
    return 0


def _render_svg(dot_source: str) -> str:
    """Run Graphviz's ``dot``; the library has no renderer of its own and needs none."""
    dot = shutil.which("dot")
    if dot is None:
        raise CLIError(
            "-f svg needs Graphviz's 'dot' program, which is not on PATH; install "
            "Graphviz, or use -f dot and render it elsewhere"
        )
    result = subprocess.run(
        [dot, "-Tsvg"], input=dot_source, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise CLIError(
            f"'dot -Tsvg' failed (exit code {result.returncode}): {result.stderr.strip()}"
        )
    return result.stdout


def _cmd_diagram(args: argparse.Namespace) -> int:
    if args.format == "mermaid":
        text = LIFECYCLE.to_mermaid()
    elif args.format == "svg":
        text = _render_svg(LIFECYCLE.to_dot())
    else:
        text = LIFECYCLE.to_dot()
    if not text.endswith("\n"):
        text += "\n"
    if args.output is None or args.output == "-":
        sys.stdout.write(text)
    else:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CLIError(f"cannot write {args.output!r}: {exc.strerror or exc}") from exc
    return 0
