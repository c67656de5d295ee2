"""Layers point one way: algorithms never import drawing or widget libraries; trees and
task graphs do not depend on the op graph; the grader does not depend on the algorithms."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "memlab"
DRAWING = {"matplotlib", "ipywidgets", "graphviz", "IPython"}
OP_GRAPH = {"graph", "ops", "autodiff", "executor"}
TREE_MODULES = ["trees", "treebase", "postorder", "liu", "treegen", "assembly", "treesim", "mapping",
                "trees_table", "taskgraph", "listsched", "timeline"]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            names.add(("." * node.level) + mod)
            if node.level and not mod:
                names |= {"." + a.name for a in node.names}
    return names


def _algorithm_modules():
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG).parts
        if rel[0] in ("viz", "grading") or p.name in ("cli.py", "__main__.py"):
            continue
        yield p


@pytest.mark.parametrize("path", list(_algorithm_modules()), ids=lambda p: str(p.relative_to(PKG)))
def test_algorithms_do_not_import_drawing_libraries(path):
    bad = {i for i in _imports(path) if i.split(".")[0] in DRAWING}
    assert not bad, f"{path.name} imports {bad}: drawing belongs in memlab/viz"


@pytest.mark.parametrize("name", [m for m in TREE_MODULES if (PKG / f"{m}.py").exists()])
def test_trees_and_task_graphs_do_not_use_the_op_graph(name):
    imports = _imports(PKG / f"{name}.py")
    bad = {i for i in imports if i.lstrip(".").split(".")[0] in OP_GRAPH and i.startswith(".")}
    bad |= {i for i in imports if i.startswith("memlab.") and i.split(".")[1] in OP_GRAPH}
    assert not bad, f"{name}.py imports {bad}"


def test_grader_does_not_use_the_algorithms():
    files = list((PKG / "grading").glob("*.py")) + [PKG / "cli.py"]
    for path in [f for f in files if f.exists()]:
        for i in _imports(path):
            parts = i.lstrip(".").split(".")
            assert not (i.startswith("..") and parts[0] not in ("errors", "grading")), f"{path.name} imports {i}"
            assert not (i.startswith("memlab.") and parts[1] not in ("errors", "grading")), f"{path.name} imports {i}"


def test_import_memlab_is_headless_and_light():
    code = ("import sys, memlab; bad = [m for m in ('matplotlib', 'ipywidgets', 'graphviz', 'numba') "
            "if m in sys.modules]; print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"import memlab pulled in {out}"


def test_no_jslink_in_widgets():
    for p in (PKG / "viz").glob("*.py"):
        assert "widgets.jslink" not in p.read_text() and "jslink(" not in p.read_text(), f"{p.name} uses jslink"
