"""``memlab grade-all``: grade a folder of submissions into a gradebook (nbgrader's and otter's batch
grading).

Every notebook under the folder is graded by :func:`memlab.grading.grade` in a worker process of its
own pool (``jobs`` workers, each with its own grading user when isolated, see
:func:`memlab.grading.isolate.user_name`), with the same protections as a single grade.  Each
student's ``results.json`` is written beside their notebook (``NAME.results.json``); the gradebook
CSV has one row per submission: the score of each question, the total and the notes.  A submission
that cannot be graded (bad JSON, another assignment, a crash) gets a row with score 0 and the reason:
it never stops the batch.  A progress bar (tqdm) counts the notebooks graded.
"""
from __future__ import annotations

import csv
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from ..errors import GradingError
from .inputs import find_solution, read_solution

#: the worker's grading-user slot, set once per worker process (see :func:`_init_worker`)
_SLOT = 0


@dataclass
class Row:
    """One submission's line of the gradebook."""
    submission: str
    score: float
    max_score: float
    questions: dict[str, float] = field(default_factory=dict)
    notes: str = ""
    results: str = ""           # where its results.json was written ("" if it could not be)
    seconds: float = 0.0
    run_notes: list[str] = field(default_factory=list)   # the same for every row: said once, on stderr


def submissions(folder) -> list[Path]:
    """The notebooks to grade under *folder* (recursively; checkpoints, hidden files and files
    starting with '.' are skipped), sorted."""
    root = Path(folder)
    if not root.is_dir():
        raise GradingError(f"{root}: not a directory of submissions")
    found = sorted(p for p in root.rglob("*.ipynb")
                   if not any(part.startswith(".") for part in p.relative_to(root).parts))
    if not found:
        raise GradingError(f"{root}: no notebook (.ipynb) to grade")
    return found


def _init_worker(slots) -> None:
    global _SLOT
    _SLOT = slots.get()


def _failed_json(path: str, why: str, sol, visibility: str) -> str:
    """Write a score-0 ``NAME.results.json`` beside *path* saying *why*; its path, or "" if it
    could not be written."""
    from .results import Result
    p = Path(path)
    out = p.with_name(f"{p.stem}.results.json")
    try:
        Result.failed(p, why, sol.max_score if sol else 0, sol.assignment if sol else "").write_json(
            out, visibility)
        return str(out)
    except (OSError, ValueError):
        return ""


def _grade_one(path: str, solution: str, options: dict) -> Row:
    """Grade one submission (in a worker); never raises."""
    import time
    from .grade import grade
    t0 = time.monotonic()
    p = Path(path)
    out = p.with_name(f"{p.stem}.results.json")
    try:
        r = grade(p, solution=solution, json_path=out, slot=_SLOT, **options)
    except GradingError as e:       # bad input: grade() wrote a score-0 results.json
        return Row(path, 0.0, 0.0, notes=f"not graded: {e}", results=str(out) if out.exists() else "",
                   seconds=time.monotonic() - t0)
    except Exception as e:  # noqa: BLE001  (one bad submission never stops the batch)
        why = f"the grader failed: {type(e).__name__}: {e}"
        return Row(path, 0.0, 0.0, notes=why, results=_failed_json(path, why, None,
                                                                  options.get("hidden_visibility", "visible")),
                   seconds=time.monotonic() - t0)
    run_wide = [n for n in r.notes if n.startswith(RUN_WIDE)]
    notes = [_short(n) for n in r.notes if not n.startswith(RUN_WIDE)]      # the real causes first,
    # then each question's cause, the shortest first
    notes += sorted((f"{q.id}: {_cause(q, options.get('timeout', 30.0))}"
                     for q in r.questions.values() if q.score < q.max_score), key=len)
    if r.json_error:
        notes.append(f"results.json could not be written: {r.json_error}")
    return Row(path, r.score, r.max_score, {q: s.score for q, s in r.questions.items()},
               " | ".join(n.replace("\n", " ") for n in notes)[:2000], "" if r.json_error else str(out),
               time.monotonic() - t0, run_wide)


#: notes of the grader's set-up, the same on every row: said once, on stderr
RUN_WIDE = ("not isolated", "memory:", "warning: the solution file")


def _short(note: str) -> str:
    """A note in a few words: "cell 3 raised ModuleNotFoundError: No module named 'x'" (clipped)."""
    import re
    m = re.search(r"\(?(cell \d+)\)? (raised \w+(?:: [^\n]{0,80})?)", note)
    if m:
        return f"{m.group(1)} {m.group(2)}"
    return note.split("\n", 1)[0][:160]


def _cause(q, timeout: float) -> str:
    """Why question *q* lost points, in a few words: "time limit 30 s", "not answered
    (NotImplementedError)", "cell 3 raised ...", "1 of 3 checks failed: random graphs"."""
    parts = [(c.name, c.passed, c.output) for t in q.tests for c in t.checks]
    parts += [(t.title or "the tests", t.passed, t.output) for t in q.tests if not t.checks]
    lost = [(name, out or "") for name, ok, out in parts if not ok]
    if any(t.status == "timeout" for t in q.tests) or any("time limit" in out for _, out in lost):
        return f"time limit {timeout:g} s"
    if q.notes:
        note = _short(q.notes[0])
        return "not answered (NotImplementedError)" if "raised NotImplementedError" in note \
            else note
    if q.score == 0 and lost and all("NotImplementedError" in out.split("\n", 1)[0]
                                     for _, out in lost):
        return "not answered (NotImplementedError)"
    if any(t.checks for t in q.tests):
        names = ", ".join(dict.fromkeys(name for name, _ in lost))
        return f"{len(lost)} of {len(parts)} check{'s' if len(parts) != 1 else ''} failed: {names}"
    if lost:
        first = lost[0][1].strip().split("\n", 1)[0][:100]
        return f"failed: {first}" if first else "failed"
    from .results import status_text
    bad = [t for t in q.tests if not t.passed]
    return status_text(bad[0]) if bad else "points lost"


def grade_all(folder, solution, *, assignment: str | None = None, gradebook=None, jobs: int = 2,
              timeout: float = 30.0, total_timeout: float = 600.0, memory_limit: int | None = 4 << 30,
              isolate: bool | None = None, hidden_visibility: str = "visible",
              progress: bool = True, allow_unisolated: bool = False) -> list[Row]:
    """Grade every notebook under *folder* with *solution* on *jobs* worker processes; write the
    *gradebook* CSV (if given) and return its rows, in the order of :func:`submissions`.
    Official grades: refused before any work when the runs would not be isolated, unless
    *allow_unisolated*."""
    if not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1:
        raise GradingError(f"jobs must be a whole number >= 1, not {jobs!r}")
    if not allow_unisolated:
        from .grade import refusal
        from .isolate import isolation_problem
        problem = isolation_problem(isolate)
        if problem:
            raise GradingError(refusal(problem))
    files = submissions(folder)
    sol_path = find_solution(files[0], assignment, solution, official=True)
    sol = read_solution(sol_path)                       # bad solutions stop here, before any work
    options = dict(timeout=timeout, total_timeout=total_timeout, memory_limit=memory_limit,
                   isolate=isolate, hidden_visibility=hidden_visibility, allow_unisolated=allow_unisolated)
    ctx = get_context("spawn")
    slots = ctx.Queue()
    for k in range(jobs):
        slots.put(k)
    rows: dict[str, Row] = {}
    from tqdm import tqdm
    bar = tqdm(total=len(files), desc=f"grading {sol.assignment}", unit="notebook", file=sys.stderr,
               disable=not progress)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                             initargs=(slots,)) as pool:
        futures = {pool.submit(_grade_one, str(f), str(sol_path), options): str(f) for f in files}
        for fut in as_completed(futures):
            path = futures[fut]
            try:
                rows[path] = fut.result()
            except Exception as e:  # noqa: BLE001  (a worker that died: that row only)
                why = f"not graded: the grading worker died ({type(e).__name__}: {e})"
                rows[path] = Row(path, 0.0, sol.max_score, notes=why,
                                 results=_failed_json(path, why, sol, hidden_visibility))
            if not rows[path].max_score:
                rows[path].max_score = sol.max_score
            bar.update(1)
    bar.close()
    ordered = [rows[str(f)] for f in files]
    for note in dict.fromkeys(n for r in ordered for n in r.run_notes):     # once, not on every row
        print(f"memlab grade-all: {note}", file=sys.stderr)
    if gradebook is not None:
        write_gradebook(gradebook, ordered, list(sol.questions), Path(folder))
    return ordered


def write_gradebook(path, rows: list[Row], questions: list[str], root: Path) -> Path:
    """The gradebook CSV: ``submission``, one column per question, ``total``, ``max_score``, ``notes``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["submission", *questions, "total", "max_score", "notes"])
        for r in rows:
            name = os.path.relpath(r.submission, root)
            w.writerow([name, *[_num(r.questions.get(q, 0.0)) for q in questions], _num(r.score),
                        _num(r.max_score), r.notes])
    os.replace(tmp, path)
    return path


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(float(x), 4)
