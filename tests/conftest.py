"""Shared test set-up: headless matplotlib, Numba's CUDA simulator, hypothesis profiles."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/strategies.py, shared by every folder

os.environ.setdefault("MPLBACKEND", "Agg")
# Numba reads this once, when it is first imported (by any test): set it before anything can.
# Run `NUMBA_ENABLE_CUDASIM=0 make test` on a machine with a GPU to test the kernels on it.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
# One BLAS/OpenMP thread, in this process and in every kernel it starts (nbval, the grader, the
# browser test inherit it): a result must not depend on how many cores the machine has.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

from hypothesis import settings  # noqa: E402

settings.register_profile("memlab", deadline=None, max_examples=40, derandomize=True)
settings.load_profile("memlab")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Name the folder of the browser test's screenshots, when it took any."""
    shots = Path(__file__).resolve().parents[1] / "artifacts" / "browser"
    ran = [r for r in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", [])
           if "test_browser.py" in r.nodeid and r.when == "call"]
    if ran and shots.is_dir():
        n = len(list(shots.glob("*.png")))
        secs = sum(r.duration for r in ran)
        terminalreporter.write_line(f"browser test: {len(ran)} lesson(s) run in JupyterLab in {secs:.0f} s; "
                                    f"{n} screenshot(s) in {shots}")


# --- `make test -n 2`: how pytest-xdist shares the work between processes ------------------------
#: work that must stay on one process, in order: every grading test (isolated grading runs share
#: one unprivileged user and take turns on its lock), and each file (a notebook's cells run in one
#: kernel, one after the other)
def _work_unit(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return "tests/grading" if path.startswith("tests/grading/") else path


#: the slowest units go first, so that the two processes finish at about the same time
_SLOW_FIRST = ("tests/lessons/test_browser.py", "tests/site/", "tests/grading/", "lessons/", "tests/lessons/")


def _rank(nodeid: str) -> int:
    return next((i for i, p in enumerate(_SLOW_FIRST) if nodeid.startswith(p)), len(_SLOW_FIRST))


_COURSE_ROOT = Path(__file__).resolve().parents[1]


def _needs_solutions(path: Path, seen: dict) -> bool:
    """Whether a test file (or the helper it imports from tests/grading) reads solutions/."""
    if path not in seen:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        seen[path] = '"solutions"' in text or "solutions/" in text
    return seen[path]


def pytest_collection_modifyitems(config, items):
    """Run the slow units first (a stable sort: the order inside each unit is kept).  In a student
    copy of the course (``memlab release``: no solutions/), the tests that need the solutions skip,
    saying so."""
    items.sort(key=lambda item: _rank(item.nodeid))
    if (_COURSE_ROOT / "solutions").is_dir():
        return
    import pytest
    seen: dict = {}
    helpers = [_COURSE_ROOT / "tests" / "grading" / n for n in ("hostile.py", "attacks.py")]
    for item in items:
        path = Path(str(item.fspath))
        if _needs_solutions(path, seen) or (path.parent.name == "grading" and any(
                h.stem in path.read_text(encoding="utf-8") and _needs_solutions(h, seen) for h in helpers)):
            item.add_marker(pytest.mark.skip(reason="needs the instructors' solutions/, which a student "
                                             "copy of the course (memlab release) leaves out"))


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # pragma: no cover - without pytest-xdist the tests run in one process
    LoadScopeScheduling = None

if LoadScopeScheduling is not None:
    class _CourseScheduling(LoadScopeScheduling):
        """Load balancing by :func:`_work_unit`, in collection order."""

        def _split_scope(self, nodeid: str) -> str:
            return _work_unit(nodeid)

    def pytest_xdist_make_scheduler(config, log):
        config.option.loadscopereorder = False  # keep pytest_collection_modifyitems' order
        return _CourseScheduling(config, log)
