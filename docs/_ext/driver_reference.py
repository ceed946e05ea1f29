"""Sphinx directives that document a hardware type from the code itself.

Each directive takes a hardware type factory as ``module:callable`` (the
form of an entry point), imports it and calls it, so the tables show what
the conductor would load and cannot drift from the code. Calling a factory
must not need a BMC; it needs the driver's extra (``ipmi``: pyghmi,
``redfish``: sushy), and without it the directive emits a warning naming
the missing dependency.

``.. driver-interfaces:: ironic_fsm.drivers.ipmi:ipmi_hardware``
    One row per interface kind: the class that implements it (or "no-op")
    and the first line of its docstring.

``.. driver-info:: ironic_fsm.drivers.ipmi:ipmi_hardware``
    The ``driver_info`` keys the hardware type reads: the union of
    ``get_properties()`` of all its interfaces, with their descriptions.
    Keys whose values are masked as secrets are marked. Two interfaces
    describing one key differently is a build warning.

``.. driver-steps:: ironic_fsm.drivers.redfish:redfish_hardware``
    Every clean, deploy, service and verify step, from each interface's
    ``step_definitions``: phase, ``interface.step``, priority, abortable,
    whether the ramdisk is needed, and the arguments (from ``argsinfo``),
    sorted as an automated run would order them. Steps the default
    :class:`~ironic_fsm.config.Config` disallows are marked. The option
    ``:phases:`` (e.g. ``clean, service``) restricts the table. A step
    declared on an interface kind the phase never collects is a build
    warning: the conductor would never run it.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from ironic_fsm.config import Config
from ironic_fsm.exceptions import MissingDependency
from ironic_fsm.hardware import HardwareType, noop_interface
from ironic_fsm.masking import is_secret_key
from ironic_fsm.steps import INTERFACE_ORDER, PHASES, Phase, StepInfo

LOG = logging.getLogger(__name__)

_PHASES_WITH_RAMDISK = ("clean", "service")


# -- helpers ---------------------------------------------------------------------------


def _paragraph(*children: nodes.Node | str) -> nodes.paragraph:
    # The text comes from the code ({'name': ...}): no curly quotes or ellipses.
    para = nodes.paragraph(support_smartquotes=False)
    for child in children:
        para += nodes.Text(child) if isinstance(child, str) else child
    return para


def _entry(*children: nodes.Node | str) -> nodes.entry:
    return nodes.entry("", _paragraph(*children))


def _literal(text: str) -> nodes.literal:
    return nodes.literal(text, text)


def _table(
    headers: Iterable[str], rows: list[list[nodes.entry]], widths: Iterable[int], cls: str
) -> nodes.table:
    headers = list(headers)
    table = nodes.table(classes=["driver-reference", cls])
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


class _HardwareTypeDirective(SphinxDirective):
    """Common part: load the hardware type named by the argument."""

    required_arguments = 1
    has_content = False

    def load(self) -> HardwareType | None:
        target = self.arguments[0]
        modname, sep, attr = target.partition(":")
        if not sep or not modname or not attr:
            self.warn(f"{target!r} is not of the form 'module:factory'")
            return None
        try:
            module = importlib.import_module(modname)
            factory = getattr(module, attr)
            hardware_type = factory()
        except MissingDependency as exc:
            self.warn(f"cannot build {target}: {exc}")
            return None
        except Exception as exc:
            self.warn(f"cannot build {target}: {type(exc).__name__}: {exc}")
            return None
        if not isinstance(hardware_type, HardwareType):
            self.warn(f"{target} returned {type(hardware_type).__name__}, not a HardwareType")
            return None
        # Re-read the page when the driver (or any of its interfaces) changes.
        for source in {module, *(type(i) for _, i in hardware_type.interfaces())}:
            try:
                path = inspect.getsourcefile(source)
            except TypeError:
                path = None
            if path:
                self.env.note_dependency(path)
        return hardware_type

    def warn(self, message: str) -> None:
        LOG.warning("%s: %s", self.name, message, location=self.get_location())


# -- driver-interfaces --------------------------------------------------------------------


def _documented_name(cls: type, package: str) -> str:
    """Where the API reference documents ``cls``: the driver package re-exports its classes
    from one module per interface, and autodoc documents them under the package."""
    module = importlib.import_module(package)
    if getattr(module, cls.__name__, None) is cls:
        return f"{package}.{cls.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _summary(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    return doc.strip().split("\n\n", 1)[0].replace("\n", " ")


class DriverInterfaces(_HardwareTypeDirective):
    """``.. driver-interfaces:: module:factory``."""

    def run(self) -> list[nodes.Node]:
        hardware_type = self.load()
        if hardware_type is None:
            return []
        package = self.arguments[0].partition(":")[0]
        rows = []
        for kind, iface in hardware_type.interfaces():
            cls = type(iface)
            if iface is noop_interface(kind):
                rows.append([_entry(kind), _entry("(no-op)"), _entry("Not offered: does nothing.")])
                continue
            name = _documented_name(cls, package)
            xref = self.parse_text_to_nodes(f":class:`~{name}`")
            # Docstrings are reStructuredText: ``literals`` and roles render.
            summary = self.parse_text_to_nodes(_summary(cls)) or [_paragraph("")]
            rows.append([_entry(kind), nodes.entry("", *xref), nodes.entry("", *summary)])
        return [_table(["Kind", "Class", "What it does"], rows, [12, 22, 66], "driver-interfaces")]


# -- driver-info ----------------------------------------------------------------------------


class DriverInfo(_HardwareTypeDirective):
    """``.. driver-info:: module:factory``."""

    def run(self) -> list[nodes.Node]:
        hardware_type = self.load()
        if hardware_type is None:
            return []
        keys: dict[str, str] = {}
        readers: dict[str, list[str]] = {}
        for kind, iface in hardware_type.interfaces():
            for key, description in iface.get_properties().items():
                if key in keys and keys[key] != description:
                    self.warn(
                        f"{self.arguments[0]}: interfaces describe driver_info key {key!r} "
                        f"differently ({', '.join(readers[key])} vs {kind})"
                    )
                keys.setdefault(key, description)
                readers.setdefault(key, []).append(kind)
        if not keys:
            return [_paragraph("This hardware type reads no ", _literal("driver_info"), " keys.")]
        rows = []
        for key, description in keys.items():
            name: list[nodes.Node | str] = [_literal(key)]
            if is_secret_key(key):
                name.append(" (secret: masked)")
            rows.append([_entry(*name), _entry(description)])
        table = _table(["Key", "Description"], rows, [28, 72], "driver-info")
        kinds: list[str] = []
        for kind_list in readers.values():
            kinds.extend(k for k in kind_list if k not in kinds)
        note = _paragraph(f"Read by the {_join(kinds)} interface{'s' if len(kinds) > 1 else ''}.")
        return [table, note]


def _join(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} and {words[-1]}"


# -- driver-steps ----------------------------------------------------------------------------


def _phases(argument: str | None) -> tuple[Phase, ...]:
    if not argument:
        return PHASES
    wanted = [p.strip() for p in argument.replace(",", " ").split()]
    unknown = [p for p in wanted if p not in PHASES]
    if unknown:
        raise ValueError(f"unknown phase(s) {', '.join(unknown)}; known: {', '.join(PHASES)}")
    return tuple(p for p in PHASES if p in wanted)


class DriverSteps(_HardwareTypeDirective):
    """``.. driver-steps:: module:factory`` (option ``:phases:``)."""

    option_spec = {"phases": _phases}

    def run(self) -> list[nodes.Node]:
        hardware_type = self.load()
        if hardware_type is None:
            return []
        phases = self.options.get("phases", PHASES)
        defaults = Config()
        rows = []
        for phase in phases:
            order = INTERFACE_ORDER[phase]
            found: list[tuple[str, StepInfo]] = []
            for kind, iface in hardware_type.interfaces():
                for info in type(iface).step_definitions[phase]:
                    if kind not in order:
                        self.warn(
                            f"{self.arguments[0]}: {phase} step {kind}.{info.name} is declared "
                            f"on a {kind} interface, whose {phase} steps are never collected"
                        )
                        continue
                    found.append((kind, info))
            # As an automated run orders them: priority, then interface rank.
            found.sort(key=lambda item: (-item[1].priority, -order[item[0]], item[1].name))
            disallowed = set(getattr(defaults, f"disallow_{phase}_steps", ()))
            for kind, info in found:
                rows.append(self._row(phase, kind, info, disallowed))
        if not rows:
            return [_paragraph("This hardware type declares no steps.")]
        headers = ["Phase", "Step", "Priority", "Abortable", "Needs ramdisk", "Arguments"]
        return [_table(headers, rows, [8, 26, 8, 9, 8, 41], "driver-steps")]

    @staticmethod
    def _row(phase: Phase, kind: str, info: StepInfo, disallowed: set[str]) -> list[nodes.entry]:
        ident = f"{kind}.{info.name}"
        step: list[nodes.Node | str] = [_literal(ident)]
        if ident in disallowed:
            step.append(" (disallowed by default)")
        abortable = "-" if phase == "verify" else ("yes" if info.abortable else "no")
        if phase in _PHASES_WITH_RAMDISK:
            ramdisk = "yes" if info.requires_ramdisk else "no"
        else:
            ramdisk = "-"
        if info.argsinfo:
            items = nodes.bullet_list()
            for arg, spec in info.argsinfo.items():
                required = "required" if spec.get("required") else "optional"
                items += nodes.list_item(
                    "",
                    _paragraph(_literal(arg), f" ({required}): {spec.get('description', '')}"),
                )
            arguments = nodes.entry("", items)
        else:
            arguments = _entry("-")
        return [
            _entry(phase),
            _entry(*step),
            _entry(str(info.priority)),
            _entry(abortable),
            _entry(ramdisk),
            arguments,
        ]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("driver-interfaces", DriverInterfaces)
    app.add_directive("driver-info", DriverInfo)
    app.add_directive("driver-steps", DriverSteps)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
