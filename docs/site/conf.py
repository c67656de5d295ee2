"""Sphinx configuration of the course website (`make site`; scripts/site.py stages the pages).

MyST-NB renders the stored lesson notebooks without executing them. Widgets show
their static flipbook (the ``text/html`` each memlab stepper and slider carries)
instead of the widget view, so the site needs no kernel and loads no script
from outside: no ipywidgets bundle, MathJax served from the site itself.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))

project = "memlab"
author = "the memlab authors"
copyright = "memlab authors; slides and notes credited on each page"
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.mathjax"]
# MathJax from the site itself: the copy the sphinx-mathjax-offline package ships (copied at the
# end of the build, less what no page loads; see _mathjax below). Its own extension would make
# Sphinx read the pages one at a time.
# Only the components the pages need (TeX input with AMS, HTML output): a third less than the
# tex-chtml.js bundle, which also carries what no page here uses.
mathjax_path = "mathjax/startup.js"
mathjax3_config = {"loader": {"load": ["input/tex-base", "[tex]/ams", "[tex]/newcommand",
                                       "[tex]/noundefined", "output/chtml"]},
                   "tex": {"packages": {"[+]": ["ams", "newcommand", "noundefined"]}}}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "downloads"]
html_theme = "sphinx_book_theme"
html_title = "memlab: how deep-learning and task-graph systems save memory"
html_static_path = ["_static"]
html_css_files = ["memlab.css"]
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


# MathJax as vendored, less what a page never loads here (other bundles, SVG output, speech).
_MATHJAX_UNUSED = ["sre", "output/svg", "output/svg.js", "node-main.js", "tex-svg.js",
                   "tex-svg-full.js", "tex-mml-svg.js", "tex-mml-chtml.js", "mml-svg.js",
                   "mml-chtml.js", "tex-chtml-full.js", "tex-chtml-full-speech.js",
                   "tex-chtml.js"]


def _mathjax(app, exc):
    import importlib.util
    import shutil
    if exc is not None:
        return
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    source = os.path.join(os.path.dirname(spec.origin), "static", "mathjax")
    root = os.path.join(app.outdir, "_static", "mathjax")
    shutil.copytree(source, root, dirs_exist_ok=True)
    for rel in _MATHJAX_UNUSED:
        path = os.path.join(root, rel)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)


# The theme's icons come from Font Awesome's whole script (1.5 MB, more than a lesson page); the
# few it shows here are drawn with characters instead (_static/memlab.css, .fa-* rules).
_FONTAWESOME = re.compile(r'<script[^>]*fontawesome\.js[^>]*>\s*</script>\s*')


def _no_fontawesome(app, exc):
    if exc is not None:
        return
    for folder, _, files in os.walk(app.outdir):
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(".html"):
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                if "fontawesome" in text:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(_FONTAWESOME.sub("", text))
            elif name.startswith("fontawesome") and name.endswith((".js", ".js.map", ".txt")):
                os.remove(path)


def setup(app):
    app.connect("autodoc-process-docstring", _used_in)
    app.connect("build-finished", _mathjax)
    app.connect("build-finished", _no_fontawesome)
