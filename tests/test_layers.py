"""Layers point one way (README, "Architecture"), read from the import statements themselves.

Each subpackage of memlab imports only the layers below it; task graphs and trees depend only on
the errors and the registry of plain-data codecs; the grader depends on no algorithm (it meets the
library only at the errors, the registry and ``memlab.testing``'s grading seam); no algorithm imports a drawing or widget library;
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
LAYERS = ["errors", "plaindata", "graph", "memory", "cuda", "execute", "checkpoint", "models",
          "exercise_helpers", "testing", "viz"]
#: Packages beside the stack, with everything they may import.
BESIDE = {"scheduling": {"errors", "plaindata", "scheduling"},
          "grading": {"errors", "plaindata", "grading"},
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
#: hidden tests) and the call server (in the student's kernel) record checks and apply
#: memlab.testing.forbid, so they may import memlab.testing too (only its grading seam, below).
OUTSIDE_THE_GRADER = {"grading/judge.py": {"errors", "grading", "plaindata", "testing"},
                      "grading/callserver.py": {"errors", "grading", "plaindata", "testing"},
                      "grading/arming.py": {"errors", "grading", "testing"},
                      "grading/watch.py": {"errors", "grading", "testing"}}
#: What grading uses of memlab.testing: the checks' recorder, the refusals (and, for the kernel's
#: tampering report, a refused function's own code), the CUDA probe.
TESTING_SEAM = {"check", "record_checks", "forbid", "refuse_reloads", "own_code", "cuda_probe"}
#: Everything of the library grading may import: the errors, the registry, memlab.testing.
LIBRARY_SEAM = {"memlab", "memlab.errors", "memlab.plaindata", "memlab.testing"}
#: The seams between grading's processes: what each side may import of memlab.grading.  The kernel
#: side (one module, loaded into the student's kernel) and the wire format import nothing of the
#: grader; the judge only the kernel side's server (for trial runs), the wire format and its policy.
WIRE = {"codec", "frames", "text"}
GRADING_SEAMS = {"callserver": WIRE | {"watch", "arming"}, "watch": set(), "arming": set(),
                 "codec": set(), "frames": {"codec"}, "text": set(),
                 "judge": WIRE | {"callserver", "policy", "verdicts"}, "policy": {"text"},
                 "verdicts": {"text"}}
KERNEL_SIDE = {"callserver", "watch", "arming", "judge"}   # never imported by the grader's modules


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
            if (n := len(p.read_text().splitlines())) > 400}
    assert not long, f"split these grading modules: {long}"


def library_uses(path: Path, text: str | None = None) -> set[str]:
    """What a grading module uses of memlab outside grading: the modules it imports, and
    ``memlab.testing.NAME`` for each name it imports from or reads off memlab.testing."""
    tree = ast.parse(path.read_text() if text is None else text)
    used = {i for i in imports(path, text)
            if (i == "memlab" or i.startswith("memlab.")) and not i.startswith("memlab.grading")}
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.name == "memlab.testing" and a.asname}
            aliases |= {"memlab"} & {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            mod = "memlab" if node.level == 2 and not node.module else \
                ("memlab." + node.module if node.level == 2 else node.module)
            if mod == "memlab":
                aliases |= {a.asname or a.name for a in node.names if a.name == "testing"}
            elif mod == "memlab.testing":
                used |= {f"memlab.testing.{a.name}" for a in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                node.value.id in aliases - {"memlab"}:
            used.add(f"memlab.testing.{node.attr}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and \
                isinstance(node.value.value, ast.Name) and node.value.value.id == "memlab" and \
                node.value.attr == "testing":
            used.add(f"memlab.testing.{node.attr}")
    return used


def _beyond_the_seam(used: set[str]) -> set[str]:
    return {u for u in used if u not in LIBRARY_SEAM and
            not (u.startswith("memlab.testing.") and u.split(".")[2] in TESTING_SEAM)}


@pytest.mark.parametrize("path", sorted((PKG / "grading").glob("*.py")), ids=lambda p: p.name)
def test_the_grader_meets_the_library_only_at_its_seam(path):
    """The grader reaches the library's types only through the registry of plain-data codecs
    (:mod:`memlab.plaindata`), memlab.testing's grading seam and the errors: no import of a
    structure's module, no class found by name, no module named by a string."""
    bad = _beyond_the_seam(library_uses(path))
    assert not bad, f"grading/{path.name} uses {sorted(bad)}: beyond the seam {sorted(LIBRARY_SEAM)}"
    text = path.read_text()
    assert "__subclasses__" not in text, f"grading/{path.name} searches classes"
    library = {_module_name(p) for p in MODULES if layer_of(p) not in ("grading", "cli", "__main__")}
    named = {n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant)
             and isinstance(n.value, str) and n.value in library - LIBRARY_SEAM}
    assert not named, f"grading/{path.name} names library modules by string: {sorted(named)}"


def test_the_library_seam_rule_catches_a_crossing():
    grade = PKG / "grading" / "judge.py"
    assert _beyond_the_seam(library_uses(grade, "from memlab.graph import Node\n")) == {"memlab.graph"}
    assert _beyond_the_seam(library_uses(grade, "import memlab.testing as t\nt._Refusals.hook()\n")) \
        == {"memlab.testing._Refusals"}
    assert _beyond_the_seam(library_uses(grade, "from memlab import testing\ntesting.random_graph(1)\n")) \
        == {"memlab.testing.random_graph"}
    assert _beyond_the_seam(library_uses(grade, "from memlab.testing import forbid, check\n")) == set()
    assert _beyond_the_seam(library_uses(grade, "from ..scheduling import Tree\n")) == \
        {"memlab.scheduling"}


def test_every_structure_registers_its_plain_data_codec():
    """After ``import memlab`` (which every process that grades does) the registry knows every
    structure that crosses, each a class of the library, and the graph's nodes."""
    import memlab
    from memlab import plaindata
    assert set(plaindata.kinds()) == {"tree", "taskgraph", "hetero_chain", "action"}
    assert plaindata.graph().node_type is memlab.Node
    for kind, cls in (("tree", memlab.Tree), ("taskgraph", memlab.TaskGraph),
                      ("hetero_chain", memlab.checkpoint.HeteroChain)):
        assert cls in plaindata._BY_KIND[kind].types
