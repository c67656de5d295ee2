"""Every solution grades to full marks, every freshly generated exercise to zero, and the committed
exercises are what ``memlab assign`` writes.  A student's answers in exercises/ never matter: the
exercises graded are generated in a temporary folder, and the up-to-date check reads what git holds.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memlab.grading import check_all
from memlab.grading.assign import solution_files
from memlab.grading.notebook import exercise_bytes, load_solution

ROOT = Path(__file__).resolve().parents[2]


def test_solutions_full_fresh_exercises_zero():
    problems = check_all(ROOT / "solutions", None, timeout=120)
    assert problems == [], "\n".join(problems)


def test_committed_exercises_are_up_to_date():
    """The exercises in the last commit (not the working copy a student writes in) are generated."""
    stale = []
    for f in solution_files(ROOT / "solutions"):
        r = subprocess.run(["git", "show", f"HEAD:exercises/{f.name}"], cwd=ROOT, capture_output=True)
        if r.returncode != 0:
            pytest.skip("not a git checkout with the exercises committed")
        if r.stdout != exercise_bytes(load_solution(f)):
            stale.append(f"exercises/{f.name}")
    assert not stale, ("committed exercises differ from what 'memlab assign' generates from their "
                       "solutions (instructors: run make exercises and commit): " + ", ".join(stale))
