"""``memlab grade``: run a student's notebook in a fresh kernel, then the solution's tests against it."""
from __future__ import annotations

import secrets
import time
from pathlib import Path

from ..errors import GradingError
from .kernel import Kernel
from .notebook import (ANSWER, KEY, TESTS, Solution, TestCell, cell_meta, load_solution,
                       notebook_assignment, reads_notebook)
from .results import CellRun, QuestionResult, Result, TestResult

DATA_MIME = "application/vnd.memlab.test+json"
TEST_OUTPUT_LIMIT = 5_000

# Runs one tests cell inside the student's kernel.  It is exec'd in a private globals dict holding
# _TESTS ({file name: (source, hidden line numbers)} of every tests cell), _NAME (the one to run),
# _NONCE, _MIME and _NS (the user namespace, where the test code itself runs), so the grader leaves no names of its own behind.
# It reports through a display_data bundle of mime type _MIME tagged with _NONCE, and never re-raises,
# so no traceback (which could quote hidden tests) reaches the output.
_DRIVER = r'''
import traceback as _tb
from IPython.display import display as _display
def _report(**kw):
    kw["nonce"] = _NONCE
    _display({_MIME: kw}, raw=True)
def _src(f):
    lines = _TESTS[f.filename][0].split("\n")
    return lines[f.lineno - 1].strip() if f.lineno and 0 < f.lineno <= len(lines) else ""
try:
    exec(compile(_TESTS[_NAME][0], _NAME, "exec"), _NS)
except BaseException as _e:
    _frames = _tb.extract_tb(_e.__traceback__)[1:]
    _mine = [f for f in _frames if f.filename in _TESTS]
    _hidden = any(f.lineno in _TESTS[f.filename][1] for f in _mine)
    _what = "".join(_tb.format_exception_only(type(_e), _e)).strip()
    if isinstance(_e, KeyboardInterrupt):
        _what = "KeyboardInterrupt (the time limit passed)"
    if _hidden:
        _msg = "a hidden test failed: " + _what
    else:
        _msg = _what
        if isinstance(_e, AssertionError) and not str(_e) and _mine:
            _msg = "assertion failed: " + _src(_mine[-1])
        if _mine:
            _msg += "\n  at test line %d: %s" % (_mine[-1].lineno, _src(_mine[-1]))
            if len(_mine) > 1:
                _msg += "\n  called from test line %d: %s" % (_mine[0].lineno, _src(_mine[0]))
        _last = max((i for i, f in enumerate(_frames) if f.filename in _TESTS), default=-1)
        _theirs = _frames[_last + 1:]
        if _theirs:
            _msg += "\n  in your code:"
            for f in _theirs[-4:]:
                _msg += "\n    %s, line %s: %s" % (f.name, f.lineno, (f.line or "").strip())
    _report(passed=False, hidden=_hidden, message=_msg)
else:
    _report(passed=True)
'''


def _test_name(test: TestCell) -> str:
    return f"<memlab test {test.id}>"


def _driver_code(test: TestCell, sol: Solution, nonce: str) -> str:
    # Every tests cell's source goes along: a test may call a helper another tests cell defined, and
    # whether a failing line is hidden is looked up in the cell the line belongs to.
    tests = {_test_name(t): (t.source, sorted(t.hidden)) for t in sol.tests}
    env = {"_TESTS": tests, "_NAME": _test_name(test), "_NONCE": nonce, "_MIME": DATA_MIME}
    args = ", ".join(f"{k!r}: {v!r}" for k, v in env.items())
    return f"exec({_DRIVER!r}, {{{args}, '_NS': globals()}})\n"


def find_solution(notebook: Path, assignment: str | None, solution=None) -> Path:
    """Where the solution of *notebook* is: see :func:`grade`."""
    if solution is not None:
        p = Path(solution)
        if p.is_dir():
            if assignment is None:
                raise GradingError(f"{notebook}: has no memlab assignment metadata, so the solution in the "
                                   f"directory {p} cannot be chosen; pass the solution notebook itself")
            p = p / f"{assignment}.ipynb"
        if not p.is_file():
            raise GradingError(f"{notebook}: the solution notebook {p} does not exist")
        return p
    if assignment is None:
        raise GradingError(f"{notebook}: the notebook has no memlab metadata (nb.metadata['{KEY}']"
                           "['assignment']), so its solution cannot be found; is it a memlab exercise? "
                           "Pass --solution to name the solution notebook")
    name = f"{assignment}.ipynb"
    tried = [Path.cwd() / "solutions" / name]
    tried += [d / "solutions" / name for d in notebook.resolve().parents]
    for p in dict.fromkeys(tried):
        if p.is_file():
            return p
    p = notebook.resolve().parent / name
    if p.is_file() and p != notebook.resolve():
        return p
    raise GradingError(f"{notebook}: no solution notebook for assignment {assignment!r}; looked for "
                       f"solutions/{name} in the current directory and above the notebook, and for {name} "
                       "next to it (other than the notebook itself); pass --solution PATH")


def _plan(cells, sol: Solution) -> tuple[list, dict[str, list[int]], list[str]]:
    """The order to run things in: student cells (minus tests cells) and the solution's tests cells.

    A tests cell runs after the later of (a) the student's first copy of that cell and (b) the student's
    last answer cell of its question; with neither, at the end.  Returns the plan (("cell", index) or
    ("test", TestCell)), the student answer cells per question, and notes.
    """
    answers_of: dict[str, list[int]] = {q: [] for q in sol.questions}
    first_copy: dict[str, int] = {}
    notes = []
    for i, c in enumerate(cells):
        m = cell_meta(c)
        if not m:
            continue
        if m.get("kind") == ANSWER:
            cid = m.get("id")
            q = sol.answers[cid].question if cid in sol.answers else m.get("question", cid)
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
    plan: list = []
    for i, c in enumerate(cells):
        m = cell_meta(c) or {}
        if c.get("cell_type") == "code" and m.get("kind") != TESTS and c.get("source", "").strip():
            plan.append(("cell", i))
        plan.extend(("test", t) for t in slots.get(i, []))
    plan.extend(("test", t) for t in slots.get(-1, []))
    return plan, answers_of, notes


def _clip(text: str, limit: int = TEST_OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [output truncated: {len(text) - limit} more characters]\n"


def grade(notebook, solution=None, *, timeout: float = 30.0, json_path=None, max_restarts: int = 5,
          max_output: int = 20_000, startup_timeout: float = 60.0, env: dict | None = None) -> Result:
    """Grade one notebook; returns a :class:`~memlab.grading.results.Result`.

    The notebook file is read once and never written.  The solution is *solution* (a notebook, or a
    directory holding ``<assignment>.ipynb``), else ``solutions/<assignment>.ipynb`` in the current
    directory or in a directory above the notebook, else ``<assignment>.ipynb`` next to it.
    *timeout* is the limit in seconds for each cell; *json_path*, if given, receives Gradescope's
    results.json.  Raises :class:`GradingError` for bad input (not for anything the student's code does).
    """
    t_start = time.monotonic()
    path = Path(notebook)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise GradingError(f"{path}: no such notebook") from None
    try:
        nb = reads_notebook(raw.decode("utf-8"), path)
    except UnicodeDecodeError as e:
        raise GradingError(f"{path}: not a valid notebook (not UTF-8: {e})") from None
    assignment = notebook_assignment(nb, str(path))
    if assignment is None and not any(cell_meta(c) for c in nb.cells):
        raise GradingError(f"{path}: the notebook has no memlab metadata (neither nb.metadata['{KEY}'] "
                           "nor any cell's); it is not a memlab exercise")
    sol_path = find_solution(path, assignment, solution)
    sol = load_solution(sol_path)
    if assignment is not None and assignment != sol.assignment:
        raise GradingError(f"{path}: the notebook is assignment {assignment!r} but the solution {sol_path} "
                           f"is assignment {sol.assignment!r}")
    if timeout <= 0:
        raise GradingError(f"timeout must be positive, not {timeout!r}")
    cells = nb.cells
    plan, answers_of, notes = _plan(cells, sol)
    questions = {q.id: QuestionResult(q.id, q.title, q.points) for q in sol.questions.values()}
    for q, idx in answers_of.items():
        if not idx and sol.questions[q].answers:
            questions[q].notes.append(f"no answer cell of question {q!r} was found in the notebook")
    tests: dict[str, TestResult] = {t.id: TestResult(t.id, t.question, t.title, t.points) for t in sol.tests}
    runs: list[CellRun] = []
    nonce = secrets.token_hex(16)
    done: list[str] = []          # code that ran to completion, replayed after a kernel restart
    gave_up = False

    kernel = Kernel(cwd=path.resolve().parent, startup_timeout=startup_timeout, env=env, data_mime=DATA_MIME)
    kernel.start()
    try:
        def recover(what: str) -> None:
            nonlocal gave_up
            if kernel.restarts >= max_restarts:
                gave_up = True
                notes.append(f"the kernel had to be restarted {max_restarts} times; the rest was not run")
                return
            notes.append(f"{what}; the kernel was restarted and the {len(done)} cells that had completed "
                         "before were run again")
            kernel.restart()
            for code in done:
                kernel.execute(code, timeout=timeout, max_output=0)
                if kernel.needs_restart:          # replay went wrong: start clean and go on
                    kernel.restart()
                    break

        for kind, item in plan:
            if gave_up:
                break
            if kind == "cell":
                m = cell_meta(cells[item]) or {}
                is_answer = m.get("kind") == ANSWER
                r = kernel.execute(cells[item].source, timeout=timeout, max_output=max_output)
                err = ""
                if r.status == "error":
                    err = f"raised {r.ename}: {r.evalue}"
                elif r.status == "timeout":
                    err = f"did not finish within the time limit of {timeout:g} s"
                elif r.status == "dead":
                    err = "killed the kernel (os._exit? a crash?)"
                label = f"answer cell {m.get('id')!r} (cell {item})" if is_answer else f"cell {item}"
                runs.append(CellRun(item, ANSWER if is_answer else "code", m.get("id"), r.status, err, r.seconds))
                if err:
                    q = None
                    if is_answer:
                        cid = m.get("id")
                        q = sol.answers[cid].question if cid in sol.answers else m.get("question", cid)
                    if q in questions:
                        questions[q].notes.append(f"{label} {err}")
                    elif not kernel.needs_restart:      # else recover() notes it
                        notes.append(f"{label} {err}")
                if r.status in ("ok", "error"):
                    done.append(cells[item].source)
                if kernel.needs_restart:
                    recover(f"{label} {err}")
                continue
            test: TestCell = item
            res = tests[test.id]
            if res.status != "not run":       # already run (cannot happen with one slot per test)
                continue
            code = _driver_code(test, sol, nonce)
            r = kernel.execute(code, timeout=timeout, max_output=max_output)
            res.seconds = r.seconds
            reports = [d for d in r.data if isinstance(d, dict) and d.get("nonce") == nonce]
            printed = r.text
            if r.status == "dead":
                res.status = "kernel died"
                msg = "the kernel died while these tests ran (os._exit? a crash?)"
            elif r.status == "timeout":
                res.status = "timeout"
                msg = f"the tests did not finish within the time limit of {timeout:g} s (an endless loop?)"
            elif reports and reports[-1].get("passed") and r.status == "ok" and len(reports) == 1:
                res.status, msg = "passed", ""
                res.score = test.points
            elif reports and not reports[-1].get("passed"):
                res.status = "failed (hidden tests)" if reports[-1].get("hidden") else "failed"
                msg = str(reports[-1].get("message", ""))
            else:
                res.status = "failed"
                msg = f"the tests did not complete ({r.ename}: {r.evalue})" if r.ename else \
                    "the tests did not report a result"
            parts = [msg] if msg else []
            if not res.passed:
                parts += questions[test.question].notes
            if printed.strip():
                parts.append(("output:\n" if parts else "") + printed.rstrip())
            res.output = _clip("\n".join(parts))
            if r.status in ("ok", "error"):
                done.append(code)
            if kernel.needs_restart:
                recover(f"the tests cell {test.id!r} " + ("killed the kernel" if r.status == "dead"
                                                           else "could not be interrupted"))
    finally:
        kernel.shutdown()

    for t in tests.values():
        if t.status == "not run":
            t.output = "not run: the kernel died too many times"
        questions[t.question].tests.append(t)
        questions[t.question].score += t.score
    result = Result(
        notebook=path, solution=sol_path, assignment=sol.assignment,
        score=sum(t.score for t in tests.values()), max_score=sol.max_score,
        questions=questions, tests=list(tests.values()), cells=runs,
        kernel_restarts=kernel.restarts, execution_time=time.monotonic() - t_start, notes=notes)
    if json_path is not None:
        result.write_json(json_path)
    return result


def check_all(solutions_dir="solutions", exercises_dir="exercises", *, timeout: float = 60.0) -> list[str]:
    """Check a course's notebooks; returns the problems found (an empty list: all is well).

    * ``exercises_dir`` is exactly what ``memlab assign solutions_dir --out exercises_dir`` writes;
    * every solution notebook grades to full marks;
    * every exercise notebook grades to zero (without the grader failing).
    """
    from .assign import assign, solution_files
    problems = list(assign(solutions_dir, exercises_dir, check=True).problems)
    for f in solution_files(solutions_dir):
        r = grade(f, solution=f, timeout=timeout)
        if not r.full_marks:
            problems.append(f"{f}: the solution grades to {r.score}/{r.max_score}, not full marks:\n"
                            + r.feedback())
        ex = Path(exercises_dir) / f.name
        if ex.is_file():
            r = grade(ex, solution=f, timeout=timeout)
            if r.score != 0:
                passed = ", ".join(t.id for t in r.tests if t.passed)
                problems.append(f"{ex}: the unanswered exercise scores {r.score}/{r.max_score}, not 0 "
                                f"(tests passing without an answer: {passed})")
    return problems
