"""memlab grade-all on a folder of 20 submissions, with 1 and 2 worker processes: a table.

    python bench/grade_all.py [--exercise 07_chain_dp] [--n 20] [--jobs 1,2]

The submissions are copies of the exercise: a quarter solved (the solution), a quarter blank (the
exercise), a quarter half solved (the first answer from the solution) and a quarter broken (not JSON),
so that the batch meets every kind of submission.  Each run grades the whole folder through the command
line into a gradebook CSV; the table gives its wall time, the time per submission and the speed-up.
Whether the run was isolated (root, an interpreter other users can read) is printed.
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


def make_submissions(folder: Path, exercise: str, n: int) -> None:
    sol = nbformat.read(ROOT / "solutions" / f"{exercise}.ipynb", as_version=4)
    ex = nbformat.read(ROOT / "exercises" / f"{exercise}.ipynb", as_version=4)
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
    args = ap.parse_args()
    from memlab.grading.isolate import can_isolate, grader_user, user_can_run_kernel
    isolated = can_isolate() and user_can_run_kernel(*grader_user()[:2]) == ""
    print(f"memlab grade-all: {args.n} submissions of {args.exercise}, {os.cpu_count()} CPUs, "
          f"isolated: {isolated}")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    rows = []
    for jobs in [int(j) for j in args.jobs.split(",")]:
        with tempfile.TemporaryDirectory(prefix="memlab-bench-") as tmp:
            subs = Path(tmp) / "submissions"
            make_submissions(subs, args.exercise, args.n)
            book = Path(tmp) / "grades.csv"
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "memlab", "grade-all", str(subs), "--solution",
                                str(ROOT / "solutions" / f"{args.exercise}.ipynb"), "--gradebook", str(book),
                                "--jobs", str(jobs), "-q"], env=env, capture_output=True, text=True)
            seconds = time.perf_counter() - t0
            if r.returncode != 0:
                sys.exit(f"grade-all failed: {r.stderr}")
            graded = list(csv.DictReader(book.open()))
            scores = sorted({row["total"] for row in graded})
            rows.append((jobs, len(graded), seconds, scores))
    base = rows[0][2]
    print(f"{'jobs':>4}  {'notebooks':>9}  {'wall s':>7}  {'s / notebook':>12}  {'speed-up':>8}  totals seen")
    for jobs, count, seconds, scores in rows:
        print(f"{jobs:>4}  {count:>9}  {seconds:>7.1f}  {seconds / count:>12.2f}  {base / seconds:>7.2f}x  "
              f"{', '.join(scores)}")


if __name__ == "__main__":
    main()
