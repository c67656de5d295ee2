"""Reading memlab notebooks: the metadata schema, the markers, deterministic writing.

Only the standard library and :mod:`nbformat` are used here; see :mod:`memlab.grading` for the
schema itself.
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from typing import TYPE_CHECKING

if TYPE_CHECKING:                 # imported where used: the kernel side never needs it
    import nbformat

from ..errors import GradingError
from .markers import (NOT_IMPLEMENTED, YOUR_ANSWER, YOUR_CODE, find_regions, has_marker,  # noqa: F401
                      hidden_lines, judge_code, strip_hidden, strip_solution)

#: The key of memlab's metadata, in ``nb.metadata`` and in ``cell.metadata``.
KEY = "memlab"
ANSWER = "answer"
TESTS = "tests"

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
BEGIN_HIDDEN = "### BEGIN HIDDEN TESTS"
END_HIDDEN = "### END HIDDEN TESTS"

_JUDGE_TEST = re.compile(r"^\s*def\s+test_\w*\s*\(\s*answers\b")
_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")

def judge_form() -> str:
    """What a tests cell's hidden part must look like (shown when it does not); made when needed,
    so no text like a hidden test lies in the memory of a process that imported this module."""
    return "\n".join("    " + line for line in [
        BEGIN_HIDDEN, "from memlab.testing import check", "",
        "def test_q1(answers):                   # runs in the judge, never in the student's kernel",
        '    with check(points=1, name="a small case"):',
        "        got = answers.my_function(3)    # calls the student's my_function in their kernel",
        '        assert got == 6, f"my_function(3) gave {got!r}"', END_HIDDEN]).replace("    \n", "\n")


DEFAULT_KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _where(path: os.PathLike | str | None) -> str:
    return str(path) if path is not None else "<notebook>"


def read_notebook(path: os.PathLike | str) -> nbformat.NotebookNode:
    """Read a notebook file (as nbformat 4), raising :class:`GradingError` if it cannot be read."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise GradingError(f"{path}: no such notebook") from None
    except (OSError, UnicodeDecodeError) as e:
        raise GradingError(f"{path}: cannot read the notebook: {e}") from None
    return reads_notebook(text, path)


def reads_notebook(text: str, path: os.PathLike | str | None = None) -> nbformat.NotebookNode:
    """Parse notebook JSON text (as nbformat 4), raising :class:`GradingError` on bad JSON."""
    import nbformat
    try:
        return nbformat.reads(text, as_version=4)
    except Exception as e:  # nbformat raises several types (JSON errors, NotJSONError, validation)
        raise GradingError(f"{_where(path)}: not a valid notebook: {e}") from None


def notebook_bytes(nb: nbformat.NotebookNode) -> bytes:
    """The notebook as bytes in nbformat's stable JSON layout (sorted keys, indent 1, final newline)."""
    import nbformat
    text = nbformat.writes(nb, version=4)
    if not text.endswith("\n"):
        text += "\n"
    return text.encode("utf-8")


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write *data* to *path* through a temporary file, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def cell_meta(cell) -> dict | None:
    """The cell's ``memlab`` metadata dict, or None (also when it is not a dict)."""
    m = cell.get("metadata", {}).get(KEY)
    return m if isinstance(m, dict) else None


@dataclass
class AnswerCell:
    id: str
    question: str
    index: int          # position in the solution notebook
    cell_type: str


@dataclass
class TestCell:
    id: str
    question: str
    points: float
    title: str
    index: int          # position in the solution notebook
    source: str         # the full source, hidden tests included
    hidden: set[int] = field(default_factory=set)   # 1-based line numbers that are hidden
    hidden_removed: bool = False    # an exercise's tests cell whose hidden tests 'memlab assign' removed

    @property
    def name(self) -> str:
        return f"{self.question}: {self.title}" if self.title else self.id


def check_judge_code(test: TestCell, where: str) -> None:
    """Refuse a solution's tests cell whose points no judge code decides: only the judge decides a
    grade, so the hidden part must define ``def test_...(answers):`` functions (and compile)."""
    lines = test.source.split("\n")
    if not test.hidden:
        if test.points:
            raise GradingError(f"{where}: a tests cell worth points needs hidden tests, the judge code "
                               f"that decides them; the visible part only lets students check "
                               f"their work. Write it like this:\n{judge_form()}")
        return
    if not any(i in test.hidden and _JUDGE_TEST.match(line) for i, line in enumerate(lines, 1)):
        raise GradingError(f"{where}: the hidden tests are not judge code: they must define "
                           f"'def test_...(answers):' functions, which the judge runs and which reach "
                           f"the student's answers only through 'answers'. Write them like "
                           f"this:\n{judge_form()}")
    try:
        compile(judge_code(test.source), where, "exec")
    except SyntaxError as e:
        raise GradingError(f"{where}: the hidden tests (judge code) do not compile: line "
                           f"{e.lineno} of the hidden part: {e.msg}") from None


@dataclass
class Question:
    id: str
    title: str
    answers: list[AnswerCell] = field(default_factory=list)
    tests: list[TestCell] = field(default_factory=list)

    @property
    def points(self) -> float:
        return sum(t.points for t in self.tests)


@dataclass
class Solution:
    """A parsed, validated instructor notebook."""
    path: Path | None
    nb: nbformat.NotebookNode
    assignment: str
    questions: dict[str, Question]          # in notebook order
    tests: list[TestCell]                   # in notebook order
    answers: dict[str, AnswerCell]          # answer cell id -> cell
    forbid: tuple[str, ...] = ()            # library functions refused while student cells run

    @property
    def max_score(self) -> float:
        return sum(t.points for t in self.tests)


def notebook_assignment(nb, where: str) -> str | None:
    m = nb.metadata.get(KEY)
    if m is None:
        return None
    if not isinstance(m, dict):
        raise GradingError(f"{where}: notebook metadata '{KEY}' must be a dict like "
                           f"{{\"assignment\": \"01_executor\"}}, not {m!r}")
    a = m.get("assignment")
    if not isinstance(a, str) or not _ID.match(a):
        raise GradingError(f"{where}: notebook metadata '{KEY}.assignment' must be a name made of "
                           f"letters, digits, '_', '-', '.', not {a!r}")
    return a


def parse_solution(nb, path: os.PathLike | str | None = None, exercise: bool = False) -> Solution:
    """Validate an instructor notebook against the schema and index its questions.

    *exercise*: accept a student notebook written by ``memlab assign`` (its visible tests are then
    the tests: ``memlab check-work``).  Raises :class:`GradingError` naming the notebook, the cell
    and what is wrong.
    """
    where = _where(path)
    assignment = notebook_assignment(nb, where)
    if assignment is None:
        raise GradingError(f"{where}: the notebook has no memlab metadata (nb.metadata['{KEY}'] = "
                           "{'assignment': ...}); it is not a memlab solution notebook")
    if "generated_sha256" in nb.metadata[KEY] and not exercise:
        raise GradingError(f"{where}: is an exercise written by 'memlab assign', not a solution notebook")
    answers: dict[str, AnswerCell] = {}
    tests: list[TestCell] = []
    questions: dict[str, Question] = {}
    seen: dict[str, int] = {}
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get(KEY)
        cw = f"{where}, cell {i}"
        src = cell.get("source", "")
        if meta is None:
            for kind in ("SOLUTION", "HIDDEN TESTS"):
                if has_marker(src, kind):
                    raise GradingError(f"{cw}: has '### BEGIN/END {kind}' markers but no memlab cell "
                                       f"metadata; mark it with metadata['{KEY}'] = {{'id': ..., 'kind': "
                                       f"'{ANSWER if kind == 'SOLUTION' else TESTS}', ...}}")
            continue
        if not isinstance(meta, dict):
            raise GradingError(f"{cw}: cell metadata '{KEY}' must be a dict, not {meta!r}")
        cid, kind = meta.get("id"), meta.get("kind")
        if not isinstance(cid, str) or not _ID.match(cid):
            raise GradingError(f"{cw}: memlab cell metadata needs an 'id' made of letters, digits, "
                               f"'_', '-', '.', not {cid!r}")
        cw = f"{where}, cell {i} (id {cid!r})"
        if cid in seen:
            raise GradingError(f"{cw}: the id {cid!r} is used twice (cells {seen[cid]} and {i}); "
                               "ids must be unique")
        seen[cid] = i
        if kind == ANSWER:
            if cell.cell_type not in ("code", "markdown"):
                raise GradingError(f"{cw}: an answer cell must be a code or markdown cell")
            if has_marker(src, "HIDDEN TESTS"):
                raise GradingError(f"{cw}: hidden-test markers belong in a 'tests' cell, not an answer")
            find_regions(src, "SOLUTION", cw)
            q = meta.get("question", cid)
            if not isinstance(q, str) or not _ID.match(q):
                raise GradingError(f"{cw}: 'question' must be a question id, not {q!r}")
            answers[cid] = AnswerCell(cid, q, i, cell.cell_type)
            questions.setdefault(q, Question(q, str(meta.get("title", "") or ""))).answers.append(answers[cid])
        elif kind == TESTS:
            if cell.cell_type != "code":
                raise GradingError(f"{cw}: a tests cell must be a code cell")
            if has_marker(src, "SOLUTION"):
                raise GradingError(f"{cw}: solution markers belong in an 'answer' cell, not in tests")
            q, pts = meta.get("question"), meta.get("points")
            if not isinstance(q, str):
                raise GradingError(f"{cw}: a tests cell needs 'question': the id of the question it grades")
            if isinstance(pts, bool) or not isinstance(pts, (int, float)) or not pts >= 0:
                raise GradingError(f"{cw}: 'points' must be a number >= 0, not {pts!r}")
            title = meta.get("title", "")
            if not isinstance(title, str):
                raise GradingError(f"{cw}: 'title' must be a string, not {title!r}")
            tests.append(TestCell(cid, q, pts, title, i, src, hidden_lines(src, cw),
                                  hidden_removed=bool(meta.get("hidden"))))
            if not exercise:
                check_judge_code(tests[-1], cw)
        else:
            raise GradingError(f"{cw}: memlab cell 'kind' must be '{ANSWER}' or '{TESTS}', not {kind!r}")
    if not answers and not tests:
        raise GradingError(f"{where}: no cell has memlab metadata (no answer or tests cell), so there is "
                           "nothing to assign or grade")
    for t in tests:
        if t.question not in questions:
            known = ", ".join(sorted(questions)) or "none"
            raise GradingError(f"{where}, cell {t.index} (id {t.id!r}): the tests cell names the unknown "
                               f"question {t.question!r}; the answer cells define: {known}")
        qq = questions[t.question]
        qq.tests.append(t)
        if not qq.title and t.title:
            qq.title = t.title
    forbid = nb.metadata[KEY].get("forbid", [])
    if not isinstance(forbid, list) or not all(isinstance(f, str) and re.fullmatch(r"[A-Za-z_][\w.]*", f)
                                               for f in forbid):
        raise GradingError(f"{where}: '{KEY}.forbid' must list dotted names of functions, not {forbid!r}")
    return Solution(Path(path) if path is not None else None, nb, assignment, questions, tests, answers,
                    tuple(forbid))


def load_solution(path: os.PathLike | str) -> Solution:
    """Read and validate the solution notebook at *path*."""
    return parse_solution(read_notebook(path), path)


def content_hash(nb) -> str:
    """A hash of what a student writes in a notebook: cell types, sources, memlab metadata.

    Outputs, execution counts and other metadata (which JupyterLab rewrites on save) do not count.
    """
    m = nb.metadata.get(KEY)
    doc = {"assignment": m.get("assignment") if isinstance(m, dict) else None,
           "cells": [[c.get("cell_type"), c.get("source", ""), c.get("metadata", {}).get(KEY)]
                     for c in nb.cells]}
    text = json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _cell_id(raw, i: int, used: set[str]) -> str:
    cid = raw if isinstance(raw, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", raw or "") else f"cell-{i}"
    while cid in used:
        cid = f"{cid}-{i}"[:64]
    used.add(cid)
    return cid


def make_exercise(sol: Solution) -> nbformat.NotebookNode:
    """The student version of a solution notebook (see :mod:`memlab.grading` for what changes)."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.nbformat, nb.nbformat_minor = 4, 5
    meta = {k: copy.deepcopy(v) for k, v in sol.nb.metadata.items()
            if k not in (KEY, "language_info", "widgets")}
    meta.setdefault("kernelspec", dict(DEFAULT_KERNELSPEC))
    nb.metadata = nbformat.from_dict(meta)
    used: set[str] = set()
    where = _where(sol.path)
    for i, cell in enumerate(sol.nb.cells):
        src = cell.get("source", "")
        cmeta = copy.deepcopy(dict(cell.get("metadata", {})))
        cmeta.pop("execution", None)
        m = cmeta.get(KEY)
        cw = f"{where}, cell {i}"
        if m is not None and m.get("kind") == ANSWER:
            src = strip_solution(src, cw, markdown=cell.cell_type == "markdown")
            cmeta["deletable"] = False
        elif m is not None and m.get("kind") == TESTS:
            if hidden_lines(src, cw):
                cmeta[KEY]["hidden"] = True        # memlab check-work says these run at grading
            src = strip_hidden(src, cw)
            if not src.strip():
                src = "# The tests of this question are hidden: they run when the notebook is graded."
            cmeta["deletable"] = False
            cmeta["editable"] = False
        if cell.cell_type == "code":
            new = nbformat.v4.new_code_cell(src)
        elif cell.cell_type == "markdown":
            new = nbformat.v4.new_markdown_cell(src)
            if "attachments" in cell:
                new["attachments"] = copy.deepcopy(cell["attachments"])
        else:
            new = nbformat.v4.new_raw_cell(src)
        new.metadata = nbformat.from_dict(cmeta)
        new["id"] = _cell_id(cell.get("id"), i, used)
        nb.cells.append(new)
    nb.metadata[KEY] = nbformat.from_dict({"assignment": sol.assignment})
    if sol.forbid:
        nb.metadata[KEY]["forbid"] = list(sol.forbid)
    nb.metadata[KEY]["generated_sha256"] = content_hash(nb)
    return nb


def exercise_bytes(sol: Solution) -> bytes:
    return notebook_bytes(make_exercise(sol))


def edited_since_generated(path: Path) -> str | None:
    """Why the exercise at *path* counts as edited by a student (None if it is as generated)."""
    try:
        nb = reads_notebook(path.read_bytes().decode("utf-8"), path)
    except (GradingError, UnicodeDecodeError) as e:
        return f"it is not a readable notebook ({e})"
    m = nb.metadata.get(KEY)
    recorded = m.get("generated_sha256") if isinstance(m, dict) else None
    if not recorded:
        return "it has no record of being generated by 'memlab assign' (no memlab.generated_sha256)"
    if content_hash(nb) != recorded:
        return "its cells differ from what 'memlab assign' generated (a student edited it)"
    return None
