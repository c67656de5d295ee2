"""memlab grade-all on a folder of 20 submissions, with 1 and 2 worker processes: a table.

    python bench/grade_all.py [--exercise 07_chain_dp] [--n 20] [--jobs 1,2] [--base DIR]

The submissions are copies of the exercise: a quarter solved (the solution), a quarter blank (the
exercise), a quarter half solved (the first answer from the solution) and a quarter broken (not JSON),
so that the batch meets every kind of submission.  Each run grades the whole folder through the command
line into a gradebook CSV; the table gives its wall time, the time per submission and the speed-up.
Whether the run was isolated (root, an interpreter other users can read) is printed.  With ``--base
DIR`` (another checkout, e.g. ``git archive bcba497 | tar -x -C DIR``) the same batch runs with that
checkout's memlab, solutions and exercises too, before this one's at each number of jobs, and the
ratio of the two wall times is printed.
"""
from __future__ import annotations

import argparse
import copy
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def make_submissions(folder: Path, exercise: str, n: int, checkout: Path = ROOT) -> None:
    sol = nbformat.read(checkout / "solutions" / f"{exercise}.ipynb", as_version=4)
    ex = nbformat.read(checkout / "exercises" / f"{exercise}.ipynb", as_version=4)
    half = copy.deepcopy(ex)
    first = next(c for c in sol.cells if c.metadata.get("memlab", {}).get("kind") == "answer")
    for c in half.cells:
        if c.metadata.get("memlab", {}).get("id") == first.metadata["memlab"]["id"]:
            c.source = first.source
    for k in range(n):
        d = folder / f"student{k:02d}"
        d.mkdir(parents=True)
        if k % 4 == 3:
            (d / f"{exercise}.ipynb").write_text("{broken")
        else:
            nbformat.write((sol, ex, half)[k % 4], d / f"{exercise}.ipynb")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exercise", default="07_chain_dp")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--jobs", default="1,2")
    ap.add_argument("--base", type=Path, default=None)
    args = ap.parse_args()
    from memlab.grading.isolate import can_isolate, grader_user, user_can_run_kernel
    isolated = can_isolate() and user_can_run_kernel(*grader_user()[:2]) == ""
    print(f"memlab grade-all: {args.n} submissions of {args.exercise}, {os.cpu_count()} CPUs, "
          f"isolated: {isolated}")
    checkouts = ([("base", args.base.resolve())] if args.base else []) + [("this", ROOT)]
    rows = []
    for jobs in [int(j) for j in args.jobs.split(",")]:
        for name, co in checkouts:
            rows.append((name, jobs) + batch(co, args.exercise, args.n, jobs))
    first = {name: next(r[4] for r in rows if r[0] == name) for name, _ in checkouts}
    print(f"{'checkout':>8}  {'jobs':>4}  {'notebooks':>9}  {'wall s':>7}  {'s / notebook':>12}  {'speed-up':>8}"
          + ("  this/base" if args.base else "") + "  totals seen")
    for name, jobs, count, scores, seconds in rows:
        ratio = ""
        if args.base:
            other = next(r[4] for r in rows if r[0] == "base" and r[1] == jobs)
            ratio = f"  {seconds / other:>8.2f}x" if name == "this" else f"  {'':>9}"
        print(f"{name:>8}  {jobs:>4}  {count:>9}  {seconds:>7.1f}  {seconds / count:>12.2f}  "
              f"{first[name] / seconds:>7.2f}x{ratio}  {', '.join(scores)}")


def batch(checkout: Path, exercise: str, n: int, jobs: int) -> tuple[int, list[str], float]:
    """Grade *n* submissions of *exercise* with *checkout*'s memlab: (graded, totals seen, wall s)."""
    env = dict(os.environ, PYTHONPATH=str(checkout) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory(prefix="memlab-bench-") as tmp:
        subs = Path(tmp) / "submissions"
        make_submissions(subs, exercise, n, checkout)
        book = Path(tmp) / "grades.csv"
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "memlab", "grade-all", str(subs), "--solution",
                            str(checkout / "solutions" / f"{exercise}.ipynb"), "--gradebook", str(book),
                            "--jobs", str(jobs), "-q"], env=env, cwd=checkout, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit(f"grade-all ({checkout}) failed: {r.stderr}")
        graded = list(csv.DictReader(book.open()))
        return len(graded), sorted({row["total"] for row in graded}), seconds


if __name__ == "__main__":
    main()
