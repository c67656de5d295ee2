"""Hostile answers (tests/grading/hostile.py) score 0 on what they attack, and grading stays sound.

Every case runs on exercise 01 with all checks: the score, the time taken, the submission, the
solution and the repository unchanged, results.json valid and small, no hidden test line in it (also
not base64-encoded by the attack), no process left behind.  A combined notebook of the cheap attacks
runs on every exercise.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlab.errors import GradingError
from memlab.grading import grade
from memlab.grading.isolate import can_isolate, grader_user, user_can_run_kernel

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import hostile  # noqa: E402

ROOT = hostile.ROOT


def isolated() -> bool:
    return can_isolate() and user_can_run_kernel(*grader_user()[:2]) == ""


def _repo_state() -> str:
    r = subprocess.run(["git", "status", "--porcelain", "--", "solutions", "exercises", "memlab"], cwd=ROOT,
                       capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else "no git"


def _marked_processes() -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                if hostile.MARKER.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    out.append(int(name))
            except OSError:
                pass
    return out


def run(case: hostile.Case, exercise: str, tmp_path: Path, builder=None):
    """Build and grade one hostile notebook; check what every case must keep; returns (data, result, s)."""
    work, out, sold = tmp_path / "submission", tmp_path / "results", tmp_path / "solution"
    for d in (work, out, sold):
        d.mkdir()
    solution = sold / f"{exercise}.ipynb"
    shutil.copyfile(ROOT / "solutions" / f"{exercise}.ipynb", solution)
    os.chmod(solution, 0o600)
    os.chmod(sold, 0o700)
    results = out / "results.json"
    path = (builder or hostile.build)(case, exercise, work, solution, results)
    before, sol_before, repo_before = path.read_bytes(), solution.read_bytes(), _repo_state()
    t0 = time.monotonic()
    result = None
    try:
        result = grade(path, solution=solution, json_path=results, timeout=case.timeout,
                       total_timeout=case.total_timeout, memory_limit=case.memory_limit)
    except GradingError:
        assert case.error, f"{case.name}: grading refused the notebook"
    seconds = time.monotonic() - t0
    if case.name == "detached_rewrite":
        time.sleep(0.5)                  # time for a survivor to rewrite results.json
        assert _marked_processes() == [], "a process of the graded code outlived the grading"
    text = results.read_text()
    data = json.loads(text)
    assert len(text) < 400_000, f"results.json is {len(text)} characters"
    assert {"score", "max_score", "output", "tests", "execution_time"} <= set(data)
    assert 0 <= data["score"] <= data["max_score"]
    assert all({"name", "score", "max_score", "output"} <= set(t) for t in data["tests"])
    assert path.read_bytes() == before, "grading changed the submission"
    assert solution.read_bytes() == sol_before, "the graded code changed the solution"
    assert _repo_state() == repo_before, "the graded code changed the repository"
    assert hostile.leaked(text, solution) == [], "hidden test lines reached results.json"
    assert seconds < case.total_timeout + 15, f"{case.name} took {seconds:.1f} s"
    return data, result, seconds


@pytest.mark.parametrize("name", [c.name for c in hostile.CASES])
def test_hostile_case_on_exercise_01(name, tmp_path):
    case = hostile.BY_NAME[name]
    if case.needs_isolation and not isolated():
        pytest.skip("needs isolation: run as root with a Python environment other users can read")
    data, result, seconds = run(case, "01_executor", tmp_path)
    if case.full_marks:
        assert data["score"] == data["max_score"] == 13 and result.full_marks, result.feedback()
    else:
        assert data["score"] == 0, f"{name}: {data['score']}/{data['max_score']}\n{data['output']}"
        assert case.error or data["max_score"] == 13
    assert case.expect in result.feedback() if result else True, result.feedback()
    if case.name == "fork_storm":
        from memlab.grading.isolate import _uid_processes
        assert _uid_processes(grader_user()[0]) == [], "processes of the grading user survived"
    if case.name == "total_time":
        assert seconds < 12 and any("not run: the total time limit" in t["output"] for t in data["tests"])


def _combined(case, exercise, work, solution, results):
    """Every cheap attack in one notebook (one grading per exercise keeps the sweep fast)."""
    parts = [c for c in hostile.CASES if c.everywhere and c.name not in FILL_IN]
    path = hostile.build(parts[0], exercise, work, solution, results)
    import nbformat
    nb = nbformat.read(path, as_version=4)
    for p in parts[1:]:
        p.build(nb, {"solution": solution, "results": results, "exercise": exercise})
    nbformat.write(nb, path)
    return path


# The combined notebook on every exercise; the attacks that fill in every answer on half of them each.
FILL_IN = ("patched_when_called", "always_equal")
SWEEP = [(e, "combined") for e in hostile.EXERCISES] + \
    [(e, FILL_IN[0]) for e in hostile.EXERCISES[0::2]] + [(e, FILL_IN[1]) for e in hostile.EXERCISES[1::2]]


@pytest.mark.parametrize("exercise, kind", SWEEP)
def test_every_exercise_resists(exercise, kind, tmp_path):
    if kind == "combined":
        case = hostile.Case("combined", "all cheap attacks", None)
        data, result, _ = run(case, exercise, tmp_path, builder=_combined)
    else:
        data, result, _ = run(hostile.BY_NAME[kind], exercise, tmp_path)
    assert data["score"] == 0, f"{exercise}, {kind}: {data['score']}/{data['max_score']}\n{result.feedback()}"
    assert data["max_score"] > 0


def test_a_patch_costs_the_question_whose_answer_made_it(tmp_path):
    """Correct answers; q3's answer cell replaces numpy.isclose (the guard sees it after the cell: q3
    scores 0, naming it), q1's topo_sort replaces ml.topo_order when called: that runs in the kernel
    only, so the judge's own checks are untouched and q1 and q2 earn their points; q4 keeps its
    points, and the patches do not outlive the cell that made them."""
    import nbformat
    nb = nbformat.read(ROOT / "solutions" / "01_executor.ipynb", as_version=4)
    for c in nb.cells:
        qid = hostile.meta(c).get("id")
        if qid == "q3_mul_gradient":
            c.source = "import numpy as np\nnp.isclose = lambda *a, **k: True\n" + c.source
        if qid == "q1_topo_sort":
            c.source = c.source.replace("    order, done = [], set()",
                                        "    ml.topo_order = lambda outs: []\n    order, done = [], set()")
    nb.cells.append(hostile.code_cell("import numpy as np\nassert np.isclose(1, 2) == False", "student-check"))
    path = tmp_path / "01_executor.ipynb"
    nbformat.write(nb, path)
    r = grade(path, solution=ROOT / "solutions" / "01_executor.ipynb", timeout=20)
    scores = {q: r.questions[q].score for q in r.questions}
    assert scores == {"q1_topo_sort": 3, "q2_run_naive": 4, "q3_mul_gradient": 0, "q4_sigmoid_gradient": 3}, \
        r.feedback()
    out = {t.question: t.output for t in r.tests}
    assert "numpy.isclose" in out["q3_mul_gradient"]
    assert all(c.status == "ok" for c in r.cells if c.index == len(nb.cells) - 1), "np.isclose was not put back"
