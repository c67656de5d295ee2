"""memlab.grading: assign exercises, grade notebooks (fixtures in tests/grading/notebooks/)."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from memlab.errors import GradingError
from memlab.grading import assign, check_all, grade, load_solution, make_exercise
from memlab.grading.authoring import answer, code, md, notebook, write
from memlab.grading.authoring import tests as tests_cell
from memlab.grading.notebook import notebook_bytes

HERE = Path(__file__).resolve().parent
NB = HERE / "notebooks"
ROOT = HERE.parents[1]
sys.path.insert(0, str(NB))
import make_fixtures  # noqa: E402

TIMEOUT = 20      # per cell, for notebooks that do not loop
_graded: dict = {}


def graded(name: str, timeout: float = TIMEOUT):
    """Grade a fixture once per session, checking that grading leaves the file untouched."""
    if name not in _graded:
        path = NB / name
        before, mtime = path.read_bytes(), path.stat().st_mtime_ns
        t0 = time.monotonic()
        result = grade(path, solution=NB / "tiny.ipynb", timeout=timeout)
        elapsed = time.monotonic() - t0
        assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime, f"grading modified {name}"
        _graded[name] = (result, elapsed)
    return _graded[name]


def by_id(result):
    return {t.id: t for t in result.tests}


# --------------------------------------------------------------------------------------- fixtures

def test_fixture_notebooks_are_up_to_date():
    for name, nb in make_fixtures.fixtures().items():
        assert (NB / name).read_bytes() == notebook_bytes(nb), \
            f"{name} is stale: run python tests/grading/notebooks/make_fixtures.py"


# ----------------------------------------------------------------------------------------- assign

def test_exercise_content(tmp_path):
    report = assign(NB / "tiny.ipynb", tmp_path)
    assert report.written == [tmp_path / "tiny.ipynb"]
    raw = (tmp_path / "tiny.ipynb").read_text()
    nb = nbformat.reads(raw, as_version=4)
    cells = {c.metadata.get("memlab", {}).get("id"): c for c in nb.cells}
    assert cells["q1_double"].source == "def double(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    assert cells["q1_double_tests"].source == 'assert float(double(2)) == 4, "double(2) should be 4"'
    assert "hidden" in cells["q2_hyp_hidden"].source and "hyp(0, 7)" not in raw
    for text in ("BEGIN SOLUTION", "HIDDEN TESTS", "double(-3)", "FACTOR * x", "math.sqrt(a"):
        assert text not in raw
    assert cells["q1_double_tests"].metadata["editable"] is False
    for c in nb.cells:
        if c.cell_type == "code":
            assert c.outputs == [] and c.execution_count is None
    assert nb.metadata["memlab"]["assignment"] == "tiny"
    assert len(nb.metadata["memlab"]["generated_sha256"]) == 64
    assert "import math\nFACTOR = 2" in [c.source for c in nb.cells]     # set-up code kept


def test_assign_is_deterministic_and_check(tmp_path):
    with pytest.raises(GradingError, match="not a solution"):     # the student_*.ipynb there
        assign(NB, tmp_path / "a")
    assign(NB / "tiny.ipynb", tmp_path / "a")
    assign([NB / "tiny.ipynb"], tmp_path / "b")
    a, b = (tmp_path / "a" / "tiny.ipynb").read_bytes(), (tmp_path / "b" / "tiny.ipynb").read_bytes()
    assert a == b
    assert assign(NB / "tiny.ipynb", tmp_path / "b").unchanged == [tmp_path / "b" / "tiny.ipynb"]
    assert assign(NB / "tiny.ipynb", tmp_path / "b", check=True).ok
    assert not assign(NB / "tiny.ipynb", tmp_path / "c", check=True).ok          # missing
    (tmp_path / "b" / "tiny.ipynb").write_bytes(a.replace(b"FACTOR = 2", b"FACTOR = 3"))
    problems = assign(NB / "tiny.ipynb", tmp_path / "b", check=True).problems
    assert len(problems) == 1 and "tiny.ipynb" in problems[0] and "differs" in problems[0]


def test_assign_follows_a_changed_solution(tmp_path):
    sol = tmp_path / "solutions" / "tiny.ipynb"
    sol.parent.mkdir()
    sol.write_bytes((NB / "tiny.ipynb").read_bytes())
    assign(sol, tmp_path / "ex")
    before = (tmp_path / "ex" / "tiny.ipynb").read_bytes()
    sol.write_bytes(sol.read_bytes().replace(b"FACTOR = 2", b"FACTOR = 3"))
    assert assign(sol, tmp_path / "ex").written == [tmp_path / "ex" / "tiny.ipynb"]   # not edited: overwritten
    after = (tmp_path / "ex" / "tiny.ipynb").read_bytes()
    assert after != before and b"FACTOR = 3" in after


def test_assign_refuses_to_overwrite_edited_exercise(tmp_path, capsys):
    from memlab.cli import main
    out = tmp_path / "ex"
    assign(NB / "tiny.ipynb", out)
    path = out / "tiny.ipynb"
    generated = path.read_bytes()
    # outputs and JupyterLab's re-formatting are not edits: regenerating overwrites them
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="hi\n")]
    nb.cells[1].execution_count = 1
    path.write_text(json.dumps(nb, indent=2))
    assert assign(NB / "tiny.ipynb", out).written == [path]
    assert path.read_bytes() == generated
    # a student's answer is an edit
    nb = nbformat.read(path, as_version=4)
    nb.cells[3].source = "def double(x):\n    return 2 * x"
    nbformat.write(nb, path)
    edited = path.read_bytes()
    with pytest.raises(GradingError, match=r"(?s)refusing.*--out DIR.*tiny\.ipynb") as e:
        assign(NB / "tiny.ipynb", out)
    assert "--force" not in str(e.value)
    assert path.read_bytes() == edited
    assert main(["assign", str(NB / "tiny.ipynb"), "--out", str(out)]) == 1
    assert "tiny.ipynb" in capsys.readouterr().err
    assert path.read_bytes() == edited
    assert main(["assign", str(NB / "tiny.ipynb"), "--out", str(out), "--force"]) == 0
    assert path.read_bytes() == generated


def test_python_dash_m_memlab_assign_check(tmp_path):
    assign(NB / "tiny.ipynb", tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "memlab", "assign", str(NB / "tiny.ipynb"), "--out", str(tmp_path), "--check"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "up to date" in r.stdout


# ------------------------------------------------------------------------------------------ grade

def test_solution_grades_to_full_marks(tmp_path, capsys):
    from memlab.cli import main
    out = tmp_path / "results.json"
    assert main(["grade", str(NB / "tiny.ipynb"), "--solution", str(NB / "tiny.ipynb"), "--json", str(out), "--timeout", str(TIMEOUT)]) == 0
    table = capsys.readouterr().out
    assert "6/6" in table and "q2_hyp" in table
    res = json.loads(out.read_text())
    assert res["score"] == 6 and isinstance(res["execution_time"], float) and "output" in res
    assert [t["name"] for t in res["tests"]] == ["q1_double: Double", "q2_hyp: Hypotenuse",
                                                 "q2_hyp: Hypotenuse, hidden"]
    for t in res["tests"]:
        assert t["score"] == t["max_score"] and t["visibility"] == "visible" and "output" in t


def test_exercise_grades_to_zero(tmp_path):
    assign(NB / "tiny.ipynb", tmp_path)
    r = grade(tmp_path / "tiny.ipynb", solution=NB / "tiny.ipynb", timeout=TIMEOUT)
    assert (r.score, r.max_score) == (0, 6)
    assert r.questions["q1_double"].score == 0 and r.questions["q2_hyp"].max_score == 4
    t = by_id(r)
    assert "NotImplementedError" in t["q1_double_tests"].output
    assert "raise NotImplementedError()" in t["q1_double_tests"].output      # where, in their code
    assert t["q2_hyp_hidden"].status == "failed (hidden tests)"
    assert "hyp(0, 7)" not in t["q2_hyp_hidden"].output                       # hidden code not shown


def test_infinite_loops_cost_their_question_only():
    r, elapsed = graded("student_loop.ipynb", timeout=1.5)
    t = by_id(r)
    assert t["q1_double_tests"].status == "timeout" and t["q1_double_tests"].score == 0
    assert "the time limit of 1.5 s" in t["q1_double_tests"].output    # the limit that was applied
    assert r.questions["q2_hyp"].score == 4 and r.score == 4
    assert r.kernel_restarts == 1            # the loop that ignores KeyboardInterrupt
    assert elapsed < 20


def test_sys_exit_costs_its_question_only():
    r, _ = graded("student_sysexit.ipynb")
    assert r.questions["q1_double"].score == 0 and r.questions["q2_hyp"].score == 4
    assert "SystemExit" in by_id(r)["q1_double_tests"].output
    assert r.kernel_restarts == 0


def test_exit_is_ignored_and_a_kernel_stopped_by_quit_is_restarted():
    """exit() in an answer cell is ignored (test above: no restart). A quit() that gets past that
    stops the kernel after its reply: the grader waits for a new kernel, replays the cells that ran
    before, and every question still scores what its answer deserves."""
    r, _ = graded("student_quit.ipynb")
    assert r.questions["q1_double"].score == 2 and r.questions["q2_hyp"].score == 4
    assert r.kernel_restarts == 1
    assert any("exit() or quit()" in n for n in r.notes), r.notes


def test_os_exit_costs_its_question_only():
    r, _ = graded("student_osexit.ipynb")
    assert by_id(r)["q1_double_tests"].status == "kernel died"
    assert r.questions["q1_double"].score == 0 and r.questions["q2_hyp"].score == 4
    assert r.kernel_restarts == 2            # in q1's tests, then in a scratch cell
    assert any("restarted" in n for n in r.notes)


def test_huge_output_is_truncated():
    """Megabytes printed by a cell, and by an answer while the judge calls it, reach no result."""
    r, _ = graded("student_print.ipynb")
    assert r.score == 6
    assert len(json.dumps(r.to_gradescope())) < 50_000


def test_errors_and_hidden_failures():
    r, _ = graded("student_raise.ipynb")
    t = by_id(r)
    assert r.score == 0
    assert "ValueError: my answer is broken" in t["q1_double_tests"].output
    assert t["q2_hyp_tests"].status == "failed (hidden tests)"
    assert "hidden test failed" in t["q2_hyp_tests"].output
    assert "_close(hyp(1, 1), math.sqrt(2))" not in t["q2_hyp_tests"].output


def test_deleted_duplicated_moved_and_edited_cells():
    r, _ = graded("student_edited.ipynb")
    assert r.score == 6, r.feedback()        # tests come from the solution, the last `double` wins
    assert [t.id for t in r.tests] == ["q1_double_tests", "q2_hyp_tests", "q2_hyp_hidden"]
    assert any("q1_double_tests" in n and "missing" in n for n in r.notes)


def test_check_all(tmp_path):
    sol, ex = tmp_path / "solutions", tmp_path / "exercises"
    sol.mkdir()
    (sol / "tiny.ipynb").write_bytes((NB / "tiny.ipynb").read_bytes())
    assert any("missing" in p for p in assign(sol, ex, check=True).problems)
    assign(sol, ex)
    assert check_all(sol, ex, timeout=TIMEOUT) == []


# -------------------------------------------------------------------------------------- bad input

def _solution(tmp_path, cells, name="bad.ipynb", assignment="bad"):
    nb = nbformat.v4.new_notebook()
    if assignment:
        nb.metadata["memlab"] = {"assignment": assignment}
    nb.cells = cells
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def _cell(src, **meta):
    c = nbformat.v4.new_code_cell(src)
    if meta:
        c.metadata["memlab"] = meta
    return c


def test_no_memlab_metadata(tmp_path):
    path = _solution(tmp_path, [_cell("x = 1")], assignment=None)
    with pytest.raises(GradingError, match="no memlab metadata"):
        grade(path)
    with pytest.raises(GradingError, match="no memlab metadata"):
        assign(path, tmp_path / "out")
    path = _solution(tmp_path, [_cell("x = 1")], name="plain.ipynb")
    with pytest.raises(GradingError, match="no cell has memlab metadata"):
        load_solution(path)


def test_missing_solution(tmp_path):
    ex = tmp_path / "ex"
    assign(NB / "tiny.ipynb", ex)
    with pytest.raises(GradingError, match=r"no solution given; .* never looks for one by itself"):
        grade(ex / "tiny.ipynb")
    with pytest.raises(GradingError, match="does not exist"):
        grade(ex / "tiny.ipynb", solution=tmp_path / "nope.ipynb")
    with pytest.raises(GradingError, match="not a solution"):
        grade(NB / "tiny.ipynb", solution=ex / "tiny.ipynb")
    with pytest.raises(GradingError, match="no such"):
        grade(tmp_path / "absent.ipynb")


def test_unknown_question(tmp_path):
    path = _solution(tmp_path, [_cell("def f(): pass", id="q1", kind="answer"),
                                _cell("assert f() is None", id="t1", kind="tests", question="q9", points=0)])
    with pytest.raises(GradingError, match=r"(?s)unknown question 'q9'.*q1"):
        assign(path, tmp_path / "out")
    with pytest.raises(GradingError, match="unknown question"):
        notebook("x", [answer("q1", "x = 1"), tests_cell("t1", "q2", 0, "assert x")])


JUDGE = "### BEGIN HIDDEN TESTS\ndef test_f(answers):\n    assert answers.f(1.5) == 1\n### END HIDDEN TESTS"


@pytest.mark.parametrize("tests_src", [
    "assert f(1.5) == 1",                                                     # no hidden part
    "assert f(1.5) == 1\n### BEGIN HIDDEN TESTS\nassert f(2.5) == 2\n### END HIDDEN TESTS",  # in-kernel
    "### BEGIN HIDDEN TESTS\ndef check_f():\n    assert f(2.5) == 2\n### END HIDDEN TESTS",   # no test_
])
def test_hidden_tests_that_are_not_judge_code_are_refused_everywhere(tmp_path, tests_src, capsys):
    """assign, check and grade refuse a tests cell whose points no judge code decides, and show
    the judge-code form."""
    from memlab.cli import main
    cells = [answer("q1", "def f(x):\n    ### BEGIN SOLUTION\n    return int(x)\n    ### END SOLUTION"),
             tests_cell("q1_tests", "q1", 2, tests_src)]
    (tmp_path / "solutions").mkdir()
    sol = _solution(tmp_path, cells, "solutions/t.ipynb", "t")
    with pytest.raises(GradingError, match="def test_q1"):
        notebook("t", cells)
    for argv in (["assign", str(sol.parent), "--out", str(tmp_path / "ex")],
                 ["check", "--solutions", str(sol.parent), "--exercises", str(tmp_path / "ex")],
                 ["grade", str(sol), "--solution", str(sol), "--allow-unisolated"]):
        assert main(argv) != 0, argv
        err = capsys.readouterr().err
        assert "def test_q1(answers):" in err and "answers.my_function(3)" in err, (argv, err)
    ok = write(notebook("t", [cells[0], tests_cell("q1_tests", "q1", 2, JUDGE)]), tmp_path / "ok.ipynb")
    assert load_solution(ok).max_score == 2


@pytest.mark.parametrize("src, kind, message", [
    ("def f():\n    ### BEGIN SOLUTION\n    return 1\n", "answer", "never closed"),
    ("def f():\n    return 1\n    ### END SOLUTION\n", "answer", "without a '### BEGIN SOLUTION'"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n", "answer", "inside another"),
    ("assert 1\n### BEGIN HIDDEN TESTS\nassert 2\n", "tests", "never closed"),
    ("assert 1\n### BEGIN SOLUTION\n### END SOLUTION\n", "tests", "belong in an 'answer' cell"),
    ("### BEGIN HIDDEN TESTS\n### END HIDDEN TESTS\n", "answer", "belong in a 'tests' cell"),
])
def test_bad_markers(tmp_path, src, kind, message):
    cells = [_cell("def f(): pass", id="q1", kind="answer")]
    if kind == "answer":
        cells.append(_cell(src, id="q2", kind="answer"))
    else:
        cells.append(_cell(src, id="t1", kind="tests", question="q1", points=1))
    path = _solution(tmp_path, cells)
    with pytest.raises(GradingError, match=message) as e:
        assign(path, tmp_path / "out")
    assert "bad.ipynb" in str(e.value)
    assert not (tmp_path / "out").exists()


def test_other_bad_metadata(tmp_path):
    bad = [
        ([_cell("### BEGIN SOLUTION\n### END SOLUTION")], "no memlab cell metadata"),
        ([_cell("x = 1", id="q1", kind="answer"), _cell("y = 1", id="q1", kind="answer")], "used twice"),
        ([_cell("x = 1", id="q1", kind="answer"), _cell("x", id="t", kind="tests", question="q1")], "points"),
        ([_cell("x = 1", id="q1", kind="solution")], "'kind' must be"),
        ([_cell("x = 1", kind="answer")], "needs an 'id'"),
    ]
    for cells, message in bad:
        with pytest.raises(GradingError, match=message):
            assign(_solution(tmp_path, cells), tmp_path / "out")


def test_authoring_round_trip(tmp_path):
    cells = [md("# T"), code("import math"),
             answer("q1", """
                 def f(x):
                     ### BEGIN SOLUTION
                     return math.floor(x)
                     ### END SOLUTION
             """),
             tests_cell("q1_tests", "q1", 2, "assert f(1.5) == 1\n" + JUDGE, title="floor")]
    p1, p2 = write(notebook("t", cells), tmp_path / "a.ipynb"), write(notebook("t", cells), tmp_path / "b.ipynb")
    assert p1.read_bytes() == p2.read_bytes()
    sol = load_solution(p1)
    assert sol.assignment == "t" and sol.max_score == 2 and list(sol.questions) == ["q1"]
    ex = make_exercise(sol)
    assert ex.cells[2].source == "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    copy.deepcopy(ex)


def test_grader_imports_only_stdlib_nbformat_jupyter_client():
    import ast
    allowed = {"nbformat", "jupyter_client", "memlab", "tqdm"} | set(sys.stdlib_module_names)
    files = sorted((ROOT / "memlab" / "grading").glob("*.py")) + [ROOT / "memlab" / "cli.py"]
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:           # relative: only memlab.grading itself and memlab.errors
                    rel = node.module or ""
                    assert node.level == 1 or rel == "errors", f"{f.name} imports ..{rel}"
                    assert f.name != "cli.py" or rel in ("errors", "") or rel.split(".")[0] == "grading", \
                        f"cli imports .{rel}"
                    continue
                mods = [node.module]
            else:
                continue
            # the judge and the kernel's call server are processes of their own that run the tests'
            # and the answers' code (memlab's graphs, numpy); the codec decodes numpy arrays
            # (and the call server launches exercise 14's CUDA kernels with numba, imported when asked)
            beyond = f.name in ("judge.py", "callserver.py", "watch.py", "arming.py")
            extra = {"numpy", "numba"} if f.name == "callserver.py" else {"numpy"}
            for m in mods:
                assert m.split(".")[0] in allowed | (extra if beyond or f.name == "codec.py" else set()), \
                    f"{f.name} imports {m}"
                assert beyond or not m.startswith("memlab.") or m.split(".")[1] in ("errors", "grading"), \
                    f"{f.name} imports {m}: the grader depends on no algorithm"
