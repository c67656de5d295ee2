"""The gradebook says why: each row's notes give the real cause per question, shortest first, read
from the CSV of a `memlab grade-all` run over a blank, a looping, a half-right and a full
submission."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memlab.grading.authoring import answer, code, md, notebook, write
from memlab.grading.authoring import tests as tests_cell
from memlab.grading.notebook import make_exercise, parse_solution

ROOT = Path(__file__).resolve().parents[2]

Q1 = ("def count(xs):\n    ### BEGIN SOLUTION\n    return len(xs)\n    ### END SOLUTION")
Q2 = ("def longest(xs):\n    ### BEGIN SOLUTION\n    return max(xs, key=len)\n"
      "    ### END SOLUTION")
Q3 = ("def total(xs):\n    ### BEGIN SOLUTION\n    return sum(xs)\n    ### END SOLUTION")
Q2_TESTS = '''
assert longest(["a", "bcd"]) == "bcd"
### BEGIN HIDDEN TESTS
import random
from memlab.testing import check


def test_longest(answers):
    with check(points=1, name="two words"):
        assert answers.longest(["a", "bcd"]) == "bcd"
    with check(points=1, name="one word"):
        assert answers.longest(["abc"]) == "abc"
    with check(points=1, name="random graphs"):
        rng = random.Random(0)
        for _ in range(20):
            xs = ["x" * rng.randint(1, 9) for _ in range(rng.randint(1, 6))]
            assert len(answers.longest(xs)) == max(map(len, xs)), xs
### END HIDDEN TESTS
'''


def _judged(visible: str, name: str, call: str) -> str:
    """A tests cell in judge-code form: ``visible`` for the student, one hidden check of ``call``."""
    return (f"{visible}\n### BEGIN HIDDEN TESTS\ndef test_{name}(answers):\n"
            f"    assert answers.{call}\n### END HIDDEN TESTS\n")


def _solution():
    return notebook("notes", [
        md("# Three questions"), code("import math"),
        answer("q1", Q1), tests_cell("q1_tests", "q1", 2, _judged("assert count([1, 2]) == 2", "count",
                                                          "count([1, 2]) == 2")),
        answer("q2", Q2), tests_cell("q2_tests", "q2", 3, Q2_TESTS),
        answer("q3", Q3), tests_cell("q3_tests", "q3", 2, _judged("assert total([1, 2]) == 3", "total",
                                                          "total([1, 2]) == 3"))])


def _submission(answers: dict[str, str]):
    nb = make_exercise(parse_solution(_solution()))
    for cell in nb.cells:
        mid = cell.metadata.get("memlab", {}).get("id")
        if mid in answers:
            cell.source = answers[mid]
    return nb


FULL = {"q1": "def count(xs):\n    return len(xs)",
        "q2": "def longest(xs):\n    return max(xs, key=len)",
        "q3": "def total(xs):\n    return sum(xs)"}
# right on two words and on one word, wrong when the longest is not the last
HALF = {**FULL, "q2": "def longest(xs):\n    return xs[-1]"}
LOOP = {**FULL, "q3": "def total(xs):\n    while True:\n        pass"}
# loops in a question made of checks (the cell times out: none of its checks is counted)
LOOP_CHECKS = {**FULL, "q2": "def longest(xs):\n    while len(xs) > 1:\n        pass\n    return xs[0]"}


@pytest.mark.extended  # four grades in a grade-all (about 40 s); test_batch covers grade-all in make test
def test_grade_all_notes_give_the_cause_of_each_lost_question(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    sol = write(_solution(), tmp_path / "notes.ipynb")
    for who, answers in (("blank", {}), ("loop", LOOP), ("half", HALF), ("full", FULL),
                         ("loop_checks", LOOP_CHECKS)):
        write(_submission(answers), subs / f"{who}.ipynb")
    book = tmp_path / "grades.csv"
    r = subprocess.run([sys.executable, "-m", "memlab", "grade-all", str(subs), "--solution",
                        str(sol), "--gradebook", str(book), "--jobs", "1", "--timeout", "5",
                        "--allow-unisolated"], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = {row["submission"]: row for row in csv.DictReader(book.open())}
    assert {k: rows[k]["total"] for k in rows} == {"blank.ipynb": "0", "full.ipynb": "7",
                                                   "half.ipynb": "6", "loop.ipynb": "5",
                                                   "loop_checks.ipynb": "5"}
    notes = {k: rows[k]["notes"].split(" | ") if rows[k]["notes"] else [] for k in rows}
    assert notes["full.ipynb"] == []
    assert notes["half.ipynb"] == ["q2: 1 of 3 checks failed: random graphs"]
    assert notes["loop.ipynb"] == ["q3: time limit 5 s"]
    assert notes["loop_checks.ipynb"] == ["q2: time limit 5 s"]
    # the blank one: each question not answered, shortest note first
    assert sorted(notes["blank.ipynb"]) == [f"{q}: not answered (NotImplementedError)"
                                            for q in ("q1", "q2", "q3")]
    lengths = [len(n) for n in notes["blank.ipynb"]]
    assert lengths == sorted(lengths)
