"""What grading a notebook found: per test cell, per question, in total; Gradescope's results.json."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .text import clean


#: The most characters of text kept from one cell, and in a whole results.json.
CELL_TEXT_LIMIT = 20_000
TOTAL_TEXT_LIMIT = 300_000
#: What happened to a tests cell (``partial``: some of its checks failed; see :class:`TestResult`).
TestStatus = Literal["not run", "passed", "partial", "failed", "failed (hidden tests)", "tampered", "timeout",
                     "kernel died"]
#: What happened to a student cell: the kernel's reply, or none in time, or a dead kernel.
CellStatus = Literal["ok", "error", "timeout", "dead"]
#: Gradescope's visibility of a test's result.
VISIBILITIES = ("visible", "after_published", "after_due_date", "hidden")


def declared_checks(source: str, hidden: set[int] = frozenset()) -> list[tuple[str, float, bool]]:
    """The ``check(points=..., name=...)`` blocks a tests cell's source declares, in order, as
    ``(name, points, hidden)``: read from the source (never run), so every one gets an entry in
    results.json, also when the cell did not run."""
    import ast
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "check":
            kw = {k.arg: k.value for k in node.keywords}
            name, points = kw.get("name"), kw.get("points")
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and \
                    isinstance(points, ast.Constant) and isinstance(points.value, (int, float)):
                out.append((node.lineno, name.value[:200], float(points.value), node.lineno in hidden))
    return list(dict((c[1], c[1:]) for c in sorted(out)).values())


def status_text(t: "TestResult") -> str:
    """A tests cell's status in words: "2 of 5 checks failed", "time limit", ... (never
    "partial" at 0 points or "failed (failed)")."""
    if t.checks and t.status in ("partial", "failed"):
        bad = sum(not c.passed for c in t.checks)
        return f"{bad} of {len(t.checks)} check(s) failed"
    return {"partial": "some tests failed", "failed (hidden tests)": "a hidden test failed",
            "timeout": "time limit reached", "kernel died": "the kernel died",
            "tampered": "0: the answers replaced what the tests rely on"}.get(t.status, t.status)


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(float(x), 4)


def clip(text: object, limit: int = CELL_TEXT_LIMIT) -> str:
    """*text* as a string of at most about *limit* characters (a note says how much was cut)."""
    text = clean(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [truncated: {len(text) - limit} more characters]\n"


def _cleaned(x: Any) -> Any:
    """Every string in *x* (results.json's dict) made printable (:func:`.text.clean`)."""
    if isinstance(x, str):
        return clean(x)
    if isinstance(x, dict):
        return {k: _cleaned(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_cleaned(v) for v in x]
    return x


def redact(text: str, secrets: list[str]) -> str:
    """*text* with every line of *secrets* (hidden test lines) replaced by ``[hidden test line]``."""
    for line in secrets:
        if line in text:
            text = text.replace(line, "[hidden test line]")
    return text


@dataclass
class CheckResult:
    """One ``memlab.testing.check`` block of a tests cell (partial credit)."""
    name: str
    max_score: float
    passed: bool
    output: str = ""
    score: float = 0.0
    hidden: bool = False        # written in the cell's hidden tests


@dataclass
class TestResult:
    """One tests cell of the solution, run against the student's notebook."""
    id: str
    question: str
    title: str
    max_score: float
    score: float = 0.0
    status: TestStatus = "not run"
    output: str = ""            # feedback for the student (hidden test code is never shown)
    seconds: float = 0.0
    checks: list[CheckResult] = field(default_factory=list)   # its check blocks, if it has any
    rest_max: float = 0.0       # the cell's points that no check holds
    hidden: bool = False        # the cell has hidden tests
    declared: list[tuple[str, float, bool]] = field(default_factory=list)  # its check blocks, from the source

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def name(self) -> str:
        return f"{self.question}: {self.title}" if self.title else self.id


@dataclass
class QuestionResult:
    id: str
    title: str
    max_score: float
    score: float = 0.0
    tests: list[TestResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # e.g. "answer cell q1 raised NameError: ..."


@dataclass
class CellRun:
    """One student cell as the grader ran it."""
    index: int                  # position in the student's notebook
    kind: str                   # "answer", "code"
    id: str | None
    status: CellStatus
    error: str = ""
    seconds: float = 0.0


@dataclass
class Result:
    """The grade of one notebook.  ``questions`` maps question id to its result, in solution order."""
    notebook: Path
    solution: Path | None
    assignment: str
    score: float
    max_score: float
    questions: dict[str, QuestionResult]
    tests: list[TestResult]
    cells: list[CellRun]
    kernel_restarts: int
    execution_time: float
    notes: list[str] = field(default_factory=list)
    error: str = ""             # bad input: why nothing was graded
    json_error: str = ""        # results.json could not be written (the grade itself stands)
    self_check: bool = False    # memlab check-work: the notebook's own visible checks, not a grade
    hidden_after: set[str] = field(default_factory=set)   # tests cells whose hidden part runs at grading
    only_hidden: set[str] = field(default_factory=set)    # tests cells with no visible check at all

    @classmethod
    def failed(cls, notebook, error: str, max_score: float = 0, assignment: str = "", solution=None,
               execution_time: float = 0.0) -> "Result":
        """The result of a notebook that could not be graded: score 0, *error* as its output."""
        return cls(notebook=Path(str(notebook)), solution=solution, assignment=assignment, score=0,
                   max_score=max_score, questions={}, tests=[], cells=[], kernel_restarts=0,
                   execution_time=execution_time, error=clip(error, 5_000))

    @property
    def full_marks(self) -> bool:
        return self.score == self.max_score

    def table(self) -> str:
        """A plain-text score table, one line per test cell, then the total."""
        rows = []
        for t in self.tests:
            rows.append((t.question, t.title or t.id, f"{_num(t.score)}/{_num(t.max_score)}", status_text(t)))
            rows += [("", f"  {c.name}", f"{_num(c.score)}/{_num(c.max_score)}",
                      "passed" if c.passed else "failed") for c in t.checks]
        head = ("question", "test", "score", "status")
        w = [max([len(head[i])] + [len(r[i]) for r in rows]) for i in range(3)]
        fmt = f"{{:<{w[0]}}}  {{:<{w[1]}}}  {{:>{w[2]}}}  {{}}"
        lines = [f"{self.notebook} (assignment {self.assignment})", fmt.format(*head),
                 fmt.format("-" * w[0], "-" * w[1], "-" * w[2], "------")]
        lines += [fmt.format(*r) for r in rows]
        lines.append(fmt.format("total", "", f"{_num(self.score)}/{_num(self.max_score)}", ""))
        return clean("\n".join(line.rstrip() for line in lines))

    def self_check_table(self) -> str:
        """``memlab check-work``'s table: per question, whether its visible checks pass, and that
        hidden tests run when the work is submitted."""
        rows = []
        for q in self.questions.values():
            mine = [t for t in self.tests if t.question == q.id]
            visible = [t for t in mine if t.id not in self.only_hidden]
            checks = sum(len(t.checks) or 1 for t in visible)
            passed = sum((sum(c.passed for c in t.checks) if t.checks else t.passed) for t in visible)
            verdict = f"{passed}/{checks} visible check(s) pass" if visible else "no visible checks"
            hidden = any(t.id in self.hidden_after for t in mine)
            rows.append((q.id, q.title or "", verdict, "hidden tests run when you submit" if hidden else ""))
        head = ("question", "title", "your answers", "")
        w = [max([len(head[i])] + [len(r[i]) for r in rows]) for i in range(3)]
        fmt = f"{{:<{w[0]}}}  {{:<{w[1]}}}  {{:<{w[2]}}}  {{}}"
        lines = [f"{self.notebook}: your answers against the checks this notebook shows (not a grade)",
                 fmt.format(*head), fmt.format("-" * w[0], "-" * w[1], "-" * w[2], "")]
        lines += [fmt.format(*r) for r in rows]
        lines.append("Hidden tests run when you submit: they decide the grade, with the checks above.")
        return clean("\n".join(line.rstrip() for line in lines))

    def feedback(self) -> str:
        """The table, then each failed test's feedback and the grader's notes."""
        if self.error:
            return f"{self.notebook}: not graded: {self.error}"
        parts = [self.self_check_table() if self.self_check else self.table()]
        for t in self.tests:
            if not t.passed and t.output.strip():
                parts.append(f"--- {t.name} ({status_text(t)})\n{t.output.rstrip()}")
        if self.notes:
            parts.append("--- notes\n" + "\n".join(self.notes))
        return clip("\n\n".join(parts), TOTAL_TEXT_LIMIT)

    def gradescope_tests(self, hidden_visibility: str = "visible") -> list[dict]:
        """Gradescope's ``tests``: one entry per tests cell, or per check of a cell made of checks
        (and one for the points no check holds); what hidden tests decide gets *hidden_visibility*.
        Every check the solution declares has its entry, whatever happened: one that did not run
        scores 0 and says why, so the list is the same for every submission."""
        out = []
        for t in self.tests:
            seen = hidden_visibility if t.hidden else "visible"
            if not t.checks and not t.declared:
                out.append({"name": t.name, "score": _num(t.score), "max_score": _num(t.max_score),
                            "output": clip(t.output, CELL_TEXT_LIMIT), "visibility": seen,
                            "status": "passed" if t.passed else "failed"})
                continue
            ran = {c.name for c in t.checks}
            why = status_text(t) if t.status != "not run" else "not run"
            first = t.output.strip().split("\n", 1)[0][:300] if t.output.strip() else ""
            missing = [(n, p, h) for n, p, h in t.declared if n not in ran]
            for c in t.checks:
                out.append({"name": f"{t.name} · {c.name}", "score": _num(c.score),
                            "max_score": _num(c.max_score), "output": c.output or "passed",
                            "visibility": hidden_visibility if c.hidden else "visible",
                            "status": "passed" if c.passed else "failed"})
            for n, p, h in missing:
                out.append({"name": f"{t.name} · {n}", "score": 0, "max_score": _num(p),
                            "output": f"did not run: {why}" + (f" ({first})" if first and first != why else ""),
                            "visibility": hidden_visibility if h else "visible", "status": "failed"})
            held = sum(c.max_score for c in t.checks) + sum(p for _, p, _ in missing)
            rest_max = max(0.0, t.max_score - held)
            rest = t.score - sum(c.score for c in t.checks)
            if rest_max > 0 or abs(rest) > 1e-9:
                out.append({"name": f"{t.name} · the rest of the tests", "score": _num(max(rest, 0.0)),
                            "max_score": _num(rest_max), "output": clip(t.output, CELL_TEXT_LIMIT),
                            "visibility": seen, "status": "passed" if rest >= rest_max else "failed"})
        return out

    def to_gradescope(self, hidden_visibility: str = "visible") -> dict:
        """Gradescope's results.json as a dict; its text is at most about ``TOTAL_TEXT_LIMIT`` characters.

        *hidden_visibility* (``visible``, ``after_published``, ``after_due_date``, ``hidden``) is the
        ``visibility`` of what hidden tests decide; unless ``visible``, the summary leaves them out.
        """
        if hidden_visibility not in VISIBILITIES:
            raise ValueError(f"hidden_visibility must be one of {', '.join(VISIBILITIES)}, "
                             f"not {hidden_visibility!r}")
        if self.error:
            output = f"memlab grade could not grade {self.notebook.name}: {self.error}"
        elif hidden_visibility == "visible":
            output = self.table() + ("\n\n" + "\n".join(self.notes) if self.notes else "")
        else:
            when = {"after_published": "once the grades are published", "after_due_date": "after the due date",
                    "hidden": "to instructors only"}[hidden_visibility]
            output = (f"The results of the hidden tests are shown {when}."
                      + ("\n\n" + "\n".join(self.notes) if self.notes else ""))
        tests = self.gradescope_tests(hidden_visibility)
        share = TOTAL_TEXT_LIMIT // (2 * max(1, len(tests)))
        if sum(len(t["output"]) for t in tests) > TOTAL_TEXT_LIMIT // 2:
            for t in tests:
                t["output"] = clip(t["output"], share)
        return _cleaned({"score": _num(self.score), "max_score": _num(self.max_score),
                         "execution_time": round(self.execution_time, 2),
                         "output": clip(output, TOTAL_TEXT_LIMIT // 2), "tests": tests})

    def write_json(self, path: str | os.PathLike, hidden_visibility: str = "visible") -> None:
        """Write results.json (through a temporary file in the same directory, then renamed)."""
        path = Path(path)
        data = json.dumps(self.to_gradescope(hidden_visibility), indent=2, ensure_ascii=False) + "\n"
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        # a lone surrogate (graded code can print one) is written escaped: the file is always UTF-8
        tmp.write_bytes(data.encode("utf-8", "backslashreplace"))
        os.replace(tmp, path)
