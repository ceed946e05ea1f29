"""Sphinx configuration for the ironic_fsm documentation.

Build with (warnings are errors)::

    sphinx-build -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
# Document the checked-out sources, not whatever copy happens to be installed,
# and make the local extensions importable.
sys.path.insert(0, str(DOCS.parent))
sys.path.insert(0, str(DOCS / "_ext"))

import ironic_fsm  # noqa: E402  (needs the path set up above)

# -- project -------------------------------------------------------------------

project = "ironic_fsm"
author = "The ironic_fsm developers"
copyright = "The ironic_fsm developers"
release = ironic_fsm.__version__
version = ".".join(release.split(".")[:2])

# -- general -------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    # The ">>>" examples are real: sphinx-build -b doctest docs docs/_build/doctest
    "sphinx.ext.doctest",
    # Local: state diagram and state/verb tables generated from LIFECYCLE.
    "lifecycle_diagram",
    # Local: autodoc rendering fixes, constants and the Config options table.
    "apidoc_helpers",
    # Local: driver_info and step tables generated from each hardware type.
    "driver_reference",
]

# No network access at build time: intersphinx stays off.
nitpicky = False
exclude_patterns = ["_build", "_generated", "Thumbs.db", ".DS_Store"]
# "default" is Python 3 that quietly falls back to plain text: docstrings show
# text diagrams (the exception tree) in "::" blocks, which are not Python.
highlight_language = "default"
pygments_style = "sphinx"

# -- autodoc / napoleon ----------------------------------------------------------

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_class_signature = "mixed"
autodoc_preserve_defaults = True

napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_include_init_with_doc = False
napoleon_use_rtype = False

# -- lifecycle_diagram ------------------------------------------------------------

# The Graphviz program used to render the state diagram as SVG. When it is not
# on PATH (or this is empty) the diagram is shown as Mermaid text instead.
lifecycle_diagram_dot = "dot"

# -- HTML --------------------------------------------------------------------------

html_theme = "alabaster"
html_title = f"ironic_fsm {release}"
html_theme_options = {
    "description": "OpenStack Ironic's node lifecycle: a library, a service and its API",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "230px",
}
html_sidebars = {
    "**": ["about.html", "navigation.html", "relations.html", "searchbox.html"],
}
