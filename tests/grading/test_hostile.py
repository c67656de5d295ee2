"""Hostile answers (tests/grading/hostile.py) score 0 on what they attack, and grading stays sound.

Every case runs on exercise 01 with all checks: the score, the time taken, the submission, the
solution and the repository unchanged, results.json valid and small, no hidden test line in it (also
not base64-encoded by the attack), no process left behind.  A combined notebook of the cheap attacks
runs on every exercise.
"""
from __future__ import annotations

import importlib.util
import textwrap
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memlab.errors import GradingError
from memlab.grading import grade
from memlab.grading.isolate import can_isolate, grader_user, user_can_run_kernel

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import hostile  # noqa: E402

ROOT = hostile.ROOT


def isolated() -> bool:
    return can_isolate() and user_can_run_kernel(*grader_user()[:2]) == ""


def _repo_state() -> str:
    r = subprocess.run(["git", "status", "--porcelain", "--", "solutions", "exercises", "memlab"], cwd=ROOT,
                       capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else "no git"


def _marked_processes() -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                if hostile.MARKER.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    out.append(int(name))
            except OSError:
                pass
    return out


def run(case: hostile.Case, exercise: str, tmp_path: Path, builder=None, isolate: bool | None = None):
    """Build and grade one hostile notebook; check what every case must keep; returns (data, result, s)."""
    work, out, sold = tmp_path / "submission", tmp_path / "results", tmp_path / "solution"
    for d in (work, out, sold):
        d.mkdir(parents=True)
    solution = sold / f"{exercise}.ipynb"
    shutil.copyfile(ROOT / "solutions" / f"{exercise}.ipynb", solution)
    os.chmod(solution, 0o600)
    os.chmod(sold, 0o700)
    results = out / "results.json"
    path = (builder or hostile.build)(case, exercise, work, solution, results)
    before, sol_before, repo_before = path.read_bytes(), solution.read_bytes(), _repo_state()
    t0 = time.monotonic()
    result = None
    try:
        result = grade(path, solution=solution, json_path=results, timeout=case.timeout,
                       total_timeout=case.total_timeout, memory_limit=case.memory_limit, isolate=isolate)
    except GradingError:
        assert case.error, f"{case.name}: grading refused the notebook"
    seconds = time.monotonic() - t0
    if case.name == "detached_rewrite":
        time.sleep(0.5)                  # time for a survivor to rewrite results.json
        assert _marked_processes() == [], "a process of the graded code outlived the grading"
    text = results.read_text()
    data = json.loads(text)
    assert len(text) < 400_000, f"results.json is {len(text)} characters"
    assert {"score", "max_score", "output", "tests", "execution_time"} <= set(data)
    assert 0 <= data["score"] <= data["max_score"]
    assert all({"name", "score", "max_score", "output"} <= set(t) for t in data["tests"])
    assert path.read_bytes() == before, "grading changed the submission"
    assert solution.read_bytes() == sol_before, "the graded code changed the solution"
    assert _repo_state() == repo_before, "the graded code changed the repository"
    assert hostile.leaked(text, solution) == [], "hidden test lines reached results.json"
    assert seconds < case.total_timeout + 15, f"{case.name} took {seconds:.1f} s"
    return data, result, seconds


# The cheap attacks (``everywhere``) are all in the combined notebook that make test grades on
# exercise 01; one grade each, and the sweep of every exercise, are left to make test-extended.
@pytest.mark.parametrize("name", [pytest.param(c.name, marks=pytest.mark.extended if c.everywhere else ())
                                  for c in hostile.CASES if not c.trial])
def test_hostile_case_on_exercise_01(name, tmp_path):
    case = hostile.BY_NAME[name]
    if case.needs_isolation and not isolated():
        pytest.skip("needs isolation: run as root with a Python environment other users can read")
    data, result, seconds = run(case, "01_executor", tmp_path)
    if case.full_marks:
        assert data["score"] == data["max_score"] == 13 and result.full_marks, result.feedback()
    else:
        assert data["score"] == 0, f"{name}: {data['score']}/{data['max_score']}\n{data['output']}"
        assert case.error or data["max_score"] == 13
    assert case.expect in result.feedback() if result else True, result.feedback()
    if case.name == "fork_storm":
        _no_fork_storm_survivors(tmp_path / "results" / "results.json")
    if case.name == "total_time":
        assert seconds < 12 and any("not run: the total time limit" in t["output"] for t in data["tests"])


def _no_fork_storm_survivors(results: Path) -> None:
    """No child of the fork storm outlived its grade, and, while this test holds the grading user's
    lock (no grade of that user runs: other grades on the machine take turns on it), no process of
    that user is left at all."""
    import fcntl

    from memlab.grading.isolate import lock_path
    from memlab.grading.reaper import _uid_processes
    mark = hostile.fork_mark(results)
    kids = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and Path(f"/proc/{name}/comm").read_text().strip() == mark:
                kids.append(int(name))
        except OSError:
            pass
    assert kids == [], f"{len(kids)} children of the fork storm survived the grade"
    uid, _, user = grader_user()
    with open(lock_path(0, user), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert _uid_processes(uid) == [], "processes of the grading user survived"


def _combined(case, exercise, work, solution, results):
    """Every cheap attack in one notebook (one grading per exercise keeps the sweep fast)."""
    parts = [c for c in hostile.CASES if c.everywhere and c.name not in FILL_IN]
    path = hostile.build(parts[0], exercise, work, solution, results)
    import nbformat
    nb = nbformat.read(path, as_version=4)
    for p in parts[1:]:
        p.build(nb, {"solution": solution, "results": results, "exercise": exercise})
    nbformat.write(nb, path)
    return path


# The combined notebook on every exercise; the attacks that fill in every answer on half of them each.
FILL_IN = ("patched_when_called", "always_equal")
SWEEP = [(e, "combined") for e in hostile.EXERCISES] + \
    [(e, FILL_IN[0]) for e in hostile.EXERCISES[0::2]] + [(e, FILL_IN[1]) for e in hostile.EXERCISES[1::2]]


@pytest.mark.parametrize("exercise, kind", [
    pytest.param(e, k, marks=() if (e, k) == ("01_executor", "combined") else pytest.mark.extended)
    for e, k in SWEEP])
def test_every_exercise_resists(exercise, kind, tmp_path):
    if kind == "combined":
        case = hostile.Case("combined", "all cheap attacks", None)
        data, result, _ = run(case, exercise, tmp_path, builder=_combined)
    else:
        data, result, _ = run(hostile.BY_NAME[kind], exercise, tmp_path)
    assert data["score"] == 0, f"{exercise}, {kind}: {data['score']}/{data['max_score']}\n{result.feedback()}"
    assert data["max_score"] > 0


def test_patches_in_the_kernel_change_no_verdict(tmp_path):
    """Correct answers; q3's answer cell replaces numpy.isclose, q1's topo_sort replaces
    ml.topo_order when called: both run in the kernel only, so the judge's own checks are untouched
    and every question earns its points (nothing is put back in the kernel: nothing there decides)."""
    import nbformat
    nb = nbformat.read(ROOT / "solutions" / "01_executor.ipynb", as_version=4)
    for c in nb.cells:
        qid = hostile.meta(c).get("id")
        if qid == "q3_mul_gradient":
            c.source = "import numpy as np\nnp.isclose = lambda *a, **k: True\n" + c.source
        if qid == "q1_topo_sort":
            c.source = c.source.replace("    order, done = [], set()",
                                        "    ml.topo_order = lambda outs: []\n    order, done = [], set()")
    path = tmp_path / "01_executor.ipynb"
    nbformat.write(nb, path)
    r = grade(path, solution=ROOT / "solutions" / "01_executor.ipynb", timeout=20)
    scores = {q: r.questions[q].score for q in r.questions}
    assert scores == {"q1_topo_sort": 3, "q2_run_naive": 4, "q3_mul_gradient": 3, "q4_sigmoid_gradient": 3}, \
        r.feedback()


# --- The attack classes of a held-out trial (hostile.TRIAL), in isolated and in non-isolated runs ----
JUDGE = importlib.util.find_spec("memlab.grading.judge") is not None
MODES = ["isolated", "not isolated"]


def _mode(mode: str) -> bool:
    if mode == "isolated" and not isolated():
        pytest.skip("needs isolation: run as root with an interpreter the grading user can run "
                    "(make test makes one: MEMLAB_GRADING_PYTHON)")
    return mode == "isolated"


def _trial_builder(prepends: list[str], bodies: list[str], cells: list[str] = ()):
    """One notebook: the *prepends* attacks' code at the top of the first answer, the *bodies* attacks'
    answers one per answer cell (the rest blank), the *cells* attacks as cells of their own."""
    def build(case, exercise, work, solution, results):
        import nbformat
        path = hostile.build(hostile.Case("trial", "", lambda nb, ctx: None), exercise, work, solution, results)
        nb = nbformat.read(path, as_version=4)
        ctx = {"solution": solution, "results": results, "exercise": exercise, "target": work.parent}
        for name in cells:
            hostile.BY_NAME[name].build(nb, ctx)
        answers = hostile.answer_cells(nb)
        for name, cell in zip(bodies, answers):
            one = nbformat.v4.new_notebook(cells=[cell])
            hostile.BY_NAME[name].build(one, ctx)
        for name in prepends:
            hostile.BY_NAME[name].build(nb, ctx) if name not in bodies else None
        nbformat.write(nb, path)
        if "surrogate" in cells:
            path.write_text(path.read_text().replace("SURROGATE_HERE", "\\ud800"))
        return path
    return build


#: the trial's attacks on what runs in the kernel, in three notebooks (each grading costs seconds)
TRIAL_GROUPS = {
    "patches": (["sys_keep", "audit_ctypes", "numpy_internals", "shadow_builtins", "predict_inputs",
                 "str_raises"], ["str_raises", "del_undo", "frame_globals", "settrace_jump"], ["surrogate"]),
    "answers": (["capture_defaults"], ["read_want", "capture_defaults", "own_interrupt"], []),
    "judge": (["guard_subclass", "post_run_hook", "success_property", "send_wrap"], ["disassemble"] * 4, []),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("group", list(TRIAL_GROUPS))
def test_trial_attacks_score_what_the_answers_earn(group, mode, tmp_path):
    """A blank exercise 01 carrying the attacks scores 0 (hidden lines never in results.json)."""
    names = {n for part in TRIAL_GROUPS[group] for n in part}
    if any(hostile.BY_NAME[n].needs_judge for n in names) and not JUDGE:
        pytest.skip("blocked only by the judge (hidden tests in a process of their own), not in this checkout")
    # the guard's class broken: every call of the answers stops the kernel until the total limit
    case = hostile.Case(f"trial-{group}", "", None, **({"timeout": 2.0, "total_timeout": 6.0}
                                                       if group == "judge" else {}))
    data, result, _ = run(case, "01_executor", tmp_path, builder=_trial_builder(*TRIAL_GROUPS[group]),
                          isolate=_mode(mode))
    assert data["score"] == 0, f"{group} ({mode}): {data['score']}/{data['max_score']}\n{result.feedback()}"
    assert data["max_score"] == 13
    text = result.feedback()
    if "own_interrupt" in names:        # the student's own KeyboardInterrupt is not a time limit
        assert "KeyboardInterrupt" in text and "time limit" not in text, text
    if "surrogate" in names:
        assert "lone surrogate character(s)" in text, text


@pytest.mark.parametrize("mode", MODES)
def test_trial_startup_file_runs_in_no_later_kernel(mode, tmp_path):
    """A startup file planted in the IPython profile, then a forced restart: nothing runs it, and
    a blank notebook graded next still scores 0 (the profile is fresh, empty and read-only)."""
    iso = _mode(mode)
    data, result, _ = run(hostile.BY_NAME["startup_file"], "01_executor", tmp_path / "a", isolate=iso)
    assert data["score"] == 0 and "restarted" in result.feedback(), result.feedback()
    data, result, _ = run(hostile.Case("blank", "", lambda nb, ctx: None), "01_executor", tmp_path / "b",
                          isolate=iso)
    assert data["score"] == 0, result.feedback()


def test_trial_memory_is_one_limit_for_all_processes(tmp_path):
    """Four children of 700 MB under a 1.5 GB limit: one limit for all of them where the host has a
    cgroup (some are killed and a note says the limit was reached), else a note says it is per process."""
    data, result, _ = run(hostile.BY_NAME["many_children"], "01_executor", tmp_path)
    assert data["score"] == 0
    text = result.feedback()
    assert ("for all the graded code's processes together" in text and "was reached" in text) or \
        "several processes together can use more" in text, text


def test_trial_least_memory_grades_a_correct_notebook(tmp_path):
    from memlab.grading.grade import MIN_MEMORY
    case = hostile.BY_NAME["least_memory"]
    assert case.memory_limit == MIN_MEMORY
    data, result, _ = run(case, "01_executor", tmp_path)
    assert data["score"] == data["max_score"] == 13, result.feedback()


@pytest.mark.parametrize("name", ["connection_race", "cmdline_forge"])
def test_trial_attacks_on_the_grader_itself(name, tmp_path):
    """Isolated only (unisolated, the graded code has the grader's rights: official grades are then
    refused, test_unisolated_official_grades_are_refused): root changes nothing by a path the user
    controls, and the grader's command line and results.json are out of reach."""
    _mode("isolated")
    (tmp_path / "root-owned").mkdir()
    data, result, _ = run(hostile.BY_NAME[name], "01_executor", tmp_path)
    assert data["score"] == 0, result.feedback()
    assert os.stat(tmp_path / "root-owned").st_uid == 0, "root handed its directory to the grading user"


def test_unisolated_official_grades_are_refused(tmp_path):
    """--json without isolation: refused, saying why and how to fix it; results.json says so too."""
    out = tmp_path / "results.json"
    nb = tmp_path / "01_executor.ipynb"
    shutil.copyfile(ROOT / "exercises" / "01_executor.ipynb", nb)
    r = subprocess.run([sys.executable, "-m", "memlab", "grade", str(nb), "--solution",
                        str(ROOT / "solutions" / "01_executor.ipynb"), "--json", str(out), "--no-isolate"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "refusing to give an official grade without isolation" in r.stderr, r.stderr
    assert "--allow-unisolated" in r.stderr and "--no-isolate" in r.stderr
    data = json.loads(out.read_text())
    assert data["score"] == 0 and "refusing" in data["output"]


@pytest.mark.parametrize("target", ["solution", "/dev/zero", "fifo", "big"])
def test_trial_submission_must_be_a_regular_file(target, tmp_path):
    """A submission that is a symbolic link (to the solution, /dev/zero), a FIFO or too big is
    refused at once with a score-0 results.json, never followed or read to the end."""
    from memlab.grading.inputs import MAX_NOTEBOOK_BYTES
    nb, out = tmp_path / "01_executor.ipynb", tmp_path / "results.json"
    if target == "fifo":
        os.mkfifo(nb)
    elif target == "big":
        with open(nb, "wb") as f:
            f.truncate(MAX_NOTEBOOK_BYTES + 1)
    else:
        os.symlink(ROOT / "solutions" / "01_executor.ipynb" if target == "solution" else target, nb)
    t0 = time.monotonic()
    with pytest.raises(GradingError, match="symbolic link|not a regular file|MB a notebook may have"):
        grade(nb, solution=ROOT / "solutions" / "01_executor.ipynb", json_path=out)
    assert time.monotonic() - t0 < 10
    data = json.loads(out.read_text())
    assert data["score"] == 0 and data["max_score"] == 13


def test_interpreter_is_checked_before_any_user_is_made(monkeypatch):
    """An interpreter other users cannot run: isolation is off, said with the fix, and no grading
    user is created (the check runs as nobody first)."""
    from memlab.grading import isolate
    if not isolate.can_isolate():
        pytest.skip("needs root")
    monkeypatch.setenv("MEMLAB_GRADING_PYTHON", "/root/.memlab-no-such-python")
    monkeypatch.setattr(isolate, "grader_user", lambda *a: pytest.fail("a grading user was made"))
    problem = isolate.isolation_problem()
    assert "cannot start this interpreter's kernel" in problem and "python3 -m venv" in problem, problem


# --- The second hostile trial (at 88112c2): channels, deadlines, handles, forbid, text, limits, the view ---
def _exercise_with(tmp_path: Path, answers: dict[str, str], cells: list[str] = (), start="exercises"):
    """Exercise 01 with the given answer cells' sources (by question id) and extra cells first."""
    import nbformat
    nb = nbformat.read(ROOT / start / "01_executor.ipynb", as_version=4)
    for c in nb.cells:
        qid = hostile.meta(c).get("id")
        if qid in answers:
            c.source = textwrap.dedent(answers[qid]).strip("\n")
    for i, src in enumerate(cells):
        nb.cells.insert(1 + i, hostile.code_cell(src, f"student-extra-{i}"))
    work = tmp_path / "submission"
    work.mkdir(parents=True, exist_ok=True)
    path = work / "01_executor.ipynb"
    nbformat.write(nb, path)
    return path


def _grade(path: Path, tmp_path: Path, mode: str, **kw):
    out = tmp_path / "results.json"
    t0 = time.monotonic()
    r = grade(path, solution=ROOT / "solutions" / "01_executor.ipynb", json_path=out,
              isolate=_mode(mode), **kw)
    return r, json.loads(out.read_text()), time.monotonic() - t0


STALL = """
def topo_sort(outputs):
    import gc, socket, struct, time
    for s in [o for o in gc.get_objects() if isinstance(o, socket.socket)]:
        if s.family == socket.AF_UNIX:
            try:
                s.sendall(struct.pack(">I", 1000) + b"x" * 8)    # announce 1000 bytes, send 8
            except OSError:
                pass
    time.sleep(1000)
"""


# the unisolated run is the same channel code without the namespace (about 20 s): extended
@pytest.mark.parametrize("mode", [MODES[0], pytest.param(MODES[1], marks=pytest.mark.extended)])
def test_trial2_a_stalled_frame_costs_its_call_never_the_grade(mode, tmp_path):
    """(a) A frame announced and never finished: its call fails at the call's limit (plus the 3 s
    grace), the grade ends within its total limit plus a small grace, results.json written."""
    path = _exercise_with(tmp_path, {"q1_topo_sort": STALL})
    r, data, seconds = _grade(path, tmp_path, mode, timeout=5, total_timeout=20)
    assert seconds < 20 + 15, f"the grade took {seconds:.0f} s"
    assert data["score"] == 0 and data["max_score"] == 13


@pytest.mark.parametrize("mode", MODES)
def test_trial2_a_silent_connection_costs_nothing(mode, tmp_path):
    """(b) A process that connects to the grader's call socket as soon as it appears and sends a
    byte every second: the listener serves connections together under one deadline, checks the
    peer's uid, and a right notebook still earns full marks, quickly."""
    import glob
    import socket
    import threading
    stop, seen = threading.Event(), []

    def dribble(s):
        """One byte a second until the test ends or the grader closes the connection."""
        try:
            while not stop.wait(1):
                s.send(b"0")
        except OSError:                  # closed by the grader: what it should do
            pass

    def pester():
        while not stop.is_set():
            for p in glob.glob("/tmp/memlab-*/calls-*.sock"):
                if p in seen:
                    continue
                seen.append(p)
                try:
                    s = socket.socket(socket.AF_UNIX)
                    s.connect(p)
                    threading.Thread(target=dribble, args=(s,), daemon=True).start()
                except OSError:
                    pass
            time.sleep(0.01)
    t = threading.Thread(target=pester, daemon=True)
    t.start()
    try:
        path = _exercise_with(tmp_path, {}, start="solutions")
        r, data, seconds = _grade(path, tmp_path, mode, timeout=20, total_timeout=120)
    finally:
        stop.set()
    assert data["score"] == 13, r.feedback()
    assert seconds < 60, f"the grade took {seconds:.0f} s"


CHAIN = """
import memlab as ml
class _C:
    def __init__(self, k):
        self.k = k
    def next(self):
        return _C(self.k + 1) if self.k < 3 else _Last()
class _Last:
    def compute(self, outs, feed):
        return ml.Executor(outs).run(feed)          # refused: the question asks for run_naive
def run_naive(outputs, feed):
    return _C(1).next().next().next().compute(outputs, feed)
"""


def test_trial2_refusals_follow_every_handle():
    """(c) A handle made by a handle's method inherits the refusals of the call that made it: a chain
    of three, the last one calling a refused function, is refused (run_local: the same codec, call
    server and handles as a grade)."""
    from memlab.grading.judge import run_local
    ns: dict = {}
    exec(textwrap.dedent("""
        class C:
            def __init__(self, k):
                self.k = k
            def next(self):
                return C(self.k + 1)
            def value(self):
                import memlab.checkpoint as ck
                return ck.optimal_forwards(5, 2)
        def make():
            return C(0)
    """), ns)
    out = run_local(textwrap.dedent("""
        from memlab.testing import check
        def test_chain(answers):
            with check(points=1, name="chain"):
                h = answers.make()
                answers.value = None
                v = h.next().next().next().value()
                assert False, f"not refused: {v!r}"
    """), ns, forbid=("memlab.checkpoint.optimal_forwards",))
    (name, _, ok, msg), = out["checks"]
    assert not ok and "WriteItYourself" in msg and "memlab.checkpoint.optimal_forwards" in msg, msg


@pytest.mark.parametrize("how", ["reload", "spec", "default", "reload before"])
def test_trial2_forbid_holds_against_reload_reloading_and_defaults(how):
    """(d) importlib.reload of the refused module, a spec loaded from its file under another name,
    a default argument that kept the function before the refusal, a copy reloaded before the
    refusal (with the kernel's hook in place): all refused."""
    import importlib
    import importlib.util
    import memlab.checkpoint.binomial as b
    from memlab.testing import WriteItYourself, forbid

    def kept(l, m, _f=b.optimal_forwards):
        return _f(l, m)
    want = b.optimal_forwards(6, 2)

    from memlab.testing import _Refusals
    _Refusals.hook(permanent=True)           # as the call server does in the kernel
    if how == "reload before":
        fresh = importlib.reload(b)

    def attack():
        if how == "reload before":
            return fresh.optimal_forwards(6, 2)
        if how == "reload":
            return importlib.reload(b).optimal_forwards(6, 2)
        if how == "spec":
            spec = importlib.util.spec_from_file_location("not_binomial", b.__file__)
            m = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(m)
            return m.optimal_forwards(6, 2)
        return kept(6, 2)
    with forbid("memlab.checkpoint.optimal_forwards"):
        with pytest.raises(WriteItYourself, match="optimal_forwards"):
            attack()
    assert attack() == want and b.optimal_forwards(6, 2) == want      # all put back
    import memlab.checkpoint as ck
    assert ck.optimal_forwards(6, 2) == want


@pytest.mark.parametrize("mode", MODES)
def test_trial2_feedback_text_is_clean_and_grade_exits_0(mode, tmp_path):
    """(e) A lone surrogate and terminal escapes in what an answer raises, and a newline in its
    exception's class name: escaped everywhere; `memlab grade` exits 0 once results.json is written."""
    _mode(mode)
    path = _exercise_with(tmp_path, {"q1_topo_sort": """
        def topo_sort(outputs):
            raise type("Evil\\n--- q2_run_naive (passed)\\nforged", (ValueError,), {})(
                "bad \\ud800 \\x1b[2J\\r line")
    """})
    out = tmp_path / "results.json"
    args = [sys.executable, "-m", "memlab", "grade", str(path), "--solution",
            str(ROOT / "solutions" / "01_executor.ipynb"), "--json", str(out), "--timeout", "20"]
    if mode != "isolated":
        args += ["--no-isolate", "--allow-unisolated"]
    r = subprocess.run(args, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    text = out.read_text(encoding="utf-8")
    data = json.loads(text)
    assert "\ud800" not in text and "\\ud800" in json.dumps(data) or "\\\\ud800" in text
    assert "\x1b" not in text and "\r" not in json.dumps(data).replace("\\r", "")
    assert "\n--- q2_run_naive (passed)" not in r.stdout.decode(), r.stdout.decode()
    assert data["score"] == 0


@pytest.mark.parametrize("mode", MODES)
def test_trial2_a_broken_call_server_costs_one_restart(mode, tmp_path):
    """(f) A cell that breaks Python's socket module: the call server fails to start, the kernel is
    restarted once and tried again, then the calls fail; not five restarts, and the feedback says
    what happened without blaming a cell it cannot know about."""
    path = _exercise_with(tmp_path, {}, cells=["import socket\nsocket.socket = None"], start="solutions")
    r, data, seconds = _grade(path, tmp_path, mode, timeout=10, total_timeout=300)
    assert r.kernel_restarts == 1, r.feedback()
    assert seconds < 90, f"{seconds:.0f} s"
    assert data["score"] == 0 and "call server" in r.feedback(), r.feedback()


BIG_GRAPH = """
def run_naive(outputs, feed):
    import memlab as ml
    x = ml.placeholder("x", (2,))
    for i in range(210_000):
        x = ml.relu(x)
    return [x]
"""


def test_trial2_the_judge_rebuilds_at_most_its_cap_of_nodes(monkeypatch):
    """(g) A reply of more graph nodes than the judge's cap fails its call, with the reason (a cap
    of 1,000 here; the codec's item cap stops larger replies before)."""
    from memlab.grading import judge
    from memlab.grading.judge import run_local
    monkeypatch.setattr(judge, "MAX_NODES", 1000)
    MAX_NODES = 1000
    ns: dict = {}
    exec("import memlab as ml\ndef big():\n    x = ml.placeholder('x', (2,))\n"
         f"    for i in range({MAX_NODES} + 5):\n        x = ml.relu(x)\n    return x\n", ns)
    out = run_local("def test_big(answers):\n    answers.big()\n", ns)
    assert out["checks"] == [] and f"more than {MAX_NODES:,} graph nodes" in out["error"], out


def test_trial2_the_private_directory_is_size_limited(tmp_path):
    """(g) Isolated, the kernel's private directory is a tmpfs of a few hundred MB: writing more
    fails there (ENOSPC), the grade goes on and results.json is written."""
    _mode("isolated")
    fill = ("import os, errno\nERR = None\ntry:\n    with open('fill', 'wb') as f:\n"
            "        for _ in range(40):\n            f.write(b'x' * (16 << 20))\n"
            "except OSError as e:\n    ERR = e.errno\nassert ERR == errno.ENOSPC, ERR")
    path = _exercise_with(tmp_path, {}, cells=[fill], start="solutions")
    r, data, _ = _grade(path, tmp_path, "isolated", timeout=60, total_timeout=300)
    assert data["score"] == 13 and r.cells[0].status == "ok", r.feedback()


READ_COPY = """
import json, os
FOUND = []
for top, dirs, files in os.walk("/"):
    if top.startswith(("/proc", "/sys", "/usr")):
        dirs[:] = []
        continue
    for f in files:
        if f.endswith(".ipynb"):
            try:
                text = open(os.path.join(top, f)).read()
            except OSError:
                continue
            if "BEGIN HIDDEN TESTS" in text and "01_executor" in text:
                FOUND.append(os.path.join(top, f))
                nb = json.loads(text)
                for c in nb["cells"]:
                    if c["metadata"].get("memlab", {}).get("kind") == "answer":
                        exec("".join(c["source"]))
                break
    if FOUND:
        break
"""


def test_trial2_the_kernel_cannot_open_a_readable_solution_elsewhere(tmp_path):
    """(h) A world-readable copy of the solution planted elsewhere on the host (as a course checkout
    is): the kernel, in its own mount namespace, cannot open it; a blank exercise that walks the
    filesystem for it scores 0."""
    _mode("isolated")
    planted = Path("/var/tmp") / f"memlab-planted-{os.getpid()}"
    planted.mkdir(exist_ok=True)
    os.chmod(planted, 0o755)
    copy = planted / "01_executor.ipynb"
    shutil.copyfile(ROOT / "solutions" / "01_executor.ipynb", copy)
    os.chmod(copy, 0o644)
    try:
        path = _exercise_with(tmp_path, {}, cells=[READ_COPY])
        r, data, _ = _grade(path, tmp_path, "isolated", timeout=60, total_timeout=300)
    finally:
        shutil.rmtree(planted, ignore_errors=True)
    assert data["score"] == 0, r.feedback()


GPU_CHEAT = {
    "q1_bias_relu": """
        @cuda.jit
        def bias_relu_kernel(x, b, out):
            pass                                   # launched, computes nothing

        def bias_relu(x, b):
            out = cuda.device_array(x.shape, np.float32)
            bias_relu_kernel[1, 32](cuda.to_device(x), cuda.to_device(b), out)
            return np.maximum(x + b, 0).astype(np.float32)
    """,
    "q2_row_sum": """
        @cuda.jit
        def row_sum_kernel(x, out):
            s = cuda.shared.array(THREADS, float32)
            if cuda.threadIdx.x == 0:
                acc = float32(0)
                for k in range(THREADS):
                    acc += s[k]                    # reads shared memory THREADS times, sums zeros
                out[cuda.blockIdx.x] = acc * 0

        def row_sums(x):
            out = cuda.device_array(x.shape[0], np.float32)
            row_sum_kernel[x.shape[0], THREADS](cuda.to_device(x), out)
            return x.sum(axis=1).astype(np.float32)
    """,
}


@pytest.mark.parametrize("mode", MODES)
def test_trial2_exercise_14_is_judged_on_the_kernels_results(mode, tmp_path):
    """(i) Kernels launched but computing nothing, with numpy computing the values: 0 points.  The
    judge launches the student's kernels itself (the call server makes the device arrays) and reads
    the results back; no count of the student's process decides anything.  The solution keeps 10."""
    import nbformat
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
    sol = ROOT / "solutions" / "14_gpu_kernels.ipynb"
    nb = nbformat.read(ROOT / "exercises" / "14_gpu_kernels.ipynb", as_version=4)
    for c in nb.cells:
        qid = hostile.meta(c).get("id")
        if qid in GPU_CHEAT:
            c.source = textwrap.dedent(GPU_CHEAT[qid]).strip("\n")
    (tmp_path / "w").mkdir()
    path = tmp_path / "w" / "14_gpu_kernels.ipynb"
    nbformat.write(nb, path)
    iso = _mode(mode)
    r = grade(path, solution=sol, json_path=tmp_path / "r.json", isolate=iso, timeout=120,
              memory_limit=1 << 30)
    assert r.score == 0, r.feedback()
    r = grade(sol, solution=sol, isolate=iso, timeout=120, memory_limit=1 << 30)
    assert r.score == r.max_score == 10, r.feedback()


def test_trial2_a_reply_over_the_frame_cap_fails_its_call():
    """(g) Frames are capped at 8 MB, 17 times the largest honest call of the 15 solutions (474,700
    bytes, measured): a bigger reply fails its call with the reason, the judge decodes nothing."""
    from memlab.grading.codec import MAX_BYTES
    from memlab.grading.judge import run_local
    ns = {"big": lambda: __import__("numpy").zeros(MAX_BYTES // 6)}
    out = run_local("def test_big(answers):\n    answers.big()\n", ns)
    assert "over the limit" in out["error"], out


def test_trial2_the_judge_runs_under_its_own_memory_limit(tmp_path):
    """(g) A graph whose values would need 32 GB, returned to a judge that runs it: the judge's own
    address-space limit (4 GB) makes that check fail with a MemoryError, the grade goes on and ends,
    results.json written (the trial took an unlimited judge to 4.1 GB)."""
    from memlab.grading.authoring import answer, notebook, tests, write
    judge_code = ("import numpy as np\nimport memlab as ml\nfrom memlab.testing import check\n\n"
                  "def test_big(answers):\n"
                  "    with check(points=1, name='runs the returned graph'):\n"
                  "        out = answers.big()\n"
                  "        x = out.inputs[0]\n"
                  "        ml.Executor([out]).run({x: np.broadcast_to(np.float32(0), x.shape)})\n"
                  "    with check(points=1, name='a small one'):\n"
                  "        assert answers.small() == 2\n")
    cells = [answer("q1", "import memlab as ml\ndef big():\n    ### BEGIN SOLUTION\n"
                          "    return ml.exp(ml.placeholder('x', (1 << 17, 1 << 16)))\n    ### END SOLUTION\n"
                          "def small():\n    return 2"),
             tests("q1_tests", "q1", 2, "", hidden=judge_code)]
    sol = write(notebook("big", cells), tmp_path / "big.ipynb")
    t0 = time.monotonic()
    r = grade(sol, solution=sol, json_path=tmp_path / "r.json", timeout=60, total_timeout=200)
    assert time.monotonic() - t0 < 200
    assert r.score == 1 and "MemoryError" in r.tests[0].output, r.feedback()
    assert json.loads((tmp_path / "r.json").read_text())["score"] == 1
