"""``memlab grade``: run a student's notebook in a fresh kernel, then the solution's tests against it.

The solution decides what is graded: it is named by the caller (``solution``, or a directory and an
``assignment``), read into memory before any student code runs, and the notebook's own metadata is
only checked against it (:mod:`.inputs`).  :mod:`.session` runs the cells, :mod:`.isolate` keeps
the graded code away from the solution and from results.json when the grader runs as root.
:func:`grade` is its steps: check the limits, read the inputs, refuse an official grade that would
not be isolated, plan the cells, run them in a sandbox, score, write results.json.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from ..errors import GradingError
from .inputs import escape_surrogates, find_solution, load, read_solution
from .isolate import Sandbox, isolation_problem
from .kernel import Kernel
from .notebook import Solution
from .plan import plan
from .results import VISIBILITIES, Result, declared_checks, redact
from .session import Limits, Session


#: The smallest memory limit accepted (address space per process).  Measured on Linux x86-64 with
#: the lock's versions, one BLAS thread and two malloc arenas (which :class:`~.kernel.Kernel` sets):
#: the guard and numpy start at 280 MB, not at 272 MB (numpy's import fails: every submission
#: would score 0); exercise 01's solution grades to full marks from 280 MB; exercise 14 (Numba)
#: needs more than 512 MB (full marks at 768 MB).  320 MB leaves a margin over 280.
MIN_MEMORY = 320 << 20


def refusal(problem: str) -> str:
    """The message refusing an official grade that would not be isolated."""
    return ("refusing to give an official grade without isolation: " + problem + ". Unisolated, the "
            "graded code could read the solution and forge its own result. To grade anyway (e.g. your "
            "own test run), pass --allow-unisolated; the grade then says it was not isolated")


def grade(notebook, solution=None, *, assignment: str | None = None, timeout: float = 30.0,
          total_timeout: float = 600.0, json_path=None, max_restarts: int = 5, max_output: int = 20_000,
          startup_timeout: float = 60.0, env: dict | None = None, isolate: bool | None = None,
          memory_limit: int | None = 4 << 30, progress: Callable[[str], None] | None = None,
          hidden_visibility: str = "visible", slot: int = 0, allow_unisolated: bool = True,
          self_check: bool = False) -> Result:
    """Grade one notebook; returns a :class:`~memlab.grading.results.Result`.

    *solution* is the solution notebook (or a directory of them, with *assignment*, or a parsed
    :class:`~memlab.grading.notebook.Solution`); it is never looked for (:func:`find_solution`), and
    required with *json_path* (an official grade).  *timeout* bounds each cell, *total_timeout* the
    whole run (tests not run by then score 0).  *json_path* receives Gradescope's results.json,
    also when the input is bad (score 0, the error as output).  *isolate* (default: when root) runs
    the kernel as an unprivileged user in a private directory (:mod:`.isolate`).  *memory_limit*
    bounds the kernel's address space, in bytes (None: no limit).  *progress* receives one line per
    question as soon as its tests have run.  *hidden_visibility* is Gradescope's ``visibility`` for
    what hidden tests decide in results.json.  *slot* picks the grading user when isolated
    (parallel workers use one each, see :mod:`.batch`).  With ``allow_unisolated=False`` (an
    official grade: ``--json``, ``grade-all``, the autograder) a run that would not be isolated is
    refused, saying why and how to fix it.  *self_check* (``memlab check-work``) runs the visible
    tests in the kernel instead of the judge: a check of one's work, not a grade.
    The notebook file is read once and never written.  Raises :class:`GradingError` for bad input
    (not for anything the student's code does).  If results.json cannot be written at the end, the
    result says why in ``json_error``: the grade is returned, never lost.  Whatever fails (also a
    bug of the grader), *json_path* receives a score-0 record saying why.
    """
    t_start = time.monotonic()
    if hidden_visibility not in VISIBILITIES:
        raise GradingError(f"hidden_visibility must be one of {', '.join(VISIBILITIES)}, "
                           f"not {hidden_visibility!r}")
    known = {"max_score": 0.0, "solution": None}
    try:
        _check_limits(timeout, total_timeout, memory_limit)
        raw, nb, sol_path, sol = _inputs(notebook, solution, assignment, json_path, known)
        if not allow_unisolated:
            _refuse_unisolated(isolation_problem(isolate))
        steps, answers_of, notes = _plan(nb, sol)
        limits = dict(timeout=timeout, total_timeout=total_timeout, deadline=t_start + total_timeout,
                      max_restarts=max_restarts, max_output=max_output)
        with Sandbox(Path(notebook), raw, isolate=isolate, env=env, solution=sol_path, slot=slot,
                     memory_limit=memory_limit) as box:
            if not allow_unisolated and not (box.isolated and box.view):
                _refuse_unisolated(box.why_not or "the run could not be isolated")
            session, restarts = _run(box, sol, nb, steps, limits, memory_limit, startup_timeout,
                                     progress, self_check)
        # Every process of the run has ended here (see Sandbox.__exit__).
    except Exception as e:  # noqa: BLE001  (bad input, or a failure of the grader: results.json all the same)
        err = _record_failure(e, notebook, json_path, known, hidden_visibility, t_start)
        if err is e:
            raise
        raise err from e
    result = _result(notebook, sol_path, sol, session, answers_of, box.notes + notes, restarts,
                     time.monotonic() - t_start)
    if json_path is not None:
        try:
            result.write_json(json_path, hidden_visibility)
        except OSError as e:
            result.json_error = f"{e.strerror or e}"
    return result


def _refuse_unisolated(problem: str) -> None:
    """An official grade that would not be isolated is refused, saying why (*problem*) and how to
    fix it; nothing when there is no problem."""
    if problem:
        raise GradingError(refusal(problem))


def _plan(nb, sol: Solution):
    """The cells to run (:func:`.plan.plan`), every answer cell's question, and the notes (lone
    surrogates replaced, said once)."""
    replaced = escape_surrogates(nb)
    steps, answers_of, notes = plan(nb.cells, sol)
    if replaced:
        notes.append(f"{replaced} lone surrogate character(s) (not valid Unicode) in the notebook "
                     "were replaced by U+FFFD")
    return steps, answers_of, notes


def _record_failure(e: Exception, notebook, json_path, known: dict, hidden_visibility: str,
                    t_start: float) -> GradingError:
    """The error to raise for *e* (itself if a :class:`GradingError`, else one saying the grader
    failed), after writing a score-0 results.json that says why, if one is asked for."""
    err = e if isinstance(e, GradingError) else GradingError(f"the grader failed: {type(e).__name__}: {e}")
    if json_path is not None:
        try:
            Result.failed(notebook, str(err), known["max_score"], solution=known["solution"],
                          execution_time=time.monotonic() - t_start).write_json(json_path,
                                                                                hidden_visibility)
        except OSError:
            pass
    return err


def _check_limits(timeout: float, total_timeout: float, memory_limit: int | None) -> None:
    if memory_limit is not None and memory_limit < MIN_MEMORY:
        raise GradingError(f"memory_limit must be at least {MIN_MEMORY >> 20} MB (what a kernel with "
                           f"numpy needs), or None, not {memory_limit!r} bytes")
    if timeout <= 0 or total_timeout <= 0:
        raise GradingError(f"time limits must be positive, not timeout={timeout!r}, "
                           f"total_timeout={total_timeout!r}")


def _inputs(notebook, solution, assignment, json_path, known: dict):
    """The submission and the solution, read and checked (``known`` learns the maximum score and
    the solution's path as soon as they are known, for a score-0 record)."""
    preloaded = None
    if isinstance(solution, Solution):          # already read (memlab check-work)
        known["solution"], preloaded = solution.path, (solution.path, solution)
        known["max_score"] = solution.max_score
    elif solution is not None or json_path is not None:
        known["solution"] = find_solution(Path(notebook), assignment, solution,
                                          official=json_path is not None)
        preloaded = (known["solution"], read_solution(known["solution"]))
        known["max_score"] = preloaded[1].max_score
    raw, nb, sol_path, sol = load(notebook, solution, assignment, preloaded=preloaded)
    known["max_score"], known["solution"] = sol.max_score, sol_path
    return raw, nb, sol_path, sol


def _run(box: Sandbox, sol: Solution, nb, steps, limits: dict, memory_limit: int | None,
         startup_timeout: float, progress, self_check: bool):
    """Run the plan in a kernel of *box*; returns the session and the kernel's restarts."""
    import os
    kernel = Kernel(cwd=box.cwd, startup_timeout=startup_timeout, env=box.env,
                    popen_kwargs=box.popen_kwargs)
    kernel.connection_dir, kernel.profile_root = box.connection_dir, box.profile_root
    kernel.argv_prefix, kernel.group = list(box.argv_prefix), box.gid
    kernel.on_start = box.adopt
    rlimits = dict(box.rlimits)
    if memory_limit is not None:
        rlimits["RLIMIT_AS"] = int(memory_limit)
    session = Session(kernel, sol, nb.cells, Limits(**limits, rlimits=rlimits), progress=progress,
                      self_check=self_check, socket_dir=box.connection_dir if box.isolated else None,
                      peer_uid=os.getuid() if box.uid is None else box.uid)
    try:
        session.start()
        session.run(steps)
    finally:
        session.close()
        kernel.shutdown()
    return session, kernel.restarts


def _result(notebook, sol_path, sol: Solution, session: Session, answers_of, notes: list[str],
            restarts: int, seconds: float) -> Result:
    """The grade: the session's scores, with hidden test lines redacted from every text."""
    for q, idx in answers_of.items():
        if not idx and sol.questions[q].answers:
            session.questions[q].notes.append(f"no answer cell of question {q!r} was found in the notebook")
    secrets = [line.strip() for t in sol.tests for i, line in enumerate(t.source.split("\n"), 1)
               if i in t.hidden and len(line.strip()) >= 12 and "HIDDEN TESTS" not in line]
    declared = {t.id: declared_checks(t.source, t.hidden) for t in sol.tests}
    for t in session.tests.values():
        t.output = redact(t.output, secrets)
        for c in t.checks:
            c.output = redact(c.output, secrets)
        t.declared = declared.get(t.id, [])
    return Result(
        notebook=Path(notebook), solution=sol_path, assignment=sol.assignment,
        score=sum(t.score for t in session.tests.values()), max_score=sol.max_score,
        questions=session.questions, tests=list(session.tests.values()), cells=session.runs,
        kernel_restarts=restarts, execution_time=seconds,
        notes=[redact(n, secrets) for n in notes + session.notes])


def check_all(solutions_dir="solutions", exercises_dir="exercises", *, timeout: float = 60.0,
              progress: Callable[[str], None] | None = None) -> list[str]:
    """Check a course's notebooks; returns the problems found (an empty list: all is well).
    *progress* receives a line per question graded, prefixed with its notebook.

    * ``exercises_dir`` is exactly what ``memlab assign solutions_dir --out exercises_dir`` writes
      (with ``exercises_dir=None`` this is skipped, and the exercises graded are generated afresh
      in a temporary folder: a student's answers in the working copy never matter);
    * every solution notebook grades to full marks;
    * every exercise notebook grades to zero (without the grader failing).

    That no hidden feedback gives its expected value away is :func:`.feedbackcheck.check_feedback`
    (``memlab check --feedback``).
    """
    import tempfile
    from .assign import assign, solution_files
    with tempfile.TemporaryDirectory(prefix="memlab-check-") as tmp:
        if exercises_dir is None:
            exercises_dir = Path(tmp) / "exercises"
            problems = []
            assign(solutions_dir, exercises_dir)
        else:
            problems = list(assign(solutions_dir, exercises_dir, check=True).problems)

        def said(path: Path):
            return None if progress is None else (lambda line: progress(f"{path}: {line}"))

        for f in solution_files(solutions_dir):
            r = grade(f, solution=f, timeout=timeout, progress=said(f))
            if not r.full_marks:
                problems.append(f"{f}: the solution grades to {r.score}/{r.max_score}, not full marks:\n"
                                + r.feedback())
            ex = Path(exercises_dir) / f.name
            if ex.is_file():
                r = grade(ex, solution=f, timeout=timeout, progress=said(ex))
                if r.score != 0:
                    problems.append(f"{ex}: the unanswered exercise scores {r.score:g}/{r.max_score:g}, not 0; "
                                    "points earned without an answer: " + earned_without_answer(r))
    return problems


def earned_without_answer(r: Result) -> str:
    """Which checks of *r* scored, and the points of a tests cell that no check holds."""
    parts = []
    for t in r.tests:
        if t.score <= 0:
            continue
        checks = [c for c in t.checks if c.passed and c.score > 0]
        got = [f"check {c.name!r} ({c.score:g})" for c in checks]
        rest = t.score - sum(c.score for c in checks)
        if rest > 1e-9:
            got.append(f"{rest:g} point(s) no check holds" if t.checks or t.declared
                       else f"{rest:g} point(s): the whole cell passed")
        parts.append(f"{t.id}: " + ", ".join(got))
    return "; ".join(parts) or "none found"
