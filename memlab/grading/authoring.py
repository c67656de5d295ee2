"""Write solution notebooks from Python.

Example (a script in ``scripts/`` can build every ``solutions/*.ipynb`` this way)::

    from memlab.grading.authoring import md, code, answer, tests, notebook, write

    nb = notebook("01_executor", [
        md("# Exercise 01"),
        code("import memlab as ml"),
        answer("q1_topo_sort", '''
            def topo_sort(outputs):
                ### BEGIN SOLUTION
                ...
                ### END SOLUTION
        '''),
        tests("q1_topo_sort_tests", "q1_topo_sort", 3, '''
            assert topo_sort([]) == [], "an empty graph has an empty order"
        ''', title="Topological sort", hidden='''
            from memlab.testing import check

            def test_empty(answers):
                with check(points=3, name="an empty graph"):
                    assert list(answers.topo_sort([])) == [], "an empty graph has an empty order"
        '''),
    ])
    write(nb, "solutions/01_executor.ipynb")   # validates, then writes deterministically

Code strings are dedented and stripped of leading/trailing blank lines.  Cell ids are derived from
the memlab id (answer and tests cells) or the position (other cells), so writing the same cells twice
gives byte-identical files.
"""
from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import nbformat

from .notebook import (ANSWER, DEFAULT_KERNELSPEC, KEY, TESTS, notebook_bytes, parse_solution,
                       write_bytes_atomic)


def _clean(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def md(text: str) -> nbformat.NotebookNode:
    """A markdown cell."""
    return nbformat.v4.new_markdown_cell(_clean(text))


def code(src: str) -> nbformat.NotebookNode:
    """A plain code cell (set-up, examples): given to students as is, run as is when grading."""
    return nbformat.v4.new_code_cell(_clean(src))


def answer(id: str, src: str, question: str | None = None, markdown: bool = False) -> nbformat.NotebookNode:
    """An answer cell; ``### BEGIN SOLUTION`` / ``### END SOLUTION`` mark what students must write
    (no markers: the whole cell).  Several answer cells may share one *question* (default: *id*)."""
    cell = nbformat.v4.new_markdown_cell(_clean(src)) if markdown else nbformat.v4.new_code_cell(_clean(src))
    meta = {"id": id, "kind": ANSWER}
    if question is not None and question != id:
        meta["question"] = question
    cell.metadata[KEY] = meta
    return cell


def tests(id: str, question: str, points: float, src: str, title: str = "",
          hidden: str | None = None) -> nbformat.NotebookNode:
    """A tests cell worth *points* for *question*: *src* is what students see (visible checks, run in
    their kernel); *hidden* is judge code, ``def test_...(answers):`` functions run by the judge
    (docs/grading.md), written between ``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS``.  (Markers
    already in *src* are kept as they are.)"""
    body = _clean(src)
    if hidden is not None:
        body = (body + "\n" if body else "") + "### BEGIN HIDDEN TESTS\n" + _clean(hidden) + \
            "\n### END HIDDEN TESTS"
    cell = nbformat.v4.new_code_cell(body)
    meta = {"id": id, "kind": TESTS, "question": question, "points": points}
    if title:
        meta["title"] = title
    cell.metadata[KEY] = meta
    return cell


tests.__test__ = False  # so pytest does not collect it from a test module that imports it


def notebook(assignment: str, cells, kernelspec: dict | None = None) -> nbformat.NotebookNode:
    """A solution notebook of *cells* for *assignment*; validated (raises GradingError if malformed)."""
    nb = nbformat.v4.new_notebook()
    nb.nbformat, nb.nbformat_minor = 4, 5
    nb.metadata["kernelspec"] = dict(kernelspec or DEFAULT_KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata[KEY] = {"assignment": assignment}
    used: set[str] = set()
    for i, cell in enumerate(cells):
        cell = nbformat.from_dict(dict(cell))
        m = cell.metadata.get(KEY)
        base = re.sub(r"[^A-Za-z0-9_-]", "-", m["id"])[:60] if isinstance(m, dict) and "id" in m else f"c{i:02d}"
        cid = base
        while cid in used:
            cid = f"{base}-{i}"
        used.add(cid)
        cell["id"] = cid
        nb.cells.append(cell)
    parse_solution(nb, f"<solution notebook {assignment}>")
    return nb


def write(nb: nbformat.NotebookNode, path: str | os.PathLike) -> Path:
    """Write *nb* to *path* in nbformat's stable layout; returns the path."""
    path = Path(path)
    write_bytes_atomic(path, notebook_bytes(nb))
    return path
