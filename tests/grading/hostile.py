"""Hostile answers to memlab's exercises: each :class:`Case` edits an exercise notebook into an attack.

Used by ``tests/grading/test_hostile.py`` (scores, time, untouched files, valid results.json) and by
``bench/hostile.py`` (a table of case -> score before and after the grader was hardened).  Every case
starts from the generated exercise (no answer solved), so the honest score of every attacked question
is 0; ``reverse_order`` starts from the solution and must keep full marks.
"""
from __future__ import annotations

import copy
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import nbformat

from attacks import (AUDIT_CTYPES, CAPTURE_DEFAULTS, CLOSURE_CELL, CMDLINE_FORGE, CODE_SWAP,
                     CONNECTION_RACE, DEFAULTS_EDIT, DEL_UNDO, DISASSEMBLE, FLOOD, FORGE_DISPLAY, FORK_STORM,
                     FRAME_GLOBALS, FRAME_WALK, GC_REFERRERS, GUARD_SUBCLASS, IMPORT_HOOK, LEAK, LIAR,
                     MANY_CHILDREN, MEMORY_BOMB, MEMORY_HOG, NUMPY_INTERNALS, OWN_INTERRUPT, PATCH_LIBRARY,
                     PATCH_WHEN_CALLED, POST_RUN_HOOK, PREDICT_INPUTS, READ_WANT, REDEFINE_HELPERS,
                     SEND_WRAP, SETTRACE_JUMP, SHADOW_BUILTINS, STARTUP_FILE, STR_RAISES, SUCCESS_PROPERTY,
                     SYS_KEEP, USER_EXEC)

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = sorted(p.stem for p in (ROOT / "exercises").glob("*.ipynb"))
MARKER = "memlab-hostile-marker"


def meta(cell) -> dict:
    m = cell.get("metadata", {}).get("memlab")
    return m if isinstance(m, dict) else {}


def code_cell(src: str, cid: str):
    cell = nbformat.v4.new_code_cell(textwrap.dedent(src).strip("\n"))
    cell["id"] = cid
    return cell


def answer_cells(nb) -> list:
    return [c for c in nb.cells if meta(c).get("kind") == "answer" and c.cell_type == "code"]


def fill_stubs(nb, body: str, first_only: bool = False) -> None:
    """Replace every ``raise NotImplementedError()`` of the answers by *body* (same indentation)."""
    for c in answer_cells(nb)[:1] if first_only else answer_cells(nb):
        lines = []
        for line in c.source.split("\n"):
            if line.strip() == "raise NotImplementedError()":
                indent = line[: len(line) - len(line.lstrip())]
                lines.extend(indent + b for b in textwrap.dedent(body).strip("\n").split("\n"))
            else:
                lines.append(line)
        c.source = "\n".join(lines)


def prepend_to_first_answer(nb, src: str) -> None:
    c = answer_cells(nb)[0]
    c.source = textwrap.dedent(src).strip("\n") + "\n\n" + c.source


def _edit_tests_cells(nb) -> None:
    """Delete the first tests cell, move the second above its answer, re-point and blank the third."""
    tests = [c for c in nb.cells if meta(c).get("kind") == "tests"]
    nb.cells.remove(tests[0])
    if len(tests) > 1:
        nb.cells.remove(tests[1])
        nb.cells.insert(1, tests[1])
    for t in tests[2:]:
        m = meta(t)
        m.update(points=1000, question=meta(tests[0]).get("question"), id=meta(tests[0]).get("id"))
        t.source = "pass"
    nb.cells.append(code_cell("pass", "student-extra"))


_ids = iter(range(10**6))


def _detach(results: Path) -> str:
    """An answer cell starting a detached process that rewrites *results* to full marks afterwards."""
    script = textwrap.dedent(f"""
        import json, os, sys, time
        if os.fork():
            sys.exit(0)          # double fork: the grandchild is an orphan
        end = time.time() + 20
        while time.time() < end:   # {MARKER}
            try:
                r = json.load(open({str(results)!r}))
                r["score"] = r["max_score"]
                for t in r["tests"]:
                    t["score"] = t["max_score"]
                json.dump(r, open({str(results)!r}, "w"))
            except Exception:
                pass
            time.sleep(0.05)
    """)
    return f"import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', {script!r}], start_new_session=True)\n"


def _read_solution(solution: Path) -> str:
    return textwrap.dedent(f"""
        import json, os
        _path = {str(solution)!r}
        try:
            _cmd = open(f"/proc/{{os.getppid()}}/cmdline").read().split("\\0")
            if "--solution" in _cmd:
                _path = _cmd[_cmd.index("--solution") + 1]
        except OSError:
            pass
        for _c in json.load(open(_path))["cells"]:
            if _c.get("metadata", {{}}).get("memlab", {{}}).get("kind") == "answer":
                exec("".join(_c["source"]), globals())
    """)


def _rewrite_solution(solution: Path) -> str:
    return textwrap.dedent(f"""
        import json
        _nb = json.load(open({str(solution)!r}))
        for _c in _nb["cells"]:
            if _c.get("metadata", {{}}).get("memlab", {{}}).get("kind") == "tests":
                _c["source"] = "pass"
        json.dump(_nb, open({str(solution)!r}, "w"))
    """)


def _delegate(nb, exercise: str) -> None:
    from test_delegation import DELEGATING
    for c in answer_cells(nb):
        if meta(c).get("id") in DELEGATING.get(exercise, {}):
            c.source = DELEGATING[exercise][meta(c)["id"]]


def _replace_answers(nb, src: str) -> None:
    for c in answer_cells(nb):
        c.source = src


def _sleep_and_exit(nb) -> None:
    cells = answer_cells(nb)
    for i, c in enumerate(cells):
        c.source = "import os, time\ntime.sleep(0.8)\n" + ("os._exit(1)\n" if i % 2 else "") + c.source


def _reverse_blocks(nb) -> None:
    """Question blocks (answer and tests cells, with the markdown before them) in reverse order."""
    head, blocks, cur = [], [], None
    for c in nb.cells:
        m = meta(c)
        if m.get("kind") == "answer" and (cur is None or cur[0] != m.get("question", m.get("id"))):
            cur = (m.get("question", m.get("id")), [])
            blocks.append(cur)
        if cur is None:
            head.append(c)
        else:
            cur[1].append(c)
    nb.cells = head + [c for _, cells in reversed(blocks) for c in cells]


@dataclass
class Case:
    """One attack: *build(nb, ctx)* edits the exercise; ctx has ``solution`` and ``results`` paths."""
    name: str
    what: str
    build: Callable
    everywhere: bool = False           # also in the sweep over every exercise (test_hostile.py)
    start: str = "exercise"            # or "solution" (honest answers)
    full_marks: bool = False           # the honest case: must keep full marks
    needs_isolation: bool = False
    timeout: float = 20.0
    total_timeout: float = 120.0
    error: bool = False                # grading must refuse (bad input), writing a score-0 results.json
    memory_limit: int = 4 << 30        # the kernel's address space
    expect: str = ""                   # a text the feedback must hold (proof the attack ran into the limit)
    needs_judge: bool = False          # blocked only once hidden tests run outside the kernel (the judge)
    trial: bool = False                # one of the held-out trial's attack classes
    absent: str = ""                   # a text the feedback must not hold


def _add_last(src):
    return lambda nb, ctx: nb.cells.append(code_cell(src, f"student-hostile-{next(_ids)}"))


CASES = [
    Case("forged_display", "wrap IPython.display.display to mark every report passed",
         lambda nb, ctx: prepend_to_first_answer(nb, FORGE_DISPLAY), everywhere=True),
    Case("user_exec", "exec, compile, eval and __builtins__ rebound in the user namespace",
         lambda nb, ctx: prepend_to_first_answer(nb, USER_EXEC), everywhere=True),
    Case("patched_library", "ml.topo_order, np.allclose/isclose, memlab.testing checks replaced",
         lambda nb, ctx: (prepend_to_first_answer(nb, PATCH_LIBRARY), fill_stubs(nb, "return []")),
         everywhere=True),
    Case("patched_when_called", "the answer replaces np.allclose and ml.topo_order while the tests run",
         lambda nb, ctx: fill_stubs(nb, PATCH_WHEN_CALLED), everywhere=True),
    Case("redefined_helpers", "the tests' helpers (_valid, _check_gradient, forbid, ...) redefined",
         lambda nb, ctx: (prepend_to_first_answer(nb, REDEFINE_HELPERS), fill_stubs(nb, "return []"))),
    Case("import_hook", "builtins.__import__ hook and a fake memlab.testing in sys.modules",
         lambda nb, ctx: prepend_to_first_answer(nb, IMPORT_HOOK), everywhere=True),
    Case("always_equal", "answers return an object whose __eq__ always answers True",
         lambda nb, ctx: (prepend_to_first_answer(nb, LIAR), fill_stubs(nb, "return _Liar()")),
         everywhere=True),
    Case("reads_solution", "every answer opens the solution (path from the grader's cmdline), execs its answers",
         lambda nb, ctx: _replace_answers(nb, _read_solution(ctx["solution"])), needs_isolation=True),
    Case("other_assignment", "metadata.memlab.assignment set to another assignment",
         lambda nb, ctx: nb.metadata["memlab"].update(assignment="02_pool" if "01" in ctx["solution"].name
                                                      else "01_executor"), error=True),
    Case("solution_beside", "an all-passing evil.ipynb and solutions/ next to the submission",
         lambda nb, ctx: ctx["plant"]()),
    Case("hidden_leak", "a last cell raises with In, linecache, sys.last_traceback and gc's strings",
         _add_last(LEAK), everywhere=True),
    Case("frame_walk", "while the tests run, the answers read their callers' frames and the kernel's message",
         lambda nb, ctx: fill_stubs(nb, FRAME_WALK)),
    Case("detached_rewrite", "a detached (start_new_session, double fork) process rewrites results.json",
         lambda nb, ctx: prepend_to_first_answer(nb, _detach(ctx["results"]))),
    Case("rewrites_solution", "the answer rewrites the solution's tests to pass",
         lambda nb, ctx: prepend_to_first_answer(nb, _rewrite_solution(ctx["solution"])),
         needs_isolation=True),
    Case("error_flood", "3 MB printed and an exception of 10 MB", _add_last(FLOOD), everywhere=True),
    Case("total_time", "sleeps and os._exit in every answer, total limit 4 s",
         lambda nb, ctx: _sleep_and_exit(nb), timeout=1.0, total_timeout=4.0),
    Case("reverse_order", "correct answers, question blocks in reverse order",
         lambda nb, ctx: _reverse_blocks(nb), start="solution", full_marks=True),
    Case("delegation", "answers call the library's own version (see test_delegation.py)",
         lambda nb, ctx: _delegate(nb, ctx["exercise"])),
    Case("sys_exit", "sys.exit() when called, exit() at the top level",
         lambda nb, ctx: (fill_stubs(nb, "import sys\nsys.exit(1)"), _add_last("exit()")(nb, ctx))),
    Case("os_exit", "os._exit() when called and at the top level",
         lambda nb, ctx: (fill_stubs(nb, "import os\nos._exit(1)", first_only=True),
                          _add_last("import os\nos._exit(3)")(nb, ctx))),
    Case("endless_loop", "an endless loop when called (per-cell limit 1 s)",
         lambda nb, ctx: fill_stubs(nb, "while True:\n    pass", first_only=True), timeout=1.0),
    Case("memory_bomb", "a 7 TiB numpy array and a 16 TiB bytearray",
         lambda nb, ctx: prepend_to_first_answer(nb, MEMORY_BOMB), everywhere=True),
    Case("memory_hog", "64 MB at a time until it fails (kernel limited to 1.5 GiB)",
         lambda nb, ctx: prepend_to_first_answer(nb, MEMORY_HOG), memory_limit=3 << 29, expect="MemoryError"),
    Case("fork_storm", "1500 sleeping children forked (per-user process limit)",
         lambda nb, ctx: prepend_to_first_answer(nb, FORK_STORM.replace("FORK_MARK",
                                                                        fork_mark(ctx["results"]))),
         needs_isolation=True, timeout=60, expect="Resource temporarily unavailable"),
    Case("code_swap", "check_gradient_fn.__code__ swapped for a no-op; answers delegate to the library",
         lambda nb, ctx: (_delegate(nb, ctx["exercise"]), prepend_to_first_answer(nb, CODE_SWAP)),
         expect="memlab.testing.check_gradient_fn"),
    Case("defaults_edit", "check_gradient_fn's tolerance default set to 1e30; gradients wrong in value",
         lambda nb, ctx: (fill_stubs(nb, "return [grad for _ in node.inputs]"),
                          prepend_to_first_answer(nb, DEFAULTS_EDIT)),
         expect="memlab.testing.check_gradient_fn"),
    Case("closure_cell", "forbid's closure cell rewritten to a context that forbids nothing; answers delegate",
         lambda nb, ctx: (_delegate(nb, ctx["exercise"]), prepend_to_first_answer(nb, CLOSURE_CELL)),
         expect="memlab.testing.forbid"),
    Case("gc_referrers", "memlab.testing's dict, found by gc.get_referrers, edited; answers delegate",
         lambda nb, ctx: (_delegate(nb, ctx["exercise"]), prepend_to_first_answer(nb, GC_REFERRERS)),
         expect="memlab.testing.check_gradient_fn"),
    Case("edited_tests_cells", "tests cells deleted, moved, re-pointed (1000 points) and blanked",
         lambda nb, ctx: _edit_tests_cells(nb), everywhere=True),
]


def fork_mark(results: Path) -> str:
    """The name (at most 15 characters, as Linux keeps) the fork storm's children take in the grade
    that writes *results*."""
    import hashlib
    return "mlfork" + hashlib.sha1(str(results).encode()).hexdigest()[:8]


def _stubs(body):
    return lambda nb, ctx: fill_stubs(nb, body)


def _first(src, body="return []"):
    return lambda nb, ctx: (prepend_to_first_answer(nb, src), fill_stubs(nb, body))


#: The classes of attack of a held-out trial, each its own answers (a blank exercise underneath:
#: every one must score 0, in isolated and in non-isolated runs).
TRIAL = [
    Case("guard_subclass", "the guard's class, found through object.__subclasses__(), patched and renamed; "
         "a decoy of its name", _first(GUARD_SUBCLASS)),
    Case("sys_keep", "what the guard keeps in sys replaced by look-alikes", _first(SYS_KEEP)),
    Case("post_run_hook", "an IPython post_run_cell hook clears error_in_exec", _first(POST_RUN_HOOK)),
    Case("success_property", "ExecutionResult.success = property(lambda self: True)", _first(SUCCESS_PROPERTY)),
    Case("send_wrap", "kernel.session.send wrapped: every execute_reply forged to status ok",
         _first(SEND_WRAP)),
    Case("audit_ctypes", "an audit hook rewrites the tests' code constants with ctypes", _first(AUDIT_CTYPES)),
    Case("str_raises", "the answer raises an exception whose __str__ raises one named like the grader's "
         "result record, carrying a forged record", _first(STR_RAISES, "raise _Boom()")),
    Case("numpy_internals", "np.allclose._implementation.__code__ swapped, numpy's module __class__ swapped, "
         "numpy._core.numeric.less_equal replaced", _first(NUMPY_INTERNALS)),
    Case("del_undo", "patches numpy and memlab when called, undone by a __del__ before the guard looks",
         _stubs(DEL_UNDO)),
    Case("startup_file", "an IPython startup file planted in the profile, then a forced restart",
         lambda nb, ctx: nb.cells.insert(1, code_cell(STARTUP_FILE, "student-startup"))),
    Case("shadow_builtins", "float, int, len, abs, all, any, sorted shadowed in the notebook",
         _first(SHADOW_BUILTINS)),
    Case("frame_globals", "the answer rewrites the tests' frame globals (sys._getframe, and a thread over "
         "sys._current_frames())", _stubs(FRAME_GLOBALS)),
    Case("settrace_jump", "sys.settrace jumps past the tests' assert lines", _stubs(SETTRACE_JUMP)),
    Case("read_want", "the answer returns the expected value read from its caller's frame", _stubs(READ_WANT)),
    Case("capture_defaults", "a default argument captures the library; a lazy __array__ delegates at "
         "comparison time; the test's inputs are emptied", _first(CAPTURE_DEFAULTS,
                                                                  "return _grab(*list(locals().values()))")),
    Case("predict_inputs", "numpy's and random's generators pinned, so hidden inputs are predictable",
         _first(PREDICT_INPUTS)),
    Case("disassemble", "the answer disassembles the running hidden test and prints it", _stubs(DISASSEMBLE)),
    Case("cmdline_forge", "reads the grader's command line in /proc, writes a full-marks results.json, "
         "kills the grader", _first(CMDLINE_FORGE), needs_isolation=True),
    Case("surrogate", "a lone surrogate (\\ud800) in a cell's source",
         lambda nb, ctx: nb.cells.insert(1, code_cell("x = 'SURROGATE_HERE'", "student-surrogate"))),
    Case("many_children", "four children of 700 MB each under a 1.5 GB limit",
         lambda nb, ctx: nb.cells.insert(1, code_cell(MANY_CHILDREN, "student-children")),
         memory_limit=3 << 29),
    Case("own_interrupt", "the answer raises KeyboardInterrupt itself (not a time limit)",
         _stubs(OWN_INTERRUPT), absent="time limit"),
    Case("connection_race", "a background process swaps the kernel's connection files for symbolic links "
         "to a root-owned directory, then forces a restart",
         lambda nb, ctx: nb.cells.insert(1, code_cell(CONNECTION_RACE.format(target=str(ctx["target"]),
                                                                             marker=MARKER),
                                                      "student-race")),
         needs_isolation=True),
    Case("least_memory", "correct answers under the least memory limit accepted",
         lambda nb, ctx: None, start="solution", full_marks=True, memory_limit=320 << 20),
]
#: blocked only once hidden tests run in a process of their own (the judge): in the kernel, the
#: grader's own in-kernel machinery or the kernel's reply can be reached, and a hidden test's code read
JUDGE_ONLY = ("guard_subclass", "post_run_hook", "success_property", "send_wrap", "disassemble")
for _c in TRIAL:
    _c.trial = True
    _c.needs_judge = _c.name in JUDGE_ONLY
CASES += TRIAL
BY_NAME = {c.name: c for c in CASES}


def build(case: Case, exercise: str, workdir: Path, solution: Path, results: Path) -> Path:
    """Write the hostile notebook of *case* for *exercise* into *workdir*; returns its path."""
    src = ROOT / ("solutions" if case.start == "solution" else "exercises") / f"{exercise}.ipynb"
    nb = nbformat.read(src, as_version=4)
    nb = copy.deepcopy(nb)

    def plant():
        evil = nbformat.read(ROOT / "solutions" / f"{exercise}.ipynb", as_version=4)
        for c in evil.cells:
            if meta(c).get("kind") == "tests":
                c.source = "pass"
        for p in (workdir / "evil.ipynb", workdir / "solutions" / f"{exercise}.ipynb",
                  workdir / f"{exercise}.ipynb.solution"):
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(evil))
    target = workdir.parent / "root-owned"
    target.mkdir(exist_ok=True)
    case.build(nb, {"solution": solution, "results": results, "plant": plant, "exercise": exercise,
                    "target": target})
    path = workdir / f"{exercise}.ipynb"
    nbformat.write(nb, path)
    if case.name == "surrogate":         # not writable by nbformat: a JSON escape of a lone surrogate
        path.write_text(path.read_text().replace("SURROGATE_HERE", "\\ud800"))
    return path


def leaked(results_text: str, solution: Path) -> list[str]:
    """Hidden test lines of *solution* found in *results_text*, also inside LEAK:<base64>:END blocks."""
    import base64
    import re
    from memlab.grading.notebook import hidden_lines, load_solution
    texts = [results_text]
    for m in re.finditer(r"LEAK:([A-Za-z0-9+/=]+)", results_text):
        try:
            data = m.group(1).rstrip("=")
            texts.append(base64.b64decode(data[: len(data) // 4 * 4]).decode("utf-8", "replace"))
        except ValueError:
            pass
    out = []
    for t in load_solution(solution).tests:
        for i, line in enumerate(t.source.split("\n"), 1):
            s = line.strip()
            if i in hidden_lines(t.source) and len(s) >= 20 and "HIDDEN TESTS" not in s:
                if any(s in text for text in texts):
                    out.append(s)
                # a hidden line's string constants, where a disassembly shows them (check names and
                # the author's messages are feedback the judge gives on purpose)
                for lit in [] if not any("LOAD_CONST" in t for t in texts) else re.findall(r"'([^']{16,})'|\"([^\"]{16,})\"", s):
                    lit = lit[0] or lit[1]
                    if "{" not in lit and any(lit in text for text in texts):
                        out.append(lit)
    return out
