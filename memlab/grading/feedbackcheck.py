"""``memlab check --feedback``: hidden feedback teaches without telling.

Expected values in hidden tests are bound to names that start with ``want`` (docs/grading.md).  For
each assertion of a tests cell's hidden part (judge code, which runs in the judge), a variant of it
replaces every ``want*`` value
by a look-alike made of marker values (731902467, 7319.02467, "W4NTTOKEN"), forces that assertion to
fail and lets every other assertion pass.  The solution's answers are then graded with these
variants: each must report a hidden test failure, and no marker may reach the feedback.  An author's
new exercise is checked the same way as the course's (``tests/grading/test_feedback.py``).
"""
from __future__ import annotations

import ast
import copy
from pathlib import Path
from typing import Callable

from .notebook import KEY, judge_code, load_solution, notebook_bytes

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


def variants(solution: Path, out: Path):
    from .authoring import tests as tests_cell
    sol = load_solution(solution)
    nb = copy.deepcopy(sol.nb)
    cells = [c for c in nb.cells if (c.metadata.get(KEY) or {}).get("kind") != "tests"]
    made = []
    for t in sol.tests:
        if not t.hidden:
            continue
        source = judge_code(t.source)                  # the hidden part: it runs in the judge
        hidden = set(range(1, source.count("\n") + 2))
        for k in _candidates(source, hidden):
            tree = _Variant(k).visit(ast.parse(source))
            src = PERTURB + ast.unparse(ast.fix_missing_locations(tree))
            vid = f"{t.id}_v{k}"
            cell = tests_cell(vid, t.question, 1, "### BEGIN HIDDEN TESTS\n" + src + "\n### END HIDDEN TESTS")
            cell["id"] = vid
            cells.append(cell)
            made.append(vid)
    nb.cells = cells
    path = Path(out) / Path(solution).name
    path.write_bytes(notebook_bytes(nb))
    return path, made


def check_feedback(solution, workdir, *, timeout: float = 120.0,
                   progress: Callable[[str], None] | None = None) -> list[str]:
    """Grade *solution*'s answers with every variant (written under *workdir*); the problems found:
    a forced failure not reported as a hidden test failure, or a marker in the feedback."""
    from .grade import grade
    Path(workdir).mkdir(parents=True, exist_ok=True)
    path, made = variants(Path(solution), Path(workdir))
    if not made:
        return []
    r = grade(solution, solution=path, timeout=timeout, total_timeout=max(900.0, 60.0 * len(made)),
              progress=progress)
    out, problems = {t.id: t for t in r.tests}, []
    for vid in made:
        t = out[vid]
        if "a hidden test failed" not in t.output:
            problems.append(f"{solution}: {vid}: a hidden assertion forced to fail was reported as "
                            f"{t.status}, not as a hidden test failure:\n{t.output}")
        leaked = [m for m in MARKERS if m in t.output]
        if leaked:
            problems.append(f"{solution}: {vid}: the feedback of a failed hidden test gives the expected "
                            f"value (want*) away:\n{t.output}")
    return problems


def check_feedback_all(solutions="solutions", *, timeout: float = 120.0,
                       progress: Callable[[str], None] | None = None) -> list[str]:
    """:func:`check_feedback` for every solution notebook in *solutions* (``memlab check --feedback``)."""
    import tempfile
    from .assign import solution_files
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="memlab-feedback-") as tmp:
        for f in solution_files(solutions):
            problems += check_feedback(f, Path(tmp) / f.stem, timeout=timeout, progress=progress)
    return problems
