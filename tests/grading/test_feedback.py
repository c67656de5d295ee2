"""Hidden feedback teaches without telling: every hidden check of every solution, made to fail on
purpose, names what went wrong but never the expected answer (issue 19, item 6).

Expected values in hidden tests are bound to names that start with ``want`` (docs/grading.md).  For
each assertion of a tests cell that is hidden (or inside a helper the hidden tests call), a variant of
the cell (for judge code: of its hidden part, which runs in the judge) replaces every ``want*`` value
by a look-alike made of marker values (731902467, 7319.02467,
"W4NTTOKEN"), forces that assertion to fail and lets every other assertion pass.  The solution's
answers are then graded with these variants: each must report a hidden test failure, and no marker may
reach the feedback.
"""
from __future__ import annotations

import ast
import copy
from pathlib import Path

import nbformat
import pytest

from memlab.grading import grade
from memlab.grading.authoring import tests as tests_cell
from memlab.grading.notebook import KEY, judge_code, load_solution, notebook_bytes

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = sorted(p.stem for p in (ROOT / "solutions").glob("*.ipynb"))
MARKERS = ("731902467", "731,902,467", "7319.02", "7.31902", "W4NTTOKEN")

PERTURB = '''
def _memlab_perturb(v):
    import numpy as _np
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, _np.integer)):
        return 731902467
    if isinstance(v, (float, _np.floating)):
        return 7319.02467
    if isinstance(v, str):
        return "W4NTTOKEN"
    if isinstance(v, _np.ndarray):
        return _np.full(v.shape, 7319.02467)
    if isinstance(v, dict):
        return {k: _memlab_perturb(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return type(v)(_memlab_perturb(x) for x in v)
    return v
'''


def _wants(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name) and n.id.startswith("want")]


class _Variant(ast.NodeTransformer):
    """Perturb every want* after it is bound; force assertion *k* to fail, let the others pass."""

    def __init__(self, k: int):
        self.k, self.seen = k, -1

    def visit_Assert(self, node: ast.Assert):
        self.seen += 1
        node.test = ast.Constant(self.seen != self.k)
        return node

    def _after(self, node, targets):
        self.generic_visit(node)
        names = [n for t in targets for n in _wants(t)]
        fix = [ast.parse(f"{n} = _memlab_perturb({n})").body[0] for n in dict.fromkeys(names)]
        return [node, *fix] if fix else node

    def visit_Assign(self, node):
        return self._after(node, node.targets)

    def visit_AugAssign(self, node):
        return self._after(node, [node.target])

    def visit_AnnAssign(self, node):
        return self._after(node, [node.target])


def _candidates(source: str, hidden: set[int]) -> list[int]:
    """Indices (in walk order of _Variant) of the assertions that hidden tests run."""
    tree = ast.parse(source)
    inside = {id(a) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.Lambda))
              for a in ast.walk(f) if isinstance(a, ast.Assert)}
    order = []

    class Walk(ast.NodeVisitor):
        def visit_Assert(self, node):
            order.append(node)
    Walk().visit(tree)
    return [i for i, a in enumerate(order) if a.lineno in hidden or id(a) in inside]


def _variants(exercise: str, tmp_path: Path):
    sol = load_solution(ROOT / "solutions" / f"{exercise}.ipynb")
    nb = copy.deepcopy(sol.nb)
    cells = [c for c in nb.cells if (c.metadata.get(KEY) or {}).get("kind") != "tests"]
    made = []
    for t in sol.tests:
        if not t.hidden:
            continue
        # judge code (the hidden part only: it runs in the judge) or, not yet converted, the whole
        # cell in the kernel
        source = judge_code(t.source) if t.judged else t.source
        hidden = set(range(1, source.count("\n") + 2)) if t.judged else t.hidden
        for k in _candidates(source, hidden):
            tree = _Variant(k).visit(ast.parse(source))
            src = PERTURB + ast.unparse(ast.fix_missing_locations(tree))
            vid = f"{t.id}_v{k}"
            cell = tests_cell(vid, t.question, 1, "### BEGIN HIDDEN TESTS\n" + src + "\n### END HIDDEN TESTS")
            cell["id"] = vid
            cells.append(cell)
            made.append(vid)
    nb.cells = cells
    path = tmp_path / f"{exercise}.ipynb"
    path.write_bytes(notebook_bytes(nb))
    return path, made


@pytest.mark.parametrize("exercise", SOLUTIONS)
def test_hidden_feedback_never_gives_the_expected_answer(exercise, tmp_path):
    variants, made = _variants(exercise, tmp_path)
    assert made, f"{exercise}: no hidden assertion found"
    r = grade(ROOT / "solutions" / f"{exercise}.ipynb", solution=variants, timeout=120, total_timeout=900)
    out = {t.id: t for t in r.tests}
    for vid in made:
        t = out[vid]
        assert "a hidden test failed" in t.output, f"{vid}: forced to fail, it was {t.status}:\n{t.output}"
        leaked = [m for m in MARKERS if m in t.output]
        assert not leaked, f"{vid}: the feedback gives the expected value away:\n{t.output}"
