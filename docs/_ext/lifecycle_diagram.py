"""Sphinx directives that document :data:`ironic_fsm.LIFECYCLE` from the code itself.

``.. lifecycle-diagram::``
    The state diagram, of the whole lifecycle or, with ``:flow: NAME``, of
    one flow (a dozen states at most: readable at the page's width; see
    :data:`FLOWS`). When the Graphviz ``dot`` program is on ``PATH`` (config
    value ``lifecycle_diagram_dot``, default ``"dot"``; set it to ``""`` to
    always show text), the output of ``LIFECYCLE.to_dot(states)`` is
    rendered to ``_generated/lifecycle[-NAME].svg`` under the documentation
    source directory and shown as a figure. Otherwise a flow is shown as a
    table of its transitions, and the whole lifecycle as the Mermaid text
    of ``LIFECYCLE.to_mermaid()``, with a note saying that Graphviz renders
    them as SVG.

``.. lifecycle-table::``
    One row per state: its constant in :mod:`ironic_fsm.states`, whether it
    is stable, its kind (stable, working, wait, hold, failure), its default
    target and the events it accepts.

``.. lifecycle-verbs::``
    One row per user verb of :data:`ironic_fsm.states.VERBS`: the event it
    fires and the states whose transitions accept that event. The content is
    a field list giving each verb's description (``:verb: text``); a verb
    without a description, or a description of an unknown verb, is a build
    warning, so the page cannot drift from the code.

Everything is generated at build time: nothing is copied by hand.
"""

from __future__ import annotations

import inspect
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

import ironic_fsm
from ironic_fsm import machine, states

LOG = logging.getLogger(__name__)

#: Where generated files go, relative to the documentation source directory.
GENERATED_DIR = "_generated"
DOT_TIMEOUT = 120  # seconds

#: One diagram per flow: its states (the stable ones it starts from and ends in
#: included), so that each is small enough to read at the page's width.
FLOWS: dict[str, tuple[str, ...]] = {
    "enrolment": (
        states.ENROLL, states.VERIFYING, states.MANAGEABLE, states.INSPECTING,
        states.INSPECTWAIT, states.INSPECTFAIL, states.ADOPTING, states.ADOPTFAIL,
        states.ACTIVE,
    ),
    "cleaning": (
        states.MANAGEABLE, states.CLEANING, states.CLEANWAIT, states.CLEANHOLD,
        states.CLEANFAIL, states.AVAILABLE,
    ),
    "deployment": (
        states.AVAILABLE, states.DEPLOYING, states.DEPLOYWAIT, states.DEPLOYHOLD,
        states.DEPLOYFAIL, states.ACTIVE, states.DELETING, states.ERROR, states.CLEANING,
    ),
    "rescue": (
        states.ACTIVE, states.RESCUING, states.RESCUEWAIT, states.RESCUEFAIL, states.RESCUE,
        states.UNRESCUING, states.UNRESCUEFAIL,
    ),
    "servicing": (
        states.ACTIVE, states.SERVICING, states.SERVICEWAIT, states.SERVICEHOLD,
        states.SERVICEFAIL,
    ),
}  # fmt: skip


def _names(flow: str | None) -> tuple[str, str]:
    """The SVG and DOT file names of a flow's diagram (the whole lifecycle's for ``None``)."""
    stem = "lifecycle" if flow is None else f"lifecycle-{flow}"
    return f"{stem}.svg", f"{stem}.dot"


# -- helpers -----------------------------------------------------------------------


def _note_code_dependencies(directive: SphinxDirective) -> None:
    """Re-read the page when the lifecycle's source changes."""
    for module in (machine, states):
        path = inspect.getsourcefile(module)
        if path:
            directive.env.note_dependency(path)


def _state_kind(state: str) -> str:
    if ironic_fsm.LIFECYCLE.is_stable(state):
        return "stable"
    if state in states.WAIT_STATES:
        return "wait"
    if state in states.HOLD_STATES:
        return "hold"
    if state in states.FAILURE_STATES:
        return "failure"
    return "working"


def _state_constants() -> dict[str, str]:
    """Map each provision state's value to its constant name in ``states``."""
    found: dict[str, str] = {}
    for name, value in vars(states).items():
        if name.isupper() and not name.endswith("_EVENT") and isinstance(value, str):
            found.setdefault(value, name)
    return found


def _literal_list(values: Iterable[str]) -> list[nodes.Node]:
    out: list[nodes.Node] = []
    for index, value in enumerate(values):
        if index:
            out.append(nodes.Text(", "))
        out.append(nodes.literal(value, value))
    return out


def _entry(*children: nodes.Node | str) -> nodes.entry:
    para = nodes.paragraph()
    for child in children:
        para += nodes.Text(child) if isinstance(child, str) else child
    return nodes.entry("", para)


def _table(
    headers: list[str],
    rows: list[list[nodes.entry]],
    widths: list[int],
    classes: Iterable[str] = (),
) -> nodes.table:
    table = nodes.table(classes=["lifecycle-table", *classes])
    group = nodes.tgroup(cols=len(headers))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    head += nodes.row("", *(_entry(h) for h in headers))
    group += head
    body = nodes.tbody()
    for row in rows:
        body += nodes.row("", *row)
    group += body
    return table


# -- the diagram ---------------------------------------------------------------------


def _render_svg(dot: str, source: str, outdir: Path, flow: str | None) -> Path:
    """Render DOT ``source`` to SVG, re-running ``dot`` only when the source changed.

    Raises:
        OSError, subprocess.SubprocessError: ``dot`` could not be run or failed.
    """
    outdir.mkdir(parents=True, exist_ok=True)
    svg_name, dot_name = _names(flow)
    dot_file = outdir / dot_name
    svg_file = outdir / svg_name
    # The DOT file, stamped with the program that rendered it, marks the SVG
    # as up to date.
    stamped = f"// rendered with {dot}\n{source}"
    previous = dot_file.read_text(encoding="utf-8") if dot_file.exists() else None
    if previous == stamped and svg_file.exists():
        return svg_file
    tmp_file = svg_file.with_suffix(".svg.tmp")
    try:
        subprocess.run(
            [dot, "-Tsvg", "-o", str(tmp_file)],
            input=source.encode("utf-8"),
            check=True,
            capture_output=True,
            timeout=DOT_TIMEOUT,
        )
        tmp_file.replace(svg_file)
    finally:
        tmp_file.unlink(missing_ok=True)
    # Written last: a failed run leaves no stale "up to date" marker behind.
    dot_file.write_text(stamped, encoding="utf-8")
    return svg_file


class LifecycleDiagram(SphinxDirective):
    """``.. lifecycle-diagram::`` (options ``:alt:`` and ``:caption:``)."""

    has_content = False
    option_spec = {
        "alt": directives.unchanged,
        "caption": directives.unchanged,
        "flow": lambda name: directives.choice(name, tuple(FLOWS)),
    }

    def run(self) -> list[nodes.Node]:
        _note_code_dependencies(self)
        lifecycle = ironic_fsm.LIFECYCLE
        flow = self.options.get("flow")
        shown = FLOWS[flow] if flow else None
        alt = self.options.get("alt") or (
            f"State diagram of {flow}: {', '.join(shown)}"
            if shown
            else f"State diagram of the ironic_fsm lifecycle: {len(lifecycle.states)} states, "
            f"{len(lifecycle.events)} events, {len(lifecycle.transitions)} transitions"
        )
        dot = self.config.lifecycle_diagram_dot_path
        if dot:
            outdir = Path(self.env.srcdir) / GENERATED_DIR
            try:
                source = lifecycle.to_dot(shown)
                if shown:
                    # A flow drawn top to bottom is 450-650 pt wide, left to right twice
                    # that: at the page's width its labels then read at their own size.
                    source = source.replace("rankdir=LR;", "rankdir=TB;", 1)
                _render_svg(dot, source, outdir, flow)
            except (OSError, subprocess.SubprocessError) as exc:
                detail = getattr(exc, "stderr", None) or b""
                LOG.warning(
                    "lifecycle-diagram: %s failed (%s%s); showing Mermaid text instead",
                    dot,
                    exc,
                    f": {detail.decode(errors='replace').strip()}" if detail else "",
                    location=self.get_location(),
                )
            else:
                return [self._figure(alt, flow)]
        return self._transitions(shown) if shown else self._mermaid()

    def _figure(self, alt: str, flow: str | None) -> nodes.Node:
        # A leading "/" makes the URI relative to the source directory.
        uri = f"/{GENERATED_DIR}/{_names(flow)[0]}"
        # Scaled to the page width; the HTML builder links it to the full-size file.
        image = nodes.image(uri=uri, alt=alt, width="100%")
        figure = nodes.figure("", classes=["lifecycle-diagram"])
        figure += image
        default = (
            f"{flow.capitalize()}, drawn from ironic_fsm.LIFECYCLE when these pages were "
            "built. Stable states have a bold border."
            if flow
            else "The whole lifecycle, drawn from ironic_fsm.LIFECYCLE when these pages were "
            "built (open the image for its full size). Stable states have a bold border."
        )
        caption = self.options.get("caption", default)
        figure += nodes.caption(caption, caption)
        return figure

    def _transitions(self, shown: tuple[str, ...]) -> list[nodes.Node]:
        """Without Graphviz, a flow's transitions as a table: readable, unlike raw text."""
        drawn = set(shown)
        rows = [
            [_entry(nodes.literal(name, name)) for name in (source, event, dest)]
            for source, event, dest in ironic_fsm.LIFECYCLE.transitions
            if source in drawn and dest in drawn
        ]
        return [_table(["From", "Event", "To"], rows, [3, 2, 3])]

    def _mermaid(self) -> list[nodes.Node]:
        text = ironic_fsm.LIFECYCLE.to_mermaid().rstrip("\n")
        note = nodes.note()
        para = nodes.paragraph()
        para += nodes.Text(
            "Graphviz was not available when these pages were built, so the diagram "
            "is shown as the Mermaid text of "
        )
        para += nodes.literal("LIFECYCLE.to_mermaid()", "LIFECYCLE.to_mermaid()")
        para += nodes.Text(" (paste it into any Mermaid viewer). With the Graphviz ")
        para += nodes.literal("dot", "dot")
        para += nodes.Text(" program on PATH, the build renders ")
        para += nodes.literal("LIFECYCLE.to_dot()", "LIFECYCLE.to_dot()")
        para += nodes.Text(" as an SVG image here instead.")
        note += para
        block = nodes.literal_block(text, text, classes=["lifecycle-diagram"])
        block["language"] = "text"
        return [note, block]


# -- the tables -----------------------------------------------------------------------


class LifecycleTable(SphinxDirective):
    """``.. lifecycle-table::``: every state of :data:`ironic_fsm.LIFECYCLE`."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        _note_code_dependencies(self)
        lifecycle = ironic_fsm.LIFECYCLE
        constants = _state_constants()
        rows = []
        for state in lifecycle.states:
            target = lifecycle.default_target(state)
            constant = constants.get(state)
            rows.append(
                [
                    _entry(nodes.literal(state, state)),
                    _entry(nodes.literal(constant, constant) if constant else "-"),
                    _entry("yes" if lifecycle.is_stable(state) else "no"),
                    _entry(_state_kind(state)),
                    _entry(nodes.literal(target, target) if target else "-"),
                    _entry(*_literal_list(lifecycle.allowed_events(state))),
                ]
            )
        headers = ["State", "Constant", "Stable", "Kind", "Default target", "Accepted events"]
        return [_table(headers, rows, [14, 14, 6, 8, 12, 30])]


class LifecycleVerbs(SphinxDirective):
    """``.. lifecycle-verbs::``: the user verbs, from :data:`ironic_fsm.states.VERBS`."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        _note_code_dependencies(self)
        lifecycle = ironic_fsm.LIFECYCLE
        descriptions = self._descriptions()
        for verb in sorted(set(descriptions) - set(states.VERBS)):
            LOG.warning(
                "lifecycle-verbs: %r is described but is not in ironic_fsm.states.VERBS",
                verb,
                location=self.get_location(),
            )
        rows = []
        for verb, event in states.VERBS.items():
            accepted = [s for s in lifecycle.states if event in lifecycle.allowed_events(s)]
            description = descriptions.get(verb)
            if description is None:
                LOG.warning(
                    "lifecycle-verbs: no description for verb %r of ironic_fsm.states.VERBS",
                    verb,
                    location=self.get_location(),
                )
                description = [nodes.paragraph()]
            rows.append(
                [
                    _entry(nodes.literal(verb, verb)),
                    _entry(nodes.literal(event, event)),
                    _entry(*_literal_list(accepted)),
                    nodes.entry("", *description),
                ]
            )
        headers = ["Verb", "Event", "Accepted in", "What it does"]
        return [_table(headers, rows, [10, 9, 28, 40])]

    def _descriptions(self) -> dict[str, list[nodes.Node]]:
        holder = nodes.Element()
        self.state.nested_parse(self.content, self.content_offset, holder)
        found: dict[str, list[nodes.Node]] = {}
        for field in holder.findall(nodes.field):
            name = field[0].astext().strip()
            found[name] = list(field[1].children)
        if self.content and not found:
            LOG.warning(
                "lifecycle-verbs: the content must be a field list (:verb: description)",
                location=self.get_location(),
            )
        return found


def _resolve_dot(app: Sphinx, config: Config) -> None:
    # Resolved once per build and kept as an "env" config value: when dot
    # appears on or disappears from PATH, Sphinx sees a changed configuration
    # and re-reads the pages, so the diagram switches between SVG and text.
    program = config.lifecycle_diagram_dot
    config.lifecycle_diagram_dot_path = (shutil.which(program) if program else None) or ""


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("lifecycle_diagram_dot", "dot", "env", [str])
    app.add_config_value("lifecycle_diagram_dot_path", "", "env", [str])
    app.connect("config-inited", _resolve_dot)
    app.add_directive("lifecycle-diagram", LifecycleDiagram)
    app.add_directive("lifecycle-table", LifecycleTable)
    app.add_directive("lifecycle-verbs", LifecycleVerbs)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
