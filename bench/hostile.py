"""Hostile answers to exercise 01, graded by the grader before and after hardening: a table.

    python bench/hostile.py [--before COMMIT] [--cases a,b,...]

"before" grades with the ``memlab`` package, solutions and exercises of COMMIT (default bcba497,
the grader a held-out trial broke; 1c68832 is the last commit before the first hardening),
extracted with ``git archive`` into a temporary directory;
"after" with this checkout.  Each case is one notebook from tests/grading/hostile.py, graded through
the command line (``python -m memlab grade ... --json``).  Where the old grader needed no
``--solution`` (the notebook chose its solution), "before" is run that way, as in the issue.
A score of 0 on a notebook that solves nothing means the attack failed; ``reverse_order`` (honest
answers) must score 13.  Whether the run was isolated (root, an interpreter other users can read)
is printed: without it, the cases that read or rewrite the solution are not blocked.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "grading"))
import hostile  # noqa: E402
from _progress import sweep  # noqa: E402
from tqdm import tqdm  # noqa: E402

CHOOSES_OWN = {"other_assignment", "solution_beside"}     # the cases run without --solution


def _isolated() -> bool:
    from memlab.grading.isolate import can_isolate, grader_user, user_can_run_kernel
    return can_isolate() and user_can_run_kernel(*grader_user()[:2]) == ""


ISOLATED = _isolated()


def extract(commit: str, dest: Path) -> Path:
    """``memlab/``, ``solutions/`` and ``exercises/`` of *commit* under *dest*."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", commit, "memlab", "solutions", "exercises"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def end_survivors() -> None:
    """Kill the processes an attack left behind (found by the marker in their command line)."""
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                if hostile.MARKER.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    os.kill(int(name), 9)
            except OSError:
                pass


def grade_once(root: Path, case: hostile.Case, work: Path, new: bool) -> tuple[str, float]:
    """Build the case's notebook from *root*'s exercise and grade it with *root*'s grader."""
    exercise = "01_executor"
    if case.name == "fork_storm" and not (new and ISOLATED):
        return "not run (1500 processes as root)", 0.0
    if case.name == "cmdline_forge" and not ISOLATED:
        return "not run (unisolated it kills the bench)", 0.0
    work = work / case.name / ("after" if new else "before")
    for d in ("sub", "out", "sol"):
        shutil.rmtree(work / d, ignore_errors=True)
        (work / d).mkdir(parents=True)
    solution = work / "sol" / f"{exercise}.ipynb"
    shutil.copyfile(root / "solutions" / f"{exercise}.ipynb", solution)
    os.chmod(solution, 0o600)
    os.chmod(work / "sol", 0o700)
    results = work / "out" / "results.json"
    old_root = hostile.ROOT
    hostile.ROOT = root
    try:
        nb = hostile.build(case, exercise, work / "sub", solution, results)
    finally:
        hostile.ROOT = old_root
    # The grader of *root*: an editable install's import hook would win over PYTHONPATH, so drop it.
    launcher = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]; "
                f"sys.path.insert(0, {str(root)!r}); from memlab.cli import main; sys.exit(main(sys.argv[1:]))")
    cmd = [sys.executable, "-c", launcher, "grade", str(nb), "--json", str(results), "-q",
           "--timeout", str(case.timeout)]
    cwd = root
    if new:
        cmd += ["--solution", str(solution), "--total-timeout", str(case.total_timeout),
                "--memory-limit", str(case.memory_limit >> 20)] + ([] if ISOLATED else ["--allow-unisolated"])
    elif case.name in CHOOSES_OWN:
        cwd = work / "sub"
    else:
        cmd += ["--solution", str(solution)]
    env = dict(os.environ)
    t0 = time.monotonic()
    try:
        subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, timeout=900)
    except subprocess.TimeoutExpired:
        return "hung", time.monotonic() - t0
    seconds = time.monotonic() - t0
    if case.name == "detached_rewrite":
        time.sleep(1.0)
    try:
        data = json.loads(results.read_text())
        score = f"{data['score']}/{data['max_score']}"
    except (OSError, ValueError):
        score = "no results.json"
    if os.environ.get("MEMLAB_BENCH_KEEP"):
        shutil.copyfile(results, Path(os.environ["MEMLAB_BENCH_KEEP"]) / f"{case.name}-{'after' if new else 'before'}.json")
    if hostile.leaked(results.read_text() if results.exists() else "", solution):
        score += " +leak"
    end_survivors()
    if case.name == "rewrites_solution":      # what counts is the next grading with that solution
        blank = work / "blank" / f"{exercise}.ipynb"
        blank.parent.mkdir()
        shutil.copyfile(root / "exercises" / f"{exercise}.ipynb", blank)
        cmd[cmd.index(str(nb))] = str(blank)
        if not new and "--solution" not in cmd:
            cmd += ["--solution", str(solution)]
        subprocess.run(cmd, cwd=root, env=env, capture_output=True, timeout=900)
        data = json.loads(results.read_text())
        score = f"next blank: {data['score']}/{data['max_score']}"
    return score, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default="bcba497")
    ap.add_argument("--cases", default="")
    args = ap.parse_args()
    names = [n for n in args.cases.split(",") if n] if args.cases else []
    unknown = [n for n in names if n not in hostile.BY_NAME]
    if unknown:
        ap.error(f"--cases: unknown case(s) {', '.join(map(repr, unknown))}; the known cases are "
                 + ", ".join(hostile.BY_NAME))
    cases = [hostile.BY_NAME[n] for n in names] if names else hostile.CASES
    print(f"isolated: {ISOLATED} (python {sys.executable})", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        old = extract(args.before, Path(tmp) / "before")
        rows = []
        for case in sweep(cases, "hostile cases"):
            b, bt = grade_once(old, case, Path(tmp) / "work", new=False)
            a, at = grade_once(ROOT, case, Path(tmp) / "work", new=True)
            want = "13/13" if case.full_marks else "0/13"
            verdict = "ok" if a.split(" ")[-1] in (want, "0/0") and "leak" not in a else "NOT BLOCKED"
            verdict = "not run" if a.startswith("not run") else verdict
            rows.append((case.name, b, f"{bt:.1f}", a, f"{at:.1f}", verdict))
            tqdm.write(" | ".join(rows[-1]), file=sys.stderr)  # each case as it is graded
    head = ("case", "before", "s", "after", "s", "verdict")
    w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head, tuple("-" * x for x in w)] + rows:
        print("| " + " | ".join(str(c).ljust(x) for c, x in zip(r, w)) + " |")


if __name__ == "__main__":
    main()
