"""One grading run: the student's cells in one kernel, then the judge's verdicts on them.

:class:`Session` walks the plan of :mod:`.plan`.  Student cells run in the kernel, each within the
per-cell limit and what is left of the total limit; a kernel that dies is restarted and the cells
that had completed are run again.  Every tests cell of a grade is judged by :mod:`.judge` (through
:mod:`.calls`), after all the student's cells ran; nothing the kernel says is a verdict.  For
``memlab check-work`` (``self_check``) a tests cell's visible part runs in the kernel as a plain
cell, with its ``check`` blocks recorded: what it shows the student decides no grade.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable

from ..errors import GradingError
from .calls import JudgeRun
from .kernel import Kernel
from .notebook import ANSWER, Solution, TestCell, cell_meta
from .plan import Step, question_of
from .policy import tampering_notes
from .results import CellRun, CheckResult, QuestionResult, TestResult, clip, status_text

TEST_OUTPUT_LIMIT = 5_000
#: The line a self-check's tests cell prints its recorded checks on (see :data:`SELF_CHECK`).
MARK = "\x00memlab-self-check\x00"
#: Runs a visible tests cell in the student's namespace, recording its checks (check-work only).
SELF_CHECK = """\
def _memlab_self_check(src, name, forbid, mark):
    import json, traceback
    import memlab.testing as t
    lines = src.split("\\n")
    def said(e):
        what = "".join(traceback.format_exception_only(type(e), e)).strip()
        mine = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == name]
        if mine and 0 < mine[-1].lineno <= len(lines):
            what += "\\n  at test line %d: %s" % (mine[-1].lineno, lines[mine[-1].lineno - 1].strip())
        return what
    error = None
    with t.record_checks(forbid) as rec:
        try:
            exec(compile(src, name, "exec"), get_ipython().user_ns)
        except Exception as e:
            error = said(e)
    checks = [[n, p, e is None, "" if e is None else said(e)] for n, p, e in rec.checks]
    print(mark + json.dumps({"checks": checks, "error": error}))
"""


@dataclass(frozen=True)
class Limits:
    """What one grading run may use: seconds per execution (``timeout``) and in all
    (``total_timeout``, ending at ``deadline`` on :func:`time.monotonic`'s clock), kernel restarts,
    characters of output per execution and in all, and the kernel's own resource limits
    (``{"RLIMIT_AS": bytes}``, lowered by the kernel side before any student cell)."""
    timeout: float
    total_timeout: float
    deadline: float
    max_restarts: int = 5
    max_output: int = 20_000
    max_total_output: int = 2_000_000
    rlimits: dict[str, int] = field(default_factory=dict)
    judge_memory: int | None = 4 << 30


#: How the judge's feedback begins when a call gave no result (the grader's own words).
_NO_RESULT = {"a hidden test failed: your answer did not finish within the time limit": "timeout",
              "a hidden test failed: your kernel died": "kernel died"}


def _status(error: str, hidden: bool) -> str:
    """A failed tests cell's status, from the judge's feedback (a status only says what happened;
    the score is the judge's)."""
    return next((v for k, v in _NO_RESULT.items() if str(error).startswith(k)),
                "failed (hidden tests)" if hidden else "failed")


class Session:
    """The state of one run; :meth:`run` executes the plan and fills ``tests``/``questions``/``notes``."""

    def __init__(self, kernel: Kernel, sol: Solution, cells, limits: Limits,
                 progress: Callable[[str], None] | None = None, self_check: bool = False,
                 socket_dir: str | None = None, peer_uid: int | None = None):
        self.kernel, self.sol, self.cells = kernel, sol, cells
        self.socket_dir, self.peer_uid = socket_dir, peer_uid   # where the call server connects
        self.limits = limits
        self.timeout, self.deadline, self.total_timeout = limits.timeout, limits.deadline, limits.total_timeout
        self.progress = progress
        self.self_check = self_check
        self.questions = {q.id: QuestionResult(q.id, q.title, q.points) for q in sol.questions.values()}
        self.tests = {t.id: TestResult(t.id, t.question, t.title, t.points, hidden=bool(t.hidden))
                      for t in sol.tests}
        self.runs: list[CellRun] = []
        self.notes: list[str] = []
        self.tampered: list[str] = []                  # what the kernel side reported (plain data)
        self.done: list[str] = []                      # student code that completed (replayed on restart)
        self.output_used = 0                           # characters of output captured so far
        self.gave_up = ""
        self.judge: JudgeRun | None = None

    # ------------------------------------------------------------------------------------ helpers
    def left(self) -> float:
        """Seconds left of the total time limit."""
        return self.deadline - time.monotonic()

    def limit(self) -> float:
        """The time limit for the next execution: the per-cell limit, or what is left of the total."""
        return max(0.05, min(self.timeout, self.left()))

    def _exec(self, code: str, limit: float | None = None, **kw):
        """Run *code* within *limit* seconds (default: :meth:`limit`, computed now); its captured
        output counts against the run's total (``max_total_output``)."""
        room = max(0, min(self.limits.max_output, self.limits.max_total_output - self.output_used))
        r = self.kernel.execute(code, timeout=self.limit() if limit is None else limit,
                                max_output=room, **kw)
        self.output_used += len(r.text)
        return r

    def start(self) -> None:
        """Start the judge (a grade's tests need it) and the kernel, and set the kernel up before
        any student cell."""
        if not self.self_check and self.sol.tests:
            self.judge = JudgeRun(self, self.sol.tests, self.socket_dir, self.peer_uid,
                                  self.limits.judge_memory)
            self.judge.spawn()
        self.kernel.start()
        self._setup()

    def close(self) -> None:
        """End the judge process, if it still runs."""
        if self.judge is not None:
            self.judge.close()

    def _setup(self) -> None:
        code = (f"__import__('memlab.grading.callserver', fromlist=['start']).start("
                f"{dict(self.limits.rlimits)!r}, {tuple(self.sol.forbid)!r})\n")
        r = self.kernel.execute(code, timeout=max(30.0, self.timeout), silent=True,
                                store_history=False, tracebacks=False)
        if not r.ok:
            raise GradingError(f"the grader could not set the kernel up "
                               f"({r.status}: {r.ename}: {clip(r.evalue, 500)})")

    def recover(self, what: str) -> None:
        """Restart a dead or stuck kernel and replay the student code that had completed."""
        if self.kernel.restarts >= self.limits.max_restarts:
            self.gave_up = "not run: the kernel died too many times"
            self.notes.append(f"the kernel had to be restarted {self.limits.max_restarts} times; "
                              "the rest was not run")
            return
        if self.left() <= 0:
            return
        self.notes.append(f"{what}; the kernel was restarted and the {len(self.done)} cells that had "
                          "completed before were run again")
        self.kernel.restart()
        self._setup()
        for code in self.done:
            if self.left() <= 0:
                return
            self._exec(code, tracebacks=False)
            if self.kernel.needs_restart:          # replay went wrong: start clean and go on
                self.kernel.restart()
                self._setup()
                return

    def _report(self, question: str) -> None:
        """One progress line for *question* once all its tests have run."""
        mine = [t for t in self.tests.values() if t.question == question]
        if self.progress is None or any(t.status == "not run" for t in mine):
            return
        got, out_of = sum(t.score for t in mine), sum(t.max_score for t in mine)
        if got == out_of:
            self.progress(f"{question}: {got:g}/{out_of:g} passed")
        else:
            why = "; ".join(f"{t.title or t.id}: {status_text(t)}" for t in mine if not t.passed)
            self.progress(f"{question}: {got:g}/{out_of:g} ({why})")

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
            elif self.self_check:
                self._self_check(item)
            else:
                judged.append(item)           # judged after every student cell ran
        if judged and self.judge is not None and not self.gave_up and self.left() > 0:
            self._judge(judged)
        self.notes += tampering_notes(self.tampered)
        for t in self.tests.values():
            if t.status == "not run":
                t.output = self.gave_up or "not run"
            self.questions[t.question].tests.append(t)
            self.questions[t.question].score += t.score

    def _judge(self, judged: list[TestCell]) -> None:
        run = self.judge
        results = run.run()
        missing = [t for t in judged if t.id not in results]
        if missing and not self.gave_up:
            why = ("the total time limit passed" if self.left() <= 0 else
                   "the grader's judge stopped (a problem in the solution or the grader)")
            self.notes.append(f"{why}; {len(missing)} tests cell(s) were not judged")
            if run.stderr.strip() and self.left() > 0:
                self.notes.append("the judge said: " + clip(run.stderr.strip()[-2000:], 2000))

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
        if r.exit_requested:   # exit() is ignored; if it got through, the kernel is stopping
            self.recover(f"{label} stopped the kernel (exit() or quit())")
        elif self.kernel.needs_restart:
            self.recover(f"{label} {err}")

    # -------------------------------------------------------------------------------- the scores
    def judged(self, test_id: str, msg: dict) -> None:
        """Score a tests cell from the judge's verdict (see :mod:`.judge`)."""
        test = next((t for t in self.sol.tests if t.id == test_id), None)
        if test is None:                      # pragma: no cover  (the judge reports only cells it got)
            return
        res = self.tests[test_id]
        self._score(res, test, [[n, p, ok, m, True] for n, p, ok, m in msg.get("checks", [])],
                    msg.get("error"))
        if not res.passed and self.questions[test.question].notes:
            res.output = clip("\n".join([res.output] + self.questions[test.question].notes),
                              TEST_OUTPUT_LIMIT)
        self._report(test.question)

    @staticmethod
    def _score(res: TestResult, test: TestCell, checks: list, error: str | None) -> None:
        """A tests cell's score: without checks, all its points when no error was raised; with
        ``memlab.testing.check`` blocks, a failed check costs its own points and an error outside
        every check keeps only the checks passed before it."""
        if not checks:
            res.status = "passed" if error is None else _status(error, res.hidden)
            res.score = test.points if error is None else 0.0
            res.output = clip(error or "", TEST_OUTPUT_LIMIT)
            return
        res.checks = [CheckResult(clip(n, 200), min(float(p), test.points), bool(ok), clip(m, 2_000),
                                  hidden=bool(h)) for n, p, ok, m, h in checks[:200]]
        for c in res.checks:
            c.score = c.max_score if c.passed else 0.0
        lost = sum(c.max_score for c in res.checks if not c.passed)
        score = sum(c.score for c in res.checks) if error else test.points - lost
        res.score = min(max(0.0, score), test.points)
        res.rest_max = max(0.0, test.points - sum(c.max_score for c in res.checks))
        res.status = "passed" if res.score == test.points else "partial" if res.score > 0 else "failed"
        lines = [f"check {c.name!r} ({c.score:g}/{c.max_score:g}): " + (c.output if not c.passed else "passed")
                 for c in res.checks]
        if error:
            lines.append("the tests stopped outside every check: " + str(error))
        res.output = clip("\n".join(lines), TEST_OUTPUT_LIMIT)

    def _self_check(self, test: TestCell) -> None:
        """``memlab check-work``: run the visible tests cell as a plain cell, its checks recorded."""
        res = self.tests[test.id]
        code = (f"exec({SELF_CHECK!r}); _memlab_self_check({test.source!r}, "
                f"{'<tests ' + test.id + '>'!r}, {tuple(self.sol.forbid)!r}, {MARK!r}); "
                "del _memlab_self_check\n")
        limit = self.limit()
        r = self._exec(code, limit, store_history=False, tracebacks=False)
        res.seconds = r.seconds
        lines = r.text.split("\n")
        said = next((line[len(MARK):] for line in reversed(lines) if line.startswith(MARK)), None)
        printed = "\n".join(line for line in lines if not line.startswith(MARK)).strip()
        if r.status == "timeout":
            res.status, res.output = "timeout", f"the checks did not finish within {limit:g} s"
        elif r.status == "dead" or said is None:
            res.status, res.output = "failed", "the checks did not complete (the kernel died or was stopped)"
        else:
            data = json.loads(said)
            self._score(res, test, [c + [False] for c in data["checks"]], data["error"])
        if printed and not res.passed:
            res.output = clip(res.output + "\nwhat the tests cell printed (not a verdict):\n" + printed,
                              TEST_OUTPUT_LIMIT)
        if self.kernel.needs_restart:
            self.recover(f"the tests cell {test.id!r} stopped the kernel")
