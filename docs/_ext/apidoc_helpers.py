"""Small autodoc helpers for the ironic_fsm API pages.

They change how the documentation renders the code, never the code:

* Module constants without a ``#:`` comment (``states.ENROLL``, ...) are
  skipped by autodoc even with ``:undoc-members:``. The directive
  ``.. module-constants:: <module>`` (options ``:match:`` and ``:exclude:``,
  regular expressions on the name) documents exactly those, with their
  values, so that nothing is listed by hand.
* Napoleon reads a one-line attribute comment such as ``#: The ``* failed``
  states: a flow stopped`` as ``type: description``. Data and attribute
  docstrings whose first line has a colon are kept away from napoleon.
* attrs classes get ``attr_dict['x'].default`` and ``NOTHING`` in their
  signatures; they are replaced by the real default, or ``<factory>`` like
  dataclasses show it.
* ``step_definitions``, re-set on every interface subclass, is documented on
  :class:`ironic_fsm.interfaces.BaseInterface` only.
* A method decorated as a step gets a short summary of each declaration
  (phase, priority, abortable, ramdisk, arguments) appended to its docstring.
* ``.. config-options::`` tabulates the fields of :class:`ironic_fsm.Config`
  with their defaults. Its content is a field list with one description per
  option; an option it does not describe uses its ``#:`` comment in the
  code, and an option described nowhere, or an unknown one, is a build
  warning.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

import attrs
from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from ironic_fsm.config import Config
from ironic_fsm.interfaces import BaseInterface
from ironic_fsm.steps import PHASES, step_infos

LOG = logging.getLogger(__name__)


# -- module constants -----------------------------------------------------------------


def _constant_names(module: Any) -> list[str]:
    """Public data names of ``module`` that autodoc would not document by itself.

    Public means listed in ``__all__`` or, without one, an upper-case name.
    Names with a ``#:`` comment are left to autodoc, and so are classes,
    functions and modules.
    """
    documented = {name for (_, name) in ModuleAnalyzer.for_module(module.__name__).find_attr_docs()}
    public = getattr(module, "__all__", None)
    names = []
    for name, value in vars(module).items():
        if (name not in public) if public is not None else not name.isupper():
            continue
        if name in documented:
            continue
        if inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value):
            continue
        names.append(name)
    return names


class ModuleConstants(SphinxDirective):
    """``.. module-constants:: ironic_fsm.states``."""

    required_arguments = 1
    option_spec = {
        "match": directives.unchanged,
        "exclude": directives.unchanged,
    }

    def run(self) -> list[nodes.Node]:
        modname = self.arguments[0]
        module = importlib.import_module(modname)
        match = re.compile(self.options.get("match", ""))
        exclude = re.compile(self.options["exclude"]) if "exclude" in self.options else None
        names = [
            n
            for n in _constant_names(module)
            if match.search(n) and not (exclude and exclude.search(n))
        ]
        if not names:
            LOG.warning(
                "module-constants: no constants of %s match", modname, location=self.get_location()
            )
            return []
        source = self.get_source_info()
        lines = StringList()
        for name in names:
            lines.append(f".. autodata:: {modname}.{name}", *source)
            lines.append("", *source)
        holder = nodes.Element()
        self.state.nested_parse(lines, self.content_offset, holder)
        return holder.children


# -- autodoc event handlers --------------------------------------------------------------


# Napoleon splits the first line of a data/attribute docstring on its first
# colon into "type: description" (``#: The ``* failed`` states: a flow ...``
# would become a type). Such docstrings are hidden from napoleon and put back
# after it ran; ironic_fsm takes types from annotations, never from text.
_HIDDEN_FROM_NAPOLEON: dict[str, list[str]] = {}


def _hide_attribute_summary(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    if what in ("data", "attribute") and lines and ":" in lines[0]:
        _HIDDEN_FROM_NAPOLEON[name] = list(lines)
        lines.clear()


def _restore_attribute_summary(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    hidden = _HIDDEN_FROM_NAPOLEON.pop(name, None)
    if hidden is not None:
        lines[:] = hidden


_DEFAULT_EXPR = re.compile(r"attr_dict\['(\w+)'\]\.default")


def _factory_text(factory: Any) -> str:
    if isinstance(factory, attrs.Factory) and factory.factory in (dict, list, tuple, set):
        return repr(factory.factory())
    return "..."


def _attrs_signature(
    app: Sphinx,
    what: str,
    name: str,
    obj: Any,
    options: Any,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[str, str | None] | None:
    if what != "class" or not signature or not attrs.has(obj):
        return None
    if "attr_dict[" not in signature and "NOTHING" not in signature:
        return None
    fields = {f.alias or f.name: f for f in attrs.fields(obj) if f.init}

    def plain_default(match: re.Match[str]) -> str:
        field = fields.get(match.group(1))
        return repr(field.default) if field is not None else match.group(0)

    signature = _DEFAULT_EXPR.sub(plain_default, signature)
    # Fields with a factory show NOTHING, in parameter order.
    for param in inspect.signature(obj).parameters.values():
        field = fields.get(param.name)
        if field is not None and isinstance(field.default, attrs.Factory):
            signature = signature.replace("= NOTHING", f"= {_factory_text(field.default)}", 1)
    return signature, return_annotation


def _skip_redeclared_step_definitions(
    app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any
) -> bool | None:
    # __init_subclass__ gives every interface class its own step_definitions;
    # the attribute is described once, on BaseInterface.
    if name == "step_definitions" and obj is not BaseInterface.step_definitions:
        return True
    return None


def _describe_steps(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    if what != "method":
        return
    infos = step_infos(obj)
    if not infos:
        return
    lines.extend(["", ".. rubric:: Step declarations", ""])
    for phase in PHASES:
        info = infos.get(phase)
        if info is None:
            continue
        facts = [f"priority {info.priority}"]
        if phase != "verify":
            facts.append("abortable" if info.abortable else "not abortable")
        if phase in ("clean", "service"):
            facts.append("needs the ramdisk" if info.requires_ramdisk else "no ramdisk needed")
        lines.append(f"* **{phase} step**: {', '.join(facts)}.")
        if info.argsinfo:
            lines.append("")
            for arg, spec in info.argsinfo.items():
                required = "required" if spec.get("required") else "optional"
                lines.append(f"  * ``{arg}`` ({required}): {spec.get('description', '')}")
            lines.append("")
    lines.append("")


def _drop_type_docstring(
    app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    # An undocumented constant would show the docstring of its type (str, ...).
    if what in ("data", "attribute") and lines:
        type_doc = inspect.getdoc(type(obj))
        if type_doc and "\n".join(lines).strip() == type_doc.strip():
            lines.clear()


# -- configuration options ------------------------------------------------------------------


def _default_text(field: attrs.Attribute[Any]) -> str:
    default = field.default
    if isinstance(default, attrs.Factory):
        factory = default.factory
        if factory in (dict, list, tuple, set, frozenset):
            return repr(factory())
        return f"{factory.__module__.lstrip('_')}.{factory.__qualname__}()"
    if field.converter is not None and default is not attrs.NOTHING:
        default = field.converter(default)  # e.g. the disallow lists become tuples
    return repr(default)


class ConfigOptions(SphinxDirective):
    """``.. config-options::``: every :class:`~ironic_fsm.Config` option, with its default."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        holder = nodes.Element()
        self.state.nested_parse(self.content, self.content_offset, holder)
        described = {
            field[0].astext().strip(): list(field[1].children)
            for field in holder.findall(nodes.field)
        }
        fields = attrs.fields(Config)
        names = {f.name for f in fields}
        for extra in sorted(set(described) - names):
            LOG.warning(
                "config-options: %r is not a Config option", extra, location=self.get_location()
            )
        table = nodes.table(classes=["config-options"])
        group = nodes.tgroup(cols=3)
        table += group
        for width in (36, 20, 44):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        head += nodes.row(
            "",
            *(nodes.entry("", nodes.paragraph(text=t)) for t in ("Option", "Default", "Meaning")),
        )
        group += head
        body = nodes.tbody()
        group += body
        comments = ModuleAnalyzer.for_module(Config.__module__).find_attr_docs()
        for field in fields:
            description = described.get(field.name)
            if description is None:
                # Fall back to the option's "#:" comment in the code.
                comment = comments.get(("Config", field.name))
                if comment:
                    description = self.parse_text_to_nodes("\n".join(comment))
            if description is None:
                LOG.warning(
                    "config-options: no description for Config.%s, here or in the code",
                    field.name,
                    location=self.get_location(),
                )
                description = [nodes.paragraph()]
            default = _default_text(field)
            body += nodes.row(
                "",
                nodes.entry("", nodes.paragraph("", "", nodes.literal(field.name, field.name))),
                nodes.entry("", nodes.paragraph("", "", nodes.literal(default, default))),
                nodes.entry("", *description),
            )
        return [table]


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("sphinx.ext.autodoc")
    app.add_directive("module-constants", ModuleConstants)
    app.add_directive("config-options", ConfigOptions)
    # Before napoleon (priority 500) reads the docstring, and after it.
    app.connect("autodoc-process-docstring", _drop_type_docstring, priority=300)
    app.connect("autodoc-process-docstring", _hide_attribute_summary, priority=400)
    app.connect("autodoc-process-docstring", _restore_attribute_summary, priority=550)
    app.connect("autodoc-process-docstring", _describe_steps, priority=600)
    app.connect("autodoc-process-signature", _attrs_signature)
    app.connect("autodoc-skip-member", _skip_redeclared_step_definitions)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
