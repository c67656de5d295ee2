"""One grading run: the student's cells and the solution's tests in one kernel, under the guard.

:class:`Session` walks the plan of :mod:`.plan`.  After every student cell it runs the guard's check
(:mod:`.guard`): anything the cell replaced in the modules the tests use is put back, and the
question whose answer cell did it scores 0 (a cell that answers no question costs every question
whose tests had not run yet).  A tests cell passes when the ``execute_reply`` of its run has status
``ok``.  Every execution is bounded by the per-cell limit and by what is left of the total limit.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from .guard import CHECKS, FAILED, TAMPERED, check_code, forget_code, setup_code, stage_code, test_code
from .kernel import Kernel
from .notebook import ANSWER, Solution, TestCell, cell_meta
from .plan import Step, question_of
from .results import CellRun, CheckResult, QuestionResult, TestResult, clip, status_text

TEST_OUTPUT_LIMIT = 5_000


@dataclass(frozen=True)
class Limits:
    """What one grading run may use: seconds per execution (``timeout``) and in all
    (``total_timeout``, ending at ``deadline`` on :func:`time.monotonic`'s clock), kernel restarts,
    characters of output per execution, and the kernel's own resource limits (``{"RLIMIT_AS": bytes}``,
    lowered by the guard before any student cell)."""
    timeout: float
    total_timeout: float
    deadline: float
    max_restarts: int = 5
    max_output: int = 20_000
    rlimits: dict[str, int] = field(default_factory=dict)


class Session:
    """The state of one run; :meth:`run` executes the plan and fills ``tests``/``questions``/``notes``."""

    def __init__(self, kernel: Kernel, sol: Solution, cells, limits: Limits,
                 progress: Callable[[str], None] | None = None):
        self.kernel, self.sol, self.cells = kernel, sol, cells
        self.limits = limits
        self.timeout, self.deadline, self.total_timeout = limits.timeout, limits.deadline, limits.total_timeout
        self.max_restarts, self.max_output = limits.max_restarts, limits.max_output
        self.rlimits = dict(limits.rlimits)
        self.progress = progress
        self.questions = {q.id: QuestionResult(q.id, q.title, q.points) for q in sol.questions.values()}
        self.tests = {t.id: TestResult(t.id, t.question, t.title, t.points, hidden=bool(t.hidden))
                      for t in sol.tests}
        self.runs: list[CellRun] = []
        self.notes: list[str] = []
        self.tampered: dict[str, list[str]] = {}      # question -> what its answers replaced
        self.done: list[str] = []                      # student code that completed (replayed on restart)
        self.gave_up = ""
        self.judge = None                              # the judge process (.calls.JudgeRun), if any

    # ------------------------------------------------------------------------------------ helpers
    def left(self) -> float:
        """Seconds left of the total time limit."""
        return self.deadline - time.monotonic()

    def limit(self) -> float:
        """The time limit for the next execution: the per-cell limit, or what is left of the total."""
        return max(0.05, min(self.timeout, self.left()))

    def _exec(self, code: str, limit: float | None = None, **kw):
        """Run *code* within *limit* seconds (default: :meth:`limit`, computed now)."""
        return self.kernel.execute(code, timeout=self.limit() if limit is None else limit,
                                   max_output=self.max_output, **kw)

    def _quiet(self, code: str):
        """Grader code (guard set-up, checks): silent, not in the history, no tracebacks kept."""
        return self._exec(code, silent=True, store_history=False, tracebacks=False)

    def start(self) -> None:
        """Start the judge (if tests need it) and the kernel, and set up the guard in the kernel
        (before any student cell)."""
        judged = [t for t in self.sol.tests if t.judged]
        if judged:
            self._judge(judged).spawn()
        self.kernel.start()
        self._setup_guard()

    def _judge(self, tests: list[TestCell]):
        from .calls import JudgeRun
        self.judge = JudgeRun(self, tests)
        return self.judge

    def close(self) -> None:
        """End the judge process, if it still runs."""
        if self.judge is not None:
            self.judge.close()

    def _setup_guard(self) -> None:
        r = self.kernel.execute(setup_code(self.rlimits, self.sol.forbid), timeout=max(30.0, self.timeout), silent=True,
                                store_history=False, tracebacks=False)
        if not r.ok:
            from ..errors import GradingError
            raise GradingError(f"the grader's guard could not be set up in the kernel "
                               f"({r.status}: {r.ename}: {clip(r.evalue, 500)})")

    def recover(self, what: str) -> None:
        """Restart a dead or stuck kernel and replay the student code that had completed."""
        if self.kernel.restarts >= self.max_restarts:
            self.gave_up = "not run: the kernel died too many times"
            self.notes.append(f"the kernel had to be restarted {self.max_restarts} times; the rest was not run")
            return
        if self.left() <= 0:
            return
        self.notes.append(f"{what}; the kernel was restarted and the {len(self.done)} cells that had "
                          "completed before were run again")
        self.kernel.restart()
        self._setup_guard()
        for code in self.done:
            if self.left() <= 0:
                return
            self._exec(code, tracebacks=False)
            if self.kernel.needs_restart:          # replay went wrong: start clean and go on
                self.kernel.restart()
                self._setup_guard()
                return
            self._quiet(check_code("a replayed cell"))

    def _report(self, question: str) -> None:
        """One progress line for *question* once all its tests have run (before any tampering is
        found at the end: the table printed after the run has the final scores)."""
        mine = [t for t in self.tests.values() if t.question == question]
        if self.progress is None or any(t.status == "not run" for t in mine):
            return
        got, out_of = sum(t.score for t in mine), sum(t.max_score for t in mine)
        if got == out_of:
            self.progress(f"{question}: {got:g}/{out_of:g} passed")
        else:
            why = "; ".join(f"{t.title or t.id}: {status_text(t)}" for t in mine if not t.passed)
            self.progress(f"{question}: {got:g}/{out_of:g} ({why})")

    def _blame(self, question: str | None, what: str) -> None:
        targets = [question] if question else [t.question for t in self.tests.values() if t.status == "not run"]
        for q in dict.fromkeys(targets):
            self.tampered.setdefault(q, []).append(what)

    # ------------------------------------------------------------------------------------- the run
    def run(self, steps: list[Step]) -> None:
        """Run the plan's steps (see :func:`memlab.grading.plan.plan`), then total the scores."""
        judged: list[TestCell] = []
        for kind, item in steps:
            if self.gave_up:
                break
            if self.left() <= 0:
                self.gave_up = f"not run: the total time limit of {self.total_timeout:g} s passed"
                self.notes.append(f"the total time limit of {self.total_timeout:g} s passed; "
                                  "the tests not run by then score 0")
                break
            if kind == "cell":
                self._run_cell(item)
            elif kind == "test" and item.judged:
                judged.append(item)           # run by the judge, after every other step
            elif kind == "test":
                self._run_test(item)
            else:  # pragma: no cover  (plan() makes only these two kinds)
                raise ValueError(f"unknown step kind {kind!r}")
        if judged and not self.gave_up and self.left() > 0:
            run = self.judge or self._judge(judged)
            results = run.run()
            missing = [t for t in judged if t.id not in results]
            if missing and not self.gave_up:
                why = ("the total time limit passed" if self.left() <= 0 else
                       "the grader's judge stopped (a problem in the solution or the grader)")
                self.notes.append(f"{why}; {len(missing)} tests cell(s) were not judged")
                if run.stderr.strip() and self.left() > 0:
                    self.notes.append("the judge said: " + clip(run.stderr.strip()[-2000:], 2000))
        for t in self.tests.values():
            if t.status == "not run":
                t.output = self.gave_up or "not run"
            if t.question in self.tampered and t.status != "not run":
                t.score, t.status = 0.0, "tampered"
                for c in t.checks:
                    c.score = 0.0
                t.output = clip("0 points: your answers replaced what the tests rely on ("
                                + "; ".join(self.tampered[t.question]) + "). It was put back; the "
                                "tests of this question cannot be trusted, so they score 0.\n"
                                + t.output, TEST_OUTPUT_LIMIT)
            self.questions[t.question].tests.append(t)
            self.questions[t.question].score += t.score

    def _run_cell(self, item: int) -> None:
        cell = self.cells[item]
        m = cell_meta(cell) or {}
        is_answer = m.get("kind") == ANSWER
        q = question_of(m, self.sol) if is_answer else None
        limit = self.limit()                   # the limit applied, reported if it is reached
        r = self._exec(cell.source, limit)
        err = ""
        if r.status == "error":
            err = f"raised {clip(r.ename, 100)}: {clip(r.evalue, 1000)}"
        elif r.status == "timeout":
            err = f"did not finish within the time limit of {limit:g} s" + (
                "" if limit >= self.timeout else " (what was left of the total limit)")
        elif r.status == "dead":
            err = "killed the kernel (os._exit? a crash?)"
        label = f"answer cell {str(m.get('id'))[:80]!r} (cell {item})" if is_answer else f"cell {item}"
        self.runs.append(CellRun(item, ANSWER if is_answer else "code", m.get("id"), r.status, err, r.seconds))
        if err:
            if q in self.questions:
                self.questions[q].notes.append(f"{label} {err}")
            elif not self.kernel.needs_restart:      # else recover() notes it
                self.notes.append(f"{label} {err}")
        if r.status in ("ok", "error") and not r.exit_requested:
            self.done.append(cell.source)
        if r.exit_requested:   # the guard ignores exit(); if it got through, the kernel is stopping
            self.recover(f"{label} stopped the kernel (exit() or quit())")
            return
        if self.kernel.needs_restart:
            self.recover(f"{label} {err}")
            return
        c = self._quiet(check_code(label))
        if c.ename == TAMPERED:
            self._blame(q, clip(c.evalue, 1000))
            self.notes.append(clip(c.evalue, 1000) + "; it was put back")
        elif self.kernel.needs_restart:
            self.recover(f"{label}: the kernel stopped answering")

    def judged(self, test_id: str, msg: dict) -> None:
        """Score a tests cell from the judge's verdict (see :mod:`.judge`)."""
        import json
        test = next((t for t in self.sol.tests if t.id == test_id), None)
        if test is None:                      # pragma: no cover  (the judge reports only cells it got)
            return
        res = self.tests[test_id]
        checks = [[str(n), float(p), bool(ok), str(m), True] for n, p, ok, m in msg.get("checks", [])]
        error = msg.get("error")
        if not checks:
            res.status = "passed" if error is None else "failed (hidden tests)"
            res.score = test.points if error is None else 0.0
            out = error or ""
        else:
            out = self._score_checks(res, test, json.dumps({"checks": checks, "error": error}))
        if not res.passed and self.questions[test.question].notes:
            out = "\n".join([out] + self.questions[test.question].notes)
        res.output = clip(out, TEST_OUTPUT_LIMIT)
        self._report(test.question)

    @staticmethod
    def _score_checks(res: TestResult, test: TestCell, payload: str) -> str:
        """Score a tests cell made of ``memlab.testing.check`` blocks: a failed check costs its own
        points; an error outside every check keeps only the checks passed before it.  Returns the
        cell's message."""
        import json
        try:
            data = json.loads(payload)
            checks = [CheckResult(str(n)[:200], min(float(p), test.points), bool(ok), clip(str(m), 2_000),
                                  hidden=bool(h)) for n, p, ok, m, h in data["checks"]]
            error = data.get("error")
        except (ValueError, KeyError, TypeError):
            res.status = "failed"
            return "the tests did not complete (their checks could not be read)"
        for c in checks:
            c.score = c.max_score if c.passed else 0.0
        lost = sum(c.max_score for c in checks if not c.passed)
        res.score = max(0.0, (sum(c.score for c in checks) if error else test.points - lost))
        res.score = min(res.score, test.points)
        res.checks = checks
        res.rest_max = max(0.0, test.points - sum(c.max_score for c in checks))
        res.status = "passed" if res.score == test.points else "partial" if res.score > 0 else "failed"
        lines = [f"check {c.name!r} ({c.score:g}/{c.max_score:g}): " + (c.output if not c.passed else "passed")
                 for c in checks]
        if error:
            lines.append("the tests stopped outside every check: " + str(error))
        return "\n".join(lines)

    def _run_test(self, test: TestCell) -> None:
        res = self.tests[test.id]
        staged = self._quiet(stage_code(test))
        limit = self.limit()                   # the limit applied, reported if it is reached
        r = self._exec(test_code(test), limit, store_history=False, tracebacks=False) if staged.ok else staged
        res.seconds = r.seconds
        if r.status == "dead":
            res.status, msg = "kernel died", "the kernel died while these tests ran (os._exit? a crash?)"
        elif r.status == "timeout":
            res.status = "timeout"
            msg = f"the tests did not finish within the time limit of {limit:g} s (an endless loop?)" + (
                "" if limit >= self.timeout else "; that was what was left of the total limit")
        elif r.status == "ok":
            res.status, msg, res.score = "passed", "", test.points
        elif r.ename == TAMPERED:
            res.status, msg = "tampered", r.evalue
            self._blame(test.question, clip(r.evalue, 1000))
        elif r.ename == FAILED:
            hidden = r.evalue.startswith("a hidden test failed")
            res.status, msg = ("failed (hidden tests)" if hidden else "failed"), r.evalue
        elif r.ename == CHECKS:
            msg = self._score_checks(res, test, r.evalue)
        else:
            res.status, msg = "failed", f"the tests did not complete ({clip(r.ename, 100)}: {clip(r.evalue, 1000)})"
        if res.status == "tampered":
            res.score, res.checks = 0.0, []
        parts = [msg] if msg else []
        if not res.passed:
            parts += self.questions[test.question].notes
        if r.text.strip():           # printed by a cell whose checks failed: not a verdict
            parts.append(("what the tests cell printed (its checks did not all pass, so an \"ok\" "
                          "printed here is not a verdict):\n" if not res.passed else "") + r.text.rstrip())
        res.output = clip("\n".join(parts), TEST_OUTPUT_LIMIT)
        self._report(test.question)
        if self.kernel.needs_restart:
            self.recover(f"the tests cell {test.id!r} " + (
                "killed the kernel" if r.status == "dead" else
                "called exit() or quit()" if r.exit_requested else "could not be interrupted"))
        else:
            self._quiet(forget_code())
