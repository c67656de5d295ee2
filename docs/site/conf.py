"""Sphinx configuration of the course website (`make site`; scripts/site.py stages the pages).

MyST-NB renders the stored lesson notebooks without executing them. Widgets show
their static flipbook (the ``text/html`` each memlab stepper and slider carries)
instead of the widget view, so the site needs no kernel and loads no script
from outside: no ipywidgets bundle, no math script (formulas are MathML). What a page
loads is then cut to what it uses (scripts/site_assets.py, after the build).
"""
import json
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

project = "memlab"
author = "the memlab authors"
copyright = "memlab authors; slides and notes credited on each page"
extensions = ["myst_nb", "sphinx.ext.autodoc"]
# Formulas as MathML, written when the site is built (latex2mathml): browsers draw MathML
# themselves, so a page loads no math script (MathJax's smallest set of components weighed
# 0.8 MB, more than most pages' text and pictures together).
html_math_renderer = "mathml"
exclude_patterns = ["_build", "**.ipynb_checkpoints", "downloads"]
html_theme = "sphinx_book_theme"
html_title = "memlab: how deep-learning and task-graph systems save memory"
html_static_path = ["_static"]
html_css_files = ["memlab.css"]
html_js_files = ["memlab.js"]   # the sidebar buttons shown reach the theme (see the file)
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,   # exercises have their own download link
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "navigation_with_keys": False,
}
# One search box: the header's button (the sidebar's field would be a second one).
html_sidebars = {"**": ["navbar-logo.html", "sbt-sidebar-nav.html"]}
html_last_updated_fmt = None
html_context = {"default_mode": "light"}
html_favicon = "_static/favicon.svg"
html_copy_source = False          # no .ipynb/.md sources beside the pages (exercises have downloads)
html_show_sourcelink = False

# Notebooks: as stored; the flipbook (text/html) instead of the widget view; no widget scripts.
nb_execution_mode = "off"
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
nb_ipywidgets_js = {}
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "colon_fence"]
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header", "misc.highlighting_failure"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"undoc-members": False}

# Each API entry ends with the lessons that use it (scripts/site.py writes the map).
_USAGE = os.path.join(os.path.dirname(__file__), "usage.json")
USED_IN = json.load(open(_USAGE)) if os.path.exists(_USAGE) else {}


def _used_in(app, what, name, obj, options, lines):
    lessons = USED_IN.get(name)
    if lessons:
        refs = ", ".join(f":doc:`/lessons/{stem}`" for stem in lessons)
        lines.extend(["", f"**Used in:** {refs}"])


def _mathml(self, node):
    """Write a formula (a ``math`` or ``math_block`` node) as MathML."""
    from docutils import nodes
    from latex2mathml.converter import convert
    block = isinstance(node, nodes.math_block)
    markup = _tight_scripts(convert(node.astext(), display="block" if block else "inline"))
    self.body.append(f'<div class="math">{markup}</div>' if block else markup)
    raise nodes.SkipNode


def _tight_scripts(markup):
    """MathML whose operators in a sub- or superscript have no space around them, as TeX sets
    them (the TeXbook, ch. 18, the table of spacing between atoms: an operator's or a relation's
    space only in display and text styles): ``x_{i+1}`` reads as one subscript."""
    import xml.etree.ElementTree as ET
    ns = "{http://www.w3.org/1998/Math/MathML}"
    ET.register_namespace("", ns[1:-1])
    root = ET.fromstring(markup)
    for script in root.iter():
        if script.tag in (ns + "msub", ns + "msup", ns + "msubsup"):
            for part in list(script)[1:]:
                for mo in part.iter(ns + "mo"):
                    mo.set("lspace", mo.get("lspace", "0"))
                    mo.set("rspace", mo.get("rspace", "0"))
    return ET.tostring(root, encoding="unicode")


def setup(app):
    app.connect("autodoc-process-docstring", _used_in)
    app.add_html_math_renderer("mathml", (_mathml, None), (_mathml, None))
