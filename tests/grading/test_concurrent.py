"""Concurrent grades never interfere: two isolated `memlab grade` runs (two TAs on one machine) and a
two-job `memlab grade-all` at the same time give, every time, the results a lone grade gives.

The interpreter probe runs as the slot's grading user under that user's lock (memlab.grading.isolate),
so another grade's end (every process of its user is ended) cannot kill it.  :data:`ROUNDS` rounds
of 4 grades at once; marked extended (``make test-extended``) for its minutes.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memlab.grading.isolate import can_isolate, grader_user, user_can_run_kernel

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = ROOT / "solutions" / "01_executor.ipynb"
ROUNDS = 10
pytestmark = pytest.mark.extended


def _scores(results: Path) -> tuple:
    data = json.loads(results.read_text())
    return data["score"], tuple((t["name"], t["score"]) for t in data["tests"])


def _grade(nb: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memlab", "grade", str(nb), "--solution", str(SOLUTION),
                           "--json", str(out), "--timeout", "60"], capture_output=True, text=True,
                          timeout=900)


def test_two_grades_and_a_grade_all_at_once_give_a_lone_grades_results(tmp_path):
    if not (can_isolate() and user_can_run_kernel(*grader_user()[:2]) == ""):
        pytest.skip("needs isolation: run as root with an interpreter the grading user can run")
    solved, blank = tmp_path / "solved.ipynb", tmp_path / "blank.ipynb"
    shutil.copyfile(SOLUTION, solved)
    shutil.copyfile(ROOT / "exercises" / "01_executor.ipynb", blank)
    alone = {}
    for nb in (solved, blank):
        assert _grade(nb, tmp_path / f"{nb.stem}.alone.json").returncode == 0
        alone[nb.stem] = _scores(tmp_path / f"{nb.stem}.alone.json")
    assert alone["solved"][0] == 13 and alone["blank"][0] == 0
    for k in range(ROUNDS):
        batch = tmp_path / f"batch{k}"
        batch.mkdir()
        shutil.copyfile(solved, batch / "a.ipynb")
        shutil.copyfile(blank, batch / "b.ipynb")
        book = tmp_path / f"grades{k}.csv"
        with ThreadPoolExecutor(3) as pool:
            one = pool.submit(_grade, solved, tmp_path / f"solved{k}.json")
            two = pool.submit(_grade, blank, tmp_path / f"blank{k}.json")
            many = pool.submit(subprocess.run, [sys.executable, "-m", "memlab", "grade-all", str(batch),
                                                "--solution", str(SOLUTION), "--gradebook", str(book),
                                                "--jobs", "2", "-q"], capture_output=True, text=True,
                               timeout=900)
            runs = [one.result(), two.result(), many.result()]
        assert all(r.returncode == 0 for r in runs), [r.stderr[-2000:] for r in runs]
        assert _scores(tmp_path / f"solved{k}.json") == alone["solved"], f"round {k}"
        assert _scores(tmp_path / f"blank{k}.json") == alone["blank"], f"round {k}"
        assert _scores(batch / "a.results.json") == alone["solved"], f"round {k}: grade-all"
        assert _scores(batch / "b.results.json") == alone["blank"], f"round {k}: grade-all"
