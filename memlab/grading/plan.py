"""The order ``memlab grade`` runs things in: the student's cells, and the solution's tests cells."""
from __future__ import annotations

from .notebook import ANSWER, TESTS, Solution, TestCell, cell_meta


def question_of(meta: dict, sol: Solution) -> str | None:
    """The question an answer cell of the student's notebook belongs to (by the solution's ids)."""
    cid = meta.get("id")
    if cid in sol.answers:
        return sol.answers[cid].question
    q = meta.get("question", cid)
    return q if isinstance(q, str) and q in sol.questions else None


def plan(cells, sol: Solution) -> tuple[list, dict[str, list[int]], list[str]]:
    """Student cells (minus their copies of tests cells) and the solution's tests cells, in order.

    A tests cell runs after the later of (a) the student's first copy of that cell and (b) the student's
    last answer cell of its question; with neither, at the end.  Returns the plan (``("cell", index)``
    or ``("test", TestCell)``), the student's answer cells per question, and notes.
    """
    answers_of: dict[str, list[int]] = {q: [] for q in sol.questions}
    first_copy: dict[str, int] = {}
    notes = []
    for i, c in enumerate(cells):
        m = cell_meta(c)
        if not m:
            continue
        if m.get("kind") == ANSWER:
            q = question_of(m, sol)
            if q in answers_of:
                answers_of[q].append(i)
        elif m.get("kind") == TESTS and isinstance(m.get("id"), str):
            first_copy.setdefault(m["id"], i)
    slots: dict[int, list[TestCell]] = {}
    for t in sol.tests:
        at = max(first_copy.get(t.id, -1), max(answers_of[t.question], default=-1))
        slots.setdefault(at, []).append(t)
        if t.id not in first_copy:
            notes.append(f"the tests cell {t.id!r} is missing from the notebook; it was run anyway")
    steps: list = []
    for i, c in enumerate(cells):
        m = cell_meta(c) or {}
        if c.get("cell_type") == "code" and m.get("kind") != TESTS and str(c.get("source", "")).strip():
            steps.append(("cell", i))
        steps.extend(("test", t) for t in slots.get(i, []))
    steps.extend(("test", t) for t in slots.get(-1, []))
    return steps, answers_of, notes
