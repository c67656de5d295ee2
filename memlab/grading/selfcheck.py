"""``memlab check-work``: a student runs their notebook and the checks it shows, without the solutions.

Like otter-grader's ``grader.check`` or nbgrader's ``validate``: the exercise notebook written by
``memlab assign`` carries the visible part of every tests cell, so it is its own (partial) solution.
The notebook runs in a fresh kernel as a grade does (:func:`memlab.grading.grade` with
``self_check=True``), then each tests cell's visible part runs there as a plain cell, its ``check``
blocks recorded (:func:`memlab.testing.record_checks`); the table says which visible checks pass and
that hidden tests run when the work is submitted.  It decides nothing: the student's own kernel runs
these checks.  Nothing outside the notebook is read, so it works from any directory.
"""
from __future__ import annotations

from pathlib import Path
from ..errors import GradingError
from .grade import grade
from .inputs import parse_notebook, read_file
from .notebook import KEY, parse_solution
from .results import Result

HIDDEN_NOTE = "hidden tests run when you submit"


def check_work(notebook, *, timeout: float = 30.0, total_timeout: float = 600.0) -> Result:
    """Run *notebook* and the tests cells it carries (their visible part); returns the result, whose
    :meth:`~memlab.grading.results.Result.self_check_table` is what the student reads.

    Raises :class:`GradingError` when the notebook cannot be read or carries no memlab tests cells.
    """
    path = Path(notebook)
    nb = parse_notebook(read_file(path, "notebook"), path)
    if not isinstance(nb.metadata.get(KEY), dict):
        raise GradingError(f"{path}: the notebook has no memlab metadata (nb.metadata['{KEY}']); "
                           "it is not a memlab exercise")
    own = parse_solution(nb, path, exercise=True)
    if not own.tests:
        raise GradingError(f"{path}: the notebook has no tests cells, so there is nothing to check")
    result = grade(path, solution=own, timeout=timeout, total_timeout=total_timeout, isolate=False,
                   progress=None, self_check=True)
    result.self_check = True
    result.notes = [n for n in result.notes if not n.startswith(("not isolated", "memory:"))]
    result.hidden_after = {t.id for t in own.tests if t.hidden_removed}
    result.only_hidden = {t.id for t in own.tests
                          if not any(line.strip() and not line.strip().startswith("#")
                                     for line in t.source.split("\n"))}
    return result
