"""Partial credit inside a tests cell (memlab.testing.check), and feedback that teaches without telling."""
from __future__ import annotations

import json

import pytest

from memlab.grading import grade
from memlab.grading.authoring import answer, code, notebook, write
from memlab.grading.authoring import tests as tests_cell
from memlab.testing import check

TESTS = '''
assert double(1) == 2, "double(1)"
### BEGIN HIDDEN TESTS
from memlab.testing import check


def test_double(answers):
    with check(points=1, name="small"):
        assert answers.double(1) == 2, "double(1)"
    with check(points=2, name="negative"):
        got = answers.double(-3)
        assert got == -6, f"double(-3) gave {got}"

    @check(points=1, name="as a decorator")
    def _():
        assert answers.double(0) == 0, "double(0)"
    with check(points=2, name="large"):
        want = 2 * 10**9 + 2
        got = answers.double(10**9 + 1)
        assert got == want, f"double(10**9 + 1) gave {got}"
    AFTER
### END HIDDEN TESTS
'''


def _pair(tmp_path, body: str, after: str = "pass", points: float = 6):
    cells = [code("import math"), answer("q1", "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n"
                                         "    ### END SOLUTION"),
             tests_cell("q1_tests", "q1", points, TESTS.replace("AFTER", after), title="Double")]
    sol = write(notebook("dbl", cells), tmp_path / "sol.ipynb")
    cells[1] = answer("q1", body)
    sub = write(notebook("dbl", cells), tmp_path / "sub.ipynb")
    return sol, sub


@pytest.mark.parametrize("body, score, failed", [
    ("def double(x):\n    return 2 * x", 6, set()),
    ("def double(x):\n    return 2 * x if x >= 0 else x", 4, {"negative"}),
    ("def double(x):\n    return 2 * x if abs(x) < 100 else 0", 4, {"large"}),
    ("def double(x):\n    return x - 1", 0, {"small", "negative", "as a decorator", "large"}),
])
def test_a_failing_check_costs_its_own_points(tmp_path, body, score, failed):
    sol, sub = _pair(tmp_path, body)
    out = tmp_path / "results.json"
    r = grade(sub, solution=sol, json_path=out, timeout=20, hidden_visibility="after_published",
              allow_unisolated=True)
    (t,) = r.tests
    assert r.score == score and {c.name for c in t.checks if not c.passed} == failed, r.feedback()
    data = json.loads(out.read_text())
    names = [e["name"] for e in data["tests"]]
    assert names == [f"q1: Double · {n}" for n in ("small", "negative", "as a decorator", "large")]
    assert sum(e["score"] for e in data["tests"]) == data["score"] == score
    assert {e["visibility"] for e in data["tests"]} == {"after_published"}     # the judge's: hidden
    assert "2000000002" not in out.read_text()


def test_an_error_outside_the_checks_keeps_the_checks_passed_before(tmp_path):
    sol, sub = _pair(tmp_path, "def double(x):\n    return 2 * x",
                     "raise RuntimeError('after the checks')", points=7)
    r = grade(sub, solution=sol, timeout=20)
    assert r.score == 6 and "after the checks" in r.tests[0].output


def test_an_answer_cannot_award_itself_a_check(tmp_path):
    body = ("from memlab.testing import check\n"
            "def double(x):\n"
            "    with check(points=100, name='mine'):\n"
            "        pass\n"
            "    return x + 7\n")
    sol, sub = _pair(tmp_path, body)
    r = grade(sub, solution=sol, timeout=20)
    assert r.score == 0 and all(c.name != "mine" for c in r.tests[0].checks)


def test_outside_the_grader_a_check_is_a_plain_assertion():
    with check(points=1, name="fine"):
        assert True
    with pytest.raises(AssertionError, match="wrong"):
        with check(points=1, name="bad"):
            raise AssertionError("wrong")
    with pytest.raises(ValueError, match="points"):
        check(points=-1, name="x")


def test_check_work_needs_no_solutions_and_runs_from_any_directory(tmp_path):
    """A student's self-check: the exercise's own visible checks, from any
    directory; ``memlab grade`` without a solution falls back to it."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    ex = root / "exercises" / "07_chain_dp.ipynb"
    for args in (["check-work", str(ex)], ["grade", str(ex), "-q"]):
        r = subprocess.run([sys.executable, "-m", "memlab", *args], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert "hidden tests run when you submit" in r.stdout and "0/2 visible check(s) pass" in r.stdout, r.stdout
        assert "solution" not in r.stdout.split("(not a grade)")[1]
        if args[0] == "grade":
            assert r.stderr.rstrip().endswith("no score is given without the solution (--solution): "
                                              "the table above is a self-check, not a grade."), r.stderr


def test_answer_time_forbid_refuses_while_cells_run_and_leaves_no_stand_in(tmp_path):
    """Notebook metadata ``forbid``: the named functions refuse to run in the student's cells (so no
    table of their answers can be built there); no stand-in is left anywhere (the function object
    stays, only its code is swapped while refused), also in a memlab module first imported then."""
    from memlab.grading.authoring import code as code_cell
    cells = [code_cell("import sys, types\n"
                       "mod = types.ModuleType('memlab.fake_lazy')\n"
                       "exec('from memlab.testing import central_difference as cd', mod.__dict__)\n"
                       "sys.modules['memlab.fake_lazy'] = mod"),
             answer("q1", "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION"),
             code_cell("import memlab.testing\ntry:\n    memlab.testing.central_difference(None, [], 0)\n"
                       "    REFUSED = False\nexcept memlab.testing.WriteItYourself:\n    REFUSED = True\n"
                       "def refused():\n    return REFUSED\n"
                       "def same():\n    import memlab.testing as t\n"
                       "    return sys.modules['memlab.fake_lazy'].cd is t.central_difference"),
             tests_cell("q1_tests", "q1", 1, "", hidden=(
                 "def test_f(answers):\n"
                 "    assert answers.refused(), 'central_difference ran in a student cell'\n"
                 "    assert answers.same(), 'a stand-in is left'\n"
                 "    assert answers.f() == 1"))]
    nb = notebook("fb", cells)
    nb.metadata["memlab"]["forbid"] = ["memlab.testing.central_difference"]
    sol = write(nb, tmp_path / "fb.ipynb")
    r = grade(sol, solution=sol, timeout=20)
    assert r.full_marks, r.feedback()


def test_tampering_the_kernel_reports_costs_the_cells_judged_after_it(tmp_path):
    """The kernel side reports a replaced ``memlab.testing.forbid`` as plain data; the one policy
    (memlab.grading.policy) scores the tests cells judged from then on 0, naming it, even when the
    answers are right."""
    import nbformat
    from memlab.grading.authoring import code as code_cell
    sol, sub = _pair(tmp_path, "def double(x):\n    return 2 * x")
    nb = nbformat.read(sub, as_version=4)
    nb.cells.insert(0, code_cell("import contextlib, memlab.testing as mt\n"
                                 "mt.forbid = lambda *a: contextlib.nullcontext()"))
    nbformat.write(nb, sub)
    r = grade(sub, solution=sol, timeout=20)
    assert r.score == 0, r.feedback()
    assert any("memlab.testing.forbid" in n and "score 0" in n for n in r.notes), r.notes
    assert "memlab.testing.forbid" in r.tests[0].output, r.tests[0].output


def test_forbid_takes_a_class_and_its_methods_in_any_order():
    """A class named before one of its methods: every name is resolved before anything is
    swapped, so the method is found, and everything is put back afterwards."""
    from memlab.memory import kvcache
    from memlab.testing import WriteItYourself, forbid

    cls, admit = kvcache.PagedAllocator, kvcache.PagedAllocator.admit
    with forbid("memlab.memory.kvcache.PagedAllocator",
                "memlab.memory.kvcache.PagedAllocator.admit"):
        with pytest.raises(WriteItYourself, match="PagedAllocator"):
            kvcache.PagedAllocator(4, 2)
        with pytest.raises(WriteItYourself, match="admit"):
            admit_now = getattr(cls, "admit")
            admit_now(None, "r", 1)
    assert kvcache.PagedAllocator is cls and cls.admit is admit
    with pytest.raises(ValueError):
        with forbid("memlab.memory.kvcache.PagedAllocator", "memlab.no_such_thing.f"):
            pass
    assert kvcache.PagedAllocator is cls


def test_gradescope_lists_every_declared_check_whatever_happened():
    """The same test list for every submission: a tests cell that timed out still has one entry per
    check its source declares, at 0 with the reason, and the rest of its points."""
    from pathlib import Path
    from memlab.grading.results import Result, TestResult, declared_checks
    src = ('with check(points=1, name="small"):\n    pass\n### BEGIN HIDDEN TESTS\n'
           '@check(points=2, name="large")\ndef t():\n    pass\n### END HIDDEN TESTS\n')
    declared = declared_checks(src, hidden={4, 5, 6})
    assert declared == [("small", 1.0, False), ("large", 2.0, True)]
    t = TestResult("q1_tests", "q1", "Sort", 4.0, status="timeout", hidden=True, declared=declared,
                   output="the tests did not finish within the time limit of 30 s")
    r = Result(notebook=Path("a.ipynb"), solution=None, assignment="x", score=0, max_score=4, questions={},
               tests=[t], cells=[], kernel_restarts=0, execution_time=1.0)
    got = r.gradescope_tests("after_published")
    assert [(e["name"], e["score"], e["max_score"], e["visibility"]) for e in got] == [
        ("q1: Sort · small", 0, 1, "visible"), ("q1: Sort · large", 0, 2, "after_published"),
        ("q1: Sort · the rest of the tests", 0, 1, "after_published")]
    assert got[0]["output"].startswith("did not run: time limit reached")


def test_gradebook_gives_a_short_cause_per_question():
    from memlab.grading.batch import _cause, _short
    from memlab.grading.results import CheckResult, QuestionResult, TestResult
    assert _short("answer cell 'q1' (cell 3) raised ModuleNotFoundError: No module named 'x'\nmore") == \
        "cell 3 raised ModuleNotFoundError: No module named 'x'"
    q = QuestionResult("q1", "", 3, tests=[TestResult("t", "q1", "", 3, status="timeout")])
    assert _cause(q, 30) == "time limit 30 s"
    t = TestResult("t", "q2", "", 3, status="partial", score=1,
                   checks=[CheckResult("a", 1, True), CheckResult("b", 2, False)])
    assert _cause(QuestionResult("q2", "", 3, tests=[t]), 30) == "1 of 2 checks failed: b"
