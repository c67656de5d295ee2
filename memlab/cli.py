"""The ``memlab`` command (also ``python -m memlab``): ``assign``, ``grade``, ``check-work``, ``grade-all``,
``check``, ``autograder``, ``release``.

It imports only the grading machinery (standard library, nbformat, jupyter_client).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .errors import GradingError


def _positive(text: str) -> float:
    """An argparse type: a number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def _megabytes(text: str) -> float:
    """An argparse type: 0 (no limit) or at least MIN_MEMORY (where the guard and numpy start)."""
    from .grading import MIN_MEMORY
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of MB, got {text!r}") from None
    if value != 0 and not value >= MIN_MEMORY >> 20:
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or at least {MIN_MEMORY >> 20} MB (the "
                                         f"least in which the grader's guard and numpy start), got {text}")
    return value


def writable_file(path: str, option: str) -> Path:
    """Check, before any work, that a file can be written at *path*: its folder is created when
    missing; :class:`GradingError` naming *option* when it is a directory or cannot be written."""
    p = Path(path)
    if p.is_dir():
        raise GradingError(f"{option} {path}: is a directory; name the file to write")
    _writable_dir(p.parent if str(p.parent) else Path("."), f"{option} {path}")
    if p.exists() and not os.access(p, os.W_OK):
        raise GradingError(f"{option} {path}: the file exists and cannot be written")
    return p


def _writable_dir(d: Path, what: str) -> None:
    if d.exists() and not d.is_dir():
        raise GradingError(f"{what}: {d} is a file, not a directory")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise GradingError(f"{what}: cannot create the directory {d}: {e.strerror or e}") from None
    if not os.access(d, os.W_OK | os.X_OK):
        raise GradingError(f"{what}: the directory {d} cannot be written")


def _limits(p: argparse.ArgumentParser, total: str | None = None, memory: str | None = None,
            visibility: str | None = None) -> None:
    """The grading limits a command takes: the time per cell, and, where named, the time for
    ``total`` (tests not run by then score 0), the address space of ``memory`` and the Gradescope
    ``visibility`` of hidden-test results (the help text given)."""
    p.add_argument("--timeout", type=_positive, default=30.0, metavar="SECONDS",
                   help="time limit per cell (default: 30)")
    if total:
        p.add_argument("--total-timeout", type=_positive, default=600.0, metavar="SECONDS",
                       help=f"time limit for {total}; tests not run by then score 0 (default: 600)")
    if memory:
        p.add_argument("--memory-limit", type=_megabytes, default=4096, metavar="MB",
                       help=f"memory of {memory}, in MB: for all its processes together where the "
                       "host offers a cgroup, else per process (default: 4096; 0: no limit; else >= 320)")
    if visibility:
        from .grading.results import VISIBILITIES
        p.add_argument("--hidden-visibility", choices=VISIBILITIES, default="visible",
                       help=f"{visibility} (default: visible)")


def _unisolated(p: argparse.ArgumentParser, where: str = "") -> None:
    p.add_argument("--allow-unisolated", action="store_true",
                   help=f"{where}give an official grade even when the graded code cannot be isolated (not "
                   "root, or an interpreter the grading user cannot run); refused by default")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="memlab", description="memlab course tools: make exercise "
                                "notebooks from solutions, grade notebooks.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    a = sub.add_parser("assign", help="write exercises/X.ipynb from solutions/X.ipynb",
                       description="Write the student notebooks: solutions removed, hidden tests removed, "
                       "outputs cleared.  Refuses to overwrite an exercise a student has edited.")
    a.add_argument("sources", nargs="*", default=["solutions"],
                   help="solution notebooks or directories of them (default: solutions)")
    a.add_argument("--out", default="exercises", help="output directory (default: exercises)")
    a.add_argument("--force", action="store_true", help="overwrite exercises even if edited")
    a.add_argument("--check", action="store_true",
                   help="write nothing; fail if the output directory differs from what would be written")

    g = sub.add_parser("grade", help="grade a notebook",
                       description="Run the notebook in a fresh kernel, then the solution's tests (hidden "
                       "ones included); print a score table.  The notebook is not modified.")
    g.add_argument("notebook", help="the notebook to grade")
    g.add_argument("--solution", help="the solution notebook, or a directory of them with --assignment "
                   "(never looked for; without it, your work is checked as by check-work)")
    g.add_argument("--assignment", help="with a solutions directory: grade with DIR/ASSIGNMENT.ipynb")
    g.add_argument("--json", metavar="PATH", help="write Gradescope's results.json there (also when the "
                   "input is bad: score 0, the error as output)")
    _limits(g, "the whole run", memory="the kernel",
            visibility="with --json: Gradescope visibility of what hidden tests decide")
    g.add_argument("--no-isolate", dest="isolate", action="store_false", default=None,
                   help="as root, do not run the kernel as the unprivileged grading user")
    _unisolated(g, "with --json: ")

    b = sub.add_parser("autograder", help="write a Gradescope autograder bundle (.zip) for one assignment",
                       description="Write setup.sh, run_autograder, requirements.txt, memlab's source and "
                       "the solution into a zip Gradescope accepts as an autograder.")
    b.add_argument("solution", help="the solution notebook, e.g. solutions/01_executor.ipynb")
    b.add_argument("-o", "--output", required=True, help="the zip to write, e.g. build/01-autograder.zip")
    _limits(b, "the whole run", visibility="Gradescope visibility of what hidden tests decide: "
            "after_published keeps it from students until grades are published")
    _unisolated(b, "the bundle's run: ")
    g.add_argument("-q", "--quiet", action="store_true",
                   help="no line per question while grading; print only the score table")

    ga = sub.add_parser("grade-all", help="grade a folder of submissions into a gradebook CSV",
                        description="Grade every notebook under SUBMISSIONS (recursively) with the solution, "
                        "in parallel worker processes, each isolated as a single grade is; write each "
                        "student's NAME.results.json beside their notebook and one gradebook row per "
                        "submission.  A submission that cannot be graded gets score 0 and the reason.")
    ga.add_argument("submissions", help="the folder of submitted notebooks")
    ga.add_argument("--solution", required=True, help="the solution notebook (or a directory, with --assignment)")
    ga.add_argument("--assignment", help="with a solutions directory: grade with DIR/ASSIGNMENT.ipynb")
    ga.add_argument("--gradebook", required=True, metavar="CSV", help="the gradebook to write, e.g. grades.csv")
    ga.add_argument("--jobs", type=int, default=2, help="worker processes (default: 2)")
    _limits(ga, "each notebook", memory="each kernel",
            visibility="Gradescope visibility of hidden-test results in each results.json")
    ga.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    _unisolated(ga)

    w = sub.add_parser("check-work", help="run your notebook and the checks it shows (no solutions needed)",
                       description="Run the notebook in a fresh kernel, then the visible checks of its tests "
                       "cells; print, per question, which pass.  Hidden tests run when you submit.  Works "
                       "from any directory; the notebook is not modified.")
    w.add_argument("notebook", help="your exercise notebook, e.g. exercises/07_chain_dp.ipynb")
    _limits(w)
    w.add_argument("-q", "--quiet", action="store_true", help="print only the table")

    r = sub.add_parser("release", help="write the student copy of the course (no solutions) to DIR",
                       description="Copy the course (lessons, the library, tests, README, Makefile) into DIR "
                       "with freshly generated blank exercises and without solutions/.  Publish this "
                       "copy, not the repository: the repository's solutions/ holds every hidden test.")
    r.add_argument("dir", help="a new (or empty) directory outside the course")
    r.add_argument("--root", default=".", help="the course repository (default: the current directory)")

    c = sub.add_parser("check", help="check exercises are up to date, solutions full marks, exercises zero")
    c.add_argument("--solutions", default="solutions")
    c.add_argument("--exercises", default="exercises")
    c.add_argument("--timeout", type=_positive, default=60.0, metavar="SECONDS")
    c.add_argument("--feedback", action="store_true",
                   help="also make every hidden check fail on purpose and check its feedback never "
                   "gives the expected value (want*) away (slower: one grading per solution)")
    c.add_argument("-q", "--quiet", action="store_true", help="no line per question while grading")
    return p


def _say(line: str) -> None:
    """A progress line, printed as soon as a question is graded."""
    print(line, flush=True)


def main(argv=None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 refused or failed check, 2 bad input)."""
    args = _parser().parse_args(argv)
    from . import grading  # imported here so `memlab --help` stays fast
    try:
        # Output paths are checked before any work, so no grade is computed and then lost.
        if args.command == "assign" and not args.check:
            _writable_dir(Path(args.out), f"--out {args.out}")
        if args.command == "grade" and args.json:
            writable_file(args.json, "--json")
        if args.command == "autograder":
            writable_file(args.output, "-o")
        if args.command == "grade-all":
            writable_file(args.gradebook, "--gradebook")
        if args.command == "assign":
            report = grading.assign(args.sources, args.out, force=args.force, check=args.check)
            if args.check:
                if not report.ok:
                    print("memlab assign --check: exercises are not up to date:", file=sys.stderr)
                    for line in report.problems:
                        print(f"  {line}", file=sys.stderr)
                    return 1
                print(f"memlab assign --check: {len(report.unchanged)} exercise(s) up to date")
                return 0
            for path in report.written:
                print(f"wrote {path}")
            for path in report.unchanged:
                print(f"unchanged {path}")
            return 0
        if args.command == "grade" and args.solution is None and not args.json:
            print("memlab grade: no --solution given: grading runs the instructors' hidden tests and needs "
                  "the solution notebook (--solution), never looked for by itself.\nChecking your work "
                  "against the checks the notebook shows instead (memlab check-work).", file=sys.stderr)
            args.command = "check-work"
        if args.command == "grade-all":
            rows = grading.grade_all(args.submissions, args.solution, assignment=args.assignment,
                             gradebook=args.gradebook, jobs=args.jobs, timeout=args.timeout,
                             total_timeout=args.total_timeout,
                             memory_limit=int(args.memory_limit * 2**20) if args.memory_limit > 0 else None,
                             hidden_visibility=args.hidden_visibility, progress=not args.quiet,
                             allow_unisolated=args.allow_unisolated)
            bad = sum(1 for r in rows if r.notes.startswith(("not graded", "the grader", "the grading")))
            print(f"graded {len(rows)} submission(s)" + (f" ({bad} could not be graded)" if bad else "")
                  + f"; wrote {args.gradebook}")
            return 0
        if args.command == "check-work":
            result = grading.check_work(args.notebook, timeout=args.timeout)
            print(result.self_check_table() if getattr(args, "quiet", False) else result.feedback())
            if hasattr(args, "solution"):      # `memlab grade` without --solution
                print("memlab grade: no score is given without the solution (--solution): the table "
                      "above is a self-check, not a grade.", file=sys.stderr)
            return 0
        if args.command == "grade":
            result = grading.grade(args.notebook, solution=args.solution, assignment=args.assignment,
                                   timeout=args.timeout, total_timeout=args.total_timeout,
                                   json_path=args.json, isolate=args.isolate,
                                   memory_limit=int(args.memory_limit * 2**20) if args.memory_limit > 0 else None,
                                   progress=None if args.quiet else _say,
                                   hidden_visibility=args.hidden_visibility,
                                   allow_unisolated=args.allow_unisolated or not args.json)
            print(result.table() if args.quiet else result.feedback())
            if args.json and result.json_error:
                print(f"memlab grade: error: could not write {args.json}: {result.json_error}; "
                      "the results.json it should hold follows", file=sys.stderr)
                print(json.dumps(result.to_gradescope(args.hidden_visibility), indent=2, ensure_ascii=False))
                return 1
            if args.json:
                print(f"wrote {args.json}")
            return 0
        if args.command == "autograder":
            from .grading import bundle
            path = bundle.write_bundle(args.solution, args.output, timeout=args.timeout,
                                       total_timeout=args.total_timeout,
                                       hidden_visibility=args.hidden_visibility,
                                       allow_unisolated=args.allow_unisolated)
            print(f"wrote {path}")
            return 0
        if args.command == "release":
            files = grading.write_release(args.dir, args.root)
            print(f"wrote {len(files)} files to {args.dir}: the student copy (no solutions/); "
                  "publish it, not the repository")
            return 0
        if args.command == "check":
            problems = grading.check_all(args.solutions, args.exercises, timeout=args.timeout,
                                         progress=None if args.quiet else _say)
            if args.feedback:
                problems += grading.check_feedback_all(args.solutions, timeout=max(args.timeout, 120.0))
            for line in problems:
                print(line, file=sys.stderr)
            print("memlab check: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
            return 1 if problems else 0
    except GradingError as e:
        print(f"memlab {args.command}: error: {e}", file=sys.stderr)
        if getattr(args, "json", None):
            print(f"wrote {args.json} (score 0)", file=sys.stderr)
        return 1 if "refusing to overwrite" in str(e) else 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
