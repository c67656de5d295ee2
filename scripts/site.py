"""Build the course website (`make site`): the stored lessons, the exercises and the API reference.

    python scripts/site.py [--out build/site] [--lessons 01,03,06] [--jobs 2] [--lessons-dir D]

Stages the pages in ``build/site-src`` (copies; the notebooks in ``lessons/`` and
``exercises/`` are never changed), then runs Sphinx with MyST-NB on them without
executing anything. Staging adds what a page needs and a notebook does not: the
landing page (lesson 00's course table, the sources, the two commands), a download
link on each exercise page, a line of links to the library functions a lesson
uses, and the API reference of every public name in docs/api.md's table, each
entry listing the lessons that use it.
"""
from __future__ import annotations

import argparse
import ast
import copy
import html
import importlib
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import nbformat

from memlab.viz.flipbook import flipbook_from_data
from site_assets import slim

ROOT = Path(__file__).resolve().parents[1]
SITE_CONF = ROOT / "docs" / "site"


# ---------------------------------------------------------------- public names (docs/api.md)
API_TABLE = ROOT / "docs" / "api.md"


def readme_names(readme: Path = API_TABLE) -> list[str]:
    """Dotted names (``memlab.plan_memory``, ``memlab.trees.Tree``) of the API table's rows
    (docs/api.md, "Public API")."""
    rows, inside = [], False
    for line in readme.read_text().splitlines():
        if line.startswith("| name | what it is |"):
            inside = True
            continue
        if inside and not line.startswith("|"):
            break
        if inside and not line.startswith("| ---"):
            rows.append(line.split(" | ")[0].lstrip("| "))
    names: list[str] = []
    for cell in rows:
        parent = None   # the last dotted name of the row: bare names are its members or siblings
        for span in re.findall(r"`([^`]*)`", cell):
            for k, piece in enumerate(_top_level_commas(span)):
                piece = re.sub(r"\(.*", "", piece).strip().rstrip(".")
                m = re.match(r"(?:ml|memlab)\.([A-Za-z_][\w.]*)$", piece)
                if m:
                    names.append("memlab." + m.group(1))
                    parent = names[-1]
                elif re.match(r"(models|sharing)\.[A-Za-z_]\w*$", piece):
                    names.append("memlab." + ("memory." if piece.startswith("sharing") else "")
                                 + piece)
                elif re.match(r"[A-Za-z_]\w*$", piece) and parent:
                    member, sibling = f"{parent}.{piece}", f"{parent.rsplit('.', 1)[0]}.{piece}"
                    names.append(member if k == 0 and resolve(member) is not None else sibling)
    seen, out = set(), []
    for n in names:
        if n not in seen and resolve(n) is not None:
            seen.add(n)
            out.append(n)
    return out


def _top_level_commas(span: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in span:
        depth += ch in "([" and 1 or 0
        depth -= ch in ")]" and 1 or 0
        if ch in ",/" and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return out + [cur.strip()]


def resolve(dotted: str) -> Any:
    """The object a dotted name names, or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for p in parts[cut:]:
                obj = getattr(obj, p)
        except AttributeError:
            return None
        return obj
    return None


# ---------------------------------------------------------------- which lesson uses what
def used_names(nb: Any, documented: dict[int, str]) -> list[str]:
    """Documented names a notebook's code uses (through its imports and aliases), in first use."""
    alias: dict[str, str] = {}
    found: list[str] = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("memlab"):
                        alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else "memlab"
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memlab"):
                for a in node.names:
                    alias[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in ast.walk(tree):
            chain = _dotted(node)
            if chain and chain[0] in alias:
                name = ".".join([alias[chain[0]]] + chain[1:])
                obj = resolve(name)
                if obj is not None and id(obj) in documented and documented[id(obj)] not in found:
                    found.append(documented[id(obj)])
    return found


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return None


# ---------------------------------------------------------------- pages
def api_page(names: list[str]) -> str:
    """The API reference: one autodoc entry per public name, grouped by module."""
    lines = ["# API reference", "",
             "Every public name of the library's table, from its docstring (with the slide or paper",
             "it cites) and the lessons that use it.", ""]
    groups: dict[str, list[str]] = {}
    for n in names:
        mod = getattr(resolve(n), "__module__", None) or n
        top = ".".join(mod.split(".")[:2])
        groups.setdefault(top, []).append(n)
    for top in sorted(groups):
        lines += [f"## `{top}`", ""]
        for n in groups[top]:
            obj = resolve(n)
            kind = ("automodule" if isinstance(obj, type(sys)) else
                    "autoclass" if isinstance(obj, type) else
                    "autofunction" if callable(obj) else "autodata")
            opts = "   :members:" if kind == "autoclass" and not issubclass(obj, BaseException) \
                else ""
            lines += ["```{eval-rst}", f".. {kind}:: {n}", *([opts] if opts else []), "```", ""]
    return "\n".join(lines)


def landing_page(index: Any, lesson_files: list[str], exercise_files: list[str]) -> str:
    """The landing page: title, lesson 00's course table, sources, and how to run it locally."""
    intro = index.cells[0].source
    table, sources = [], []
    for cell in index.cells:
        if cell.cell_type != "markdown":
            continue
        rows = [l for l in cell.source.splitlines() if l.startswith("|")]
        if len(rows) > len(table):
            table = rows
    table = [re.sub(r"\]\((?!\.\./|http)([^)]+\.ipynb)\)", r"](lessons/\1)", r) for r in table]
    table = [r.replace("](../exercises/", "](exercises/") for r in table]
    body = [intro, "", "## The course", "", *table, "",
            "## Run it yourself", "",
            "Every page here is a notebook stored with its outputs. To run the lessons, move the",
            "sliders with a live kernel and check your exercises, clone the repository and run:", "",
            "```", "make lab     # install from the lock file, then open JupyterLab on lesson 00",
            "make test    # install, then run every test", "```", "",
            "On this site the steppers and sliders replay frames stored with each lesson; where a",
            "slider has more positions than a page keeps, the page says so.", "",
            "```{toctree}", ":hidden:", ":caption: Lessons", "",
            *[f"lessons/{Path(f).stem}" for f in lesson_files], "```", "",
            "```{toctree}", ":hidden:", ":caption: Exercises", "",
            *[f"exercises/{Path(f).stem}" for f in exercise_files], "```", "",
            "```{toctree}", ":hidden:", ":caption: Reference", "", "api", "```", ""]
    return "\n".join(body)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
FLIPBOOK = "application/vnd.memlab.flipbook+json"     # memlab.viz.flipbook.MIME
NO_REPLAY = ('<p class="memlab-fb-note"><i>This widget is live only with a kernel: run this lesson'
             " in JupyterLab to vary it.</i></p>")


def static_widgets(nb: Any, state: dict | None = None) -> tuple[int, int]:
    """Widget outputs a page replays (memlab's flipbooks, built from the frames the notebook
    stores) and those it cannot (given a note).

    A widget with no ``text/html`` of its own (a progress bar, a plain ipywidget) keeps
    its text and gains the line saying it needs a kernel; the count is reported.
    """
    replayed = missing = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW not in data:
                continue
            plain = "".join(data.get("text/plain", ""))
            bar = re.match(r"(?:Int|Float)Progress\(value=([\d.]+).*?max=([\d.]+)", plain) or \
                re.match(r"(.*?): *\d+%\|.*\| *(\d+)/(\d+)", plain)   # tqdm's bar
            if FLIPBOOK in data:        # every frame, stored beside the notebook's preview
                data["text/html"] = flipbook_from_data(data.pop(FLIPBOOK))
                replayed += 1
            elif "memlab-flipbook" in "".join(data.get("text/html", "")):
                replayed += 1
            elif bar and bar.re.groups == 3:   # tqdm: the cell ran to its end, so did the loop
                data["text/html"] = (f'<progress value="{bar.group(3)}" max="{bar.group(3)}">'
                                     f"</progress> {html.escape(bar.group(1))} {bar.group(3)} / "
                                     f"{bar.group(3)}")
            elif bar:   # a progress bar: nothing to vary, shown as the stored state left it
                model = (state or {}).get(data[WIDGET_VIEW].get("model_id"), {}).get("state", {})
                value, top = model.get("value", bar.group(1)), model.get("max", bar.group(2))
                data["text/html"] = (f'<progress value="{value}" max="{top}"></progress> '
                                     f"{model.get('description', '')} {value} / {top}")
            else:
                missing += 1
                data["text/html"] = NO_REPLAY
    return replayed, missing


def stage_lesson(nb: Any, names: list[str], exercise: str | None) -> Any:
    """A lesson's page: the stored notebook, without widget state, with its library links."""
    nb = copy.deepcopy(nb)
    state = nb.metadata.pop("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    nb.metadata["memlab_widgets"] = static_widgets(nb, state.get("state", {}))
    if names:
        links = ", ".join(f"{{py:obj}}`~{n}`" for n in names)
        text = f"*From the library on this page:* {links}."
        if exercise:
            text += f" *Exercise:* [{Path(exercise).stem}](../exercises/{Path(exercise).name})."
        cell = nbformat.v4.new_markdown_cell(text)
        nb.cells.insert(1, cell)
    return nb


def stage_exercise(nb: Any, filename: str) -> Any:
    """An exercise's page: its instructions and a download link for the notebook."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    note = (f"{{download}}`Download this exercise ({filename}) <../downloads/{filename}>`, open it"
            " in JupyterLab,"
            " fill in the cells marked `# YOUR CODE HERE`, and check your work with "
            f"`memlab check-work {filename}`.")
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(note))
    return nb


def stage(src: Path, only: set[str] | None = None,
          lessons_dir: Path = ROOT / "lessons") -> dict[str, Any]:
    """Write the Sphinx source tree in ``src``; return what was staged."""
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(SITE_CONF, src)
    (src / "lessons").mkdir()
    (src / "exercises").mkdir()
    names = readme_names()
    documented = {id(resolve(n)): n for n in reversed(names)}
    lessons = sorted(p for p in lessons_dir.glob("*.ipynb")
                     if only is None or p.name[:2] in only or p.name.startswith("00"))
    exercises = sorted((ROOT / "exercises").glob("*.ipynb"))
    usage: dict[str, list[str]] = {}
    widgets: dict[str, tuple[int, int]] = {}
    for p in lessons:
        nb = nbformat.read(p, as_version=4)
        used = used_names(nb, documented)
        for n in used:
            usage.setdefault(n, []).append(p.stem)
        ex = next((e.name for e in exercises if e.name[:2] == p.name[:2]), None)
        staged_nb = stage_lesson(nb, used, ex)
        widgets[p.stem] = staged_nb.metadata.pop("memlab_widgets")
        nbformat.write(staged_nb, src / "lessons" / p.name)
    for p in exercises:
        nb = nbformat.read(p, as_version=4)
        nbformat.write(stage_exercise(nb, p.name), src / "exercises" / p.name)
        (src / "downloads").mkdir(exist_ok=True)
        shutil.copy(p, src / "downloads" / p.name)   # the student's notebook, as generated
    index = nbformat.read(lessons_dir / "00_index.ipynb", as_version=4)
    (src / "index.md").write_text(landing_page(index, [p.name for p in lessons if p.name[:2] != "00"]
                                               + ["00_index.ipynb"], [p.name for p in exercises]))
    (src / "api.md").write_text(api_page(names))
    (src / "usage.json").write_text(json.dumps(usage, indent=1))
    return {"lessons": [p.name for p in lessons], "exercises": [p.name for p in exercises],
            "names": names, "widgets": widgets}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "site"))
    ap.add_argument("--src", default=str(ROOT / "build" / "site-src"))
    ap.add_argument("--lessons", help="comma-separated lesson numbers (a fast subset; 00 always)")
    ap.add_argument("--jobs", default="2")
    ap.add_argument("--lessons-dir", default=str(ROOT / "lessons"),
                    help="the stored lessons to build from (default: lessons/)")
    args = ap.parse_args(argv)
    only = set(args.lessons.split(",")) if args.lessons else None
    t0 = time.time()
    staged = stage(Path(args.src), only, Path(args.lessons_dir))
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-j", args.jobs, args.src, str(out)]
    rc = subprocess.call(cmd)
    for stem, (replayed, missing) in staged["widgets"].items():
        if replayed or missing:
            print(f"  {stem}: {replayed} widget(s) replayed on the page"
                  + (f", {missing} live only in JupyterLab" if missing else ""))
    if rc == 0:
        slim(out)
        size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
        print(f"site: {len(staged['lessons'])} lessons, {len(staged['exercises'])} exercises, "
              f"{len(staged['names'])} API entries -> {out} ({size / 1e6:.1f} MB, "
              f"{time.time() - t0:.0f} s)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
