"""The order ``memlab grade`` runs things in: the student's cells, and the solution's tests cells."""
from __future__ import annotations

from typing import Literal, Union

from .notebook import ANSWER, TESTS, Solution, TestCell, cell_meta

#: What a step of the plan runs: one of the student's cells (by index), or one of the solution's tests cells.
StepKind = Literal["cell", "test"]
Step = Union[tuple[Literal["cell"], int], tuple[Literal["test"], TestCell]]


def question_of(meta: dict, sol: Solution) -> str | None:
    """The question an answer cell of the student's notebook belongs to (by the solution's ids)."""
    cid = meta.get("id")
    if cid in sol.answers:
        return sol.answers[cid].question
    q = meta.get("question", cid)
    return q if isinstance(q, str) and q in sol.questions else None


def plan(cells, sol: Solution) -> tuple[list[Step], dict[str, list[int]], list[str]]:
    """The student's code cells in their order (minus their copies of tests cells), then every tests
    cell of the solution, in the solution's order.

    Running the tests after all the student's cells makes the grade independent of where the student
    put (or moved, deleted, duplicated) tests cells and question blocks: an answer may use a function
    another answer defines further down.  Returns the plan (``("cell", index)`` or
    ``("test", TestCell)``), the student's answer cells per question, and notes.
    """
    answers_of: dict[str, list[int]] = {q: [] for q in sol.questions}
    copies: set[str] = set()
    steps: list[Step] = []
    for i, c in enumerate(cells):
        m = cell_meta(c) or {}
        if m.get("kind") == ANSWER:
            q = question_of(m, sol)
            if q in answers_of:
                answers_of[q].append(i)
        elif m.get("kind") == TESTS:
            if isinstance(m.get("id"), str):
                copies.add(m["id"])
            continue
        if c.get("cell_type") == "code" and str(c.get("source", "")).strip():
            steps.append(("cell", i))
    notes = [f"the tests cell {t.id!r} is missing from the notebook; it was run anyway"
             for t in sol.tests if t.id not in copies]
    steps.extend(("test", t) for t in sol.tests)
    return steps, answers_of, notes
