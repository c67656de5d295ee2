"""The time to grade one notebook, per exercise, for this checkout and for another one: a table.

    python bench/grade_one.py [--exercises 01_executor,02_pool] [--repeat 3] [--base DIR]

Each exercise's solution (full marks) and exercise (blank) are graded ``--repeat`` times with
``memlab.grading.grade`` in a fresh interpreter; the table gives the median seconds of each.  With
``--base DIR`` (another checkout of memlab, e.g. ``git archive bcba497 | tar -x -C DIR``) the same
grades run with that checkout's memlab first on the path, alternating with this one, so both see the
same machine load, and the ratio is printed.  Grading is not isolated here (not root) in either.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ONE = ("import sys, time; from memlab.grading import grade; t = time.perf_counter(); "
       "r = grade(sys.argv[1], solution=sys.argv[2]); "
       "print(f'{r.score:g}/{r.max_score:g} {time.perf_counter() - t:.3f}')")


def once(checkout: Path, notebook: Path, solution: Path) -> tuple[str, float]:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    out = subprocess.run([sys.executable, "-c", ONE, str(notebook), str(solution)], cwd=checkout, env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    return out[0], float(out[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--exercises", default="01_executor,02_pool,03_planner,04_coloring,05_training_plan")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--base", type=Path, default=None)
    args = ap.parse_args()
    checkouts = [("this", ROOT)] + ([("base", args.base.resolve())] if args.base else [])
    rows = []
    for ex in args.exercises.split(","):
        for kind in ("solution", "exercise"):
            times: dict[str, list[float]] = {name: [] for name, _ in checkouts}
            scores: dict[str, str] = {}
            for _ in range(args.repeat):
                for name, co in checkouts:
                    nb = co / ("solutions" if kind == "solution" else "exercises") / f"{ex}.ipynb"
                    score, sec = once(co, nb, co / "solutions" / f"{ex}.ipynb")
                    times[name].append(sec)
                    scores[name] = score
            row = [ex, kind] + [f"{scores[n]} {statistics.median(times[n]):.2f} s" for n, _ in checkouts]
            if args.base:
                row.append(f"{statistics.median(times['this']) / statistics.median(times['base']):.2f}x")
            rows.append(row)
            print("  ".join(row), file=sys.stderr)
    head = ["exercise", "notebook"] + [f"{n} (score, median)" for n, _ in checkouts] + (["this/base"] if args.base else [])
    w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head, ["-" * x for x in w]] + rows:
        print("  ".join(str(c).ljust(x) for c, x in zip(r, w)).rstrip())


if __name__ == "__main__":
    main()
