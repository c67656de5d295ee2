"""Hidden feedback teaches without telling: every hidden check of every solution, made to fail on
purpose, names what went wrong but never the expected answer.  The machinery is
``memlab check --feedback`` (:mod:`memlab.grading.feedbackcheck`), so an author's new exercise is
checked the same way.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from memlab.grading.feedbackcheck import check_feedback, variants

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = sorted(p.stem for p in (ROOT / "solutions").glob("*.ipynb"))
# An authoring check of the solutions (a grade per solution, about a minute): make test-extended, and
# `memlab check --feedback` for an author's own exercise.
pytestmark = pytest.mark.extended


@pytest.mark.parametrize("exercise", SOLUTIONS)
def test_hidden_feedback_never_gives_the_expected_answer(exercise, tmp_path):
    solution = ROOT / "solutions" / f"{exercise}.ipynb"
    assert variants(solution, tmp_path)[1], f"{exercise}: no hidden assertion found"
    problems = check_feedback(solution, tmp_path / "run")
    assert problems == [], "\n".join(problems)
