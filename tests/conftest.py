"""Shared test set-up: headless matplotlib, Numba's CUDA simulator, hypothesis profiles."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/strategies.py, shared by every folder

os.environ.setdefault("MPLBACKEND", "Agg")
# Numba reads this once, when it is first imported (by any test): set it before anything can.
# Run `NUMBA_ENABLE_CUDASIM=0 make test` on a machine with a GPU to test the kernels on it.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

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
