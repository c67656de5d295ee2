"""Layers point one way (README, "Architecture"), read from the import statements themselves.

Each subpackage of memlab imports only the layers below it; task graphs and trees depend only on
the errors; the grader depends on no algorithm; no algorithm imports a drawing or widget library;
``import memlab`` stays headless.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "memlab"
#: The layers, lowest first: a module may import its own layer and any layer before it.
LAYERS = ["errors", "graph", "memory", "cuda", "execute", "checkpoint", "models", "testing", "viz"]
#: Packages beside the stack, with everything they may import.
BESIDE = {"scheduling": {"errors", "scheduling"}, "grading": {"errors", "grading"},
          "cli": {"errors", "cli", "grading"}, "__main__": {"cli"}, "__init__": None}
DRAWING = {"matplotlib", "ipywidgets", "graphviz", "IPython"}


def imports(path: Path, text: str | None = None) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    package = path.relative_to(PKG.parent).with_suffix("").parts[:-1]
    names = set()
    for node in ast.walk(ast.parse(path.read_text() if text is None else text)):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = list(package[:len(package) - node.level + 1]) if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            names.add(mod)
            if not node.module:
                names |= {f"{mod}.{a.name}" for a in node.names}
    return names


def layer_of(path: Path) -> str:
    """The layer (first component under memlab/) a module belongs to."""
    part = path.relative_to(PKG).parts[0]
    return part[:-3] if part.endswith(".py") else part


def allowed(layer: str) -> set[str] | None:
    """Layers ``layer`` may import (None: anything, for memlab/__init__.py)."""
    if layer in BESIDE:
        return BESIDE[layer]
    return set(LAYERS[:LAYERS.index(layer) + 1]) | {"scheduling"}


MODULES = sorted(PKG.rglob("*.py"))


def test_every_module_belongs_to_a_layer():
    unknown = {layer_of(p) for p in MODULES} - set(LAYERS) - set(BESIDE)
    assert not unknown, f"add {unknown} to LAYERS or BESIDE in tests/test_layers.py"


#: Grading modules that never run in the grader's process: the judge (its own process, running the
#: hidden tests) and the call server (in the student's kernel) rebuild graphs with memlab's
#: constructors and apply memlab.testing.forbid, so they may import those layers.
OUTSIDE_THE_GRADER = {"grading/judge.py": {"errors", "grading", "graph", "testing"},
                      "grading/callserver.py": {"errors", "grading", "graph", "testing"},
                      "grading/watch.py": {"errors", "grading", "testing"}}
#: The seams between grading's processes: what each side may import of memlab.grading.  The kernel
#: side (one module, loaded into the student's kernel) and the wire format import nothing of the
#: grader; the judge only the kernel side's server (for trial runs), the wire format and its policy.
WIRE = {"codec", "frames", "text"}
GRADING_SEAMS = {"callserver": WIRE | {"watch"}, "watch": set(), "codec": set(), "frames": {"codec"}, "text": set(),
                 "judge": WIRE | {"callserver", "policy", "verdicts"}, "policy": {"text"},
                 "verdicts": {"text"}}
KERNEL_SIDE = {"callserver", "watch", "judge"}           # never imported by the grader's own modules


def violations(path: Path, text: str | None = None) -> set[str]:
    """Layers that ``path`` imports but may not."""
    ok = OUTSIDE_THE_GRADER.get(str(path.relative_to(PKG))) or allowed(layer_of(path))
    if ok is None:
        return set()
    used = {i.split(".")[1] for i in imports(path, text) if i.startswith("memlab.")}
    return {u for u in used} - ok


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_point_down(path):
    bad = violations(path)
    assert not bad, (f"{path.relative_to(PKG)} (layer {layer_of(path)!r}) imports {sorted(bad)}; "
                     f"it may import only {sorted(allowed(layer_of(path)))}")


def test_the_rule_catches_an_upward_import():
    """The check is live: memory importing viz, or scheduling importing the graph, fails."""
    assert violations(PKG / "memory" / "planner.py", "from ..viz import draw_graph\n") == {"viz"}
    assert violations(PKG / "scheduling" / "liu.py", "import memlab.graph\n") == {"graph"}
    assert violations(PKG / "grading" / "grade.py", "from ..memory import plan_memory\n") \
        == {"memory"}
    assert violations(PKG / "memory" / "planner.py", "from ..graph import Node\n") == set()


@pytest.mark.parametrize("path", [p for p in MODULES if layer_of(p) != "viz"],
                         ids=lambda p: str(p.relative_to(PKG)))
def test_algorithms_do_not_import_drawing_libraries(path):
    bad = {i for i in imports(path) if i.split(".")[0] in DRAWING}
    assert not bad, f"{path.name} imports {bad}: drawing belongs in memlab/viz"


def test_no_import_cycles_between_modules():
    imported = {p: imports(p) for p in MODULES}  # parse each module once
    graph = {p: {q for q in MODULES if _module_name(q) in imported[p] and q != p} for p in MODULES}
    state: dict[Path, int] = {}

    def visit(p, stack):
        state[p] = 1
        for q in graph[p]:
            if state.get(q) == 1:
                cycle = stack[stack.index(q):] + [q]
                pytest.fail("import cycle: " + " -> ".join(_module_name(c) for c in cycle))
            if q not in state:
                visit(q, stack + [q])
        state[p] = 2

    for p in MODULES:
        if p not in state:
            visit(p, [p])


def _module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_import_memlab_is_headless_and_light():
    code = ("import sys, memlab; bad = [m for m in ('matplotlib', 'ipywidgets', 'graphviz', 'numba') "
            "if m in sys.modules]; print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "", f"import memlab pulled in {out}"


def test_no_jslink_in_widgets():
    for p in (PKG / "viz").glob("*.py"):
        text = p.read_text()
        assert "widgets.jslink" not in text and "jslink(" not in text, f"{p.name} uses jslink"


def _grading_imports(path: Path, text: str | None = None) -> set[str]:
    return {i.split(".")[2] for i in imports(path, text)
            if i.startswith("memlab.grading.") and len(i.split(".")) > 2}


@pytest.mark.parametrize("name", sorted(GRADING_SEAMS))
def test_grading_processes_meet_only_at_their_seams(name):
    """The kernel side and the wire format import nothing of the grader; the judge imports only
    the kernel side's server, the wire format and its policy."""
    bad = _grading_imports(PKG / "grading" / f"{name}.py") - GRADING_SEAMS[name] - {name}
    assert not bad, f"grading/{name}.py imports grading's {sorted(bad)}: beyond its seam"


def test_the_grader_never_imports_the_judge_or_the_kernel_side():
    """The grader starts the judge and the kernel side as processes; it never imports them (the
    kernel side would bring memlab's algorithms into the grader)."""
    for p in sorted((PKG / "grading").glob("*.py")):
        if p.stem in KERNEL_SIDE or p.stem in GRADING_SEAMS:
            continue
        bad = _grading_imports(p) & KERNEL_SIDE
        assert not bad, f"grading/{p.name} imports {sorted(bad)}"


def test_the_seam_rule_catches_a_crossing():
    assert _grading_imports(PKG / "grading" / "callserver.py", "from .session import Session\n") == \
        {"session"}


def test_no_grading_module_is_over_about_400_lines():
    long = {p.name: n for p in (PKG / "grading").glob("*.py")
            if (n := len(p.read_text().splitlines())) > 420}
    assert not long, f"split these grading modules: {long}"
