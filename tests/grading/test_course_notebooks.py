"""Every solution grades to full marks, every generated exercise to zero, and exercises/ is up to date."""
from __future__ import annotations

from pathlib import Path

from memlab.grading import check_all

ROOT = Path(__file__).resolve().parents[2]


def test_solutions_full_exercises_zero_and_up_to_date():
    problems = check_all(ROOT / "solutions", ROOT / "exercises", timeout=120)
    assert problems == [], "\n".join(problems)
